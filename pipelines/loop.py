"""The continuous loop: generation flows one after another until a stop condition.

Stops after ``generations`` generations, when ``minutes`` have passed (checked between
generations), or after ``plateau`` generations in a row without a promotion; with none of them
it runs until cancelled (from the Prefect UI, or Ctrl-C). Each generation is a sub-flow run, and
an MLflow parent run groups the loop's generation runs. The loop holds the project lock from
start to end. An interrupted loop continues after the last recorded decision.

:func:`run` is what ``tri loop`` calls: it first cleans up after a loop that was killed (its
Prefect server, its MLflow runs left RUNNING, a generation decided but not committed), then runs
:func:`loop_flow` against a Prefect server of its own (unless ``PREFECT_API_URL`` names one:
:mod:`pipelines.loop_server`), started in its own session and dying with this process
(:mod:`pipelines.processes`), so Ctrl-C reaches the loop first and the server records how the
runs ended before it is stopped: Cancelled, with what was kept (:mod:`pipelines.run_states`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path

from prefect import flow, get_run_logger
from prefect._internal.concurrency.services import QueueService
from prefect.exceptions import TerminationSignal

from pipelines import serve, story
from pipelines.generation import configured
from pipelines.loop_server import LoopServer, loop_server
from pipelines.run_states import crash_stale_flow_runs, tell_stopped
from tri.config import Runtime, project_params
from tri.record import runs, versioning

HEADER = ("generation  self-play mean  positions/s  loss    candidate  best    promoted  best model  seconds  "
          "orchestration")


def summary_line(r: dict) -> str:
    """One generation's row under :data:`HEADER`."""
    overhead = 1 - r["stage_seconds"] / r["seconds"] if r["seconds"] else 0.0
    rate = r["selfplay_positions_per_second"]  # NaN: every shard reused from an interrupted run
    pooled = r.get("best_pooled_mean")  # None: a two-player game
    return (f"{r['generation']:>10}  {r['selfplay_mean_score']:14.2f}  "
            f"{'reused' if math.isnan(rate) else f'{rate:.1f}':>11}  "
            f"{r['train_loss']:6.3f}  {r['candidate_mean']:9.2f}  {r['best_mean']:6.2f}  "
            f"{'yes' if r['promoted'] else 'no':>8}  {'-' if pooled is None else f'{pooled:.2f}':>10}  "
            f"{r['seconds']:7.1f}  {100 * overhead:12.1f}%")


def should_stop(results: list[dict], elapsed: float, *, generations: int | None, minutes: float | None,
                plateau: int | None) -> str | None:
    """Why the loop stops now (or None to go on)."""
    if generations is not None and len(results) >= generations:
        return f"{generations} generation(s) done"
    if minutes is not None and elapsed >= minutes * 60:
        return f"{minutes:g} minute(s) passed"
    if plateau is not None and len(results) >= plateau and not any(r["promoted"] for r in results[-plateau:]):
        return f"no promotion in {plateau} generation(s)"
    return None


@flow(name="tri-loop", flow_run_name=story.loop_run_name, validate_parameters=False)
def loop_flow(root: str = ".", params_file: str | None = None, generations: int | None = None,
              minutes: float | None = None, plateau: int | None = None, echo: bool = False) -> list[dict]:
    """Run generations of the project at ``root`` until a stop condition; ``echo`` prints a
    row per generation (see :data:`HEADER`) as it finishes."""
    project = Path(root).resolve()
    with versioning.project_lock(project):
        return _loop(project, params_file, generations, minutes, plateau, echo)


def _loop(project: Path, params_file: str | None, generations: int | None, minutes: float | None,
          plateau: int | None, echo: bool) -> list[dict]:
    logger = get_run_logger()
    runtime = Runtime()
    versioning.check_params_file(project, params_file)
    parent = runs.start_loop(project, project_params(project, params_file)) if runtime.tracking else None
    generation = configured(runtime)
    results: list[dict] = []
    start = time.perf_counter()
    status = "FAILED"
    try:
        while (reason := should_stop(results, time.perf_counter() - start, generations=generations,
                                     minutes=minutes, plateau=plateau)) is None:
            t0 = time.perf_counter()
            results.append(generation(root=str(project), params_file=params_file, parent_run_id=parent))
            results[-1]["flow_seconds"] = time.perf_counter() - t0  # with the flow run's own bookkeeping
            if echo:
                print(summary_line(results[-1]), flush=True)
        logger.info("loop stops: %s", reason)
        if echo:
            print(f"loop stops: {reason}", flush=True)
        status = "FINISHED"
    except (KeyboardInterrupt, TerminationSignal):  # Ctrl-C, SIGTERM (Prefect's bridge), tri serve stopping
        status = "KILLED"
        raise
    finally:
        if parent is not None:
            runs.end_loop(project, parent, status=status)
    return results


def recover(root: Path) -> list[str]:
    """Clean up after a loop of this project that was killed without unwinding (SIGKILL, a
    power cut): mark its MLflow runs left RUNNING as KILLED, and commit a generation it decided
    but did not commit (:func:`pipelines.loop_server.loop_server` stops the Prefect server it
    left). Call with the project lock held. Returns one line per thing done, for the person
    watching."""
    done = []
    if Runtime().tracking:
        closed = runs.close_stale_runs(root)
        if closed:
            done.append(f"marked {len(closed)} MLflow run(s) a killed tri loop left RUNNING as KILLED: "
                        + ", ".join(closed))
    finished = versioning.recover(root)
    if finished is not None:
        done.append(f"committed generation {finished}, decided but not committed by an interrupted run")
    return done


def run(root: Path, params_file: str | None = None, *, generations: int | None = None,
        minutes: float | None = None, plateau: int | None = None,
        echo: Callable[[str], None] = print, terminal: bool = False,
        server: LoopServer | None = None) -> list[dict]:
    """``tri loop``: recover from a killed loop, then run :func:`loop_flow` against a Prefect
    server (see the module docstring), printing a row per generation and, between rows, the
    progress of the generation in flight (bars on a ``terminal``, else a line per stage every
    10 s: :func:`pipelines.story.showing_progress`). ``server``: one the caller launched (with
    the project lock held) while it imported this module; default: launched here. Call
    :func:`tri.record.stores.configure` first. A stopped loop raises ``KeyboardInterrupt`` or Prefect's
    ``TerminationSignal`` after everything it started has ended."""
    root = Path(root).resolve()
    with versioning.project_lock(root), (nullcontext(server) if server else loop_server(root)) as server:
        for line in server.notes + recover(root):
            echo(f"note: {line}")
        url = server.ready()
        with serve.prefect_api(url) if server.own else nullcontext():
            crashed = crash_stale_flow_runs(root)
            if crashed:
                echo(f"note: marked {crashed} Prefect flow run(s) a killed tri loop left running as Crashed")
            echo(HEADER)
            since = datetime.now(timezone.utc)
            try:
                with story.showing_progress(echo, terminal):
                    return loop_flow(root=str(root), params_file=params_file, generations=generations,
                                     minutes=minutes, plateau=plateau, echo=True)
            except (KeyboardInterrupt, TerminationSignal):
                tell_stopped(root, since, "Ctrl-C or SIGTERM to tri loop")
                raise
            finally:
                _drain_prefect()


def _drain_prefect() -> None:
    """Send the logs and events Prefect still holds to its server before the server stops
    (otherwise they are lost, with connection errors printed at exit)."""
    QueueService.drain_all(timeout=10, at_exit=False)
