"""``tri bench engine``: random-play speed of the triangle engine beside the reference engine.

Every figure is the median over ``repeats`` timed runs of about ``seconds`` each. One random-play
step is the same procedure for every engine: list the legal actions, pick one uniformly at
random, apply it; a game that ends is replaced by a new one (and that cost is counted).
``trianglengin`` 2.0.7 (the public C++ engine) is measured in the same run when it is importable.
"""

from __future__ import annotations

import json
import platform
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from tri.games.base import sample_legal
from tri.games.triangle.game import TriangleGame
from tri.games.triangle.rules import TriangleConfig

BATCH_SIZES = (1, 64, 1024)


@dataclass(frozen=True)
class Figure:
    """One measured quantity: ``tri`` and, when available, ``reference`` (trianglengin)."""

    name: str
    unit: str
    tri: float
    reference: float | None = None
    target: str = ""
    higher_is_better: bool = True

    @property
    def ratio(self) -> float | None:
        """How many times better tri is than the reference (>1 = tri better)."""
        if self.reference is None or not self.reference or not self.tri:
            return None
        return self.tri / self.reference if self.higher_is_better else self.reference / self.tri


@dataclass(frozen=True)
class Report:
    figures: list[Figure]
    reference: str | None
    environment: dict = field(default_factory=dict)

    def to_json(self) -> str:
        rows = [asdict(f) | {"ratio": f.ratio} for f in self.figures]
        return json.dumps({"reference": self.reference, "environment": self.environment,
                           "figures": rows}, indent=2)


def _median_rate(run: Callable[[], int], repeats: int, seconds: float) -> float:
    """Median over repeats of (units done / elapsed); ``run()`` does a chunk and returns its units."""
    rates = []
    for _ in range(repeats):
        done, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            done += run()
        rates.append(done / elapsed)
    return statistics.median(rates)


def _median_time_us(run: Callable[[], int], repeats: int, seconds: float) -> float:
    """Median microseconds per unit."""
    return 1e6 / _median_rate(run, repeats, seconds)


# ---- tri --------------------------------------------------------------------------------


def _scalar_play(game: TriangleGame, seed: int) -> Callable[[], int]:
    rng = random.Random(seed)
    games = iter(range(seed, 2**62))
    holder = [game.new_game(next(games))]

    def run(chunk: int = 256) -> int:
        state = holder[0]
        for _ in range(chunk):
            actions = game.legal_actions(state)
            state, step = game.place(state, actions[rng.randrange(len(actions))])
            if step.game_over:
                state = game.new_game(next(games))
        holder[0] = state
        return chunk

    return run


def _batched_play(game: TriangleGame, batch: int, seed: int) -> Callable[[], int]:
    rng = np.random.default_rng(seed)
    next_seed = [seed + batch]
    holder = [game.initial(np.arange(seed, seed + batch))]

    def run() -> int:
        states = holder[0]
        transition = game.step(states, sample_legal(game.legal(states), rng))
        states = transition.states
        done = np.flatnonzero(transition.terminal)
        if done.size:
            states[done] = game.initial(np.arange(next_seed[0], next_seed[0] + done.size))
            next_seed[0] += done.size
        holder[0] = states
        return batch

    return run


def _positions(game: TriangleGame, count: int, seed: int) -> np.ndarray:
    """``[count, L]`` mid-game positions reached by random play (not terminal)."""
    rng = np.random.default_rng(seed)
    states = game.initial(np.arange(seed, seed + count))
    depth = rng.integers(0, 15, size=count)
    for t in range(15):
        transition = game.step(states, sample_legal(game.legal(states), rng))
        keep = (depth > t) & ~transition.terminal
        states[keep] = transition.states[keep]
    return states


# ---- trianglengin -----------------------------------------------------------------------


def _reference():
    """The trianglengin module if it is importable, else None."""
    try:
        import trianglengin
    except ImportError:
        return None
    return trianglengin


def _reference_play(te, seed: int) -> Callable[[], int]:
    rng = random.Random(seed)
    config = te.EnvConfig()
    games = iter(range(seed, 2**62))
    holder = [te.GameState(config, initial_seed=next(games))]

    def run(chunk: int = 256) -> int:
        state = holder[0]
        for _ in range(chunk):
            actions = tuple(state.valid_actions())
            _, done = state.step(actions[rng.randrange(len(actions))])
            if done:
                state = te.GameState(config, initial_seed=next(games))
        holder[0] = state
        return chunk

    return run


def _reference_positions(te, count: int, seed: int) -> list:
    rng = random.Random(seed)
    config = te.EnvConfig()
    states = []
    for i in range(count):
        state = te.GameState(config, initial_seed=seed + i)
        for _ in range(rng.randrange(15)):
            actions = tuple(state.valid_actions())
            if not actions:
                break
            probe = state.copy()
            _, done = probe.step(actions[rng.randrange(len(actions))])
            if done:
                break
            state = probe
        states.append(state)
    return states


def _cycle(items: list, per_item: Callable[[object], None], chunk: int = 64) -> Callable[[], int]:
    index = [0]

    def run() -> int:
        for _ in range(chunk):
            per_item(items[index[0] % len(items)])
            index[0] += 1
        return chunk

    return run


# ---- the benchmark ----------------------------------------------------------------------


def run(config: TriangleConfig, *, repeats: int = 5, seconds: float = 0.5, seed: int = 0,
        use_reference: bool = True) -> Report:
    """Measure every figure (see the module docstring); ``use_reference=False`` skips
    trianglengin even when it is installed."""
    game = TriangleGame(config)
    te = _reference() if use_reference else None
    if te is not None and config != TriangleConfig():
        te = None  # trianglengin is measured with its own defaults only
    measure = lambda fn: _median_rate(fn, repeats, seconds)  # noqa: E731
    per_unit = lambda fn: _median_time_us(fn, repeats, seconds)  # noqa: E731

    # Warm up: compile the kernels and touch every path once before timing.
    _scalar_play(game, seed)(64)
    for b in BATCH_SIZES:
        _batched_play(game, b, seed)()

    figures = []
    ref_scalar = measure(_reference_play(te, seed)) if te else None
    figures.append(Figure("random play, scalar API", "steps/s", measure(_scalar_play(game, seed)),
                          ref_scalar, ">= 1.5x reference"))
    for b in BATCH_SIZES:
        figures.append(Figure(f"random play, batched B={b}", "steps/s",
                              measure(_batched_play(game, b, seed)), ref_scalar,
                              ">= 20x reference" if b == 1024 else ""))

    positions = _positions(game, 1024, seed)
    scalar_states = game.states(positions)
    ref_states = _reference_positions(te, 256, seed) if te else None

    def batched_legal() -> int:
        game.legal(positions)
        return positions.shape[0]

    def batched_copy() -> int:
        positions.copy()
        return positions.shape[0]

    figures.append(Figure("legal actions, scalar API", "us", per_unit(
        _cycle(scalar_states, game.legal_actions)),
        per_unit(_cycle(ref_states, lambda s: s.valid_actions(force_recalculate=True))) if te else None,
        higher_is_better=False))
    figures.append(Figure("legal mask, batched B=1024, per state", "us", per_unit(batched_legal),
                          higher_is_better=False))
    figures.append(Figure("state copy, scalar API", "us",
                          per_unit(_cycle(scalar_states, lambda s: s.copy())),
                          per_unit(_cycle(ref_states, lambda s: s.copy())) if te else None,
                          "< 2 us", higher_is_better=False))
    figures.append(Figure("state copy, batched B=1024, per state", "us", per_unit(batched_copy),
                          higher_is_better=False))

    import numba

    environment = {"python": platform.python_version(), "numpy": np.__version__,
                   "numba": numba.__version__, "machine": platform.machine(),
                   "processor": platform.processor() or "unknown", "repeats": repeats,
                   "seconds_per_repeat": seconds}
    reference = f"trianglengin {_version(te)}" if te else None
    return Report(figures, reference, environment)


def _version(te) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trianglengin")
    except PackageNotFoundError:
        return getattr(te, "__version__", "unknown")


def print_report(report: Report, *, as_json: bool = False) -> None:
    """Print ``report`` as a table (or JSON)."""
    if as_json:
        print(report.to_json())
        return
    from rich.console import Console
    from rich.table import Table

    ref = report.reference or "reference (not installed)"
    table = Table(title="tri bench engine (medians)", title_justify="left")
    for col, justify in (("figure", "left"), ("unit", "left"), ("tri", "right"), (ref, "right"),
                         ("ratio", "right"), ("target", "left")):
        table.add_column(col, justify=justify)
    for f in report.figures:
        ratio = f"{f.ratio:.1f}x" if f.ratio is not None else "-"
        table.add_row(f.name, f.unit, _fmt(f.tri), _fmt(f.reference), ratio, f.target)
    console = Console()
    if not console.is_terminal:
        console.width = 120  # a log or pipe: keep the table unwrapped
    console.print(table)
    env = report.environment
    console.print(f"python {env['python']}, numpy {env['numpy']}, numba {env['numba']}, "
                  f"{env['machine']}; {env['repeats']} repeats of {env['seconds_per_repeat']} s")
    if report.reference is None:
        console.print("trianglengin is not importable: install it beside tri to compare "
                      "(README, 'Benchmarks').")


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"
