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
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path

from prefect import flow, get_run_logger, task

from pipelines import processes, story
from pipelines.runners import make_task_runner
from tri import arena, atomic, layout, promote, selfplay, train
from tri.config import Params, Runtime, project_params
from tri.device import resolve_device
from tri.episodes import Stopped
from tri.games import make_game
from tri.net import initial_checkpoint, save_checkpoint, started_checkpoint
from tri.progress import Report
from tri.record import mlstore, render, runs, versioning

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
    # The best model after the decision: its mean over every arena game it has played as the best
    # (single-player; None for two-player games), so re-measuring it on new seeds reads as such.
    best_pooled_mean: float | None = None
    best_pooled_games: int = 0

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


class _ShardCounts:
    """Self-play's progress across its shards: one meter, counted into by the shards that run in
    this process's threads (they see this through :data:`_shard_counts`); the games of a shard
    that ran elsewhere, or was reused, are added when it ends."""

    def __init__(self, meter):
        self.meter, self.counted = meter, {}
        self._count = selfplay.counter(meter)

    def count_for(self, shard: int):
        def count(games: int, positions: int, score: float) -> None:
            self.counted[shard] = self.counted.get(shard, 0) + games
            self._count(games, positions, score)

        return count

    def ended(self, shard: int, games: int) -> None:
        if self.counted.get(shard, 0) == 0 and games:
            self.meter.advance(games)


# The running generation's progress, for its tasks in this process (Prefect's thread runner copies
# the context into its threads; tasks in other processes see the defaults and count nothing).
_shard_counts: ContextVar[_ShardCounts | None] = ContextVar("tri_shard_counts", default=None)
_progress: ContextVar[Report | None] = ContextVar("tri_progress", default=None)


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
    counts = generation._shard_counts.get()
    return play_shard_alone(task, stop=stop.is_set if stop is not None else None,
                            count=counts.count_for(task.shard) if counts is not None else None)


def _finished(future) -> bool:
    """Whether a shard's future has finished (the runner's own future says so without a wait)."""
    inner = getattr(future, "wrapped_future", None)
    return inner.done() if inner is not None else future.state.is_final()


def _play_shards(tasks, games: int) -> list:
    """Submit one task per shard and wait for all, reporting progress (:data:`_progress`); if
    the wait is interrupted (Ctrl-C, SIGTERM), stop the shards in flight at once, wherever they
    run, before the interruption goes on."""
    stop = threading.Event()
    for t in tasks:
        _stops[t.out] = stop
    with selfplay.progress_meter(games, _progress.get()) as meter:
        counts = _ShardCounts(meter)
        token = _shard_counts.set(counts)
        try:
            futures = selfplay_shard.map(tasks)
            ended: set[int] = set()
            # Polled in short sleeps: Python runs a signal's handler (Ctrl-C, SIGTERM) in the main
            # thread only, once it wakes, and a sleep is the one place it can raise cleanly (raised
            # inside a condition's wait it can fail with "release unlocked lock").
            while len(ended) < len(futures):
                for i, f in enumerate(futures):
                    if i not in ended and _finished(f):
                        ended.add(i)
                        if f.state.is_completed():
                            counts.ended(tasks[i].shard, f.result().games)
                if len(ended) < len(futures):
                    time.sleep(0.25)
        except BaseException:
            stop.set()
            processes.stop_workers(grace=5)
            raise
        finally:
            _shard_counts.reset(token)
    for t in tasks:
        _stops.pop(t.out, None)
    return [f.result() for f in futures]


@task(name="train", task_run_name="train")
def train_task(params: Params, paths: layout.GenerationPaths, runtime: Runtime):
    return train.run(params, paths.start, list(paths.window), paths.candidate, generation=paths.generation,
                     metrics=paths.train_metrics, losses=paths.train_losses, runtime=runtime,
                     progress=_progress.get())


@task(name="arena", task_run_name="arena")
def arena_task(params: Params, paths: layout.GenerationPaths, runtime: Runtime):
    # The players named by role in the file, as dvc.yaml's command names them.
    return arena.run(params, str(paths.candidate), str(paths.player), generation=paths.generation,
                     out=paths.arena, runtime=runtime, labels=("candidate", "best"), progress=_progress.get())


@task(name="picture", task_run_name="draw the candidate's game")
def picture_task(params: Params, paths: layout.GenerationPaths, device: str) -> Path | None:
    """Draw a game the candidate plays into ``paths.picture`` (for people, and for the run's
    record); None, and no file there, for a game tri cannot draw."""
    drawn = render.render_game(params, paths.candidate, paths.picture, generation=paths.generation,
                               device=device)
    if drawn is None:
        paths.picture.unlink(missing_ok=True)  # not a picture of another run's game
    return drawn


@task(name="promote", task_run_name="promote")
def promote_task(paths: layout.GenerationPaths):
    return promote.run(paths.arena, paths.candidate, paths.best, rejected=paths.rejected,
                       log=paths.promotions, generation=paths.generation)


@task(name="track", task_run_name="log to MLflow", retries=1)
def track_task(params: Params, paths: layout.GenerationPaths, parent_run_id: str | None,
               extra: dict[str, float], started: float):
    # The run spans the generation: from its start to now (it is logged at the end).
    return runs.log_generation(params, paths, parent_run_id=parent_run_id, metrics=extra,
                               start_time_ms=int(started * 1000), end_time_ms=int(time.time() * 1000))


def ensure_initial(params: Params, root: Path) -> Path:
    """Generation 0 (as the ``init`` stage writes it: fresh weights, or those of
    ``models/start.pt`` in a project made by ``tri new --from``) and the best model."""
    initial = layout.model_path(root, 0)
    if not initial.exists():
        game, start = make_game(params.game), layout.start_path(root)
        ckpt = (started_checkpoint(game, params.net, start) if start.exists()
                else initial_checkpoint(game, params.net))
        save_checkpoint(ckpt, initial)
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
    start, started = time.perf_counter(), time.time()
    phases: dict[str, float] = {}
    clock = _Clock(phases)
    with versioning.project_lock(root):
        with clock("plan"):
            generation = versioning.next_generation(root)
            plan = versioning.begin(params, root, generation)
            ensure_initial(params, root)
            paths = layout.generation_paths(root, generation, player=plan.player, start=plan.start,
                                            window=params.train.window, selfplayer=plan.teacher)
        if plan.teacher:
            logger.info("generation %d: the teacher %s plays self-play, training starts from %s, %s defends",
                        generation, plan.teacher, plan.start, plan.player)
        else:
            logger.info("generation %d: %s plays, training starts from %s", generation, plan.player, plan.start)
        token = _progress.set(story.FlowProgress(logger, generation))
        try:
            with clock("selfplay"):
                t0 = time.perf_counter()
                tasks = selfplay.shard_tasks(params, paths.selfplay_model, paths.selfplay, generation=generation,
                                             device=device)
                sp = selfplay.summarize(tasks, _play_shards(tasks, params.selfplay.games), time.perf_counter() - t0)
            with clock("train"):
                tr = train_task(params, paths, runtime)
            with clock("arena"):
                ar = arena_task(params, paths, runtime)
        finally:
            _progress.reset(token)
        with clock("dvc_record"):
            versioning.record(root)  # dvc.lock now describes the stages that ran
        with clock("promote"):
            pr = promote_task(paths)
        decision = "promoted" if pr.promoted else "rejected"
        logger.info("generation %d: candidate %s: %s", generation, decision, story.decision_text(ar))
        with clock("git_commit"):
            commit = versioning.finish(root, generation, f"tri: generation {generation} ({decision}: candidate "
                                       f"{ar.a.mean:.2f} vs best {ar.b.mean:.2f})")
        if commit is not None:
            logger.info("generation %d: committed %s (tag gen-%04d): dvc repro re-creates it", generation,
                        commit[:10], generation)
        with clock("picture"):  # after the commit: a picture for people never holds up the decision
            picture_task(params, paths, device)
        record = None
        if runtime.tracking:  # after the commit, so the run's provenance names the generation's own commit
            extra = _extra_metrics(sp, tr, start, phases)
            with clock("mlflow"):
                record = track_task(params, paths, parent_run_id, extra, started)
    stage = sum(phases[k] for k in STAGE_PHASES)
    seconds = time.perf_counter() - start
    result = GenerationResult(generation, sp.games, sp.positions, sp.mean_score, sp.positions_per_second,
                              tr.steps, tr.loss, ar.a.mean, ar.b.mean, ar.diff_low, pr.promoted, seconds, stage,
                              commit, getattr(record, "run_id", None), getattr(record, "model_version", None),
                              phases, pr.best_pooled_mean, pr.best_pooled_games)
    logger.info("generation %d %s in %.1f s (orchestration %.1f%%)", generation, decision, seconds,
                100 * result.overhead)
    story.publish_artifacts(result, sp, tr, ar, _mlflow_link(root, params, record, runtime),
                            getattr(record, "run_id", None))
    return result


def _mlflow_link(root: Path, params: Params, record, runtime: Runtime) -> str | None:
    """The address of the generation's MLflow run in the MLflow UI, if the UI's is known."""
    if record is None or record.run_id is None or not runtime.mlflow_ui:
        return None
    return mlstore.run_link(root, params.game.name, record.run_id, runtime.mlflow_ui, runtime=runtime)


@flow(name="tri-generation", flow_run_name=story.generation_run_name, validate_parameters=False)
def generation_flow(root: str = ".", params_file: str | None = None, parent_run_id: str | None = None) -> dict:
    """One generation of the project at ``root`` (the next after its decision log)."""
    return asdict(run_generation(Path(root), params_file, parent_run_id))


def configured(runtime: Runtime | None = None):
    """:func:`generation_flow` with the task runner the settings name (``TRI_TASK_RUNNER``)."""
    return generation_flow.with_options(task_runner=make_task_runner(runtime or Runtime()))
