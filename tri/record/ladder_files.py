"""The files of a ladder (:mod:`tri.ladder`): ``ladder.json`` (the whole result), ``ladder.csv`` (the
table at full precision) and ``ladder.png`` (each player's rating or mean with its interval), each
written atomically."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tri import atomic

if TYPE_CHECKING:  # tri.ladder imports this module to write its result
    from tri.ladder import Ladder

# The CSV's columns: HEADER or HEADER:ATTRIBUTE of a Standing.
_COLUMNS = {"ratings": "player:name spec rating:value low high games score_rate wins draws losses",
            "means": "player:name spec mean:value low high games mean_steps diff diff_low diff_high wins "
                     "ties:draws losses"}


def write_files(ladder: Ladder, out: Path) -> dict[str, Path]:
    """Write ``ladder.json``, ``ladder.csv`` (the table, full precision) and ``ladder.png`` into
    ``out``, each atomically; returns their paths by kind."""
    out = Path(out)
    paths = {"json": out / "ladder.json", "csv": out / "ladder.csv", "png": out / "ladder.png"}
    atomic.write_text(paths["json"], ladder.to_json() + "\n")
    columns = [c.partition(":")[::2] for c in _COLUMNS[ladder.kind].split()]  # (header, attribute or "")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["rank", *(h for h, _ in columns)])
    writer.writerows([i, *(getattr(r, a or h) for h, a in columns)] 
                     for i, r in enumerate(ladder.standings, 1))
    atomic.write_text(paths["csv"], buffer.getvalue())
    plot(ladder, paths["png"])
    return paths


def plot(ladder: Ladder, path: Path) -> None:
    """Each player's rating (or mean score) with its 95% interval, one row each, best on top."""
    # matplotlib takes ~1 s to import: only when a ladder is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = ladder.standings
    fig, ax = plt.subplots(figsize=(7, 1.4 + 0.32 * len(rows)), dpi=120)
    y = np.arange(len(rows))[::-1]
    value = np.array([r.value for r in rows])
    err = np.array([[r.value - r.low for r in rows], [r.high - r.value for r in rows]])
    ax.errorbar(value, y, xerr=np.clip(err, 0, None), fmt="o", color="tab:blue", ecolor="tab:gray", capsize=3)
    ax.set_yticks(y, [r.name for r in rows], fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ratings = ladder.kind == "ratings"
    ax.axvline(0 if ratings else next(r.value for r in rows if r.name == ladder.anchor), ls="--", lw=1,
               color="tab:red", label=ladder.anchor)
    ax.set_xlabel(f"rating (Elo, {ladder.anchor} = 0)" if ratings else "mean score")
    kind = " x 2 colours" if ratings else ", paired"
    ax.set_title(f"tri ladder: {ladder.game}, {ladder.games} seeds{kind}; 95% intervals")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    atomic.write_with(path, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
