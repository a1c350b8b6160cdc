"""Child processes that must not outlive tri: servers, and the workers of a flow run.

A server (:class:`Service`) starts in a session of its own, so the Ctrl-C a terminal sends to its
foreground process group reaches tri and not the server: tri then stops it last, after the runs
that talk to it have recorded how they ended. On Linux a server also dies with the tri process
that started it (``PR_SET_PDEATHSIG``), so even a ``kill -9`` of tri leaves no server behind; a
pid record (:func:`record`, :func:`stop_recorded`) lets the next start find and stop one anyway
where that is not available.

Workers (a process pool's, a Dask cluster's) stay in tri's process group; :func:`stop_workers`
ends them at once when a run is stopped, instead of waiting for their shards to finish.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from tri import atomic
from tri.errors import TriError

HOST = "127.0.0.1"
STARTUP_TIMEOUT = 180.0  # seconds; both servers start at once, ~15-40 s on a busy 2-core machine
STOP_GRACE = 20.0  # seconds a process gets to exit after SIGTERM before SIGKILL


@dataclass(frozen=True)
class Service:
    """A server to run as a child process: ``health`` answers 200 once it is ready; ``address``
    is what a person opens; ``option`` is the command-line option that sets its port."""

    name: str
    command: list[str]
    port: int
    health: str
    address: str
    log: Path
    option: str
    env: dict[str, str] = field(default_factory=dict)  # on top of this process's environment


def free_port() -> int:
    """A loopback port nobody listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def check_port(service: Service) -> None:
    """Raise :class:`TriError` if something on this machine already listens on the service's port.

    SO_REUSEADDR as the servers set it: a port left in TIME_WAIT by a previous run is free, a
    listening one is not."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, service.port))
        except OSError:
            raise TriError(f"port {service.port} is in use, so the {service.name} cannot start there; "
                           f"stop what uses it or choose another with {service.option}") from None


def _die_with_parent() -> None:  # pragma: no cover (runs in the child, between fork and exec)
    """Ask Linux to send this process SIGTERM when the thread that started it exits."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start(service: Service, cwd: Path, *, die_with_parent: bool = False) -> subprocess.Popen:
    """Start ``service`` with its output in its log file, in a session of its own: Ctrl-C in the
    terminal reaches only this process, which then stops the servers in order. ``die_with_parent``
    (Linux): the server gets SIGTERM when this process dies, however it dies."""
    service.log.parent.mkdir(parents=True, exist_ok=True)
    preexec = _die_with_parent if die_with_parent and sys.platform == "linux" else None
    with open(service.log, "ab") as log:
        return subprocess.Popen(service.command, cwd=cwd, env={**os.environ, **service.env},
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=preexec)


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 now (no proxy: the servers are on this machine)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_ready(started: list[tuple[Service, subprocess.Popen]], timeout: float = STARTUP_TIMEOUT,
               ready: Callable[[Service, float], None] | None = None) -> None:
    """Return once every service answers its health URL, calling ``ready(service, seconds)`` as
    each does; raise :class:`TriError` naming the first that exits or is still silent after
    ``timeout`` seconds, and its log."""
    waiting = list(started)
    t0 = time.monotonic()
    deadline = t0 + timeout
    while waiting:
        for item in list(waiting):
            service, proc = item
            if proc.poll() is not None:
                raise TriError(f"the {service.name} exited while starting (exit code {proc.returncode}); "
                               f"see {service.log}")
            if answers(service.health):
                waiting.remove(item)
                if ready is not None:
                    ready(service, time.monotonic() - t0)
        if waiting and time.monotonic() > deadline:
            service = waiting[0][0]
            raise TriError(f"the {service.name} did not answer on {service.address} within {timeout:g} s; "
                           f"see {service.log}")
        if waiting:
            time.sleep(0.2)


def stop_group(pgid: int, grace: float = STOP_GRACE, proc: subprocess.Popen | None = None) -> None:
    """Stop the process group ``pgid``: SIGTERM, then SIGKILL for what is left after ``grace``
    seconds. ``proc`` (the leader, if it is our child) is reaped."""

    def signal_group(sig: int) -> bool:
        try:
            os.killpg(pgid, sig)
            return True
        except ProcessLookupError:  # the group is empty: all gone
            return False
        except PermissionError:  # not ours (a pid reused by another user's process)
            return False

    if signal_group(signal.SIGTERM):
        deadline = time.monotonic() + grace
        if proc is not None:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        # The leader may exit before its workers (uvicorn's): wait for the whole group.
        while signal_group(0) and time.monotonic() < deadline:
            time.sleep(0.1)
        signal_group(signal.SIGKILL)
    if proc is not None:
        proc.wait()


def stop(proc: subprocess.Popen, grace: float = STOP_GRACE) -> None:
    """Stop a process started by :func:`start` and everything it started (its process group)."""
    stop_group(proc.pid, grace, proc)  # start_new_session: the child leads its own group


@contextmanager
def running(services: list[Service], cwd: Path, timeout: float = STARTUP_TIMEOUT,
            launching: Callable[[], AbstractContextManager] = nullcontext, *,
            die_with_parent: bool = False, records: list[Path] | None = None,
            ready: Callable[[Service, float], None] | None = None,
            wait: bool = True) -> Iterator[list[subprocess.Popen]]:
    """Start ``services`` at once, wait until all answer, yield their processes, and on exit
    (or a failed start) stop them in the order given. ``launching()`` is entered around the
    launches: hold signals back there, because an interrupt inside ``Popen``, after the fork
    but before it returns, would leave a server nobody stops. ``records[i]``: where to keep
    the pid record of ``services[i]`` while it runs (see :func:`record`). ``ready``: see
    :func:`wait_ready`. ``wait=False``: yield as soon as they are launched (the caller does
    other work while they boot, then calls :func:`wait_ready`)."""
    with ExitStack() as stack:
        started = []
        with launching():
            for i, service in enumerate(services):
                proc = start(service, cwd, die_with_parent=die_with_parent)
                started.append((service, proc))
                if records:
                    record(records[i], proc, service)
            # ExitStack unwinds last in, first out, and the first service must stop first.
            for i, (_, proc) in reversed(list(enumerate(started))):
                if records:
                    stack.callback(records[i].unlink, missing_ok=True)
                stack.callback(stop, proc)
        if wait:
            wait_ready(started, timeout, ready)
        yield [proc for _, proc in started]


# ---- pid records: finding a server a killed tri left running ------------------------------------


def _identity(pid: int) -> tuple[float, str] | None:
    """(start time, command line) of a live process, or None."""
    import psutil  # a dependency of dvc (and so of tri)

    try:
        p = psutil.Process(pid)
        return p.create_time(), " ".join(p.cmdline())
    except psutil.Error:
        return None


def record(path: Path, proc: subprocess.Popen, service: Service) -> None:
    """Note which process runs ``service`` (pid, start time, command), so that a later start can
    recognise it after this process was killed without cleaning up."""
    identity = _identity(proc.pid)
    if identity is not None:
        atomic.write_text(path, json.dumps({"pid": proc.pid, "started": identity[0], "name": service.name,
                                            "command": identity[1], "address": service.address}))


def stop_recorded(path: Path, grace: float = STOP_GRACE) -> str | None:
    """Stop the server ``path`` records if that very process (same pid, start time and command)
    still runs, and remove the record. Returns what was stopped, for a message, or None."""
    try:
        note = json.loads(path.read_text())
        pid, started, command = int(note["pid"]), float(note["started"]), str(note["command"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):  # damaged: nothing to recognise
        path.unlink(missing_ok=True)
        return None
    stopped = None
    identity = _identity(pid)
    if identity is not None and abs(identity[0] - started) < 1e-3 and identity[1] == command:
        stop_group(os.getpgid(pid), grace)
        stopped = f"{note.get('name', 'server')} (pid {pid}, {note.get('address', '')})"
    path.unlink(missing_ok=True)
    return stopped


# ---- workers ------------------------------------------------------------------------------------


def workers() -> list:
    """This process's descendants in its own process group: flow runs in flight and the workers
    they started (servers run in sessions of their own). Not multiprocessing's resource
    trackers: they ignore SIGTERM and exit by themselves once their parent is gone."""
    import psutil

    group = os.getpgrp()
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if os.getpgid(p.pid) == group and "multiprocessing.resource_tracker" not in " ".join(p.cmdline()):
                found.append(p)
        except (ProcessLookupError, psutil.Error):
            pass  # ended meanwhile
    return found


def stop_workers(grace: float = STOP_GRACE) -> None:
    """Stop :func:`workers`, all at once: SIGTERM (a flow run then reports itself crashed to
    the server, still up), SIGKILL for what is left after ``grace`` seconds. Taking the whole
    tree first matters: workers of a process pool outlive a killed parent."""
    import psutil

    procs = workers()
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)
