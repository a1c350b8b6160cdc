"""What every ``tri`` command shares: the group that turns user errors into one line, the
``--params`` option, and the ``--progress`` option of the long commands."""

from __future__ import annotations

import sys
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
