"""Learning curve: the arena's mean scores per generation, as a table and a PNG plot.

Every generation's arena (``data/arena/gen-NNNN.json``) plays the candidate and the best model on
the same seeds. Those seeds are new each generation, so the best model's mean on them moves
although the model does not; the curve's "best" line is therefore the pooled mean of the model
that was best after each generation's decision, over every arena game it played as the best
(:mod:`tri.promote`), and this arena's own figure for the best is a faint mark beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tri import atomic, layout
from tri.arena_result import load_result
from tri.promote import best_pools, next_pool, read_log


@dataclass(frozen=True)
class CurvePoint:
    generation: int
    candidate: float
    best: float  # the best model's mean on this arena's seeds
    promoted: bool
    best_pooled: float | None = None  # the mean of the best model after the decision, over all its arena games
    best_pooled_games: int = 0


def learning_curve(root: Path) -> list[CurvePoint]:
    """One point per generation with an arena result, in generation order."""
    entries = read_log(layout.promotions_log(root))
    decided = {int(e["generation"]): e for e in entries}
    pools = best_pools(root, entries)
    points, pool = [], None
    for path in layout.arena_paths(root):
        data = json.loads(path.read_text())
        generation = int(path.stem.split("-")[1])
        if generation in pools:
            pool = pools[generation]
        elif generation not in decided:  # the arena ran, the decision is not logged yet
            pool = next_pool(pool, load_result(path), bool(data["promote"]), None, None)
        pooled = (pool.mean, pool.games) if pool is not None else (None, 0)
        points.append(CurvePoint(generation, data["a"]["mean"], data["b"]["mean"], data["promote"], *pooled))
    return points


def figure(points: list[CurvePoint], *, title: str = "tri: arena mean score per generation",
           baselines: dict[str, float] | None = None):
    """The curve as a matplotlib figure (Agg; the caller closes it)."""
    # matplotlib takes ~1 s to import: only when a curve is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    gens = [p.generation for p in points]
    champion = [p.best_pooled if p.best_pooled is not None else max(p.best, p.candidate) if p.promoted else p.best
                for p in points]
    ax.plot(gens, [p.candidate for p in points], "o", color="tab:gray", alpha=0.6, label="candidate")
    ax.plot(gens, [p.best for p in points], "_", color="tab:blue", alpha=0.5, ms=10,
            label="best, on this arena's seeds")
    pooled = any(p.best_pooled is not None for p in points)
    ax.plot(gens, champion, "-", color="tab:blue", lw=2,
            label="best after the arena" + (" (mean of all its arena games)" if pooled else ""))
    promoted = [p for p in points if p.promoted]
    ax.plot([p.generation for p in promoted], [p.candidate for p in promoted], "*", color="tab:green",
            ms=11, label="promoted")
    for i, (name, value) in enumerate(sorted((baselines or {}).items())):
        ax.axhline(value, ls="--", lw=1, color=f"C{i + 3}", label=name)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # generations are whole numbers
    if len(gens) == 1:
        ax.set_xticks(gens)
    ax.set_xlabel("generation")
    ax.set_ylabel("mean score (arena seeds)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def plot(points: list[CurvePoint], out: Path, *, title: str = "tri: arena mean score per generation",
         baselines: dict[str, float] | None = None) -> None:
    """Write the curve as a PNG (matplotlib, no display needed)."""
    import matplotlib.pyplot as plt  # figure() imported it (Agg) already

    fig = figure(points, title=title, baselines=baselines)
    atomic.write_with(out, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
