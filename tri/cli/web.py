"""``tri web``: the web page on its own (:mod:`tri.web`); ``tri serve`` starts it beside the Prefect
and MLflow UIs."""

from __future__ import annotations

from pathlib import Path

import click

from tri.cli.common import CONTEXT
from tri.web import app


@click.command("web", context_settings=CONTEXT)
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Project folder: its checkpoints are players, its records the Compare view.")
@click.option("--host", default=app.HOST, show_default=True,
              help="Address to listen on; 0.0.0.0 lets other machines play (there is no login).")
@click.option("--port", type=click.IntRange(1, 65535), default=app.PORT, show_default=True, help="Port of the page.")
@click.option("--prefect-url", default=None, metavar="URL", help="A Prefect UI to link to (tri serve passes its own).")
@click.option("--mlflow-url", default=None, metavar="URL", help="An MLflow UI to link to (tri serve passes its own).")
def web(root: Path, host: str, port: int, prefect_url: str | None, mlflow_url: str | None) -> None:
    """Play, watch and compare agents in a browser: the champions, the baselines and the project's
    checkpoints. Ctrl-C stops it."""
    app.run(root, host=host, port=port, links={"prefect": prefect_url, "mlflow": mlflow_url},
            echo=lambda line: click.echo(line))
