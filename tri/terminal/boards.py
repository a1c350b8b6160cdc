"""Play Connect Four or an m,n,k-game against an agent in the terminal (``tri play connect4``,
``tri play tictactoe``).

:func:`play_board_game` prints the board, reads the person's moves one line at a time from
``read_line`` (a callable like ``sys.stdin.readline``: the next line, ``''`` at the end of input),
asks the agent (any :class:`~tri.agents.Agent`: a baseline, a network, a search) for the other
side's moves, and prints the board after every move. A Connect Four move is a column number
(1-7); a Tic-Tac-Toe move is a cell number (1-9, shown in the empty cells) or ``row col``.
Unreadable or illegal input gets a one-line message and the prompt again; ``q`` (or the end of
input, or Ctrl-C) stops; ``?`` shows help. Nothing here exits the process.

With ``interactive=False`` (standard input is not a terminal) everything is plain text and each
line read is echoed after the prompt, so a scripted game reads as a transcript::

    printf '4\\n4\\nq\\n' | tri play connect4 --opponent random --seed 1

Example (library)::

    import io
    import numpy as np
    from tri.games.kinrow.connect4 import Connect4Game
    from tri.players import GreedyAgent
    from tri.terminal.boards import play_board_game
    game = Connect4Game()
    result = play_board_game(game, GreedyAgent(game), io.StringIO("4\\n4\\nq\\n").readline,
                             person_first=True, interactive=False)
    result.outcome, result.moves, result.quit
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rich.console import Console
from rich.text import Text

from tri.terminal.triangle import HELP_WORDS, QUIT_WORDS, default_console, prompt_line

_STYLE_X = "bold red"
_STYLE_O = "bold yellow"
_STYLE_LABEL = "bold"
_STYLE_DIM = "dim"
_STYLE_ERROR = "bold red"
_STYLE_GOOD = "bold green"
_LONG_NUMBER = re.compile(r"\d{10,}")


@dataclass(frozen=True)
class BoardPlayResult:
    """How the game ended. ``moves``: the actions played, in order (0-based); ``outcome``: for
    the person, +1 win, 0 draw, -1 loss, None when the game did not finish; ``quit``: the person
    stopped first (``q``, end of input, Ctrl-C)."""

    moves: list[int] = field(default_factory=list)
    outcome: float | None = None
    quit: bool = False


def play_board_game(game, opponent, read_line: Callable[[], str], *, person_first: bool,
                    interactive: bool, console: Console | None = None,
                    opponent_name: str | None = None) -> BoardPlayResult:
    """One game of ``game`` (a :class:`~tri.games.kinrow.engine.KInRowGame`) between a person, who
    plays first (``X``) when ``person_first``, and ``opponent`` (an agent). Returns the outcome;
    never exits the process."""
    if console is None:
        console = default_console(interactive)
    return _Session(game, opponent, read_line, person_first, interactive, console,
                    opponent_name or getattr(opponent, "name", "the agent")).run()


class _Session:
    def __init__(self, game, opponent, read_line: Callable[[], str], person_first: bool, interactive: bool,
                 console: Console, opponent_name: str):
        self.game, self.opponent, self.read_line = game, opponent, read_line
        self.person_first, self.interactive, self.console = person_first, interactive, console
        self.opponent_name = opponent_name
        self.state = game.new()
        self.moves: list[int] = []

    def person_to_move(self) -> bool:
        return self.game.first_to_move(self.state) == self.person_first

    def run(self) -> BoardPlayResult:
        you, them = ("X", "O") if self.person_first else ("O", "X")
        self.say(f"{self.game.name}: you are {you} (moving {'first' if self.person_first else 'second'}), "
                 f"{self.opponent_name} is {them}. ? for help, q to quit.", _STYLE_LABEL)
        self.draw()
        while not self.game.is_over(self.state):
            if self.person_to_move():
                action = self.ask()
                if action is None:
                    self.say(f"stopped after {len(self.moves)} moves.", _STYLE_LABEL)
                    return BoardPlayResult(list(self.moves), None, True)
                who = "you"
            else:
                decision = self.opponent.act(self.state[None], np.array([len(self.moves)]))
                action = int(decision.actions[0])
                who = self.opponent_name
            self.apply(action, who)
        result = self.game.result(self.state)
        outcome = (result if self.person_first else -result) or 0.0  # no -0.0 for a draw
        if outcome > 0:
            self.say("you win.", _STYLE_GOOD)
        elif outcome < 0:
            self.say(f"{self.opponent_name} wins.", _STYLE_LABEL)
        else:
            self.say("draw.", _STYLE_LABEL)
        return BoardPlayResult(list(self.moves), float(outcome), False)

    def ask(self) -> int | None:
        """The person's next legal move; None to stop."""
        while True:
            line = self.prompt()
            if line is None:
                return None
            text = line.strip()
            if not text:
                continue
            if text.lower() in QUIT_WORDS:
                return None
            if text.lower() in HELP_WORDS:
                self.help()
                continue
            try:
                return self.game.parse_move(_without_long_numbers(text), self.state)
            except ValueError as exc:
                self.say(str(exc), _STYLE_ERROR)

    def prompt(self) -> str | None:
        return prompt_line(self.console, self.read_line, self.interactive, "your move: ")

    def apply(self, action: int, who: str) -> None:
        mark = "X" if self.game.first_to_move(self.state) else "O"
        t = self.game.step(self.state[None], np.array([action]))
        self.state = t.states[0]
        self.moves.append(action)
        self.say(f"{len(self.moves)}. {who} ({mark}): {self.game.action_name(action)}")
        self.draw()

    def help(self) -> None:
        if self.game.gravity:
            self.say(f"type a column number (1-{self.game.cols}): your stone drops to its lowest empty "
                     f"cell. {self.game.k} in a row (across, up or diagonal) wins.")
        else:
            self.say(f"type the number of an empty cell (1-{self.game.num_cells}, shown on the board) or "
                     f"row and column (e.g. 2 3). {self.game.k} in a row wins.")
        legal = self.game.legal_actions(self.state)
        self.say(f"legal now: {', '.join(str(a + 1) for a in legal)}", _STYLE_DIM)

    def say(self, message: str, style: str | None = None) -> None:
        self.console.print(Text(message, style=style or ""))

    def draw(self) -> None:
        for line in self.game.render(self.state).splitlines():
            text = Text(line)
            text.highlight_regex(r"X", _STYLE_X)
            text.highlight_regex(r"O", _STYLE_O)
            text.highlight_regex(r"[.\d]+", _STYLE_DIM)
            self.console.print(text)


def _without_long_numbers(text: str) -> str:
    """``text`` with every number of more than 9 digits (leading zeros aside) cut to its first 9
    and "...": no board has that many cells, so the game's ``parse_move`` says what it expects
    instead of Python refusing to convert a 100,000-digit string (``ValueError``)."""

    def cut(number: re.Match) -> str:
        digits = number[0].lstrip("0") or "0"
        return digits if len(digits) <= 9 else digits[:9] + "..."

    return _LONG_NUMBER.sub(cut, text)
