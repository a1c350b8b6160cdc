"""``tri play``: games in the terminal. :func:`play` runs one game of any
:class:`~tri.games.base.PlayableGame` through the one prompt loop (:mod:`tri.terminal.session`),
drawn by the game's board view from :data:`VIEWS` (a game without an entry gets the plain
:class:`~tri.terminal.view.BoardView`, which prints the game's ``render``).

Example (library)::

    import io
    from tri.games import make_game
    from tri.config import GameParams
    from tri.players import GreedyAgent
    from tri.terminal import play
    game = make_game(GameParams(name="connect4"))
    result = play(game, io.StringIO("4\\n4\\nq\\n").readline, agent=GreedyAgent(game), person_seat=0,
                  interactive=False)
    result.moves, result.outcome, result.quit
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from tri.games.base import PlayableGame
from tri.terminal.kinrow import CoordinateView, KInRowView
from tri.terminal.santorini import SantoriniView
from tri.terminal.session import PlayResult, run
from tri.terminal.triangle import TriangleView
from tri.terminal.view import BoardView

__all__ = ["VIEWS", "PlayResult", "play", "view_for"]

# The board view of each game, by the registry's name (tri.games.REGISTRY).
VIEWS: dict[str, type[BoardView]] = {
    "triangle": TriangleView,
    "connect4": KInRowView,
    "tictactoe": KInRowView,
    "gobang": CoordinateView,
    "othello": CoordinateView,
    "santorini": SantoriniView,
    "pyrga": CoordinateView,
}


def view_for(game: PlayableGame) -> type[BoardView]:
    """The board view of ``game`` (the plain one when it has none of its own)."""
    return VIEWS.get(game.name, BoardView)


def play(game: PlayableGame, read_line: Callable[[], str], *, interactive: bool, seed: int = 0,
         agent=None, person_seat: int = 0, opponent_name: str | None = None,
         console: Console | None = None, watch=None, delay: float = 0.0) -> PlayResult:
    """One game of ``game`` in the terminal, started from ``game.initial([seed])`` (``seed``: the
    chance of a stochastic game). The person plays ``person_seat`` (0 moves first); a two-player
    game needs ``agent`` (any :class:`~tri.agents.Agent`), named ``opponent_name`` in messages
    (default: its ``name``), for the other seat. ``read_line``: like ``sys.stdin.readline``;
    ``interactive``: standard input is a terminal (colours; otherwise plain text and each line
    read is echoed). ``watch``: an agent that plays the person's seat (nothing is read), each move
    ``delay`` seconds apart in a terminal. Prints to ``console`` (default: stdout). Never exits
    the process."""
    return run(game, view_for(game), read_line, interactive=interactive, seed=seed, agent=agent,
               person_seat=person_seat, opponent_name=opponent_name, console=console, watch=watch, delay=delay)
