"""The board view of the grid games (``tri play connect4``, ``tictactoe``, ``gobang``, ``othello``): the
game's text board with ``X`` in red, ``O`` in yellow and the empty cells dimmed, and a help that
lists the legal moves. A Connect Four move is a column number (1-7); a Tic-Tac-Toe move is a cell
number (1-9, shown in the empty cells) or ``row col``; a Gobang or Othello move is a cell ``e5``.

A scripted game reads as a transcript (:mod:`tri.terminal.session`)::

    printf '4\\n4\\nq\\n' | tri play connect4 --opponent random --seed 1

Example (library)::

    import io
    from tri.games.kinrow.connect4 import Connect4Game
    from tri.players import GreedyAgent
    from tri.terminal import play
    game = Connect4Game()
    result = play(game, io.StringIO("4\\n4\\nq\\n").readline, agent=GreedyAgent(game), interactive=False)
    result.outcome, result.moves, result.quit
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from tri.terminal.view import STYLE_DIM, BoardView, Progress

_STYLE_X = "bold red"
_STYLE_O = "bold yellow"


class KInRowView(BoardView):
    """Stones in colour on the game's own text board (:meth:`render`)."""

    def draw(self, p: Progress) -> None:
        for line in self.game.render(p.state).splitlines():
            text = Text(line)
            text.highlight_regex(r"X", _STYLE_X)
            text.highlight_regex(r"O", _STYLE_O)
            text.highlight_regex(r"[.*\d]+", STYLE_DIM)
            self.console.print(text)

    def help(self, p: Progress) -> None:
        super().help(p)
        legal = np.flatnonzero(self.game.legal(p.state[None])[0])
        self.say(f"legal now: {', '.join(self.move_label(int(a)) for a in legal)}", STYLE_DIM)

    def move_label(self, action: int) -> str:
        """A legal move as the help lists it: its 1-based number."""
        return str(action + 1)


class CoordinateView(KInRowView):
    """A board whose cells people name ``a1``-style (Othello: ``X`` black, ``O`` white, ``*`` a
    legal placement; Gobang: ``X``, ``O``, ``.``); the help lists moves in that notation."""

    def move_label(self, action: int) -> str:
        return self.game.action_name(action)
