"""A board view: how one game looks in the terminal. :mod:`tri.terminal.session` runs the game
(the prompt, the moves, the opponent) and asks the game's view to draw the board and to word
what happens; :data:`tri.terminal.VIEWS` says which view each game uses.

:class:`BoardView` draws the game's plain :meth:`~tri.games.base.PlayableGame.render` and words
moves and endings for one- and two-player games alike; a game's view overrides what it shows
differently (colours, a status line, a richer help).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.text import Text

from tri.games.base import PlayableGame, Transition

if TYPE_CHECKING:  # the session imports this module
    from tri.terminal.session import PlayResult

STYLE_LABEL = "bold"
STYLE_DIM = "dim"
STYLE_ERROR = "bold red"
STYLE_GOOD = "bold green"


@dataclass
class Progress:
    """A game in progress, as the session keeps it and views draw it. ``state``: the position
    (a row ``[L]``); ``before``: the position before the last move (None before the first);
    ``moves``: the actions played; ``score``: the person's summed rewards; ``stats``: the summed
    per-move counts of :attr:`Transition.stats <tri.games.base.Transition.stats>`."""

    game: PlayableGame
    state: np.ndarray
    seed: int
    person_seat: int = 0
    opponent_name: str = ""
    before: np.ndarray | None = None
    moves: list[int] = field(default_factory=list)
    score: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)


class BoardView:
    """The plain view of any :class:`~tri.games.base.PlayableGame`; subclasses set the class
    attributes and override the methods that differ."""

    prompt = "your move: "
    marks = ("X", "O")  # the seats' names in messages
    redraws = False  # in a terminal: draw the board before the line about the move (after a clear)
    over_note: str | None = None  # single-player: a line said when the rules end the game
    stat_labels: tuple[tuple[str, str], ...] = ()  # single-player totals: (stats key, label), in order

    def __init__(self, game: PlayableGame, console: Console, interactive: bool):
        self.game, self.console, self.interactive = game, console, interactive

    def say(self, message: str | Text, style: str | None = None) -> None:
        self.console.print(message if isinstance(message, Text) else Text(message, style=style or ""))

    def draw(self, p: Progress) -> None:
        """The board (after every move, and at the start)."""
        for line in self.game.render(p.state).splitlines():
            self.say(line)

    def intro(self, p: Progress) -> None:
        """Before the first board: in a two-player game, who is who."""
        if self.game.num_players == 2:
            you, them = self.marks[p.person_seat], self.marks[1 - p.person_seat]
            order = "first" if p.person_seat == 0 else "second"
            self.say(f"{self.game.name}: you are {you} (moving {order}), {p.opponent_name} is {them}. "
                     f"? for help, q to quit.", STYLE_LABEL)

    def help(self, p: Progress) -> None:
        """What ``?`` shows."""
        self.say(self.game.move_help(p.state))

    def describe(self, p: Progress, seat: int, action: int, t: Transition, who: str) -> Text:
        """The line about the move just played (``p`` already holds it; ``t``: its step)."""
        name = self.game.action_name(action)
        if self.game.num_players == 1:
            return Text(f"{name}: reward {float(t.reward[0]):+.3f}")
        return Text(f"{len(p.moves)}. {who} ({self.marks[seat]}): {name}")

    def totals(self, p: Progress) -> str:
        """Single-player: the running totals."""
        stats = "".join(f", {label} {p.stats.get(key, 0)}" for key, label in self.stat_labels)
        return f"score {p.score:.3f}, steps {len(p.moves)}{stats}"

    def finish(self, p: Progress, result: PlayResult) -> None:
        """The last lines: the result, or where the person stopped."""
        if self.game.num_players == 1:
            if result.game_over:
                if self.over_note:
                    self.say(self.over_note, STYLE_DIM)
                self.say(f"game over: {self.totals(p)}", STYLE_LABEL)
            else:
                self.say(f"stopped: {self.totals(p)}", STYLE_LABEL)
        elif result.outcome is None:
            self.say(f"stopped after {len(p.moves)} moves.", STYLE_LABEL)
        elif result.outcome > 0:
            self.say("you win.", STYLE_GOOD)
        elif result.outcome < 0:
            self.say(f"{p.opponent_name} wins.", STYLE_LABEL)
        else:
            self.say("draw.", STYLE_LABEL)
