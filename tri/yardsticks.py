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
"""

from __future__ import annotations

import math

import numpy as np

from tri.agents import Decision, choose
from tri.config import MctsParams
from tri.errors import TriError
from tri.games.base import Game, sample_legal
from tri.search import search

UCT_C = math.sqrt(2.0)
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
