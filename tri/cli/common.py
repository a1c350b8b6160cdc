"""What every ``tri`` command shares: the group that turns user errors into one line, the
``--params`` option, and the ``--progress`` option of the long commands."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

import click

from tri.errors import TriError
from tri.progress import for_stream

PARAMS_OPTION = click.option(
    "--params", "params_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="params.yaml to read (default: ./params.yaml if present, else the embedded defaults).")

PROGRESS_OPTION = click.option(
    "--progress/--no-progress", default=True, show_default=True,
    help="Show how far it is on stderr: a progress bar on a terminal, else a line every 10 s.")


def progress_report(enabled: bool):
    """The :mod:`tri.progress` report of ``--progress`` (None with ``--no-progress``)."""
    return for_stream(sys.stderr) if enabled else None


CONTEXT = {"help_option_names": ["-h", "--help"]}


class TriGroup(click.Group):
    """A group that reports user errors as ``error: ...`` lines instead of tracebacks, and a
    subcommand's bad option (click's usage errors) as one such line too."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except TriError as exc:
            for line in str(exc).splitlines():
                click.echo(f"error: {line}", err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            message = " ".join(exc.format_message().split())
            click.echo(f"error: {where}: {message} (see {where} --help)", err=True)
            ctx.exit(exc.exit_code)


@contextlib.contextmanager
def stop_on_signals():
    """SIGINT (Ctrl-C, which a terminal sends to its whole foreground process group) and SIGTERM
    (``kill``, a scheduler) both stop the command (``tri loop``, ``tri champions publish``): the
    first raises KeyboardInterrupt, so Python unwinds and every ``finally`` runs (publish's
    staging folder is removed; the loop's shards in flight stop, its flow runs are marked cancelled
    on the Prefect server, still up in its own session, its MLflow run KILLED, the lock released,
    the server stopped last); later ones are ignored, so the shutdown finishes. While a flow runs,
    Prefect's own SIGTERM handler raises ``TerminationSignal`` instead, which unwinds the same way.

    A signal that lands while Python runs a weakref callback or a ``__del__`` raises its
    KeyboardInterrupt there, where Python cannot propagate it: it prints "Exception ignored in"
    with a traceback and goes on (a ``tri loop`` went on to its next generation that way). Such
    an interrupt reaches ``sys.unraisablehook``; the hook installed here swallows it silently and
    sends the signal again from a helper thread, so it is raised at the next ordinary bytecode."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = threading.Event()

    def interrupt(signum, frame):
        if not stopping.is_set():
            stopping.set()
            raise KeyboardInterrupt

    def unraisable(info):
        if isinstance(info.exc_value, KeyboardInterrupt) and stopping.is_set():
            stopping.clear()  # it never reached the code it was meant to stop: deliver it again
            threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()
            return
        previous_hook(info)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for sig, handler in previous.items():
            signal.signal(sig, handler)
