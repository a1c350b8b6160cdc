"""The continuous loop: generation flows one after another until a stop condition.

Stops after ``generations`` generations, when ``minutes`` have passed (checked between
generations), or after ``plateau`` generations in a row without a promotion; with none of them
it runs until cancelled (from the Prefect UI, or Ctrl-C). Each generation is a sub-flow run, and
an MLflow parent run groups the loop's generation runs. An interrupted loop continues after the
last recorded decision.
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.exceptions import TerminationSignal

from pipelines.generation import _params as project_params
from pipelines.generation import configured
from tri import versioning
from tri.config import Runtime


HEADER = ("generation  self-play mean  positions/s  loss    candidate  best    promoted  seconds  "
          "orchestration")


def summary_line(r: dict) -> str:
    """One generation's row under :data:`HEADER`."""
    overhead = 1 - r["stage_seconds"] / r["seconds"] if r["seconds"] else 0.0
    return (f"{r['generation']:>10}  {r['selfplay_mean_score']:14.2f}  {r['selfplay_positions_per_second']:11.1f}  "
            f"{r['train_loss']:6.3f}  {r['candidate_mean']:9.2f}  {r['best_mean']:6.2f}  "
            f"{'yes' if r['promoted'] else 'no':>8}  {r['seconds']:7.1f}  {100 * overhead:12.1f}%")


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


@flow(name="tri-loop", validate_parameters=False)
def loop_flow(root: str = ".", params_file: str | None = None, generations: int | None = None,
              minutes: float | None = None, plateau: int | None = None, echo: bool = False) -> list[dict]:
    """Run generations of the project at ``root`` until a stop condition; ``echo`` prints a
    row per generation (see :data:`HEADER`) as it finishes."""
    from tri import tracking

    logger = get_run_logger()
    runtime = Runtime()
    project = Path(root).resolve()
    versioning.check_params_file(project, params_file)
    parent = tracking.start_loop(project, project_params(project, params_file)) if runtime.tracking else None
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
            tracking.end_loop(project, parent, status=status)
    return results
