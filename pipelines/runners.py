"""The task runner that fans self-play shards out: a setting (``TRI_TASK_RUNNER``), not code.

- ``threads`` (default): Prefect's thread pool, ``TRI_WORKERS`` threads. The numba kernels of the
  games and the search release the GIL, and so does torch, so shards overlap well; no worker
  process to start (Prefect's process pool costs seconds per flow run to start and import).
- ``processes``: Prefect's process pool, ``TRI_WORKERS`` processes on this machine.
- ``dask``: ``prefect-dask``'s runner. Without ``TRI_DASK_ADDRESS`` it starts a local
  ``distributed`` cluster of ``TRI_WORKERS`` single-threaded worker processes; with it, shards go to
  that cluster's scheduler (workers there need tri installed and the project folder at the same
  path, e.g. a shared file system; see the README, "Past one machine").
"""

from __future__ import annotations

from tri.config import Runtime
from tri.errors import TriError


def make_task_runner(runtime: Runtime):
    if runtime.task_runner == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=runtime.workers)
    if runtime.task_runner == "processes":
        from prefect.task_runners import ProcessPoolTaskRunner

        return ProcessPoolTaskRunner(max_workers=runtime.workers)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise TriError("TRI_TASK_RUNNER=dask needs prefect-dask: pip install 'tri[dask]'") from None
    if runtime.dask_address:
        return DaskTaskRunner(address=runtime.dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": runtime.workers, "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": None})
