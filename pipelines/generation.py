"""One generation as one Prefect flow run: self-play (one task per shard, through the configured
task runner), train, arena against the best, promote, commit, draw the candidate's game, record.

The tasks call the same stage functions as the ``tri`` commands that ``dvc.yaml`` runs, with the
same inputs, so the files are the same bytes whichever ran them; :mod:`tri.record.versioning` then
makes ``dvc.lock`` describe the run and commits it. Tasks pass paths and small results, never
networks: every path comes from :func:`tri.layout.generation_paths`, and params are read once
per generation and passed down. Shard tasks retry; a shard already complete with the same inputs is kept, so a
retried or resumed generation does not play it again. A project lock refuses a second
generation on the same project.

Call :func:`tri.record.stores.configure` before importing this module (the CLI and ``tri serve`` do),
so Prefect's state lives in the project.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.futures import wait

from pipelines import processes
from pipelines.runners import make_task_runner
from tri import arena, atomic, layout, promote, selfplay, train
from tri.config import Params, Runtime, project_params
from tri.device import resolve_device
from tri.episodes import Stopped
from tri.games import make_game
from tri.net import initial_checkpoint, save_checkpoint
from tri.record import render, runs, versioning

# The phases spent in the stage functions (the rest of a generation's time is orchestration).
STAGE_PHASES = ("selfplay", "train", "arena", "promote", "picture")


@dataclass(frozen=True)
class GenerationResult:
    """What a generation did (returned by the flow; logged to MLflow by :mod:`tri.record.runs`)."""

    generation: int
    selfplay_games: int
    selfplay_positions: int
    selfplay_mean_score: float
    selfplay_positions_per_second: float
    train_steps: int
    train_loss: float
    candidate_mean: float
    best_mean: float
    diff_low: float
    promoted: bool
    seconds: float
    stage_seconds: float  # time inside the stage functions (STAGE_PHASES); the rest is orchestration
    commit: str | None = None
    mlflow_run_id: str | None = None
    model_version: str | None = None
    phases: dict[str, float] | None = None  # seconds per phase: plan, selfplay, ..., picture, mlflow

    @property
    def overhead(self) -> float:
        return 1.0 - self.stage_seconds / self.seconds if self.seconds > 0 else 0.0


class _Clock:
    """``with clock("name"):`` adds the block's wall time to ``phases["name"]``."""

    def __init__(self, phases: dict[str, float]):
        self.phases = phases

    @contextmanager
    def __call__(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t0


# Self-play folder -> the event its generation sets when it is being stopped. Shards running in
# this process's threads (the thread runner) poll it between moves: Python cannot interrupt a
# thread, and Prefect's thread pool waits for every running task before a stopped flow can end.
# Shards in worker processes are stopped with the processes (:func:`pipelines.processes.stop_workers`).
_stops: dict[str, threading.Event] = {}


def _retry_unless_stopped(task, task_run, state) -> bool:
    """Retry a failed shard, but not one its generation stopped."""
    try:
        state.result()
    except Stopped:
        return False
    except BaseException:
        return True
    return True


@task(name="selfplay-shard", retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_unless_stopped,
      task_run_name="selfplay shard {task.shard}")
def selfplay_shard(task):
    from pipelines import generation  # by name: the process runner pickles this function by value
    from tri.selfplay import play_shard_alone  # (and so, by name, what it calls)

    stop = generation._stops.get(task.out)  # None in another process
    return play_shard_alone(task, stop=stop.is_set if stop is not None else None)


def _play_shards(tasks) -> list:
    """Submit one task per shard and wait for all; if the wait is interrupted (Ctrl-C, SIGTERM),
    stop the shards in flight at once, wherever they run, before the interruption goes on."""
    stop = threading.Event()
    for t in tasks:
        _stops[t.out] = stop
    try:
        futures = selfplay_shard.map(tasks)
        # In short waits: a signal may be delivered to any thread, and Python runs its handler
        # only once the main thread wakes up, which a wait without timeout does at the end.
        while wait(futures, timeout=0.25).not_done:
            pass
    except BaseException:
        stop.set()
        processes.stop_workers(grace=5)
        raise
    for t in tasks:
        _stops.pop(t.out, None)
    return [f.result() for f in futures]


@task(name="train")
def train_task(params: Params, paths: layout.GenerationPaths, runtime: Runtime):
    return train.run(params, paths.start, list(paths.window), paths.candidate, generation=paths.generation,
                     metrics=paths.train_metrics, losses=paths.train_losses, runtime=runtime, progress=False)


@task(name="arena")
def arena_task(params: Params, paths: layout.GenerationPaths, runtime: Runtime):
    # The players named by role in the file, as dvc.yaml's command names them.
    return arena.run(params, str(paths.candidate), str(paths.player), generation=paths.generation,
                     out=paths.arena, runtime=runtime, labels=("candidate", "best"))


@task(name="picture")
def picture_task(params: Params, paths: layout.GenerationPaths, device: str) -> Path | None:
    """Draw a game the candidate plays into ``paths.picture`` (for people, and for the run's
    record); None, and no file there, for a game tri cannot draw."""
    drawn = render.render_game(params, paths.candidate, paths.picture, generation=paths.generation,
                               device=device)
    if drawn is None:
        paths.picture.unlink(missing_ok=True)  # not a picture of another run's game
    return drawn


@task(name="promote")
def promote_task(paths: layout.GenerationPaths):
    return promote.run(paths.arena, paths.candidate, paths.best, rejected=paths.rejected,
                       log=paths.promotions, generation=paths.generation)


@task(name="track", retries=1)
def track_task(params: Params, paths: layout.GenerationPaths, parent_run_id: str | None,
               extra: dict[str, float]):
    return runs.log_generation(params, paths, parent_run_id=parent_run_id, metrics=extra)


def ensure_initial(params: Params, root: Path) -> Path:
    """Generation 0 (a fresh network, as the ``init`` stage writes it) and the best model."""
    initial = layout.model_path(root, 0)
    if not initial.exists():
        save_checkpoint(initial_checkpoint(make_game(params.game), params.net), initial)
    best = layout.best_path(root)
    if not best.exists():
        atomic.copy(initial, best)
    return best


def _extra_metrics(sp, tr, start: float, phases: dict[str, float]) -> dict[str, float]:
    """What the flow measured beyond the files, for the generation's MLflow run."""
    # Self-play throughput only if something was played (not all reused after an interruption).
    played = {"selfplay_seconds": sp.seconds, "selfplay_positions_per_second": sp.positions_per_second}
    return {**(played if sp.played else {}), "train_seconds": tr.seconds,
            "generation_seconds": time.perf_counter() - start, **{f"time_{k}": v for k, v in phases.items()}}


def run_generation(root: Path, params_file: str | None = None, parent_run_id: str | None = None) -> GenerationResult:
    """The body of :func:`generation_flow` (call it inside a flow: it submits tasks). Params
    are read once here and passed to every task with the generation's paths."""
    logger = get_run_logger()
    root = Path(root).resolve()
    versioning.check_params_file(root, params_file)
    params = project_params(root, params_file)
    runtime = Runtime()
    device = resolve_device(runtime.device)
    start = time.perf_counter()
    phases: dict[str, float] = {}
    clock = _Clock(phases)
    with versioning.project_lock(root):
        with clock("plan"):
            generation = versioning.next_generation(root)
            plan = versioning.begin(params, root, generation)
            ensure_initial(params, root)
            paths = layout.generation_paths(root, generation, player=plan.player, start=plan.start,
                                            window=params.train.window)
        logger.info("generation %d: %s plays, training starts from %s", generation, plan.player, plan.start)

        with clock("selfplay"):
            t0 = time.perf_counter()
            tasks = selfplay.shard_tasks(params, paths.player, paths.selfplay, generation=generation,
                                         device=device)
            sp = selfplay.summarize(tasks, _play_shards(tasks), time.perf_counter() - t0)
        with clock("train"):
            tr = train_task(params, paths, runtime)
        with clock("arena"):
            ar = arena_task(params, paths, runtime)
        with clock("dvc_record"):
            versioning.record(root)  # dvc.lock now describes the stages that ran
        with clock("promote"):
            pr = promote_task(paths)
        decision = "promoted" if pr.promoted else "rejected"
        with clock("git_commit"):
            commit = versioning.finish(root, generation, f"tri: generation {generation} ({decision}: candidate "
                                       f"{ar.a.mean:.2f} vs best {ar.b.mean:.2f})")
        with clock("picture"):  # after the commit: a picture for people never holds up the decision
            picture_task(params, paths, device)
        record = None
        if runtime.tracking:  # after the commit, so the run's provenance names the generation's own commit
            extra = _extra_metrics(sp, tr, start, phases)
            with clock("mlflow"):
                record = track_task(params, paths, parent_run_id, extra)
    stage = sum(phases[k] for k in STAGE_PHASES)
    seconds = time.perf_counter() - start
    result = GenerationResult(generation, sp.games, sp.positions, sp.mean_score, sp.positions_per_second,
                              tr.steps, tr.loss, ar.a.mean, ar.b.mean, ar.diff_low, pr.promoted, seconds, stage,
                              commit, getattr(record, "run_id", None), getattr(record, "model_version", None),
                              phases)
    logger.info("generation %d %s in %.1f s (orchestration %.1f%%)", generation, decision, seconds,
                100 * result.overhead)
    return result


@flow(name="tri-generation", validate_parameters=False)
def generation_flow(root: str = ".", params_file: str | None = None, parent_run_id: str | None = None) -> dict:
    """One generation of the project at ``root`` (the next after its decision log)."""
    return asdict(run_generation(Path(root), params_file, parent_run_id))


def configured(runtime: Runtime | None = None):
    """:func:`generation_flow` with the task runner the settings name (``TRI_TASK_RUNNER``)."""
    return generation_flow.with_options(task_runner=make_task_runner(runtime or Runtime()))
