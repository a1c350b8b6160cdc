"""``tri serve``: the Prefect and MLflow UIs and the web page of a project, and its deployments (the
logic is in :mod:`pipelines.serve`)."""

from __future__ import annotations

from pathlib import Path

import click

from pipelines import serve as serving
from tri.cli.common import CONTEXT


@click.command("serve", context_settings=CONTEXT)
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Project folder holding params.yaml, models/ and data/.")
@click.option("--prefect-port", type=click.IntRange(1, 65535), default=4200, show_default=True,
              help="Port of the Prefect server and UI.")
@click.option("--mlflow-port", type=click.IntRange(1, 65535), default=5000, show_default=True,
              help="Port of the MLflow UI.")
@click.option("--web-port", type=click.IntRange(1, 65535), default=serving.WEB_PORT, show_default=True,
              help="Port of tri's web page (play, watch, compare).")
@click.option("--no-web", is_flag=True, help="Do not start the web page.")
@click.option("--interval", type=click.FloatRange(0, min_open=True), default=None, metavar="MINUTES",
              help="Run the loop deployment every MINUTES (default: no schedule).")
@click.option("--cron", default=None, metavar="EXPR", help="Run the loop deployment on a cron schedule, "
              "e.g. '0 2 * * *' (default: no schedule).")
@click.option("--generations", type=click.IntRange(1), default=None,
              help="Loop runs stop after this many generations (a run started from the UI can change it).")
@click.option("--minutes", type=click.FloatRange(0), default=None,
              help="Loop runs stop starting generations after this long.")
@click.option("--plateau", type=click.IntRange(1), default=None,
              help="Loop runs stop after this many generations in a row without a promotion.")
@click.option("--params", "params_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Params file for the runs (default: ROOT/params.yaml, else the embedded defaults).")
@click.option("--timeout", type=click.FloatRange(1), default=180, show_default=True,
              help="Seconds to wait for the servers to answer.")
def serve(root: Path, prefect_port: int, mlflow_port: int, web_port: int, no_web: bool, interval: float | None, cron: str | None,
          generations: int | None, minutes: float | None, plateau: int | None, params_path: Path | None,
          timeout: float) -> None:
    """Start the Prefect server, the MLflow UI and tri's web page for the project, and serve its
    generation and loop deployments: start, schedule, watch and cancel runs from the Prefect UI;
    play, watch and compare the agents on the web page. Ctrl-C stops everything."""
    params_file = str(params_path.resolve()) if params_path is not None else None
    serving.serve(root, prefect_port=prefect_port, mlflow_port=mlflow_port, web_port=None if no_web else web_port,
                  schedule=serving.Schedule(interval, cron),
                  loop_stop=serving.LoopStop(generations, minutes, plateau), params_file=params_file,
                  timeout=timeout, echo=lambda line: click.echo(line))
