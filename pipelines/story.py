"""What a generation tells the people watching it: the names of its Prefect runs, its progress,
a log line per stage with its figures, and its Prefect artifacts (the arena's table, the
generation's figures, the way to its MLflow run).

Progress goes two ways (:class:`FlowProgress`): every update to the ``tri.progress`` logger,
which ``tri loop`` shows under its table (:func:`showing_progress`), and a stage's last update,
with one every :data:`LOG_EVERY` seconds before it, to the Prefect run's log, which the UI
shows. Nothing here computes or decides anything; the flow calls it with what its stages
returned. It imports Prefect: import it after :func:`tri.record.stores.configure`, as the flows.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.runtime import flow_run

from tri import progress as tri_progress
from tri.progress import Update
from tri.record import versioning
from tri.record.outputs import arena_markdown

PROGRESS_LOGGER = "tri.progress"
LOG_EVERY = 30.0  # seconds between a stage's progress lines in the Prefect run's log


# ---- names ------------------------------------------------------------------------------------


def generation_run_name() -> str:
    """The generation flow run's name, ``gen-0007``: the generation it will run (the next after
    the project's decision log). For ``flow_run_name``, which Prefect calls with no arguments."""
    root = Path(flow_run.parameters.get("root") or ".").resolve()
    try:
        return f"gen-{versioning.next_generation(root):04d}"
    except Exception:  # noqa: BLE001 - a name never fails a run: a bad log fails it in the flow
        return "gen-next"


def loop_run_name() -> str:
    """The loop flow run's name: the project folder and the start, ``loop-triangle-2026-11-23-2210``."""
    root = Path(flow_run.parameters.get("root") or ".").resolve()
    return f"loop-{root.name}-{datetime.now():%Y-%m-%d-%H%M}"


# ---- progress -----------------------------------------------------------------------------------


class FlowProgress:
    """A :mod:`tri.progress` report for the stages of generation ``generation`` (see the module
    docstring); ``log`` is the Prefect run's logger."""

    every = 1.0  # the terminal's bars follow closely; the Prefect log is thinned to LOG_EVERY

    def __init__(self, log: logging.LoggerAdapter | logging.Logger, generation: int):
        self.log, self.generation = log, generation
        self._logged: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, update: Update) -> None:
        logging.getLogger(PROGRESS_LOGGER).info(
            update.line(), extra={"tri_update": update, "tri_generation": self.generation})
        now = time.monotonic()
        with self._lock:
            due = update.final or now - self._logged.get(update.stage, -LOG_EVERY) >= LOG_EVERY
            if due:
                self._logged[update.stage] = now
        if due:
            self.log.info(update.line())


class _Show(logging.Handler):
    """Shows the ``tri.progress`` records with ``show`` (bars on a terminal, else a line per
    stage every ``every`` seconds and at its end)."""

    def __init__(self, show: tri_progress.Report, every: float):
        super().__init__(logging.INFO)
        self.show, self.every = show, every
        self._last: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        update = getattr(record, "tri_update", None)
        if update is None:
            return
        label = f"gen-{getattr(record, 'tri_generation', 0):04d} {update.stage:<9}"
        now = time.monotonic()
        if not update.final and label in self._last and now - self._last[label] < self.every:
            return
        self._last[label] = now
        try:
            self.show(Update(label, update.done, update.total, update.unit, update.figures, update.seconds,
                             update.final, update.stopped))
        except Exception:  # noqa: BLE001 - a progress line must never fail the generation
            self.handleError(record)


@contextmanager
def showing_progress(echo: Callable[[str], None], terminal: bool, every: float = 10.0) -> Iterator[None]:
    """While inside, show the progress the generation flows report in this process: rich bars
    that vanish when each stage ends on a ``terminal``, else lines through ``echo``, one per
    stage every ``every`` seconds and at its end (``tri loop`` under its table)."""
    if terminal:
        from rich.console import Console

        show, every = tri_progress.bar(Console(), transient=True), 0.0
    else:
        show = tri_progress.lines(lambda line: echo(f"  {line}"))
    logger = logging.getLogger(PROGRESS_LOGGER)
    handler = _Show(show, every)
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def decision_text(result) -> str:
    """The arena's decision in a few words: the players' figures, and what the rule looked at."""
    if result.paired:
        return (f"mean {result.a.mean:.3f} against the best's {result.b.mean:.3f} on {result.games} paired seeds; "
                f"difference {result.diff_mean:+.3f} [{result.diff_low:+.3f}, {result.diff_high:+.3f}]; "
                f"rule {result.rule}")
    return (f"score rate {result.a.mean:.3f} [{result.a.low:.3f}, {result.a.high:.3f}] over {result.games} games "
            f"({result.wins} wins, {result.ties} draws, {result.losses} losses); rule {result.rule}")


# ---- artifacts ----------------------------------------------------------------------------------


def figures_table(result, sp, tr) -> list[dict[str, str]]:
    """The generation's figures as rows (figure, value) for a Prefect table artifact."""
    rows = [("self-play games", f"{sp.games}"), ("self-play positions", f"{sp.positions:,}"),
            ("self-play mean score", f"{sp.mean_score:.3f}"),
            ("self-play positions/s", f"{sp.positions_per_second:.1f}"),
            ("training steps", f"{tr.steps}"), ("training window (positions)", f"{tr.window_positions:,}"),
            *([("training afterstates (mcts.afterstates)", f"{tr.afterstate_positions:,}")]
              if tr.afterstate_positions else []),
            ("loss (last tenth of the steps)", f"{tr.loss:.4f}"), ("policy loss", f"{tr.policy_loss:.4f}"),
            ("value loss", f"{tr.value_loss:.4f}"),
            ("arena: candidate", f"{result.candidate_mean:.3f}"), ("arena: best", f"{result.best_mean:.3f}"),
            ("decision", "promoted" if result.promoted else "rejected"),
            *([("best model: mean over its arena games as the best",
                f"{result.best_pooled_mean:.3f} ({result.best_pooled_games} games)")]
              if result.best_pooled_mean is not None else []),
            ("seconds", f"{result.seconds:.1f}"), ("orchestration", f"{100 * result.overhead:.1f}%")]
    return [{"figure": k, "value": v} for k, v in rows]


def publish_artifacts(result, sp, tr, arena_result, mlflow_link: str | None, mlflow_run: str | None) -> None:
    """The generation's Prefect artifacts, shown on its flow run's page: the arena's table
    (markdown), the generation's figures (a table), and its MLflow run (a link when the MLflow
    UI's address is known, ``TRI_MLFLOW_UI``, else the run's id)."""
    g = result.generation
    create_markdown_artifact(key="arena", markdown=arena_markdown(arena_result, g),
                             description=f"gen-{g:04d}: the candidate against the best")
    create_table_artifact(key="generation", table=figures_table(result, sp, tr),
                          description=f"gen-{g:04d}: self-play, training and the arena's decision")
    if mlflow_link is not None:
        create_link_artifact(key="mlflow-run", link=mlflow_link, link_text=f"gen-{g:04d} in MLflow",
                             description="the generation's MLflow run: metrics, params, artifacts, model version")
    elif mlflow_run is not None:
        create_markdown_artifact(key="mlflow-run", markdown=f"MLflow run `{mlflow_run}` (open the MLflow UI with "
                                 "`tri serve` to follow a link here)", description=f"gen-{g:04d} in MLflow")
