"""How this project's flow runs ended, told on the Prefect server as a person would tell it.

Prefect's engine records a flow run that a signal ended as Crashed ("Execution was aborted by an
interrupt signal"), exactly as it records one that died. ``tri loop`` and ``tri serve`` know
better:

- a run a person stopped (Ctrl-C, SIGTERM, ``tri serve`` stopping) is marked **Cancelled**, with
  what happened to the generation in flight (:func:`cancel_stopped_flow_runs`);
- a run a killed loop left running (``kill -9``, a power cut: nobody could report it) is marked
  **Crashed** by the next ``tri loop`` (:func:`crash_stale_flow_runs`).

Runs are this project's when their ``root`` parameter is the project's folder (a Prefect server
given by ``PREFECT_API_URL`` may serve several projects). Both functions call the server in
``PREFECT_API_URL`` (:func:`pipelines.serve.prefect_api`); they import prefect, so import this
module only after :func:`tri.record.stores.configure`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.filters import (FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterStartTime,
                                            FlowRunFilterState, FlowRunFilterStateType)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.states import Cancelled, Crashed

LOOP_FLOW, GENERATION_FLOW = "tri-loop", "tri-generation"  # the flows' names (pipelines.loop, pipelines.generation)
PAGE = 200  # flow runs per request (Prefect's default limit)


def _runs(client: SyncPrefectClient, root: Path, states: list[StateType], flow: str | None = None,
          started_after: datetime | None = None) -> Iterator[FlowRun]:
    """This project's flow runs in one of ``states`` (of ``flow`` only, started after
    ``started_after`` only, when given), page by page."""
    run_filter = FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=states)),
                               start_time=None if started_after is None else FlowRunFilterStartTime(after_=started_after))
    flow_filter = None if flow is None else FlowFilter(name=FlowFilterName(any_=[flow]))
    offset = 0
    while page := client.read_flow_runs(flow_filter=flow_filter, flow_run_filter=run_filter, limit=PAGE,
                                        offset=offset):
        yield from (run for run in page if run.parameters.get("root") == str(root))
        offset += len(page)


def crash_stale_flow_runs(root: Path) -> int:
    """Mark Crashed this project's loop and generation flow runs that the Prefect server still
    shows as running: a killed loop could not report how they ended. Call with the project lock
    held and the server up. Returns how many it marked."""
    marked = 0
    with get_client(sync_client=True) as client:
        for run in list(_runs(client, root, [StateType.RUNNING, StateType.PENDING])):
            client.set_flow_run_state(run.id, Crashed(message="its tri loop was killed"), force=True)
            marked += 1
    return marked


def cancel_stopped_flow_runs(root: Path, since: datetime, by: str) -> int:
    """Mark Cancelled this project's flow runs that Prefect marked Crashed at ``since`` (timezone-
    aware) or later, when a stop (``by``: what stopped them, "Ctrl-C or SIGTERM to tri loop") is
    why they ended; call it once the runs have ended, with the server up, and ``since`` no
    earlier than the stop (or, for ``tri loop``, than the loop's start: there a crash ends the
    loop, so every run Crashed since is the stop's). The message says what was kept: a loop run
    how many generations it recorded, a generation run that it was not recorded and the next
    loop redoes it. Returns how many it marked."""
    marked = 0
    with get_client(sync_client=True) as client:
        stopped = [run for run in _runs(client, root, [StateType.CRASHED])
                   if run.state is not None and run.state.timestamp >= since]
        for run in stopped:
            flow = client.read_flow(run.flow_id).name
            if flow == LOOP_FLOW:
                done = sum(1 for _ in _runs(client, root, [StateType.COMPLETED], GENERATION_FLOW,
                                            started_after=run.start_time or since))
                message = (f"stopped by {by} after {done} recorded generation(s); the generation in flight "
                           "was not recorded, and the next tri loop redoes it (its finished self-play shards "
                           "are kept)")
            else:
                message = (f"stopped by {by}; this generation was not recorded, and the next tri loop redoes "
                           "it (its finished self-play shards are kept)")
            client.set_flow_run_state(run.id, Cancelled(message=message), force=True)
            marked += 1
    return marked


def tell_stopped(root: Path, since: datetime, by: str) -> None:
    """:func:`cancel_stopped_flow_runs`, best effort, for a stop in progress: if the server
    cannot be reached the runs stay Crashed, and the stop goes on."""
    try:
        cancel_stopped_flow_runs(root, since, by)
    except Exception:  # noqa: BLE001 - the stop must finish; the UI then shows Prefect's Crashed
        pass
