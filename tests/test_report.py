"""The learning curve's picture (tri/record/report.py): whole generations on the x axis, and the
"best" line drawn from the best model's pooled mean where the decision log has one."""

from __future__ import annotations

import pytest

from tri.record import report

from tests.pipeline_fixtures import PNG_SIGNATURE


def points(n: int) -> list[report.CurvePoint]:
    return [report.CurvePoint(g, 10.0 + g, 9.0 + (g % 2), g % 3 == 0, 9.5 + g / 10, 8 * g) for g in range(1, n + 1)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 40])
def test_generations_are_whole_numbers_on_the_x_axis(n):
    import matplotlib.pyplot as plt

    fig = report.figure(points(n))
    try:
        ax = fig.axes[0]
        lo, hi = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
        assert ax.get_xlabel() == "generation"
    finally:
        plt.close(fig)


def test_the_best_line_is_the_pooled_mean(tmp_path):
    import matplotlib.pyplot as plt

    pts = points(4)
    fig = report.figure(pts)
    try:
        line = next(l for l in fig.axes[0].get_lines() if l.get_label().startswith("best after the arena"))
        assert list(line.get_ydata()) == pytest.approx([p.best_pooled for p in pts])
        assert "mean of all its arena games" in line.get_label()
    finally:
        plt.close(fig)
    # Without pools (two-player games, or no log): the best after the arena, as before.
    old = [report.CurvePoint(1, 0.6, 0.4, True), report.CurvePoint(2, 0.3, 0.7, False)]
    fig = report.figure(old)
    try:
        line = next(l for l in fig.axes[0].get_lines() if l.get_label() == "best after the arena")
        assert list(line.get_ydata()) == [0.6, 0.7]
    finally:
        plt.close(fig)
    report.plot(pts, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == PNG_SIGNATURE
