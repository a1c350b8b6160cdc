"""The Prefect server ``tri loop`` reports to: ``PREFECT_API_URL`` if set (``tri serve``'s server,
or any), else one started for the loop (no UI), its state in the project's ``PREFECT_HOME``.

This module is light to import (no prefect, no torch), so ``tri loop`` launches the server first
and imports the loop (prefect, torch and the flows: 5-9 s on 2 cores) while the server boots
(about 14 s), instead of one after the other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipelines import processes
from pipelines.serve import prefect_service
from tri.record import stores


def server_record(root: Path) -> Path:
    """Where the loop notes the Prefect server it started (see :func:`pipelines.processes.record`)."""
    return stores.prefect_home(root) / "loop-server.json"


@dataclass(frozen=True)
class LoopServer:
    """A Prefect server for a loop: ``url`` its API; ``own``: started for this loop (not
    ``PREFECT_API_URL``'s); ``notes``: what was cleaned up before it started, for the person
    watching; :meth:`ready` waits until it answers."""

    url: str
    own: bool
    notes: list[str] = field(default_factory=list)
    wait: Callable[[], None] = lambda: None

    def ready(self) -> str:
        """Block until the server answers (raises :class:`tri.errors.TriError` if it exits or
        stays silent); its API URL."""
        self.wait()
        return self.url


@contextmanager
def loop_server(root: Path) -> Iterator[LoopServer]:
    """Launch the loop's Prefect server and yield at once, without waiting for it (see
    :class:`LoopServer`); stop it on exit. First (whichever server the loop will use) stops the
    server a killed loop of this project left running, if that very process still runs. Call after
    :func:`tri.record.stores.configure`, with the project lock held."""
    notes = []
    stale = processes.stop_recorded(server_record(root))
    if stale is not None:
        notes.append(f"stopped the {stale} a killed tri loop left running")
    url = os.environ.get("PREFECT_API_URL")
    if url:
        yield LoopServer(url, own=False, notes=notes)
        return
    service = prefect_service(root, processes.free_port(), ui=False)
    with processes.running([service], root, die_with_parent=True, records=[server_record(root)],
                           wait=False) as (proc,):
        yield LoopServer(f"{service.address}/api", own=True, notes=notes,
                         wait=lambda: processes.wait_ready([(service, proc)]))
