"""Fixtures shared by the search's tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def roots(game):
    """Six triangle positions a few placements in, with three shapes in hand or fewer."""
    states = game.initial(np.arange(6))
    rng = np.random.default_rng(3)
    for _ in range(4):
        legal = game.legal(states)
        states = game.step(states, np.array([rng.choice(np.flatnonzero(row)) for row in legal])).states
    assert game.legal(states).any(axis=1).all()
    return states
