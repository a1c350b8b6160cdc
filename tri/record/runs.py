"""What tri logs to MLflow: one experiment ``tri-<game>`` per game (store: :mod:`tri.record.mlstore`).

- :func:`start_loop` / :func:`end_loop`: a parent run per loop; :func:`close_stale_runs` closes
  the runs a killed loop left RUNNING. Each generation logged under it adds a point (step =
  generation) to its curves (self-play mean score, losses, arena means, timings) and refreshes
  its artifacts: the learning curve and the table of the project's generations so far.
- :func:`log_generation`: one run per generation from the files its stages wrote (the paths of
  :func:`tri.layout.generation_paths`): params, self-play, training and arena metrics, artifacts
  (checkpoint, learning curve, arena table, the picture of a game the flow drew), provenance
  tags (with the device and the number formats ``precision: auto`` resolved to); the run starts
  and ends when the generation did (given by the flow). Metric names are
  sectioned for MLflow's charts (:mod:`tri.record.outputs`). The candidate becomes a version of
  the registered model ``tri-<game>``; the latest promoted one carries the alias ``champion``
  (:mod:`tri.record.registry`). Calling it again for the same generation and files changes
  nothing (a retried flow).
- :func:`log_evaluation`: a run per ``tri eval``.

Recording only: nothing here plays a game or imports a stage; it logs the files it is given.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tri import layout
from tri.config import Params, Runtime
from tri.errors import TriError
from tri.games import make_game
from tri.record import mlstore, outputs, registry, report
from tri.record.provenance import base_tags, flatten_params, project_id

run_link = mlstore.run_link  # the address of a run in the MLflow UI (the flow links it from Prefect)
_BATCH = 1000  # MLflow's limit of metrics per log_batch call
_PARAMS_BATCH = 100  # and of params
# The curves of a loop's run: these numbers of each generation (step = generation), when measured.
LOOP_CURVES = (outputs.MEAN_SCORE, outputs.FINAL_LOSS, f"{outputs.TRAINING}/final policy loss",
               f"{outputs.TRAINING}/final value loss", outputs.CANDIDATE_MEAN, outputs.BEST_MEAN,
               outputs.DIFFERENCE, outputs.SCORE_RATE, outputs.PROMOTED, outputs.GENERATION_SECONDS,
               outputs.POSITIONS_PER_SECOND)
TABLE = ("generation", "self-play mean", "loss", "candidate", "best", "promoted")


@dataclass(frozen=True)
class GenerationRecord:
    """What :func:`log_generation` recorded (all None but ``promoted`` when tracking is off)."""

    run_id: str | None
    model_version: int | None
    promoted: bool
    champion_version: int | None


def precision_tags(params: Params, runtime: Runtime | None = None) -> dict[str, str]:
    """The device a run's stages use (``TRI_DEVICE`` resolved) and the number formats ``auto``
    resolves to there: ``mcts.precision`` and ``train.precision`` as run, which the params alone
    do not say (bfloat16 where the hardware computes it natively, else float32)."""
    from tri.device import resolve_device, resolve_precision  # torch: loaded by every stage anyway

    device = resolve_device((runtime or Runtime()).device)
    return {"tri.device": device, "tri.precision.search": resolve_precision(params.mcts.precision, device),
            "tri.precision.train": resolve_precision(params.train.precision, device)}


def _log_params(client, run_id: str, params: Params) -> None:
    # mlflow takes about 2 s to import: only when tracking is on (a client exists).
    from mlflow.entities import Param

    items = [Param(k, v) for k, v in flatten_params(params).items()]
    for i in range(0, len(items), _PARAMS_BATCH):
        client.log_batch(run_id, params=items[i:i + _PARAMS_BATCH])


# ---- loops and evaluations ---------------------------------------------------------------------


def start_loop(root: Path, params: Params, *, name: str | None = None, tags: Mapping[str, str] | None = None,
               runtime: Runtime | None = None) -> str | None:
    """Start the parent run of a loop in experiment ``tri-<game>``; returns its id (None when
    tracking is off). Generations logged with ``parent_run_id`` appear under it."""
    root = Path(root).resolve()
    client, s = mlstore.open_store(root, runtime, create=True)
    if client is None:
        return None
    exp = mlstore.experiment_id(client, s, params.game.name)
    run = client.create_run(exp, run_name=name or time.strftime("loop-%Y%m%d-%H%M%S"),
                            tags={**base_tags(root, params, "loop"), **precision_tags(params, runtime),
                                  **(tags or {})})
    _log_params(client, run.info.run_id, params)
    return run.info.run_id


def end_loop(root: Path, run_id: str | None, status: str = "FINISHED", *,
             runtime: Runtime | None = None) -> None:
    """Close a loop's parent run with ``status`` (FINISHED, FAILED or KILLED); None: no-op."""
    if run_id is None:
        return
    if status not in ("FINISHED", "FAILED", "KILLED"):
        raise TriError(f"run status {status!r}: expected FINISHED, FAILED or KILLED")
    client, _ = mlstore.open_store(Path(root).resolve(), runtime, create=False)
    if client is not None:
        client.set_terminated(run_id, status)  # first: the status matters more than the description
        client.set_tag(run_id, "mlflow.note.content", _loop_summary(client, run_id, status))


def _loop_summary(client, run_id: str, status: str) -> str:
    """A loop run's description: the generations recorded under it, the promoted ones, how it ended."""
    exp = client.get_run(run_id).info.experiment_id
    rows = _generations(client, exp, f"tags.`mlflow.parentRunId` = '{run_id}'")
    ended = {"FINISHED": "ended", "KILLED": "was stopped", "FAILED": "failed"}[status]
    if not rows:
        return f"No generation recorded; the loop {ended}.\n"
    promoted = [f"gen-{r['generation']:04d}" for r in rows if r["promoted"]]
    return (f"**{len(rows)} generation{'s' if len(rows) > 1 else ''}** recorded (gen-{rows[0]['generation']:04d} "
            f"to gen-{rows[-1]['generation']:04d}), {len(promoted)} promoted"
            f"{(': ' + ', '.join(promoted)) if promoted else ''}; the loop {ended}. Curves: Model metrics; "
            f"every generation of the project: Artifacts, generations.md.\n")


def close_stale_runs(root: Path, *, runtime: Runtime | None = None) -> list[str]:
    """Mark KILLED the runs of this project still RUNNING: left so by a ``tri loop`` that was
    killed (SIGKILL, a power cut) before it could close them. Call with the project lock held,
    so no run of this project is really in flight. Returns the names of the runs closed."""
    root = Path(root).resolve()
    try:
        client, _ = mlstore.open_store(root, runtime, create=False)
    except TriError:  # no store yet: nothing to close
        return []
    if client is None:
        return []
    experiments = [e.experiment_id for e in client.search_experiments(filter_string="name LIKE 'tri-%'")]
    if not experiments:
        return []
    runs = client.search_runs(experiments, filter_string=f"tags.`tri.project` = '{project_id(root)}' "
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
        client, s = mlstore.open_store(root, runtime, create=False)
    except TriError:  # no store here: an evaluation does not create one
        return None
    if client is None:  # tracking is off
        return None
    from mlflow.entities import Metric, Param  # mlflow: ~2 s to import, only with a store

    exp = mlstore.experiment_id(client, s, params.game.name)
    run = client.create_run(exp, run_name=name, tags={**base_tags(root, params, "eval"),
                                                      **precision_tags(params, runtime), **(tags or {})})
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


def _find_runs(client, exp: str, project: str, generation: int) -> list:
    from mlflow.entities import ViewType  # mlflow: ~2 s to import, only with a store

    return client.search_runs([exp], f"tags.`tri.project` = '{project}' and tags.`tri.kind` = 'generation' "
                                     f"and tags.`tri.generation` = '{generation}'",
                              run_view_type=ViewType.ACTIVE_ONLY, max_results=100)


def _reuse_or_replace(client, exp: str, name: str, project: str, generation: int, inputs: outputs.Inputs,
                      parent_run_id: str | None) -> GenerationRecord | None:
    """The record of a complete earlier run of this generation with the same inputs (its parent
    tag and the alias refreshed; a new parent gets its point on the loop's curves), or None after
    deleting the runs that do not qualify: one interrupted while logging (its version withdrawn),
    or one whose files changed since (its version tagged ``tri.superseded``)."""
    for old in _find_runs(client, exp, project, generation):
        complete = old.data.tags.get("tri.logged") == "true"
        if complete and old.data.tags.get("tri.fingerprint") == inputs.fingerprint:
            if parent_run_id and old.data.tags.get("mlflow.parentRunId") != parent_run_id:
                client.set_tag(old.info.run_id, "mlflow.parentRunId", parent_run_id)
                _summarize_in_parent(client, parent_run_id, old.data.metrics, generation,
                                     old.info.end_time or int(time.time() * 1000))
            mine = client.search_model_versions(f"name='{name}' and run_id='{old.info.run_id}'")
            version = max((int(v.version) for v in mine), default=None)
            champion = registry.update_champion(client, name, project)
            return GenerationRecord(old.info.run_id, version, inputs.promoted, champion)
        for v in client.search_model_versions(f"name='{name}' and run_id='{old.info.run_id}'"):
            if complete:  # a version of record whose files were since replaced
                client.set_model_version_tag(name, v.version, "tri.superseded", "true")
            else:  # never announced: its run did not finish logging
                client.delete_model_version(name, v.version)
        client.delete_run(old.info.run_id)
    return None


def _register(client, name: str, run, paths: layout.GenerationPaths, project: str, inputs: outputs.Inputs):
    """The candidate as a new version of the registered model ``name``, tagged with its result."""
    a, generation = inputs.arena, paths.generation
    version_tags = {"generation": str(generation), "promoted": str(inputs.promoted).lower(),
                    "candidate_mean": f"{a.a.mean:.6g}", "best_mean": f"{a.b.mean:.6g}",
                    "tri.project": project, "tri.model_id": inputs.model_id,
                    "tri.sha256": inputs.sha256}
    if a.paired:
        version_tags |= {"diff_mean": f"{a.diff_mean:.6g}", "diff_low": f"{a.diff_low:.6g}",
                         "diff_high": f"{a.diff_high:.6g}"}
        result = f"paired difference {a.diff_mean:+.4g} [{a.diff_low:+.4g}, {a.diff_high:+.4g}]"
    else:
        version_tags["score_rate"] = f"{a.score_rate:.6g}"
        result = f"score rate {a.score_rate:.4g}"
    return client.create_model_version(
        name, source=f"{run.info.artifact_uri}/{registry.CHECKPOINT_DIR}", run_id=run.info.run_id,
        tags=version_tags, await_creation_for=0,
        description=f"generation {generation} candidate: {result} against the best ({a.rule}): "
                    f"{'promoted' if inputs.promoted else 'not promoted'}")


def _summarize_in_parent(client, parent_run_id: str, latest: Mapping[str, float], generation: int,
                         stamp: int) -> None:
    """The generation's headline numbers (``latest``: its run's metrics) as points (step =
    generation) of the loop's run, under the same names."""
    from mlflow.entities import Metric  # mlflow: ~2 s to import, only with a store

    points = [Metric(k, v, stamp, generation) for k in LOOP_CURVES
              if (v := outputs.read_metric(latest, k)) is not None]
    if points:
        client.log_batch(parent_run_id, metrics=points)


def _generations(client, exp: str, where: str) -> list[dict]:
    """A row (:data:`TABLE`) per generation recorded by the runs ``where`` selects (an MLflow
    filter: a project's, or a loop's children), in generation order."""
    found = client.search_runs([exp], f"{where} and tags.`tri.kind` = 'generation' and tags.`tri.logged` = 'true'",
                               max_results=50_000)
    rows: dict[int, dict] = {}
    for run in sorted(found, key=lambda r: r.info.start_time or 0):  # the latest record of a generation wins
        m, g = run.data.metrics, int(run.data.tags.get("tri.generation", -1))
        promoted = run.data.tags.get("tri.promoted")
        rows[g] = dict(zip(TABLE, (g, outputs.read_metric(m, outputs.MEAN_SCORE),
                                   outputs.read_metric(m, outputs.FINAL_LOSS),
                                   outputs.read_metric(m, outputs.CANDIDATE_MEAN),
                                   outputs.read_metric(m, outputs.BEST_MEAN),
                                   None if promoted is None else promoted == "true")))
    return [rows[g] for g in sorted(rows)]


def _cell(value, markdown: bool) -> str:
    if value is None:
        return "-" if markdown else ""
    if isinstance(value, bool):
        return ("yes" if value else "no") if markdown else str(value).lower()
    return str(value) if isinstance(value, int) else f"{value:.4g}" if markdown else f"{value:.6g}"


def generations_markdown(rows: list[dict]) -> str:
    lines = ["# Generations", "", "| " + " | ".join(TABLE) + " |", "| ---: | ---: | ---: | ---: | ---: | :---: |"]
    lines += ["| " + " | ".join(_cell(r[k], True) for k in TABLE) + " |" for r in rows]
    lines += ["", ("self-play mean: mean score of the self-play games; loss: training's final loss; candidate, "
                   "best: the arena's mean scores; promoted: the candidate became the best model.")]
    return "\n".join(lines) + "\n"


def generations_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([k.replace(" ", "_").replace("-", "") for k in TABLE])
    writer.writerows([[_cell(r[k], False) for k in TABLE] for r in rows])
    return out.getvalue()


def _refresh_parent(client, parent_run_id: str, exp: str, project: str, root: Path, generation: int,
                    curve: Path | None) -> None:
    """The loop's artifacts: ``learning-curve.png`` (``curve`` if it was drawn up to the latest
    generation, else drawn here) and the table of generations, ``generations.md`` and ``.csv``."""
    folder = root / mlstore.STORE_DIR / "staging" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    try:
        rows = _generations(client, exp, f"tags.`tri.project` = '{project}'")
        (folder / "generations.md").write_text(generations_markdown(rows))
        (folder / "generations.csv").write_text(generations_csv(rows))
        points = report.learning_curve(root)
        if curve is not None and curve.is_file() and points and points[-1].generation <= generation:
            shutil.copyfile(curve, folder / "learning-curve.png")
        elif points:
            report.plot(points, folder / "learning-curve.png")
        client.log_artifacts(parent_run_id, str(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def log_generation(params: Params, paths: layout.GenerationPaths, *, parent_run_id: str | None = None,
                   tags: Mapping[str, str] | None = None, metrics: Mapping[str, float] | None = None,
                   start_time_ms: int | None = None, end_time_ms: int | None = None,
                   runtime: Runtime | None = None) -> GenerationRecord:
    """Record generation ``paths.generation`` of the project ``paths.root`` from its files (after
    the arena, ideally after the promotion): a run named ``gen-NNNN`` in experiment ``tri-<game>``
    (under ``parent_run_id`` if given), and a version of the registered model ``tri-<game>`` for
    the candidate; ``champion`` moves to the latest promoted candidate. ``metrics``: extra numbers
    the caller measured (named by :func:`tri.record.outputs.extra_name`; ``selfplay.seconds`` or
    ``selfplay_seconds`` also gives positions per second, the files having no timings).
    ``paths.picture``, if the flow drew it, is logged as the candidate's game. ``start_time_ms``,
    ``end_time_ms``: when the generation started and ended (epoch milliseconds; default: while
    it is logged), the run's start and end. Under a loop's run, the generation adds its points
    to the loop's curves and refreshes the loop's learning curve and table of generations.

    Idempotent: if a complete run with the same inputs exists it is reused (only its parent
    tag, the loop's artifacts and the alias are refreshed); a run that was interrupted while
    logging is replaced, and one whose files have changed since is replaced and its version
    tagged ``tri.superseded``. Raises :class:`TriError` if the generation's files are missing.
    """
    root, generation = Path(paths.root).resolve(), paths.generation
    inputs = outputs.read_inputs(params, paths)
    client, s = mlstore.open_store(root, runtime, create=True)
    if client is None:
        return GenerationRecord(None, None, inputs.promoted, None)
    from mlflow.entities import Metric, RunTag  # mlflow: ~2 s to import, only with a store

    project, name = project_id(root), mlstore.model_name(params.game.name)
    players = make_game(params.game).num_players
    exp = mlstore.experiment_id(client, s, params.game.name)
    registry.ensure_model(client, name)
    kept = _reuse_or_replace(client, exp, name, project, generation, inputs, parent_run_id)
    if kept is not None:
        if parent_run_id:
            _refresh_parent(client, parent_run_id, exp, project, root, generation, None)
        return kept
    run_tags = {**base_tags(root, params, "generation"), **precision_tags(params, runtime),
                "tri.generation": str(generation),
                "tri.model_id": inputs.model_id, "tri.candidate_sha256": inputs.sha256,
                "tri.fingerprint": inputs.fingerprint, "tri.promoted": str(inputs.promoted).lower(),
                "tri.logged": "false", "mlflow.note.content": outputs.summary(params, paths, inputs),
                **(tags or {})}
    if parent_run_id:
        run_tags["mlflow.parentRunId"] = parent_run_id
    run = client.create_run(exp, run_name=f"gen-{generation:04d}", tags=run_tags, start_time=start_time_ms)
    run_id = run.info.run_id
    staging = root / mlstore.STORE_DIR / "staging" / uuid.uuid4().hex
    try:
        try:
            stamp = end_time_ms or int(time.time() * 1000)
            values = [Metric(k, v, stamp, step) for k, v, step in outputs.metrics(inputs, metrics or {}, players)]
            _log_params(client, run_id, params)
            for i in range(0, len(values), _BATCH):
                client.log_batch(run_id, metrics=values[i:i + _BATCH])
            outputs.stage_artifacts(staging, params, paths, inputs)
            client.log_artifacts(run_id, str(staging))
            mv = _register(client, name, run, paths, project, inputs)
            champion = registry.update_champion(client, name, project)
            if parent_run_id:
                _summarize_in_parent(client, parent_run_id, {m.key: m.value for m in values if m.step == 0},
                                     generation, stamp)
            client.log_batch(run_id, tags=[RunTag("tri.logged", "true")])
            client.set_terminated(run_id, "FINISHED", end_time=end_time_ms)
        except BaseException:
            client.set_terminated(run_id, "FAILED")
            raise
        if parent_run_id:
            _refresh_parent(client, parent_run_id, exp, project, root, generation,
                            staging / "plots" / "learning-curve.png")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return GenerationRecord(run_id, int(mv.version), inputs.promoted, champion)
