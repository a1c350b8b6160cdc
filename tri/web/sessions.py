"""Games the page plays or watches, held in the server's memory (nothing is written).

A :class:`Session` is one game from ``game.initial([seed])``: each seat is either the person
(``None``) or an agent. Playing, the person's move comes from the page and the agents reply;
watching, every seat is an agent and the page asks for one move at a time, with what the mover's
search saw (:func:`analysis`). :class:`Store` keeps the most recent sessions (the oldest are
dropped beyond its capacity) and serialises the requests of each one.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from tri.agents import Decision
from tri.errors import TriError
from tri.games.base import PlayableGame
from tri.web import positions

MAX_SESSIONS = 256
SEED_DOMAIN = 0x3EB  # the page's agents draw from [seed, seat, SEED_DOMAIN]: no other stream uses it


class Conflict(TriError):
    """A request that does not fit the game's state now (it is over, or not the person's turn)."""


class Missing(TriError):
    """No such session (never made, or dropped as the oldest)."""


@dataclass
class Session:
    """One game. ``agents[seat]``: the agent of that seat, None for the person; ``names[seat]``:
    how the page names it; ``person_seat``: whose score and result the page shows (the watched
    player when watching)."""

    id: str
    game: PlayableGame
    seed: int
    agents: list
    names: list[str]
    person_seat: int
    state: np.ndarray
    watching: bool = False
    analysis: bool = True
    moves: list[int] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    score: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)
    last_reward: tuple[int, float] | None = None  # (seat, reward) of the last move
    before: np.ndarray | None = None
    message: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def over(self) -> bool:
        return bool(self.game.terminal(self.state[None])[0])

    def turn(self) -> int:
        return int(self.game.to_move(self.state))

    # ---- moves ---------------------------------------------------------------------------

    def apply(self, action: int) -> dict:
        """Play ``action`` for the seat to move; returns the history entry it adds."""
        seat = self.turn()
        name = positions.move_name(self.game, self.state, int(action))
        t = self.game.step(self.state[None], np.array([action], dtype=np.int64))
        self.before, self.state = self.state, t.states[0]
        self.moves.append(int(action))
        reward = float(t.reward[0])
        if seat == self.person_seat:
            self.score += reward
        for key, values in t.stats.items():
            self.stats[key] = self.stats.get(key, 0) + int(values[0])
        self.last_reward = (seat, reward)
        entry = {"seat": seat, "who": self.names[seat], "move": name}
        self.history.append(entry)
        self.message = f"{'you' if self.agents[seat] is None else self.names[seat]} played {entry['move']}"
        if self.over:
            self.message += f"; game over: {self.result()['text']}" if self.game.num_players == 2 else \
                f"; game over (no shape fits): score {self.score:g}"
        return entry

    def agent_move(self, with_analysis: bool) -> dict:
        """The seat to move's agent plays; returns the Frame's ``decision``."""
        seat = self.turn()
        decision: Decision = self.agents[seat].act(self.state[None], np.array([len(self.moves)]))
        action = int(decision.actions[0])
        kind = getattr(self.agents[seat], "analysis_kind", "search")
        view = analysis(self.game, self.state, decision, kind) if with_analysis else None
        entry = self.apply(action)
        return {**entry, "reward": self.last_reward[1], "analysis": view}

    def person_move(self, text: str) -> None:
        """The person's move typed as ``text`` (the game's notation), then the agents' replies."""
        if self.over:
            raise Conflict("the game is over: start a new one")
        if self.agents[self.turn()] is not None:
            raise Conflict(f"it is {self.names[self.turn()]}'s turn, not yours")
        try:
            action = self.game.parse_move(text, self.state)
        except ValueError as exc:
            raise TriError(str(exc)) from None
        self.apply(action)
        said = [self.message]
        while not self.over and self.agents[self.turn()] is not None:
            self.agent_move(False)
            said.append(self.message)
        self.message = "; ".join(said)

    def replies(self) -> None:
        """The agents move until it is the person's turn or the game is over."""
        while not self.over and self.agents[self.turn()] is not None:
            self.agent_move(False)

    # ---- what the page shows -------------------------------------------------------------

    def result(self) -> dict | None:
        if not self.over or self.game.num_players != 2 or self.last_reward is None:
            return None
        seat, reward = self.last_reward
        outcome = round(reward if seat == self.person_seat else -reward)
        me = "you" if not self.watching else self.names[self.person_seat]
        other = self.names[1 - self.person_seat]
        if outcome == 0:
            text = "a draw"
        elif self.watching:
            text = f"{me if outcome > 0 else other} wins"
        else:
            text = "you win" if outcome > 0 else f"{other} wins"
        return {"outcome": outcome, "text": text}

    def position(self) -> dict:
        last = self.moves[-1] if self.moves else None
        return {"id": self.id, "game": self.game.name, "kind": positions.kind(self.game), "seed": self.seed,
                "moves": len(self.moves), "turn": self.turn(), "person_seat": self.person_seat,
                "players": list(self.names), "over": self.over, "result": self.result(),
                "score": round(self.score, 6), "stats": dict(self.stats), "message": self.message,
                "history": list(self.history), "help": self.game.move_help(self.state),
                "board": positions.board(self.game, self.state, self.before, last)}

    def frame(self, decision: dict | None = None) -> dict:
        return {"id": self.id, "index": len(self.moves), "position": self.position(), "decision": decision}


def analysis(game: PlayableGame, state: np.ndarray, decision: Decision, kind: str = "search") -> dict | None:
    """What the mover saw in ``state [L]``: the search's policy (``kind`` ``search``) or the
    network's priors (``network``) as a heat map and its top moves, and its value estimate; None
    for a player without a policy (``greedy``, ``random``)."""
    if decision.policy is None:
        return None
    policy = np.asarray(decision.policy[0], dtype=np.float64)
    legal = game.legal(state[None])[0]
    value = None if decision.value is None else round(float(decision.value[0]), 5)
    return {"kind": kind, "value": value, "heat": positions.heat(game, state, np.where(legal, policy, 0.0)),
            "top": positions.top_moves(game, state, policy, legal)}


class Store:
    """The last :data:`MAX_SESSIONS` sessions, by id."""

    def __init__(self, capacity: int = MAX_SESSIONS):
        self.capacity = capacity
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def new(self, game: PlayableGame, seed: int, agents: list, names: list[str], person_seat: int, *,
            watching: bool = False, analysis: bool = True) -> Session:
        state = game.initial(np.array([seed], dtype=np.int64))[0]
        session = Session(secrets.token_hex(8), game, seed, agents, names, person_seat, state,
                          watching=watching, analysis=analysis)
        session.message = "watching" if watching else "your move" if agents[session.turn()] is None else ""
        with self._lock:
            self._sessions[session.id] = session
            while len(self._sessions) > self.capacity:
                self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str, *, watching: bool) -> Session:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                self._sessions.move_to_end(session_id)
        if session is None or session.watching != watching:
            what = "watched game" if watching else "game"
            raise Missing(f"no {what} {session_id[:40]!r} (it may have ended with the server, or been "
                          f"dropped as one of the oldest {self.capacity}): start a new one")
        return session
