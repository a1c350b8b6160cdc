"""Players that know no network: game-agnostic yardsticks for the two-player games.

``uct:N``: plain UCT, the classic reference of game-tree search. ``N`` simulations per move, each
descending the tree by UCB1 (an unvisited action first; otherwise the largest
``(1 + Q) / 2 + C * sqrt(ln N_parent / n)``, with ``Q`` in ``[-1, 1]`` the mean result for the
player choosing, so the value term is in ``[0, 1]``) with the exploration constant
:data:`UCT_C` = sqrt(2), the textbook value for rewards in ``[0, 1]``; adding one node, then
playing uniformly random moves from it to the end of the game (a roll-out) and backing its
result up. It plays the most visited move. It runs on :func:`tri.search.search` (the same
batched trees as the network's search; ``ucb`` switches the selection rule, and the evaluator
below plays the roll-outs for every new leaf of every tree at once).

``alphabeta:D`` (Othello): depth-``D`` negamax with alpha-beta pruning (a pass is a move and
counts as a ply; a finished game scores ``WIN`` times the result) over the positional evaluation
:func:`othello_weights` and mobility: for the side to move, the sum of the weights of its discs
minus the opponent's, plus :data:`MOBILITY` times its number of legal placements minus the
opponent's. Children are searched in action order and ties go to the lowest action, so it is
deterministic.
"""

from __future__ import annotations

import math

import numpy as np

from tri.agents import Decision, choose
from tri.config import MctsParams
from tri.errors import TriError
from tri.games.base import Game, sample_legal
from tri.games.othello.game import MINE, THEIRS, OthelloGame
from tri.search import search

UCT_C = math.sqrt(2.0)
MOBILITY = 2.0  # alphabeta: evaluation points per legal placement more than the opponent
WIN = 10_000.0  # alphabeta: a won game, worth more than any evaluation
ROLLOUT_LIMIT = 10_000  # moves; a game with no move limit stops its roll-out here, a draw


def rollout_evaluator(game: Game, rng: np.random.Generator):
    """An :data:`~tri.search.Evaluator`: uniform priors over the legal actions, and as the value of
    each state ``[M, L]`` the result of one uniformly random game played from it (+1 a win for
    the side to move there, -1 a loss, 0 a draw)."""

    def evaluate(states: np.ndarray):
        legal = game.legal(states)
        counts = legal.sum(axis=1, keepdims=True)
        priors = np.divide(legal, counts, out=np.zeros(legal.shape, np.float32), where=counts > 0)
        return priors.astype(np.float32), legal, rollouts(game, states, rng).astype(np.float32)

    return evaluate


def rollouts(game: Game, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``[M]``: one random game from each of ``states [M, L]``, scored for its side to move. Each
    move's reward goes to its mover and the side to move alternates, so the final reward counts
    for the side to move of ``states`` when it made the final move (an odd number of moves
    later), else against it."""
    s = states.copy()
    value = np.zeros(s.shape[0])
    live = ~game.terminal(s)
    limit = game.move_limit or ROLLOUT_LIMIT
    for t in range(1, limit + 1):
        idx = np.flatnonzero(live)
        if idx.size == 0:
            break
        step = game.step(s[idx], sample_legal(game.legal(s[idx]), rng))
        s[idx] = step.states
        done = idx[step.terminal]
        value[done] = step.reward[step.terminal] * (1.0 if t % 2 else -1.0)
        live[done] = False
    return value


class UctAgent:
    """``uct:N`` (see the module docstring); deterministic given its generator."""

    def __init__(self, game: Game, simulations: int, rng: np.random.Generator, name: str | None = None):
        if game.num_players != 2:
            raise TriError(f"uct:{simulations} plays two-player games; {game.name} is single-player")
        self.game, self.simulations, self.rng = game, simulations, rng
        self.name = name or f"uct:{simulations}"
        self.params = MctsParams(simulations=simulations, gumbel=False, dirichlet_fraction=0.0, leaves_per_step=1)

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        evaluate = rollout_evaluator(self.game, self.rng)
        result = search(self.game, evaluate, states, self.params, self.rng, noise=False,
                        simulations=self.simulations, ucb=UCT_C)
        actions = choose(result.visits, moves, 0.0, 0, self.rng)
        return Decision(actions, result.policy, result.value)


def othello_weights(size: int) -> np.ndarray:
    """``[size * size]`` positional weights: corners 20 (never flipped back), the cells diagonally
    next to a corner -8 and those beside it on the edge -4 (they hand the corner to the
    opponent), the other edge cells 3, the inside 1 (the classic shape of Othello tables, scaled
    for any board)."""
    w = np.ones((size, size))
    last = size - 1
    w[0, :] = w[last, :] = w[:, 0] = w[:, last] = 3.0
    for r, c in ((0, 0), (0, last), (last, 0), (last, last)):
        dr, dc = (1 if r == 0 else -1), (1 if c == 0 else -1)
        w[r, c] = 20.0
        w[r + dr, c + dc] = -8.0
        w[r, c + dc] = w[r + dr, c] = -4.0
    return w.reshape(-1)


class AlphaBetaAgent:
    """``alphabeta:D`` for Othello (see the module docstring)."""

    def __init__(self, game: Game, depth: int, name: str | None = None):
        if not isinstance(game, OthelloGame):
            raise TriError(f"alphabeta:{depth} plays Othello (it has Othello's evaluation), not {game.name}")
        self.game, self.depth, self.name = game, depth, name or f"alphabeta:{depth}"
        self.weights = othello_weights(game.size)
        self._bits = np.uint64(1) << np.arange(game.num_cells, dtype=np.uint64)

    def evaluate(self, states: np.ndarray) -> np.ndarray:
        """``[B]``: the evaluation of non-terminal ``states [B, 3]`` for their side to move."""
        mine = (states[:, MINE, None] & self._bits) != 0
        theirs = (states[:, THEIRS, None] & self._bits) != 0
        swapped = states.copy()
        swapped[:, [MINE, THEIRS]] = states[:, [THEIRS, MINE]]
        mobility = np.bitwise_count(self.game.placements(states)).astype(np.float64) - \
            np.bitwise_count(self.game.placements(swapped)).astype(np.float64)
        return (mine * self.weights).sum(axis=1) - (theirs * self.weights).sum(axis=1) + MOBILITY * mobility

    def value(self, state: np.ndarray, depth: int, alpha: float, beta: float) -> float:
        """Negamax value of the non-terminal ``state [3]`` searched ``depth`` plies."""
        actions = np.flatnonzero(self.game.legal(state[None])[0])
        step = self.game.step(np.repeat(state[None], actions.size, axis=0), actions)
        if depth == 1:
            scores = np.where(step.terminal, WIN * step.reward, 0.0)
            live = ~step.terminal
            if live.any():
                scores[live] = -self.evaluate(step.states[live])
            return float(scores.max())
        best = -np.inf
        for i in range(actions.size):
            v = WIN * step.reward[i] if step.terminal[i] else -self.value(step.states[i], depth - 1, -beta, -alpha)
            best = max(best, v)
            alpha = max(alpha, v)
            if alpha >= beta:
                break
        return best

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        out = np.empty(states.shape[0], dtype=np.int64)
        for b, state in enumerate(states):
            actions = np.flatnonzero(self.game.legal(state[None])[0])
            step = self.game.step(np.repeat(state[None], actions.size, axis=0), actions)
            best, best_a, alpha = -np.inf, int(actions[0]), -np.inf
            for i, a in enumerate(actions):
                if step.terminal[i]:
                    v = WIN * step.reward[i]
                elif self.depth == 1:
                    v = -float(self.evaluate(step.states[i][None])[0])
                else:
                    v = -self.value(step.states[i], self.depth - 1, -np.inf, -alpha)
                if v > best:  # strictly: ties keep the lowest action
                    best, best_a = v, int(a)
                alpha = max(alpha, v)
            out[b] = best_a
        return Decision(out)
