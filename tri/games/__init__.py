"""Games under one batched protocol (:mod:`tri.games.base`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tri.config import GameParams
    from tri.games.base import Game


def make_game(params: GameParams) -> Game:
    """The game that ``params.game`` selects, configured by its section."""
    if params.name == "triangle":
        from tri.games.triangle import TriangleGame

        return TriangleGame(params.triangle)
    raise ValueError(f"unknown game {params.name!r}")
