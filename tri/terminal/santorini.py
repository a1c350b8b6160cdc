"""The board view of Santorini (``tri play santorini``): each cell its height (``D`` a dome) and
``X``/``O`` for the workers, in colour; a move is three cells, ``c2 c1 b1`` (the worker, where it
moves, where it builds), and the help lists the legal ones in that notation.

A scripted game reads as a transcript (:mod:`tri.terminal.session`)::

    printf 'c2 b2 c2\\nq\\n' | tri play santorini --opponent random --seed 1
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from tri.games.base import Transition
from tri.terminal.kinrow import _STYLE_O, _STYLE_X
from tri.terminal.view import STYLE_DIM, BoardView, Progress


class SantoriniView(BoardView):
    """Workers in colour on the game's text board; moves named by cells in the position they
    were played from."""

    def draw(self, p: Progress) -> None:
        for line in self.game.render(p.state).splitlines():
            text = Text(line)
            text.highlight_regex(r"X", _STYLE_X)
            text.highlight_regex(r"O", _STYLE_O)
            text.highlight_regex(r"\b0\.", STYLE_DIM)
            self.console.print(text)

    def help(self, p: Progress) -> None:
        super().help(p)
        legal = np.flatnonzero(self.game.legal(p.state[None])[0])
        self.say(f"legal now: {', '.join(self.game.action_name(int(a), p.state) for a in legal)}", STYLE_DIM)

    def describe(self, p: Progress, seat: int, action: int, t: Transition, who: str) -> Text:
        name = self.game.action_name(action, p.before) if p.before is not None else self.game.action_name(action)
        return Text(f"{len(p.moves)}. {who} ({self.marks[seat]}): {name}")
