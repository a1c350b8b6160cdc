"""The model registry: one registered model ``tri-<game>`` per game, a version per candidate.

- :func:`resolve_model`: ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION`` -> a local
  checkpoint, downloaded once into ``<root>/.mlflow/cache``. Player specs
  (:func:`tri.player_specs.parse_spec`) and the CLI read registered models through it.
- :func:`ensure_model`, :func:`update_champion`: what :mod:`tri.record.runs` uses when it
  registers a candidate. The alias ``champion`` points at this project's latest promoted
  candidate: a copy for people of what ``models/best.pt`` (the source of truth, see
  :mod:`tri.layout`) holds.

Checkpoints are logged as plain files (``checkpoint/model.pt``) and read back with
:func:`tri.net.load_checkpoint` (weights only): no MLflow model flavour, nothing is unpickled.
This module plays nothing and imports no stage: the players import it.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

from tri.atomic import sha256
from tri.config import Runtime
from tri.errors import TriError
from tri.record import mlstore

CHAMPION = "champion"
CHECKPOINT_DIR = "checkpoint"
CHECKPOINT_FILE = "model.pt"
_MODEL_URI = re.compile(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[^/@]+)|/(?P<version>\d+))$")


def resolve_model(uri: str, root: Path, *, runtime: Runtime | None = None) -> Path:
    """The local checkpoint of the registered version ``models:/NAME@ALIAS`` or
    ``models:/NAME/VERSION``: downloaded once (atomically) into
    ``<root>/.mlflow/cache/NAME/VERSION/model.pt`` and checked against the version's sha256.
    Raises :class:`TriError` (one line) for a malformed URI, an unknown model, alias or version,
    a version without a tri checkpoint, or when tracking is off or there is no store."""
    match = _MODEL_URI.match(uri)
    if not match:
        raise TriError(f"model {uri!r}: expected models:/NAME@ALIAS or models:/NAME/VERSION")
    name, alias, number = match["name"], match["alias"], match["version"]
    root = Path(root).resolve()
    try:
        client, s = mlstore.open_store(root, runtime, create=False)
    except TriError as exc:
        raise TriError(f"model {uri!r}: {exc}") from None
    if client is None:
        raise TriError(f"model {uri!r}: tracking is off (TRI_TRACKING=false)")

    def fail(exc: Exception, missing: str) -> TriError:
        if getattr(exc, "error_code", "") in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            return TriError(f"model {uri!r}: {missing}")
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        return TriError(f"model {uri!r}: the MLflow store {s.tracking_uri} failed ({reason})")

    try:
        client.get_registered_model(name)
    except Exception as exc:
        raise fail(exc, f"no registered model {name!r}") from None
    try:
        mv = (client.get_model_version_by_alias(name, alias) if alias
              else client.get_model_version(name, number))
    except Exception as exc:
        raise fail(exc, f"{name!r} has no {f'alias {alias!r}' if alias else f'version {number}'}") from None
    return _cached(uri, client, mv, root / mlstore.STORE_DIR / "cache" / name / str(mv.version))


def _cached(uri: str, client, mv, final: Path) -> Path:
    """The version ``mv``'s checkpoint in the folder ``final``: the copy there if its sha256 is
    right, else downloaded and checked first."""
    path = final / CHECKPOINT_FILE
    expected = mv.tags.get("tri.sha256")
    if path.is_file() and (expected is None or sha256(path) == expected):
        return path
    tmp = final.parent / f".{mv.version}.{uuid.uuid4().hex}.tmp"
    tmp.mkdir(parents=True)
    try:
        try:
            local = _download(client, mv, tmp)
        except Exception as exc:  # MLflow's errors: a missing or unreadable artifact
            reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise TriError(f"model {uri!r}: version {mv.version}'s checkpoint cannot be read from "
                           f"{mv.source} ({reason})") from None
        got = Path(local) / CHECKPOINT_FILE
        if not got.is_file():
            raise TriError(f"model {uri!r}: version {mv.version} has no "
                           f"{CHECKPOINT_DIR}/{CHECKPOINT_FILE} (not a tri model)")
        if expected is not None and sha256(got) != expected:
            raise TriError(f"model {uri!r}: version {mv.version}'s checkpoint does not match its sha256")
        shutil.rmtree(final, ignore_errors=True)  # a stale copy (another store's version of that number)
        try:
            os.replace(local, final)
        except OSError:  # another process put a copy there meanwhile: it was checked the same way
            if not path.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def _download(client, mv, dst: Path) -> str:
    """Download a version's checkpoint folder into ``dst``; returns the local folder."""
    if mv.run_id:
        try:
            run = client.get_run(mv.run_id)
        except Exception:
            run = None
        prefix = run.info.artifact_uri.rstrip("/") + "/" if run else None
        if prefix and mv.source.startswith(prefix):
            return client.download_artifacts(mv.run_id, mv.source[len(prefix):], str(dst))
    # mlflow takes about 2 s to import: only when a version is downloaded.
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    return get_artifact_repository(mv.source).download_artifacts("", str(dst))


# ---- writing: what registering a candidate needs ---------------------------------------------


def versions(client, name: str, project: str) -> list:
    """The versions of the registered model ``name`` that the project ``project`` registered."""
    return [v for v in client.search_model_versions(f"name='{name}'") if v.tags.get("tri.project") == project]


def ensure_model(client, name: str) -> None:
    """Create the registered model ``name`` unless it exists."""
    try:
        client.get_registered_model(name)
    except Exception as exc:
        if getattr(exc, "error_code", "") != "RESOURCE_DOES_NOT_EXIST":
            raise
        try:
            client.create_registered_model(name, description="tri candidates; alias champion: the best")
        except Exception as exc2:  # created meanwhile
            if getattr(exc2, "error_code", "") != "RESOURCE_ALREADY_EXISTS":
                raise


def update_champion(client, name: str, project: str) -> int | None:
    """Point ``champion`` at this project's latest promoted candidate; returns its version."""
    promoted = [v for v in versions(client, name, project)
                if v.tags.get("promoted") == "true" and v.tags.get("tri.superseded") != "true"]
    if not promoted:
        return None
    best = max(promoted, key=lambda v: (int(v.tags.get("generation", -1)), int(v.version)))
    try:
        current = client.get_model_version_by_alias(name, CHAMPION).version
    except Exception:
        current = None
    if str(current) != str(best.version):
        client.set_registered_model_alias(name, CHAMPION, best.version)
    return int(best.version)
