"""Test doubles for the search: a tiny two-player game over packed states (tic-tac-toe) and a
deterministic evaluator that derives priors and values from a hash of each state, so search
results are exact, reproducible and independent of batching (no network)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from tri.games.base import Symmetry, Transition

_LINES = [0b000000111, 0b000111000, 0b111000000, 0b001001001, 0b010010010, 0b100100100,
          0b100010001, 0b001010100]
_FULL = 0b111111111


def _has_line(stones: int) -> bool:
    return any(stones & line == line for line in _LINES)


class TicTacToe:
    """Tic-tac-toe under the batched game protocol.

    A state is ``[mine, theirs, flags]`` (uint64): the side to move's stones, the previous mover's
    stones (bit ``3 * row + col``), and bit 0 of ``flags`` set after an illegal move. Action = cell.
    The reward goes to the player who moved: +1 for completing a line, 0 otherwise, -1 for an
    illegal move (which ends the game). The game ends on a line, a full board or an illegal move.
    """

    name = "tictactoe"
    num_players = 2
    num_actions = 9
    state_size = 3
    obs_shape = (2, 3, 3)
    stochastic = False

    def initial(self, seeds: np.ndarray) -> np.ndarray:
        return np.zeros((len(seeds), self.state_size), np.uint64)

    def _terminal_one(self, s: np.ndarray) -> bool:
        mine, theirs, flags = int(s[0]), int(s[1]), int(s[2])
        return bool(flags & 1) or _has_line(theirs) or _has_line(mine) or (mine | theirs) == _FULL

    def terminal(self, states: np.ndarray) -> np.ndarray:
        return np.array([self._terminal_one(s) for s in states], bool)

    def legal(self, states: np.ndarray) -> np.ndarray:
        out = np.zeros((states.shape[0], 9), bool)
        for i, s in enumerate(states):
            if not self._terminal_one(s):
                taken = int(s[0]) | int(s[1])
                out[i] = [not (taken >> a) & 1 for a in range(9)]
        return out

    def step(self, states: np.ndarray, actions: np.ndarray) -> Transition:
        new = states.copy()
        reward = np.zeros(states.shape[0])
        terminal = np.zeros(states.shape[0], bool)
        for i, (s, a) in enumerate(zip(states, np.asarray(actions))):
            if self._terminal_one(s):
                terminal[i] = True
                continue
            mine, theirs = int(s[0]), int(s[1])
            a = int(a)
            if not 0 <= a < 9 or (mine | theirs) >> a & 1:
                new[i, 2] = 1
                reward[i], terminal[i] = -1.0, True
                continue
            mine |= 1 << a
            new[i, 0], new[i, 1] = theirs, mine  # the opponent moves next
            reward[i] = 1.0 if _has_line(mine) else 0.0
            terminal[i] = self._terminal_one(new[i])
        return Transition(new, reward, terminal)

    def encode(self, states: np.ndarray) -> np.ndarray:
        out = np.zeros((states.shape[0], *self.obs_shape), np.float32)
        for i, s in enumerate(states):
            for p in range(2):
                out[i, p] = [[(int(s[p]) >> (3 * r + c)) & 1 for c in range(3)] for r in range(3)]
        return out

    def reseed(self, states: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return states.copy()

    def symmetries(self) -> tuple[Symmetry, ...]:
        return ()


def _seed_of(data: np.ndarray) -> int:
    return int.from_bytes(hashlib.blake2b(np.ascontiguousarray(data).tobytes(), digest_size=8).digest(),
                          "little")


def hash_evaluator(game, values: tuple[float, float],
                   key: Callable[[np.ndarray], np.ndarray] | None = None, calls: list | None = None):
    """``evaluate(states) -> (priors [M, A] float32, legal [M, A], values [M] float32)`` where each
    row's priors (normalised over its legal actions) and value (uniform in ``values``) come from a
    generator seeded by a hash of ``key(states)[i]`` (default: the state words). ``calls``, if
    given, collects the batch size of every call."""
    lo, hi = values

    def evaluate(states: np.ndarray):
        legal = game.legal(states)
        data = states if key is None else key(states)
        priors = np.zeros(legal.shape, np.float32)
        vals = np.zeros(states.shape[0], np.float32)
        for i in range(states.shape[0]):
            rng = np.random.default_rng(_seed_of(data[i]))
            w = rng.random(legal.shape[1]) * legal[i]
            if w.sum() > 0:
                priors[i] = w / w.sum()
            vals[i] = rng.uniform(lo, hi)
        if calls is not None:
            calls.append(states.shape[0])
        return priors, legal, vals

    return evaluate


def before_refill(game, seeds: np.ndarray) -> np.ndarray:
    """Triangle states ``[B, L]`` one placement before a refill: each game of ``seeds`` after two
    random placements (of its seed's generator), so one shape is left and every legal move
    empties the slots."""
    states = game.initial(np.asarray(seeds, np.int64))
    for b, seed in enumerate(seeds):
        rng = np.random.default_rng(int(seed))
        for _ in range(2):
            legal = np.flatnonzero(game.legal(states[b:b + 1])[0])
            states[b:b + 1] = game.step(states[b:b + 1], np.array([rng.choice(legal)])).states
    filled = states[:, game.geometry.num_words + 2:] != 0
    assert (filled.sum(axis=1) == 1).all() and game.legal(states).any(axis=1).all()
    return states
