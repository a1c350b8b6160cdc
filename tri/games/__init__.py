"""Games under one batched protocol (:mod:`tri.games.base`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tri.config import GameParams
    from tri.games.base import Game

GAMES = ("triangle", "connect4", "tictactoe")


def game_from_meta(name: str, config: dict[str, Any]) -> Game:
    """The game ``name`` with its config given as a plain dict (as stored in checkpoints)."""
    if name == "triangle":
        from tri.games.triangle.game import TriangleGame
        from tri.games.triangle.rules import TriangleConfig

        return TriangleGame(TriangleConfig(**config))
    if name == "connect4":
        from tri.games.kinrow.connect4 import Connect4Config, Connect4Game

        return Connect4Game(Connect4Config(**config))
    if name == "tictactoe":
        from tri.games.kinrow.mnk import MnkConfig, MnkGame

        return MnkGame(MnkConfig(**config))
    raise ValueError(f"unknown game {name!r} (tri knows: {', '.join(GAMES)})")


def make_game(params: GameParams) -> Game:
    """The game that ``params.game`` selects, configured by its section."""
    section = getattr(params, params.name)
    return game_from_meta(params.name, section.model_dump(mode="json"))
