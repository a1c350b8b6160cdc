"""Bradley-Terry ratings on the Elo scale, with 95% intervals (``tri ladder``, two-player games).

The model: player ``i`` scores against player ``j`` with probability
``1 / (1 + exp(-(theta_i - theta_j)))``, a draw counting as half a win each way. It is fitted as a
binomial GLM (statsmodels, a maintained implementation, not a hand-written optimiser) on a design
matrix ``[pairings, players - 1]`` holding ``+1`` in the column of the first player of a pairing
and ``-1`` in the second's, one row per pairing, its response ``(points of i, points of j)``
over the games they played. The anchor's column is dropped: its strength is 0 and every rating
is a difference to it. Logits are reported on the Elo scale, ``400 / ln 10`` (about 173.7)
points per logit, so 400 points are odds of 10 to 1. Intervals are the fit's Wald intervals,
``estimate +- 1.96`` standard errors from its information matrix: each is the uncertainty of a
player's difference to the anchor (the anchor's own is ``[0, 0]``).

**Virtual draws.** A player who wins (or loses) every game it plays has no finite maximum
likelihood rating: the fit would run off to infinity. :func:`bradley_terry` therefore adds
``virtual_draws`` (default one) drawn game to every pairing that was played, before fitting: a
weak prior pulling the two towards each other, which keeps every rating finite and shrinks
ratings from few games most (one draw added to a 40-24 record over 64 games moves it by under 2
points). Callers must say so beside the ratings (``tri ladder`` prints it).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tri.errors import TriError

ELO_PER_LOGIT = 400 / math.log(10)


@dataclass(frozen=True)
class Match:
    """The results of one pairing, from player ``a``'s side: its ``wins``, ``draws`` and
    ``losses`` against player ``b`` (indices into the players)."""

    a: int
    b: int
    wins: int
    draws: int
    losses: int


@dataclass(frozen=True)
class Rating:
    """A rating on the Elo scale (the anchor at 0), its interval ``low``..``high`` and its
    standard error ``se`` (Elo points)."""

    rating: float
    low: float
    high: float
    se: float


def bradley_terry(players: int, matches: Sequence[Match], anchor: int, *, virtual_draws: float = 1.0,
                  level: float = 0.95) -> list[Rating]:
    """Ratings of ``players`` players (one per index, the ``anchor`` at 0) fitted to ``matches``
    (see the module docstring; ``virtual_draws`` drawn games are added to every match).
    Raises :class:`TriError` if a player has played no one connected to the anchor: its rating
    relative to the anchor is not defined."""
    # statsmodels takes ~1 s to import (pandas, scipy): only when ratings are fitted.
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    if not 0 <= anchor < players:
        raise TriError(f"anchor {anchor}: not a player (0..{players - 1})")
    _check_connected(players, matches, anchor)
    others = [p for p in range(players) if p != anchor]
    column = {p: k for k, p in enumerate(others)}
    if not others:
        return [Rating(0.0, 0.0, 0.0, 0.0)]
    design = np.zeros((len(matches), len(others)))
    points = np.zeros((len(matches), 2))  # [pairings, (a's points, b's points)]
    for row, m in enumerate(matches):
        if m.a in column:
            design[row, column[m.a]] = 1.0
        if m.b in column:
            design[row, column[m.b]] = -1.0
        half = (m.draws + virtual_draws) / 2
        points[row] = m.wins + half, m.losses + half
    # A saturated fit (as many pairings as ratings, e.g. two players) predicts every score exactly,
    # which statsmodels reports as "perfect separation" (the virtual draws rule out the real one),
    # and leaves no residual degrees of freedom for a WLS scale the binomial fit never uses.
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", PerfectSeparationWarning)
        fit = sm.GLM(points, design, family=sm.families.Binomial()).fit()
    estimate = np.asarray(fit.params, np.float64)
    se = np.asarray(fit.bse, np.float64)
    bounds = np.asarray(fit.conf_int(alpha=1 - level), np.float64)  # [players - 1, 2]
    out = [Rating(0.0, 0.0, 0.0, 0.0)] * players
    for p, k in column.items():
        out[p] = Rating(float(estimate[k] * ELO_PER_LOGIT), float(bounds[k, 0] * ELO_PER_LOGIT),
                        float(bounds[k, 1] * ELO_PER_LOGIT), float(se[k] * ELO_PER_LOGIT))
    return out


def _check_connected(players: int, matches: Sequence[Match], anchor: int) -> None:
    """Raise :class:`TriError` unless every player is linked to the anchor by played matches."""
    parent = list(range(players))

    def root(p: int) -> int:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for m in matches:
        if m.wins + m.draws + m.losses > 0:
            parent[root(m.a)] = root(m.b)
    apart = [p for p in range(players) if root(p) != root(anchor)]
    if apart:
        raise TriError(f"players {apart} played no one linked to the anchor: their ratings are not defined")
