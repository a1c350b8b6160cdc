"""Shared fixtures: one default triangle game per session (building its tables takes ~0.5 s)."""

from __future__ import annotations

import pytest

from tri.games.triangle import TriangleGame


@pytest.fixture(scope="session")
def game() -> TriangleGame:
    """The triangle puzzle with the reference (default) rules."""
    return TriangleGame()
