"""Options of the commands that compare players (``tri arena``, ``tri ladder``): which game they
play, from ``--game``, a ``champion:GAME`` player, or params.yaml."""

from __future__ import annotations

from pathlib import Path

import click

from tri.champions import spec_game
from tri.config import Params, params_for_game
from tri.games import GAMES

GAME_OPTION = click.option(
    "--game", "game_name", type=click.Choice(GAMES), default=None,
    help="Game to play (default: the one a champion:GAME player names, else params.yaml's); another game "
         "than params.yaml's plays with that game's recipe (what tri new writes).")


def params_for_players(params_path: Path | None, game: str | None, specs: list[str]) -> Params:
    """The params of a command comparing ``specs``: ``--game``, else the game a ``champion:GAME``
    spec names, else params.yaml's (:func:`tri.config.params_for_game`)."""
    named = sorted({g for g in map(spec_game, specs) if g})
    if game is None and len(named) == 1:
        game = named[0]
    return params_for_game(params_path, game)
