"""A slow, plainly written PUCT search to check ``tri.search.search`` against: one game at a time,
dict-based nodes, one leaf per simulation, no noise. Formulas as in ``tri/search.py``'s docstring:

- ``N(node)`` counts the node's visits, its first evaluation included; a simulation selects
  ``argmax_a Q(node, a) + c_puct * P(node, a) * sqrt(N(node)) / (1 + N(child))`` over legal actions,
  ties to the lowest action;
- single-player ``Q = reward(child) + discount * V(child)``, min-max normalised over the action
  values seen in the tree (every value backed up through any edge so far); two-player
  ``Q = reward(child) - V(child)``, not normalised;
- an unvisited action's ``Q`` is the node's own value ``V(node)``;
- a new leaf is evaluated (terminal leaves are worth 0) and its value backed up the path,
  converted at each edge to the parent's point of view;
- a stochastic game's roots first get chance streams from ``rng.integers(0, 2**62, size=B)``;
- with ``afterstates`` (a stochastic game), a child whose step drew (``Transition.chance``; any
  step, for a game that does not say) is an afterstate leaf: it keeps the drawn state, is valued
  by the evaluator on ``game.afterstate`` of it, is never expanded, and every later visit backs
  up its mean value.

Edge rewards are kept as float32, as the array tree stores them, so values agree to rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Node:
    state: np.ndarray
    reward: float = 0.0  # received by the player who moved into this node
    terminal: bool = False
    after: bool = False  # an afterstate leaf: terminal in the tree, but worth its mean value
    priors: dict[int, float] = field(default_factory=dict)  # legal action -> prior
    children: dict[int, Node] = field(default_factory=dict)
    visits: int = 0
    value_sum: float = 0.0

    @property
    def value(self) -> float:
        return self.value_sum / self.visits


@dataclass
class Stats:
    """Range of the action values seen in one tree (single-player normalisation)."""

    low: float = math.inf
    high: float = -math.inf

    def add(self, q: float) -> None:
        self.low, self.high = min(self.low, q), max(self.high, q)

    def normalise(self, q: float) -> float:
        if self.high - self.low > 1e-12:
            return (q - self.low) / (self.high - self.low)
        return 0.5  # no range yet: every action gets the same Q, only the priors decide


def _expand(node: Node, evaluate) -> float:
    """Evaluate ``node``: store its priors, return its value (0 for a terminal node)."""
    if node.terminal:
        return 0.0
    priors, legal, values = evaluate(node.state[None])
    node.priors = {int(a): float(priors[0, a]) for a in np.flatnonzero(legal[0])}
    if not node.priors:
        node.terminal = True
        return 0.0
    return float(values[0])


def _q(child: Node, discount: float, two_player: bool) -> float:
    return child.reward - child.value if two_player else child.reward + discount * child.value


def _choose(node: Node, stats: Stats, c_puct: float, discount: float, two_player: bool) -> int:
    sqrt_n = math.sqrt(max(node.visits, 1))
    best, best_a = -math.inf, -1
    for a in sorted(node.priors):
        child = node.children.get(a)
        if child is not None and child.visits > 0:
            q, n = _q(child, discount, two_player), child.visits
        else:
            q, n = node.value, 0
        if not two_player:
            q = stats.normalise(q)
        score = q + c_puct * node.priors[a] * sqrt_n / (1 + n)
        if score > best:  # strict: ties keep the lowest action
            best, best_a = score, a
    return best_a


def search_one(game, evaluate, root_state: np.ndarray, *, simulations: int, c_puct: float,
               discount: float, afterstates: bool = False) -> Node:
    """Search one position; returns the root node."""
    two_player = game.num_players == 2
    afterstates = afterstates and game.stochastic
    root = Node(root_state.copy())
    root.value_sum, root.visits = _expand(root, evaluate), 1
    stats = Stats()
    for _ in range(simulations):
        path, node = [root], root
        while True:
            if node.terminal:
                leaf_value = node.value if node.after else 0.0
                break
            a = _choose(node, stats, c_puct, discount, two_player)
            if a not in node.children:
                t = game.step(node.state[None], np.array([a]))
                drew = afterstates and (t.chance is None or bool(t.chance[0]))
                child = Node(t.states[0].copy(), reward=float(np.float32(t.reward[0])),
                             terminal=bool(t.terminal[0]) or drew, after=drew)
                node.children[a] = child
                path.append(child)
                if drew:
                    leaf_value = float(evaluate(game.afterstate(child.state[None]))[2][0])
                else:
                    leaf_value = _expand(child, evaluate)
                break
            node = node.children[a]
            path.append(node)
        g = leaf_value
        for i in range(len(path) - 1, -1, -1):
            n = path[i]
            n.visits += 1
            n.value_sum += g
            if i > 0:
                stats.add(_q(n, discount, two_player))
                g = n.reward - g if two_player else n.reward + discount * g
    return root


def reference_search(game, evaluate, roots: np.ndarray, *, simulations: int, c_puct: float,
                     discount: float, rng: np.random.Generator, afterstates: bool = False,
                     ) -> tuple[np.ndarray, np.ndarray, list[Node]]:
    """``(visits [B, A], values [B], root nodes)`` for each of ``roots [B, L]``, one at a time."""
    if game.stochastic:
        roots = game.reseed(roots, rng.integers(0, 2**62, size=roots.shape[0]))
    visits = np.zeros((roots.shape[0], game.num_actions), np.int64)
    values = np.zeros(roots.shape[0])
    nodes = []
    for b in range(roots.shape[0]):
        root = search_one(game, evaluate, roots[b], simulations=simulations, c_puct=c_puct,
                          discount=discount, afterstates=afterstates)
        for a, child in root.children.items():
            visits[b, a] = child.visits
        values[b] = root.value
        nodes.append(root)
    return visits, values, nodes
