"""The MLflow store of a project, and the one client per store every record goes through.

By default a SQLite file and an artifact folder inside the project (``<root>/.mlflow/mlflow.db``,
``<root>/.mlflow/artifacts``, absolute URIs); ``TRI_MLFLOW_URI`` points somewhere else (a
tracking server URL or any MLflow URI), ``TRI_TRACKING=false`` turns tracking off. Nothing
relies on MLflow's process-wide tracking URI (whose default is relative to the current
directory): every call goes through an explicit client.

One experiment and one registered model per game, both named ``tri-<game>``: runs are written
by :mod:`tri.record.runs`, registered versions read back by :mod:`tri.record.registry`.
Experiments are machine-learning ones (tag ``mlflow.experimentKind``), and :func:`links` gives
the UI's addresses of the experiment, the project's latest loop and the registered model, opened
on their runs and charts (MLflow 3's UI starts in its GenAI view unless the address says
``workflowType=machine_learning``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse

from tri.config import Runtime
from tri.errors import TriError
from tri.record.provenance import project_id

STORE_DIR = ".mlflow"
# The experiment's type ("Machine learning", not "GenAI apps & agents"), shown in its header by MLflow
# 3.17's UI, which opens the runs rather than traces for it where it reads the type from this tag.
KIND_TAG, KIND = "mlflow.experimentKind", "custom_model_development"
# MLflow 3.17's UI chooses its view (GenAI or "Model training") from this address parameter, else from
# the browser's last choice (GenAI at first): every address tri gives carries it.
UI_VIEW = "workflowType=machine_learning"
_clients: dict[str, Any] = {}  # one client per store URI: connecting to SQLite costs ~0.7 s
_followed: set[Path] = set()  # default stores :func:`follow_move` has checked in this process
# Where MLflow's SQLite schema keeps absolute artifact URIs, which in a default store all point into
# <project>/.mlflow/artifacts, and the tables of run and registered-version tags (tri.project).
_URI_COLUMNS = (("experiments", "artifact_location"), ("runs", "artifact_uri"),
                ("model_versions", "source"), ("model_versions", "storage_location"))
_TAG_TABLES = ("tags", "model_version_tags")


@dataclass(frozen=True)
class Store:
    """Where tracking goes: ``tracking_uri`` (also the registry), ``artifact_location`` for new
    experiments (None: the server decides), and ``database`` (the local SQLite file, if default)."""

    tracking_uri: str
    artifact_location: str | None
    database: Path | None


def experiment_name(game: str) -> str:
    return f"tri-{game}"


def model_name(game: str) -> str:
    return f"tri-{game}"


def store(root: Path, runtime: Runtime | None = None) -> Store:
    """The store of the project ``root``: ``runtime.mlflow_uri`` if set, else the SQLite file
    under ``<root>/.mlflow``. Database URIs keep artifacts under the project too (MLflow would put
    them in ``./mlruns``); a server (http, https, databricks) chooses its own."""
    runtime = runtime or Runtime()
    base = Path(root).resolve() / STORE_DIR
    artifacts = (base / "artifacts").as_uri()
    if runtime.mlflow_uri:
        remote = runtime.mlflow_uri.split(":", 1)[0] in ("http", "https", "databricks")
        return Store(runtime.mlflow_uri, None if remote else artifacts, None)
    db = base / "mlflow.db"
    return Store(f"sqlite:///{db}", artifacts, db)


def client(uri: str):
    """The MLflow client of the store ``uri`` (tracking and registry), made once per process."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # read by mlflow: no calls home
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    made = _clients.get(uri)
    if made is None:
        # mlflow takes about 2 s to import: only when something is recorded or read back.
        from mlflow import MlflowClient

        # Not its "Creating initial MLflow database tables..." lines on the terminal, in the middle
        # of tri loop's table (a new store is no news; errors still show).
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        made = _clients[uri] = MlflowClient(tracking_uri=uri, registry_uri=uri)
    return made


def open_store(root: Path, runtime: Runtime | None, *, create: bool):
    """``(client, store)`` for ``root``'s store, or ``(None, None)`` when tracking is off.
    ``create=False`` refuses to create a missing local store (a reader must not leave an empty
    database behind): raises :class:`TriError`."""
    runtime = runtime or Runtime()
    if not runtime.tracking:
        return None, None
    s = store(root, runtime)
    if s.database is not None:
        if not create and not s.database.exists():
            raise TriError(f"no MLflow store at {s.database.parent} (log a generation with tracking on, "
                           "or set TRI_MLFLOW_URI)")
        s.database.parent.mkdir(parents=True, exist_ok=True)
        if s.database not in _followed:
            follow_move(root, s)
            _followed.add(s.database)
    return client(s.tracking_uri), s


def follow_move(root: Path, s: Store) -> bool:
    """Point the default store ``s`` of the project ``root`` at the folder the project is in now.

    MLflow names artifacts by absolute URI, and tri names a project by a hash of its absolute
    folder (``tri.project``). In a project folder moved or copied elsewhere, the store still names
    the old folder: new runs would write their artifacts there (outside the project), registered
    versions would be read from there, and the project's earlier runs and versions would no longer
    count as its own. Where the store's ``tri-*`` experiments name another folder's
    ``.mlflow/artifacts``, this rewrites, in one transaction, every URI under it to the same place
    under this project, and that folder's project id to this one's. Returns whether it rewrote
    anything. A store elsewhere (``TRI_MLFLOW_URI``), or not yet made, is left alone."""
    if s.database is None or s.artifact_location is None or not s.database.is_file():
        return False
    new, new_id = s.artifact_location, project_id(Path(root).resolve())
    con = sqlite3.connect(s.database, timeout=60)
    try:
        tables = {t: {c for (_, c, *_rest) in con.execute(f"PRAGMA table_info({t})")}
                  for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "artifact_location" not in tables.get("experiments", ()):
            return False  # not MLflow's schema as tri knows it
        olds = {loc for (name, loc) in con.execute("SELECT name, artifact_location FROM experiments")
                if name.startswith("tri-") and loc and loc != new and loc.endswith(f"/{STORE_DIR}/artifacts")}
        with con:  # one transaction: all of it or nothing
            for old in olds:
                for table, column in _URI_COLUMNS:
                    if column in tables.get(table, ()):
                        con.execute(f"UPDATE {table} SET {column} = ? || substr({column}, ?) "
                                    f"WHERE {column} = ? OR substr({column}, 1, ?) = ?",
                                    (new, len(old) + 1, old, len(old) + 1, old + "/"))
                old_id = project_id(Path(unquote(urlparse(old).path)).parent.parent)
                for table in _TAG_TABLES:
                    if {"key", "value"} <= tables.get(table, set()):
                        con.execute(f"UPDATE {table} SET value = ? WHERE key = 'tri.project' AND value = ?",
                                    (new_id, old_id))
    except sqlite3.Error as exc:
        raise TriError(f"the MLflow store {s.database} cannot be read or updated ({exc})") from None
    finally:
        con.close()
    return bool(olds)


def experiment_id(mlflow_client, s: Store, game: str) -> str:
    """The id of experiment ``tri-<game>``, created (or restored) if needed, a machine-learning
    experiment (:data:`KIND_TAG`: set on one made by an older tri, a kind set by hand is kept)."""
    name = experiment_name(game)
    exp = mlflow_client.get_experiment_by_name(name)
    if exp is None:
        try:
            return mlflow_client.create_experiment(name, artifact_location=s.artifact_location,
                                                   tags={KIND_TAG: KIND})
        except Exception as exc:  # created meanwhile by another process
            if getattr(exc, "error_code", "") != "RESOURCE_ALREADY_EXISTS":
                raise
            exp = mlflow_client.get_experiment_by_name(name)
    if exp.lifecycle_stage == "deleted":
        mlflow_client.restore_experiment(exp.experiment_id)
    if KIND_TAG not in exp.tags:
        mlflow_client.set_experiment_tag(exp.experiment_id, KIND_TAG, KIND)
    return exp.experiment_id


def links(root: Path, game: str, base_url: str, *, runtime: Runtime | None = None) -> list[tuple[str, str]]:
    """``(label, address)`` of the MLflow UI at ``base_url`` for the project ``root``'s game: the
    experiment ``tri-<game>`` (its runs and their charts), the project's latest loop run (its
    curves over the generations) and the registered model ``tri-<game>``, those that exist.
    Creates nothing: no store, or tracking off, gives ``[]``."""
    try:
        made, _ = open_store(root, runtime, create=False)
    except TriError:
        return []
    if made is None:
        return []
    base, name, out = base_url.rstrip("/"), experiment_name(game), []
    exp = made.get_experiment_by_name(name)
    if exp is not None and exp.lifecycle_stage == "active":
        out.append((f"MLflow experiment {name}",  # its runs beside their charts (a loop's curves first)
                    f"{base}/#/experiments/{exp.experiment_id}/runs?{UI_VIEW}&compareRunsMode=CHART"))
        loops = made.search_runs([exp.experiment_id], f"tags.`tri.project` = '{project_id(Path(root).resolve())}' "
                                                      "and tags.`tri.kind` = 'loop'",
                                 order_by=["attributes.start_time DESC"], max_results=1)
        if loops:
            run = loops[0].info
            out.append((f"MLflow latest loop {run.run_name}",
                        f"{base}/#/experiments/{exp.experiment_id}/runs/{run.run_id}/model-metrics?{UI_VIEW}"))
    try:
        made.get_registered_model(model_name(game))
    except Exception as exc:
        if getattr(exc, "error_code", "") != "RESOURCE_DOES_NOT_EXIST":
            raise
    else:
        out.append((f"MLflow model {model_name(game)}", f"{base}/#/models/{quote(model_name(game))}?{UI_VIEW}"))
    return out


def run_link(root: Path, game: str, run_id: str, base_url: str, *, runtime: Runtime | None = None) -> str | None:
    """The address of run ``run_id`` of experiment ``tri-<game>`` in the MLflow UI at ``base_url``,
    on its charts; None when the store or the experiment does not exist (creates nothing)."""
    try:
        made, _ = open_store(root, runtime, create=False)
    except TriError:
        return None
    exp = made.get_experiment_by_name(experiment_name(game)) if made is not None else None
    if exp is None:
        return None
    return f"{base_url.rstrip('/')}/#/experiments/{exp.experiment_id}/runs/{run_id}/model-metrics?{UI_VIEW}"
