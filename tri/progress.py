"""Progress of a long step (self-play, training, an arena), for the person waiting on it.

A stage counts what it has done in a :class:`Meter` (``meter.advance(games=1, positions=37)``);
the meter hands an :class:`Update` to a *report* (any callable) at most every ``every`` seconds,
and once more when the stage ends. Reports:

- :func:`bar`: a rich progress bar, for a terminal;
- :func:`lines`: one line per update (``self-play  256/512 games  410 positions/s  mean 88.10
  0:31``), for logs, pipes and DVC, which are not terminals;
- :func:`for_stream`: the one of the two that fits a stream (``sys.stderr``, say);
- anything else, e.g. the generation flow's, which logs each line to the Prefect run and
  prints it under ``tri loop``'s table.

A meter is safe to share between threads (the flow's self-play shards count into one). The
stages take ``progress: Report | None``; None counts nothing and prints nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# What a stage shows beside its count, from its sums and latest values, the count and the seconds
# so far.
Figures = Callable[[dict[str, float], int, float], str]


@dataclass(frozen=True)
class Update:
    """Where a stage stands: ``done`` of ``total`` ``unit`` after ``seconds``, and its figures
    (already formatted). ``final`` on the last update of a stage."""

    stage: str
    done: int
    total: int
    unit: str
    figures: str
    seconds: float
    final: bool = False
    stopped: bool = False  # the last update of a stage that failed or was interrupted

    def line(self) -> str:
        """The update as one line of text."""
        minutes, seconds = divmod(int(self.seconds), 60)
        figures = f"  {self.figures}" if self.figures else ""
        return (f"{self.stage:<9} {self.done:>{len(str(self.total))}}/{self.total} {self.unit}{figures}"
                f"  {minutes}:{seconds:02d}{'  stopped' if self.stopped else '  done' if self.final else ''}")


Report = Callable[[Update], None]


@dataclass
class Meter:
    """Counts of one stage (see the module docstring). ``figures(values, done, seconds)`` formats what
    the stage shows beside its count from ``values``: the sums of :meth:`advance`'s keywords and
    the latest of :meth:`set`'s. Reports no more often than every ``every`` seconds, except the
    first count and :meth:`close`."""

    stage: str
    total: int
    unit: str
    report: Report | None
    figures: Figures | None = None
    every: float = 5.0
    clock: Callable[[], float] = time.perf_counter
    done: int = 0
    values: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._start = self.clock()
        self._last: float | None = None

    def advance(self, n: int = 1, **sums: float) -> None:
        """``n`` more done; add ``sums`` to the running sums of the same names."""
        with self._lock:
            self.done += n
            for key, value in sums.items():
                self.values[key] = self.values.get(key, 0.0) + value
            self._maybe_report()

    def set(self, **values: float) -> None:
        """Replace the named values (a loss, say) without counting anything."""
        with self._lock:
            self.values.update(values)

    def close(self, stopped: bool = False) -> None:
        """The stage has ended (``stopped``: failed or interrupted): report where it stands, once."""
        with self._lock:
            if self.report is not None:
                self.report(self._update(final=True, stopped=stopped))
            self.report = None

    def seconds(self) -> float:
        return self.clock() - self._start

    def _maybe_report(self) -> None:
        if self.report is None:
            return
        now = self.clock()
        if (self._last is not None and now - self._last < self.every) or self.done == self.total:
            return  # too soon; or all done, which close() reports (once)
        self._last = now
        self.report(self._update(final=False))

    def _update(self, final: bool, stopped: bool = False) -> Update:
        seconds = self.seconds()
        text = self.figures(dict(self.values), self.done, seconds) if self.figures and self.values else ""
        return Update(self.stage, self.done, self.total, self.unit, text, seconds, final, stopped)

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(stopped=exc_type is not None)  # a failed or interrupted stage is not "done"


def meter(stage: str, total: int, unit: str, progress: Report | None, figures: Figures | None = None,
          *, every: float | None = None) -> Meter:
    """A :class:`Meter` reporting to ``progress`` (as often as the report asks, if it says:
    a report with an ``every`` attribute)."""
    every = getattr(progress, "every", 5.0) if every is None else every
    return Meter(stage, total, unit, progress, figures, every)


def lines(write: Callable[[str], None], every: float = 10.0) -> Report:
    """A report that writes each update as one line (see :meth:`Update.line`)."""

    def report(update: Update) -> None:
        write(update.line())

    report.every = every  # type: ignore[attr-defined]
    return report


class _Bar:
    """A rich progress bar per stage, on ``console`` (started at a stage's first update; left on
    screen when it ends, unless ``transient``)."""

    every = 0.1

    def __init__(self, console, transient: bool = False):
        self.console, self.transient = console, transient
        self._bars: dict[str, tuple] = {}

    def __call__(self, update: Update) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        if update.stage not in self._bars:
            bar = Progress(TextColumn(f"{update.stage:<9}"), BarColumn(), MofNCompleteColumn(),
                           TextColumn(f"{update.unit}  {{task.fields[figures]}}"), TimeElapsedColumn(),
                           console=self.console, transient=self.transient)
            self._bars[update.stage] = (bar, bar.add_task(update.stage, total=update.total, figures=""))
            bar.start()
        bar, task = self._bars[update.stage]
        bar.update(task, completed=update.done, figures=update.figures)
        if update.final:
            bar.stop()
            del self._bars[update.stage]


def bar(console=None, transient: bool = False) -> Report:
    """A report that draws rich progress bars (on ``console``, default: rich's, on stdout),
    each removed when its stage ends if ``transient``."""
    from rich.console import Console

    return _Bar(console or Console(), transient)


def for_stream(stream, every: float = 10.0) -> Report:
    """A progress bar if ``stream`` is a terminal, else :func:`lines` written to it."""
    if getattr(stream, "isatty", lambda: False)():
        from rich.console import Console

        return bar(Console(file=stream))

    def write(text: str) -> None:
        stream.write(text + "\n")
        stream.flush()

    return lines(write, every)
