"""The one prompt loop of ``tri play``, for every game: draw the board, read the person's moves
one line at a time, ask an agent for the other seat's moves in a two-player game, and say what
happened. The game reads the moves (:meth:`~tri.games.base.PlayableGame.parse_move`); its board
view (:mod:`tri.terminal.view`) draws and words them.

``read_line`` is a callable like ``sys.stdin.readline``: the next line, ``''`` at the end of
input. Blank lines are skipped; ``q`` (also ``quit``, ``exit``, the end of input, Ctrl-C) stops;
``?`` (``h``, ``help``) shows the view's help; anything the game cannot read, or that is illegal
now, gets the game's one-line message and the prompt again. Nothing here exits the process.

Watching: given a ``watch`` agent, it plays the person's seat too (``tri play triangle
--watch``): nothing is read, each move is shown after ``delay`` seconds in a terminal.

With ``interactive=False`` (standard input is not a terminal) everything is plain text, with no
colours or control codes, and each line read is echoed after the prompt, so a scripted game reads
as a transcript. Callers normally use :func:`tri.terminal.play`, which picks the game's view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rich.console import Console
from rich.text import Text

from tri.games.base import PlayableGame
from tri.terminal.view import STYLE_ERROR, STYLE_LABEL, BoardView, Progress

QUIT_WORDS = frozenset({"q", "quit", "exit"})
HELP_WORDS = frozenset({"?", "h", "help"})
PLAIN_WIDTH = 100  # wide enough that nothing we print wraps


@dataclass(frozen=True)
class PlayResult:
    """How a played game ended. ``moves``: the actions played, in order (the person's and the
    opponent's); ``score``: the person's summed rewards; ``outcome`` (two-player games): +1 the
    person won, 0 a draw, -1 a loss, None when the game did not finish (and in single-player
    games); ``stats``: the game's per-move counts summed (the triangle puzzle's ``lines`` and
    ``cleared``); ``game_over``: the rules ended the game; ``quit``: the person stopped first
    (``q``, the end of input, Ctrl-C)."""

    moves: list[int] = field(default_factory=list)
    score: float = 0.0
    outcome: float | None = None
    stats: dict[str, int] = field(default_factory=dict)
    game_over: bool = False
    quit: bool = False

    @property
    def steps(self) -> int:
        """Moves played."""
        return len(self.moves)


def run(game: PlayableGame, view: type[BoardView], read_line: Callable[[], str], *, interactive: bool,
        seed: int = 0, agent=None, person_seat: int = 0, opponent_name: str | None = None,
        console: Console | None = None, watch=None, delay: float = 0.0) -> PlayResult:
    """One game of ``game`` drawn by ``view``, started from ``game.initial([seed])``. The person
    plays seat ``person_seat`` (0 moves first); in a two-player game ``agent`` (any
    :class:`~tri.agents.Agent`), called ``opponent_name`` (default: its ``name``), plays the
    other seat. ``watch``: an agent that plays the person's seat instead (nothing is read), each
    move ``delay`` seconds apart when ``interactive``. Prints to ``console`` (default: stdout,
    plain when not ``interactive``)."""
    if game.num_players == 2 and agent is None:
        raise ValueError(f"{game.name} is a two-player game: it needs an agent to play against")
    if not 0 <= person_seat < game.num_players:
        raise ValueError(f"{game.name} has no seat {person_seat} (seats are 0-{game.num_players - 1})")
    console = console or default_console(interactive)
    state = game.initial(np.array([seed], dtype=np.int64))[0]
    progress = Progress(game, state, seed, person_seat, opponent_name or getattr(agent, "name", "the agent"))
    return _Session(view(game, console, interactive), progress, read_line, agent, watch,
                    delay if interactive else 0.0).run()


def default_console(interactive: bool) -> Console:
    """Colours in a terminal; plain text, no control codes, no wrapping otherwise."""
    if interactive:
        return Console(highlight=False, emoji=False)
    return Console(force_terminal=False, force_interactive=False, no_color=True, color_system=None,
                   highlight=False, emoji=False, width=PLAIN_WIDTH, soft_wrap=True)


def prompt_line(console: Console, read_line: Callable[[], str], interactive: bool, prompt: str) -> str | None:
    """Show ``prompt`` and read the next line; None at the end of input (or Ctrl-C)."""
    console.print(Text(prompt, style=STYLE_LABEL), end="")
    try:
        line = read_line()
    except (KeyboardInterrupt, EOFError):
        console.print()
        return None
    if not interactive:
        # Echo what was read so a piped game reads as a transcript.
        console.print(Text(line.rstrip("\r\n") if line else "(end of input)"))
    elif not line:
        console.print()  # Ctrl-D: end the prompt's line
    return line or None


class _Session:
    def __init__(self, view: BoardView, progress: Progress, read_line: Callable[[], str], agent, watch=None,
                 delay: float = 0.0):
        self.view, self.p, self.read_line, self.agent = view, progress, read_line, agent
        self.watch, self.delay = watch, delay
        self.game = view.game

    def run(self) -> PlayResult:
        p = self.p
        self.view.intro(p)
        self.view.draw(p)
        quit_, last = False, None
        while not self.game.terminal(p.state[None])[0]:
            seat = self.game.to_move(p.state)
            if seat == p.person_seat and self.watch is not None:
                try:
                    time.sleep(self.delay)
                except KeyboardInterrupt:  # Ctrl-C stops watching, as it stops a person's game
                    quit_ = True
                    break
                action = int(self.watch.act(p.state[None], np.array([len(p.moves)])).actions[0])
                who = getattr(self.watch, "name", "the agent")
            elif seat == p.person_seat:
                action = self.ask()
                if action is None:
                    quit_ = True
                    break
                who = "you"
            else:
                action = int(self.agent.act(p.state[None], np.array([len(p.moves)])).actions[0])
                who = p.opponent_name
            last = self.apply(seat, action, who)
        outcome = None
        if self.game.num_players == 2 and not quit_ and last is not None:
            seat, reward = last  # the final move's reward is the mover's
            outcome = (reward if seat == p.person_seat else -reward) or 0.0  # no -0.0 for a draw
        result = PlayResult(list(p.moves), p.score, outcome, dict(p.stats),
                            bool(self.game.terminal(p.state[None])[0]), quit_)
        self.view.finish(p, result)
        return result

    def ask(self) -> int | None:
        """The person's next legal move; None to stop."""
        while True:
            line = prompt_line(self.view.console, self.read_line, self.view.interactive, self.view.prompt)
            if line is None:
                return None
            text = line.strip()
            if not text:
                continue
            if text.lower() in QUIT_WORDS:
                return None
            if text.lower() in HELP_WORDS:
                self.view.help(self.p)
                continue
            try:
                return self.game.parse_move(text, self.p.state)
            except ValueError as exc:
                self.view.say(str(exc), STYLE_ERROR)

    def apply(self, seat: int, action: int, who: str) -> tuple[int, float]:
        """Play ``action`` for ``seat``; say and draw it. Returns ``(seat, reward)``."""
        p = self.p
        t = self.game.step(p.state[None], np.array([action]))
        p.before, p.state = p.state, t.states[0]
        p.moves.append(action)
        reward = float(t.reward[0])
        if seat == p.person_seat:
            p.score += reward
        for key, values in t.stats.items():
            p.stats[key] = p.stats.get(key, 0) + int(values[0])
        line = self.view.describe(p, seat, action, t, who)
        if self.view.redraws and self.view.interactive:
            self.view.draw(p)
            self.view.say(line)
        else:
            self.view.say(line)
            self.view.draw(p)
        return seat, reward
