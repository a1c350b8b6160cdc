"""The game registry: the one table of the games tri plays.

``params.yaml``'s ``game`` section (:class:`tri.config.GameParams`: ``name`` and one rules
section per game), checkpoints (which store a game's name and config), ``tri play GAME`` and
``tri init --game`` all read :data:`REGISTRY`. Adding a game is its own module or folder under
``tri/games/`` (a class implementing :class:`~tri.games.base.Game` and
:class:`~tri.games.base.PlayableGame`, and a pydantic config for its rules), one entry below, a
board view in :mod:`tri.terminal`, and its section in ``params.yaml`` (README, "Adding a game").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from tri.errors import TriError
from tri.games.base import Game, PlayableGame
from tri.games.kinrow.connect4 import Connect4Game
from tri.games.kinrow.gobang import GobangGame
from tri.games.kinrow.mnk import MnkGame
from tri.games.kinrow.rules import (CONNECT4_RECIPE, GOBANG_RECIPE, TICTACTOE_RECIPE, Connect4Config, GobangConfig,
                                    MnkConfig)
from tri.games.othello.game import OthelloGame
from tri.games.othello.rules import OTHELLO_RECIPE, OthelloConfig
from tri.games.pyrga.game import PyrgaGame
from tri.games.pyrga.rules import PYRGA_RECIPE, PyrgaConfig
from tri.games.santorini.game import SantoriniGame
from tri.games.santorini.rules import SANTORINI_RECIPE, SantoriniConfig
from tri.games.triangle.game import TriangleGame
from tri.games.triangle.rules import RECIPE as TRIANGLE_RECIPE
from tri.games.triangle.rules import TriangleConfig

if TYPE_CHECKING:  # tri.config builds GameParams from this registry
    from tri.config import GameParams


@dataclass(frozen=True)
class GameEntry:
    """One registered game: ``name`` (``game.name`` in params.yaml, the name of its rules section,
    of ``tri play NAME``, of its MLflow experiment ``tri-NAME``), ``title`` for people,
    ``config`` (the pydantic model of its rules), ``game`` (the class: ``game(config)``) and
    ``recipe``: the params.yaml sections, over the embedded defaults, that trained it best on
    record (``tri new DIR --game NAME`` writes them out)."""

    name: str
    title: str
    config: type[BaseModel]
    game: type
    recipe: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


REGISTRY: dict[str, GameEntry] = {e.name: e for e in (
    GameEntry("triangle", "the triangle puzzle (single-player, random shape draws)", TriangleConfig, TriangleGame,
              TRIANGLE_RECIPE),
    GameEntry("connect4", "Connect Four", Connect4Config, Connect4Game, CONNECT4_RECIPE),
    GameEntry("tictactoe", "Tic-Tac-Toe (an m,n,k-game: m x n board, k in a row)", MnkConfig, MnkGame,
              TICTACTOE_RECIPE),
    GameEntry("gobang", "Gobang (five in a row on 9 x 9; 15 x 15 as a setting)", GobangConfig, GobangGame,
              GOBANG_RECIPE),
    GameEntry("othello", "Othello (Reversi; 6 x 6 by default, 8 x 8 the standard board)", OthelloConfig,
              OthelloGame, OTHELLO_RECIPE),
    GameEntry("santorini", "Santorini (no god powers; move a worker, then build)", SantoriniConfig, SantoriniGame,
              SANTORINI_RECIPE),
    GameEntry("pyrga", "Pyrga (4 x 4: place squares, circles and arrows, own the towers)", PyrgaConfig, PyrgaGame,
              PYRGA_RECIPE),
)}

GAMES = tuple(REGISTRY)  # the names, in registry order
DEFAULT_GAME = "triangle"


def entry(name: str) -> GameEntry:
    """The registry entry of ``name``; :class:`TriError` naming the known games otherwise."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise TriError(f"unknown game {name!r} (tri knows: {', '.join(GAMES)})") from None


def game_from_meta(name: str, config: dict[str, Any]) -> PlayableGame:
    """The game ``name`` with its config given as a plain dict (as stored in checkpoints)."""
    e = entry(name)
    try:
        rules = e.config(**config)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "config"
        raise TriError(f"game {name}: bad rules config ({where}: {first.get('msg', 'invalid')})") from None
    return e.game(rules)


def make_game(params: GameParams) -> PlayableGame:
    """The game that ``params.name`` selects, configured by its section."""
    section = getattr(params, params.name)
    return entry(params.name).game(section)


__all__ = ["DEFAULT_GAME", "GAMES", "REGISTRY", "Game", "GameEntry", "PlayableGame", "entry", "game_from_meta",
           "make_game"]
