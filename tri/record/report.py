"""Learning curve: the arena's mean scores per generation, as a table and a PNG plot.

Every generation's arena (``data/arena/gen-NNNN.json``) plays the candidate and the best model on
the same seeds; the curve shows both, and the best model's score is the champion's strength at
that generation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tri import atomic, layout


@dataclass(frozen=True)
class CurvePoint:
    generation: int
    candidate: float
    best: float
    promoted: bool


def learning_curve(root: Path) -> list[CurvePoint]:
    """One point per generation with an arena result, in generation order."""
    points = []
    for path in layout.arena_paths(root):
        data = json.loads(path.read_text())
        generation = int(path.stem.split("-")[1])
        points.append(CurvePoint(generation, data["a"]["mean"], data["b"]["mean"], data["promote"]))
    return points


def plot(points: list[CurvePoint], out: Path, *, title: str = "tri: arena mean score per generation",
         baselines: dict[str, float] | None = None) -> None:
    """Write the curve as a PNG (matplotlib, no display needed)."""
    # matplotlib takes ~1 s to import: only when a curve is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    gens = [p.generation for p in points]
    champion = [max(p.best, p.candidate) if p.promoted else p.best for p in points]
    ax.plot(gens, [p.candidate for p in points], "o", color="tab:gray", alpha=0.6, label="candidate")
    ax.plot(gens, champion, "-", color="tab:blue", lw=2, label="best after the arena")
    promoted = [p for p in points if p.promoted]
    ax.plot([p.generation for p in promoted], [p.candidate for p in promoted], "*", color="tab:green",
            ms=11, label="promoted")
    for i, (name, value) in enumerate(sorted((baselines or {}).items())):
        ax.axhline(value, ls="--", lw=1, color=f"C{i + 3}", label=name)
    ax.set_xlabel("generation")
    ax.set_ylabel("mean score (arena seeds)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    atomic.write_with(out, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
