"""MLflow tracking and the model registry: one experiment and one registered model per game.

Store: by default a SQLite file and an artifact folder inside the project
(``<root>/.mlflow/mlflow.db``, ``<root>/.mlflow/artifacts``, absolute URIs); ``TRI_MLFLOW_URI``
points somewhere else (a tracking server URL or any MLflow URI), ``TRI_TRACKING=false`` turns
tracking off. Nothing relies on MLflow's process-wide tracking URI (whose default is relative to
the current directory): every call goes through an explicit client.

- :func:`start_loop` / :func:`end_loop`: a parent run per loop.
- :func:`log_generation`: one run per generation of experiment ``tri-<game>``, from the files
  the stages wrote (:mod:`tri.layout`): params, self-play, training and arena metrics,
  artifacts (checkpoint, learning curve, arena table, a rendered game), provenance tags. The
  candidate becomes a version of the registered model ``tri-<game>``; the latest promoted one
  carries the alias ``champion``. Calling it again for the same generation and files changes
  nothing (a retried flow).
- :func:`resolve_model`: ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION`` -> a local
  checkpoint, downloaded once into ``<root>/.mlflow/cache``.

Checkpoints are logged as plain files (``checkpoint/model.pt``) and read back with
:func:`tri.net.load_checkpoint` (weights only): no MLflow model flavour, nothing is unpickled.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tri import layout
from tri.config import Params, Runtime, dump_params
from tri.errors import TriError

STORE_DIR = ".mlflow"
CHAMPION = "champion"
CHECKPOINT_DIR = "checkpoint"
CHECKPOINT_FILE = "model.pt"
_MODEL_URI = re.compile(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[^/@]+)|/(?P<version>\d+))$")
_BATCH = 1000  # MLflow's limit of metrics per log_batch call
_clients: dict[str, Any] = {}  # one client per store URI: connecting to SQLite costs ~0.7 s


@dataclass(frozen=True)
class Store:
    """Where tracking goes: ``tracking_uri`` (also the registry), ``artifact_location`` for new
    experiments (None: the server decides), and ``database`` (the local SQLite file, if default)."""

    tracking_uri: str
    artifact_location: str | None
    database: Path | None


@dataclass(frozen=True)
class GenerationRecord:
    """What :func:`log_generation` recorded (all None but ``promoted`` when tracking is off)."""

    run_id: str | None
    model_version: int | None
    promoted: bool
    champion_version: int | None


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


def _client(uri: str):
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # read by mlflow: no calls home
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    client = _clients.get(uri)
    if client is None:
        import logging

        from mlflow import MlflowClient

        # Not its "Creating initial MLflow database tables..." lines on the terminal, in the middle
        # of tri loop's table (a new store is no news; errors still show).
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        client = _clients[uri] = MlflowClient(tracking_uri=uri, registry_uri=uri)
    return client


def _open(root: Path, runtime: Runtime | None, *, create: bool):
    """The client for ``root``'s store, or None when tracking is off. ``create=False`` refuses
    to create a missing local store (a reader must not leave an empty database behind)."""
    runtime = runtime or Runtime()
    if not runtime.tracking:
        return None, None
    s = store(root, runtime)
    if s.database is not None:
        if not create and not s.database.exists():
            raise TriError(f"no MLflow store at {s.database.parent} (log a generation with tracking on, "
                           "or set TRI_MLFLOW_URI)")
        s.database.parent.mkdir(parents=True, exist_ok=True)
    return _client(s.tracking_uri), s


def _experiment_id(client, s: Store, game: str) -> str:
    name = experiment_name(game)
    exp = client.get_experiment_by_name(name)
    if exp is None:
        try:
            return client.create_experiment(name, artifact_location=s.artifact_location)
        except Exception as exc:  # created meanwhile by another process
            if getattr(exc, "error_code", "") != "RESOURCE_ALREADY_EXISTS":
                raise
            exp = client.get_experiment_by_name(name)
    if exp.lifecycle_stage == "deleted":
        client.restore_experiment(exp.experiment_id)
    return exp.experiment_id


# ---- provenance ----------------------------------------------------------------------------


def _project_id(root: Path) -> str:
    return hashlib.sha256(str(root).encode()).hexdigest()[:16]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _git_tags(root: Path) -> dict[str, str]:
    """The project's git commit (and whether tracked files differ from it); nothing if git or the
    repository is missing."""
    def git(*args: str) -> str | None:
        try:
            # --no-optional-locks: never take the index lock (others may be using the repository)
            proc = subprocess.run(["git", "--no-optional-locks", "-C", str(root), *args], capture_output=True,
                                  text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return {}
    dirty = git("status", "--porcelain", "--untracked-files=no")
    tags = {"tri.git.commit": commit, "mlflow.source.git.commit": commit}
    if dirty is not None:
        tags["tri.git.dirty"] = str(bool(dirty)).lower()
    return tags


def _dvc_tags(root: Path) -> dict[str, str]:
    """Hashes of the ``models/`` and ``data/`` inputs of the stages in ``dvc.lock`` (if any)."""
    import yaml

    lock = root / "dvc.lock"
    try:
        text = lock.read_bytes()
        stages = (yaml.safe_load(text) or {}).get("stages", {})
    except (OSError, yaml.YAMLError, AttributeError):
        return {}
    tags = {"tri.dvc.lock_md5": hashlib.md5(text).hexdigest()}
    for stage, body in stages.items() if isinstance(stages, dict) else ():
        for dep in (body or {}).get("deps", []) or []:
            path, digest = dep.get("path", ""), dep.get("md5") or dep.get("etag") or dep.get("checksum")
            if digest and str(path).startswith(("models/", "data/")):
                key = re.sub(r"[^\w./ -]", "_", f"tri.dvc.{stage}.{path}")[:250]
                tags[key] = str(digest)
    return tags


def _base_tags(root: Path, params: Params, kind: str) -> dict[str, str]:
    import tri

    return {"tri.kind": kind, "tri.project": _project_id(root), "tri.root": str(root),
            "tri.version": tri.__version__, "tri.game": params.game.name,
            "tri.seed.net": str(params.net.seed),
            "tri.seed.selfplay": str(params.selfplay.seed), "tri.seed.train": str(params.train.seed),
            "tri.seed.arena": str(params.arena.seed), **_git_tags(root), **_dvc_tags(root)}


def flatten_params(params: Params) -> dict[str, str]:
    """``section.key`` -> value as text. Long values (the triangle's template list) are left
    out: the game config is logged whole as an artifact and identified by ``game.config_sha256``."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
            return
        text = json.dumps(value) if isinstance(value, (list, tuple)) else str(value)
        if len(text) <= 250:
            out[prefix] = text

    data = params.model_dump(mode="json")
    walk("", data)
    game = json.dumps(data["game"], sort_keys=True).encode()
    out["game.config_sha256"] = hashlib.sha256(game).hexdigest()[:16]
    return out


# ---- loops ---------------------------------------------------------------------------------


def start_loop(root: Path, params: Params, *, name: str | None = None, tags: Mapping[str, str] | None = None,
               runtime: Runtime | None = None) -> str | None:
    """Start the parent run of a loop in experiment ``tri-<game>``; returns its id (None when
    tracking is off). Generations logged with ``parent_run_id`` appear under it."""
    root = Path(root).resolve()
    client, s = _open(root, runtime, create=True)
    if client is None:
        return None
    from mlflow.entities import Param

    exp = _experiment_id(client, s, params.game.name)
    run = client.create_run(exp, run_name=name or time.strftime("loop-%Y%m%d-%H%M%S"),
                            tags={**_base_tags(root, params, "loop"), **(tags or {})})
    items = [Param(k, v) for k, v in flatten_params(params).items()]
    for i in range(0, len(items), 100):
        client.log_batch(run.info.run_id, params=items[i:i + 100])
    return run.info.run_id


def end_loop(root: Path, run_id: str | None, status: str = "FINISHED", *,
             runtime: Runtime | None = None) -> None:
    """Close a loop's parent run with ``status`` (FINISHED, FAILED or KILLED); None: no-op."""
    if run_id is None:
        return
    if status not in ("FINISHED", "FAILED", "KILLED"):
        raise TriError(f"run status {status!r}: expected FINISHED, FAILED or KILLED")
    client, _ = _open(Path(root).resolve(), runtime, create=False)
    if client is not None:
        client.set_terminated(run_id, status)


def close_stale_runs(root: Path, *, runtime: Runtime | None = None) -> list[str]:
    """Mark KILLED the runs of this project still RUNNING: left so by a ``tri loop`` that was
    killed (SIGKILL, a power cut) before it could close them. Call with the project lock held,
    so no run of this project is really in flight. Returns the names of the runs closed."""
    root = Path(root).resolve()
    try:
        client, _ = _open(root, runtime, create=False)
    except TriError:  # no store yet: nothing to close
        return []
    if client is None:
        return []
    experiments = [e.experiment_id for e in client.search_experiments(filter_string="name LIKE 'tri-%'")]
    if not experiments:
        return []
    runs = client.search_runs(experiments, filter_string=f"tags.`tri.project` = '{_project_id(root)}' "
                                                         "and attributes.status = 'RUNNING'")
    for run in runs:
        client.set_terminated(run.info.run_id, "KILLED")
    return [run.info.run_name for run in runs]


def log_evaluation(root: Path, params: Params, name: str, metrics: Mapping[str, float], *,
                   artifact: Path | None = None, tags: Mapping[str, str] | None = None,
                   runtime: Runtime | None = None) -> str | None:
    """Record an evaluation (``tri eval``) as a run named ``name`` in experiment ``tri-<game>``,
    with ``metrics`` and the result file ``artifact``. Only into an existing store (a project
    that has tracked generations, or ``TRI_MLFLOW_URI``): an evaluation run from any folder must
    not leave a database behind. Returns the run id, or None when nothing was logged."""
    root = Path(root).resolve()
    try:
        client, s = _open(root, runtime, create=False)
    except TriError:  # no store here: an evaluation does not create one
        return None
    if client is None:  # tracking is off
        return None
    from mlflow.entities import Metric, Param

    exp = _experiment_id(client, s, params.game.name)
    run = client.create_run(exp, run_name=name, tags={**_base_tags(root, params, "eval"), **(tags or {})})
    now = int(time.time() * 1000)
    # MLflow names allow letters, digits and _-. :/ only (an m,n,k row is named "3x3 k=3").
    clean = {re.sub(r"[^A-Za-z0-9_\-. :/]", "_", k): float(v) for k, v in metrics.items()}
    client.log_batch(run.info.run_id, metrics=[Metric(k, v, now, 0) for k, v in clean.items()],
                     params=[Param("player", name[:250])])
    if artifact is not None and Path(artifact).is_file():
        client.log_artifact(run.info.run_id, str(artifact), "eval")
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id


# ---- one generation --------------------------------------------------------------------------


@dataclass
class _Inputs:
    """What the stages of one generation wrote, read once."""

    candidate: Path
    sha256: str
    model_id: str
    arena: Any
    arena_json: bytes
    train: dict[str, Any]
    losses: list[dict[str, str]]
    games: Any  # polars DataFrame or None
    promoted: bool
    fingerprint: str


def _read_inputs(root: Path, params: Params, generation: int) -> _Inputs:
    import csv

    import polars as pl

    from tri.arena import load_result

    candidate = layout.candidate_path(root, generation)
    if not candidate.is_file():
        raise TriError(f"generation {generation}: candidate {candidate} not found")
    arena_file = layout.arena_path(root, generation)
    arena = load_result(arena_file)
    tdir = layout.train_dir(root, generation)
    try:
        train_text = (tdir / "metrics.json").read_text()
        train = json.loads(train_text)
        losses_text = (tdir / "losses.csv").read_text()
    except (OSError, ValueError) as exc:
        raise TriError(f"generation {generation}: training outputs in {tdir} unreadable ({exc})") from None
    losses = list(csv.DictReader(losses_text.splitlines()))
    games_files = sorted(layout.selfplay_dir(root, generation).glob("shard-*.games.parquet"))
    games = pl.concat([pl.read_parquet(p) for p in games_files], how="diagonal_relaxed").sort("game") \
        if games_files else None
    # The decision log says what promotion actually did; the arena's verdict stands in for it
    # when the log has no entry (tracking called between the arena and the promotion).
    promoted = bool(arena.promote)
    log = layout.promotions_log(root)
    if log.exists():
        for line in log.read_text().splitlines():
            entry = json.loads(line) if line.strip() else {}
            if entry.get("generation") == generation:
                promoted = bool(entry.get("promoted"))
    sha = _sha256(candidate)
    h = hashlib.sha256()
    arena_json = arena_file.read_bytes()
    for part in (dump_params(params), sha, arena_json, train_text, losses_text, str(promoted),
                 *(p.read_bytes() for p in games_files)):
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return _Inputs(candidate, sha, str(train.get("model_id", "")), arena, arena_json, train, losses, games,
                   promoted, h.hexdigest()[:32])


def _metrics(inputs: _Inputs, extra: Mapping[str, float], game_players: int) -> list[tuple[str, float, int]]:
    """``(key, value, step)`` of everything the generation measured."""
    out: list[tuple[str, float, int]] = []
    g = inputs.games
    if g is not None and g.height:
        for i, score in zip(g["game"].to_list(), g["score"].to_list()):
            out.append(("selfplay.score", float(score), int(i)))
        positions = int(g["steps"].sum())
        out += [("selfplay.games", g.height, 0), ("selfplay.positions", positions, 0),
                ("selfplay.mean_score", float(g["score"].mean()), 0),
                ("selfplay.max_score", float(g["score"].max()), 0),
                ("selfplay.mean_steps", float(g["steps"].mean()), 0),
                ("selfplay.terminal_fraction", float(g["terminal"].cast(float).mean()), 0)]
        skip = {"game", "seed", "score", "steps", "terminal", "generation", "model_id"}
        for col in g.columns:
            if col not in skip and g[col].dtype.is_numeric() and (col != "outcome" or game_players == 2):
                out.append((f"selfplay.mean_{col}", float(g[col].mean()), 0))
        seconds = extra.get("selfplay.seconds") or extra.get("selfplay_seconds")
        if seconds and not ({"selfplay.positions_per_second", "selfplay_positions_per_second"} & set(extra)):
            out.append(("selfplay.positions_per_second", positions / float(seconds), 0))
    for row in inputs.losses:
        step = int(row["step"])
        out += [(f"train.{k}", float(v), step) for k, v in row.items() if k != "step" and v not in ("", None)]
    t = inputs.train
    for k in ("steps", "window_positions", "new_positions", "seconds"):
        if isinstance(t.get(k), (int, float)):
            out.append((f"train.{k}", float(t[k]), 0))
    for k in ("loss", "policy_loss", "value_loss"):  # train.py: the mean over the last tenth of the steps
        if isinstance(t.get(k), (int, float)):
            out.append((f"train.final_{k}", float(t[k]), 0))
    if t.get("seconds") and t.get("steps"):
        out.append(("train.steps_per_second", t["steps"] / t["seconds"], 0))
    a = inputs.arena
    for who, p in (("candidate", a.a), ("best", a.b)):
        out += [(f"arena.{who}_mean", p.mean, 0), (f"arena.{who}_low", p.low, 0),
                (f"arena.{who}_high", p.high, 0), (f"arena.{who}_mean_steps", p.mean_steps, 0)]
    out += [("arena.games", a.games, 0), ("arena.wins", a.wins, 0), ("arena.ties", a.ties, 0),
            ("arena.losses", a.losses, 0), ("arena.promoted", float(inputs.promoted), 0)]
    if a.paired:
        out += [("arena.diff_mean", a.diff_mean, 0), ("arena.diff_low", a.diff_low, 0),
                ("arena.diff_high", a.diff_high, 0)]
        for i, (sa, sb) in enumerate(zip(a.scores_a, a.scores_b)):
            out += [("arena.candidate_score", sa, i), ("arena.best_score", sb, i)]
    else:
        out.append(("arena.score_rate", a.score_rate, 0))
    out += [(k, float(v), 0) for k, v in extra.items()]
    # MLflow stores NaN but not infinities (an interval of a single game is infinite).
    return [(k, float(v), s) for k, v, s in out if not math.isinf(float(v))]


def arena_markdown(result, generation: int | None = None) -> str:
    """The arena result as a Markdown table (what ``tri arena`` prints)."""
    head = f"# Arena{f', generation {generation}' if generation is not None else ''}: {result.game}\n\n"
    if result.paired:
        rows = ["| player | mean score | 95% interval | mean steps |", "| --- | ---: | ---: | ---: |"]
    else:
        rows = ["| player | score rate | 95% interval | mean steps |", "| --- | ---: | ---: | ---: |"]
    for who, p in (("candidate", result.a), ("best", result.b)):
        rows.append(f"| {who}: `{p.name}` | {p.mean:.3f} | [{p.low:.3f}, {p.high:.3f}] "
                    f"| {p.mean_steps:.1f} |")
    lines = [head + "\n".join(rows), ""]
    if result.paired:
        lines.append(f"{result.games} paired seeds; difference candidate - best: {result.diff_mean:+.3f} "
                     f"[{result.diff_low:+.3f}, {result.diff_high:+.3f}]; seeds won / tied / lost: "
                     f"{result.wins} / {result.ties} / {result.losses}")
    else:
        lines.append(f"{result.games} games; wins / draws / losses: "
                     f"{result.wins} / {result.ties} / {result.losses}")
    lines.append(f"rule: {result.rule}; decision: {'promote' if result.promote else 'keep the best'}")
    return "\n".join(lines) + "\n"


def _stage_artifacts(folder: Path, root: Path, params: Params, generation: int, inputs: _Inputs,
                     game) -> None:
    """Everything a generation's run keeps, laid out in ``folder``."""
    from tri.record import report

    ck = folder / CHECKPOINT_DIR
    ck.mkdir(parents=True)
    shutil.copyfile(inputs.candidate, ck / CHECKPOINT_FILE)
    (ck / "tri-checkpoint.json").write_text(json.dumps({
        "format": "tri checkpoint: torch.save dict of tensors; load with tri.net.load_checkpoint "
                  "(torch.load weights_only=True)",
        "file": CHECKPOINT_FILE, "sha256": inputs.sha256, "model_id": inputs.model_id,
        "game": params.game.name, "generation": generation}, indent=2) + "\n")
    (folder / "params").mkdir()
    (folder / "params" / "params.yaml").write_text(dump_params(params))
    game_json = json.dumps(params.game.model_dump(mode="json"), indent=1)
    (folder / "params" / "game.json").write_text(game_json + "\n")
    (folder / "arena").mkdir()
    (folder / "arena" / "arena.json").write_bytes(inputs.arena_json)
    (folder / "arena" / "arena.md").write_text(arena_markdown(inputs.arena, generation))
    (folder / "train").mkdir()
    for name in ("metrics.json", "losses.csv"):
        shutil.copyfile(layout.train_dir(root, generation) / name, folder / "train" / name)
    points = [p for p in report.learning_curve(root) if p.generation <= generation]
    (folder / "plots").mkdir()
    if points:
        report.plot(points, folder / "plots" / "learning-curve.png")
    (folder / "game").mkdir()
    from tri.record.render import render_game

    if render_game(params, inputs.candidate, folder / "game" / "candidate-game.png", generation=generation,
                   game=game) is None:
        (folder / "game" / "NOTE.txt").write_text(f"no picture: tri cannot draw {params.game.name} boards\n")


def _find_runs(client, exp: str, project: str, generation: int) -> list:
    from mlflow.entities import ViewType

    return client.search_runs([exp], f"tags.`tri.project` = '{project}' and tags.`tri.kind` = 'generation' "
                                     f"and tags.`tri.generation` = '{generation}'",
                              run_view_type=ViewType.ACTIVE_ONLY, max_results=100)


def _versions(client, name: str, project: str) -> list:
    return [v for v in client.search_model_versions(f"name='{name}'") if v.tags.get("tri.project") == project]


def _ensure_model(client, name: str) -> None:
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


def _update_champion(client, name: str, project: str) -> int | None:
    """Point ``champion`` at this project's latest promoted candidate; returns its version."""
    versions = [v for v in _versions(client, name, project)
                if v.tags.get("promoted") == "true" and v.tags.get("tri.superseded") != "true"]
    if not versions:
        return None
    best = max(versions, key=lambda v: (int(v.tags.get("generation", -1)), int(v.version)))
    try:
        current = client.get_model_version_by_alias(name, CHAMPION).version
    except Exception:
        current = None
    if str(current) != str(best.version):
        client.set_registered_model_alias(name, CHAMPION, best.version)
    return int(best.version)


def log_generation(root: Path, params: Params, generation: int, *, parent_run_id: str | None = None,
                   tags: Mapping[str, str] | None = None, metrics: Mapping[str, float] | None = None,
                   runtime: Runtime | None = None) -> GenerationRecord:
    """Record generation ``generation`` of the project ``root`` from its files (after the arena,
    ideally after the promotion): a run named ``gen-NNNN`` in experiment ``tri-<game>`` (under
    ``parent_run_id`` if given), and a version of the registered model ``tri-<game>`` for the
    candidate; ``champion`` moves to the latest promoted candidate. ``metrics``: extra numbers
    the caller measured, logged as given (``selfplay.seconds`` or ``selfplay_seconds`` also gives
    positions per second, the files having no timings).

    Idempotent: if a complete run with the same inputs exists it is reused (only its parent
    tag and the alias are refreshed); a run that was interrupted while logging is replaced, and
    one whose files have changed since is replaced and its version tagged ``tri.superseded``.
    Raises :class:`TriError` if the generation's files are missing.
    """
    root = Path(root).resolve()
    inputs = _read_inputs(root, params, generation)
    client, s = _open(root, runtime, create=True)
    if client is None:
        return GenerationRecord(None, None, inputs.promoted, None)
    from mlflow.entities import Metric, Param, RunTag

    from tri.games import make_game

    project, name, game = _project_id(root), model_name(params.game.name), make_game(params.game)
    exp = _experiment_id(client, s, params.game.name)
    _ensure_model(client, name)
    for old in _find_runs(client, exp, project, generation):
        complete = old.data.tags.get("tri.logged") == "true"
        if complete and old.data.tags.get("tri.fingerprint") == inputs.fingerprint:
            if parent_run_id and old.data.tags.get("mlflow.parentRunId") != parent_run_id:
                client.set_tag(old.info.run_id, "mlflow.parentRunId", parent_run_id)
            mine = client.search_model_versions(f"name='{name}' and run_id='{old.info.run_id}'")
            version = max((int(v.version) for v in mine), default=None)
            champion = _update_champion(client, name, project)
            return GenerationRecord(old.info.run_id, version, inputs.promoted, champion)
        for v in client.search_model_versions(f"name='{name}' and run_id='{old.info.run_id}'"):
            if complete:  # a version of record whose files were since replaced
                client.set_model_version_tag(name, v.version, "tri.superseded", "true")
            else:  # never announced: its run did not finish logging
                client.delete_model_version(name, v.version)
        client.delete_run(old.info.run_id)

    run_tags = {**_base_tags(root, params, "generation"), "tri.generation": str(generation),
                "tri.model_id": inputs.model_id, "tri.candidate_sha256": inputs.sha256,
                "tri.fingerprint": inputs.fingerprint, "tri.promoted": str(inputs.promoted).lower(),
                "tri.logged": "false", **(tags or {})}
    if parent_run_id:
        run_tags["mlflow.parentRunId"] = parent_run_id
    run = client.create_run(exp, run_name=f"gen-{generation:04d}", tags=run_tags)
    run_id = run.info.run_id
    try:
        now = int(time.time() * 1000)
        values = [Metric(k, v, now, step) for k, v, step in _metrics(inputs, metrics or {}, game.num_players)]
        items = [Param(k, v) for k, v in flatten_params(params).items()]
        for i in range(0, len(items), 100):
            client.log_batch(run_id, params=items[i:i + 100])
        for i in range(0, len(values), _BATCH):
            client.log_batch(run_id, metrics=values[i:i + _BATCH])
        staging = root / STORE_DIR / "staging" / uuid.uuid4().hex
        try:
            _stage_artifacts(staging, root, params, generation, inputs, game)
            client.log_artifacts(run_id, str(staging))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        a = inputs.arena
        version_tags = {"generation": str(generation), "promoted": str(inputs.promoted).lower(),
                        "candidate_mean": f"{a.a.mean:.6g}", "best_mean": f"{a.b.mean:.6g}",
                        "tri.project": project, "tri.root": str(root), "tri.model_id": inputs.model_id,
                        "tri.sha256": inputs.sha256}
        if a.paired:
            version_tags |= {"diff_mean": f"{a.diff_mean:.6g}", "diff_low": f"{a.diff_low:.6g}",
                             "diff_high": f"{a.diff_high:.6g}"}
            result = f"paired difference {a.diff_mean:+.4g} [{a.diff_low:+.4g}, {a.diff_high:+.4g}]"
        else:
            version_tags["score_rate"] = f"{a.score_rate:.6g}"
            result = f"score rate {a.score_rate:.4g}"
        mv = client.create_model_version(
            name, source=f"{run.info.artifact_uri}/{CHECKPOINT_DIR}", run_id=run_id, tags=version_tags,
            await_creation_for=0,
            description=f"generation {generation} candidate: {result} against the best ({a.rule}): "
                        f"{'promoted' if inputs.promoted else 'not promoted'}")
        champion = _update_champion(client, name, project)
        if parent_run_id:
            summary = [("gen.selfplay_mean_score", "selfplay.mean_score"),
                       ("gen.train_loss", "train.final_loss"),
                       ("gen.candidate_mean", "arena.candidate_mean"), ("gen.best_mean", "arena.best_mean"),
                       ("gen.diff_mean", "arena.diff_mean"), ("gen.promoted", "arena.promoted")]
            latest = {m.key: m.value for m in values if m.step == 0}
            client.log_batch(parent_run_id, metrics=[Metric(k, latest[src], now, generation)
                                                     for k, src in summary if src in latest])
        client.log_batch(run_id, tags=[RunTag("tri.logged", "true")])
        client.set_terminated(run_id, "FINISHED")
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise
    return GenerationRecord(run_id, int(mv.version), inputs.promoted, champion)


# ---- reading models back ---------------------------------------------------------------------


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
        client, s = _open(root, runtime, create=False)
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
    final = root / STORE_DIR / "cache" / name / str(mv.version)
    path = final / CHECKPOINT_FILE
    expected = mv.tags.get("tri.sha256")
    if path.is_file() and (expected is None or _sha256(path) == expected):
        return path
    tmp = final.parent / f".{mv.version}.{uuid.uuid4().hex}.tmp"
    tmp.mkdir(parents=True)
    try:
        local = _download(client, mv, tmp)
        got = Path(local) / CHECKPOINT_FILE
        if not got.is_file():
            raise TriError(f"model {uri!r}: version {mv.version} has no "
                           f"{CHECKPOINT_DIR}/{CHECKPOINT_FILE} (not a tri model)")
        if expected is not None and _sha256(got) != expected:
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
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    return get_artifact_repository(mv.source).download_artifacts("", str(dst))


# ---- a picture of a game ---------------------------------------------------------------------
