"""Batched PUCT Monte Carlo tree search over many games at once.

The trees of ``B`` games live in arrays (``Tree``): node ``0`` is the root and node ``i`` is the
``i``-th node created. Each simulation step selects up to ``K`` leaves per tree (``K > 1`` uses
virtual visits so the leaves differ), computes their states with one batched ``game.step``,
evaluates every new leaf of every tree in **one** network call, and backs the values up.

Values are from the side to move at each node. An edge ``(n, a)`` leading to child ``c`` has the
reward ``reward[c]`` received by the player who acted; its action value is

- single-player: ``Q(n, a) = reward[c] + discount * V(c)``, normalised to ``[0, 1]`` by the
  smallest and largest mean action values of the tree's edges so far (returns are unbounded);
  the network's values enter ``V`` multiplied by ``mcts.value_scale`` (1 by default: a correction
  for a value that runs low against the rewards it forecasts), and so does the root value the
  search reports (its estimate of the return, ``r + discount * scale * V`` all the way down);
  each edge's reward includes ``mcts.move_bonus`` (0 by default), as the value targets do;
- two-player: ``Q(n, a) = reward[c] - V(c)`` (the child's side to move is the opponent), in
  ``[-1, 1]``.

PUCT picks ``argmax_a Q(n, a) + c_puct * P(n, a) * sqrt(N(n)) / (1 + N(c))`` over legal actions
(ties go to the lowest action); an unvisited action's ``Q`` is the node's own value estimate.
With ``mcts.gumbel`` the root instead uses Gumbel sequential halving (:mod:`tri.gumbel`).

**Solver** (``mcts.solver``, two-player games, MCTS-Solver after Winands et al. 2008). Terminal
nodes have an exact value, and a node becomes exact once one of its moves is proven to win, or
all its moves are proven (its value is then the best of them). Selection takes a proven win at
once, passes over proven losses while another move remains, and stops at a proven node as at a
terminal, backing up its exact value; the root's decision and policy keep only its best proven
class of moves (a proven win; otherwise every move not proven lost). The simulation budget is
unchanged: proofs come from the nodes the search creates anyway.

**Chance.** Before searching, a stochastic game's root states get chance streams drawn from the
search's own generator (``game.reseed``): a refill inside the tree is a sample the search drew,
never the real game's next shapes, so the search result depends only on the position and the
search seed.

**Determinizations** (``determinizations = K > 1``, stochastic games). One tree plans against
one sampled future, and the deeper it searches the more it trusts that future's draws. The
search can instead grow ``K`` trees per root, each on its own chance stream and each with the
full simulation budget, all in the same network calls (``[B * K]`` leaves), and combine them
(ensemble determinization, Cowling et al. 2012): the visits are summed, the policy targets and
values averaged, and with Gumbel the move is the one most trees chose (ties: the higher
averaged policy, then the lower action). Deterministic games have one future: one tree.

**Chance nodes** (``mcts.chance_outcomes = C > 1``, stochastic games; off at 1). Determinizations
copy the whole tree above the first refill; chance nodes instead sample inside one tree. A
*chance edge* is one whose step drew from the chance stream (``Transition.chance``: the
triangle's refills). It gets up to ``C`` outcome nodes, each stepped from the parent's state
reseeded from the search's generator, so different outcomes hold different draws and none the
real game's; outcomes hang in a list (``Tree.next_outcome``), all children of the edge's node.
An edge's visits are its outcomes' summed and its action value their visit-weighted mean, in
PUCT, at the Gumbel root and in the result (:mod:`tri.chance`); ``qmin/qmax`` span the outcomes'
own values, which contain every such mean. A descent through a chance edge of ``k`` outcomes
and ``N`` visits (pending ones counted) adds outcome ``k + 1`` while ``k < C`` and ``k * k <= N``
(progressive widening: the 2nd outcome on the 2nd visit, the 3rd on the 5th, the 4th on the 10th,
so a rarely visited edge keeps its depth), else takes the least visited outcome (ties: the
first), which keeps the outcomes' visits, equally likely samples, about equal. Determinizations
combine with it (``K`` trees, each with chance nodes).

**Afterstates** (``mcts.afterstates``, stochastic games with ``game.afterstate``). A path ends at
an edge whose step drew: its new node is an *afterstate leaf*, valued by the network on
``game.afterstate`` of its state (the triangle: the board with no shapes in hand), which
estimates the expected value over every draw rather than one sampled draw's (and a draw that
ended the game there is just one of them). The node is then stopped at like a terminal one: a
later visit backs up the same value, and the tree never searches past a draw. Its edge's reward
is the step's (the triangle's ``alive`` term depends on the draw: +0.005 at most).

**Afterstates with chance nodes** (both: ``chance_outcomes = C > 1``). A chance edge's first
outcome is its afterstate leaf, as above; as the edge's visits grow, progressive widening adds
up to ``C - 1`` more outcomes, each a draw of the search's own, evaluated and searched on like
any position. The edge's value is then the visit-weighted mean of the afterstate's estimate and
its sampled draws' searched values: the expectation at once, and the next cycle's look-ahead
where the search keeps coming back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tri.chance import root_edges
from tri.config import MctsParams
from tri.errors import TriError
from tri.games.base import Game
from tri.gumbel import GumbelRoot, root_bytes
from tri.search_kernels import UNKNOWN, _backup, _leaves, _list_legal, _select_outcomes, _store

# evaluate(states [M, L]) -> (priors [M, A] float32 summing to 1 over legal actions,
#                             legal [M, A] bool, values [M] float32 from the side to move)
Evaluator = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass
class Tree:
    """Search trees of ``B`` games with room for ``N`` nodes each.

    states [B, N, L] uint64; children [B, N, A] int32 (-1 = not created); prior [B, N, A]
    float32 (-1 = illegal); legal_actions [B, N, A] int16 (int32 past 32,767 actions) and
    num_legal [B, N] int32: an evaluated node's legal actions in increasing order, the first
    ``num_legal`` of its row (-1 = not listed: selection scans the node's ``prior`` row, as for a
    tree built by hand); visits [B, N] int32; virtual [B, N] int32 (pending visits);
    value_sum [B, N] float64 (side to move at the node); reward [B, N] float32 (edge into the
    node); terminal [B, N] bool (with ``mcts.afterstates``, afterstate leaves too); exact [B, N]
    int8 (the solver's proven value from the side to move, -1, 0 or 1; ``UNKNOWN`` = not proven);
    parent [B, N] int32; num_nodes [B] int32;
    qmin, qmax [B] float64 (range of action values seen, single-player normalisation);
    next_outcome [B, N] int32 (the next outcome of the same chance edge, -1: none; ``children``
    points to an edge's first outcome) and chance [B, N] bool (the step into the node drew from
    the chance stream): chance nodes (module docstring, :mod:`tri.chance`).
    """

    states: np.ndarray
    children: np.ndarray
    prior: np.ndarray
    legal_actions: np.ndarray
    num_legal: np.ndarray
    visits: np.ndarray
    virtual: np.ndarray
    value_sum: np.ndarray
    reward: np.ndarray
    terminal: np.ndarray
    exact: np.ndarray
    parent: np.ndarray
    num_nodes: np.ndarray
    qmin: np.ndarray
    qmax: np.ndarray
    next_outcome: np.ndarray
    chance: np.ndarray

    @classmethod
    def empty(cls, batch: int, nodes: int, state_size: int, num_actions: int) -> Tree:
        return cls(states=np.zeros((batch, nodes, state_size), np.uint64),
                   children=np.full((batch, nodes, num_actions), -1, np.int32),
                   prior=np.full((batch, nodes, num_actions), -1, np.float32),
                   # Only the first num_legal entries of a row are ever read: no fill needed.
                   legal_actions=np.empty((batch, nodes, num_actions), _action_type(num_actions)),
                   num_legal=np.full((batch, nodes), -1, np.int32),
                   visits=np.zeros((batch, nodes), np.int32), virtual=np.zeros((batch, nodes), np.int32),
                   value_sum=np.zeros((batch, nodes)), reward=np.zeros((batch, nodes), np.float32),
                   terminal=np.zeros((batch, nodes), bool),
                   exact=np.full((batch, nodes), UNKNOWN, np.int8), parent=np.full((batch, nodes), -1, np.int32),
                   num_nodes=np.ones(batch, np.int32), qmin=np.full(batch, np.inf),
                   qmax=np.full(batch, -np.inf), next_outcome=np.full((batch, nodes), -1, np.int32),
                   chance=np.zeros((batch, nodes), bool))


def _action_type(num_actions: int) -> type:
    """The integer type of :class:`Tree`'s ``legal_actions``: int16 up to 32,767 actions."""
    return np.int16 if num_actions < 2**15 else np.int32


def search_bytes(batch: int, simulations: int, num_actions: int, state_size: int, *, leaves_per_step: int = 1,
                 gumbel_actions: int = 0) -> int:
    """Bytes the arrays of one :func:`search` call take: ``batch`` trees (:class:`Tree`) of
    ``simulations + 1`` nodes over ``num_actions`` actions and ``state_size`` words per state,
    the per-step leaf buffers, and with ``gumbel_actions > 0`` Gumbel's root bookkeeping
    (:func:`tri.gumbel.root_bytes`). Not the network's activations."""
    nodes = simulations + 1
    per_node = (8 * state_size  # states uint64
                + (4 + 4 + np.dtype(_action_type(num_actions)).itemsize) * num_actions  # children, prior,
                # legal_actions; num_legal, visits, virtual, value_sum, reward, terminal, exact, parent,
                # next_outcome, chance:
                + 4 + 4 + 4 + 8 + 4 + 1 + 1 + 4 + 4 + 1)
    per_tree = nodes * per_node + 4 + 8 + 8  # num_nodes, qmin, qmax
    leaves = leaves_per_step
    # out_leaf, out_action int32 and out_kind int8; each new leaf's tree, node, action and row
    # (int64), its parent's state and its own, prior float32, legal bool, value, fresh and chance
    per_step = batch * leaves * (4 + 4 + 1 + 4 * 8 + 2 * 8 * state_size + 5 * num_actions + 8 + 2)
    total = batch * per_tree + per_step
    if gumbel_actions > 0:
        total += root_bytes(batch, simulations, num_actions, gumbel_actions)
    return total


@dataclass(frozen=True)
class SearchResult:
    """visits [B, A] int32 (root children's visit counts), policy [B, A] float32 (the policy
    target: the visit distribution, or Gumbel's improved policy), value [B] float32 (root value
    estimate), action [B] int64 or None (Gumbel: the move the search chose), tree."""

    visits: np.ndarray
    policy: np.ndarray
    value: np.ndarray
    tree: Tree
    action: np.ndarray | None = None


def _proven_root(tree: Tree, visits: np.ndarray, policy: np.ndarray, action: np.ndarray | None,
                 value: np.ndarray):
    """The solver's say at the root: keep ``visits [B, A]`` and ``policy [B, A]`` on the root's
    best proven class of moves (the proven wins if any, else every move not proven lost), move a
    Gumbel ``action [B]`` out of the dropped ones (to the most visited kept move), and give a
    proven root its exact ``value [B]``."""
    children = tree.children[:, 0]
    idx = np.maximum(children, 0)
    known = (children >= 0) & (np.take_along_axis(tree.exact, idx, axis=1) != UNKNOWN)
    q = np.take_along_axis(tree.reward, idx, axis=1) - np.take_along_axis(tree.exact, idx, axis=1)
    wins, losses = known & (q >= 1), known & (q <= -1)
    keep = np.where(wins.any(axis=1, keepdims=True), wins, ~losses)
    keep &= visits > 0
    keep[~keep.any(axis=1)] = True  # every visited move proven lost: nothing to prefer
    visits = np.where(keep, visits, 0)
    policy = np.where(keep, policy, 0).astype(np.float32)
    total = policy.sum(axis=1, keepdims=True)
    policy = np.divide(policy, total, out=np.zeros_like(policy), where=total > 0)
    if action is not None:
        moved = ~keep[np.arange(len(action)), action]
        action = np.where(moved, np.argmax(visits, axis=1), action)
    root = tree.exact[:, 0]
    value = np.where(root != UNKNOWN, root, value).astype(np.float32)
    return visits, policy, action, value


def _scaled(evaluate: Evaluator, scale: float) -> Evaluator:
    """``evaluate`` with its values ``[M]`` multiplied by ``scale`` (``mcts.value_scale``)."""
    def scaled(states: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        priors, legal, values = evaluate(states)
        return priors, legal, (values * np.float32(scale)).astype(np.float32)
    return scaled


def _dirichlet(rng: np.random.Generator, legal: np.ndarray, alpha: float) -> np.ndarray:
    """``[B, A]`` Dirichlet(alpha) noise over each row's legal actions."""
    noise = rng.gamma(alpha, size=legal.shape).astype(np.float32) * legal
    total = noise.sum(axis=1, keepdims=True)
    return np.divide(noise, total, out=np.zeros_like(noise), where=total > 0)


def search(game: Game, evaluate: Evaluator, roots: np.ndarray, params: MctsParams,
           rng: np.random.Generator, *, noise: bool = True, simulations: int | None = None,
           determinizations: int = 1, ucb: float = 0.0) -> SearchResult:
    """Search from ``roots [B, L]`` (non-terminal states) and return the root visit counts.

    ``evaluate`` is called once per simulation step with every new leaf of every tree;
    ``rng`` draws the Dirichlet noise and, for stochastic games, the trees' chance streams.
    ``determinizations > 1`` (stochastic games): that many trees per root, each on its own
    sampled future, combined (module docstring); the result's ``tree`` then holds ``[B * K]``
    trees, root ``b``'s in rows ``b * K`` to ``b * K + K - 1``.
    ``ucb > 0``: plain UCT selection with that exploration constant (``uct:N``, :mod:`tri.yardsticks`).
    """
    if determinizations < 1:
        raise ValueError(f"determinizations must be at least 1, got {determinizations}")
    k = determinizations if game.stochastic else 1
    if k == 1:
        return _search(game, evaluate, roots, params, rng, noise, simulations, ucb)
    result = _search(game, evaluate, np.repeat(roots, k, axis=0), params, rng, noise, simulations, ucb)
    return combine(result, k)


def combine(result: SearchResult, k: int) -> SearchResult:
    """One result per root from ``result``'s ``[B * K]`` searches, ``k`` consecutive per root:
    visits ``[B, A]`` summed, policy and value averaged, and a Gumbel action ``[B]`` by vote
    (ties: the higher averaged policy, then the lower action)."""
    batch = result.visits.shape[0] // k
    visits = result.visits.reshape(batch, k, -1).sum(axis=1, dtype=np.int64)
    policy = result.policy.reshape(batch, k, -1).mean(axis=1, dtype=np.float64)
    value = result.value.reshape(batch, k).mean(axis=1, dtype=np.float64).astype(np.float32)
    action = None
    if result.action is not None:
        votes = np.zeros(policy.shape, np.int64)
        np.add.at(votes, (np.repeat(np.arange(batch), k), result.action), 1)
        # The policy averages k values in [0, 1]: below one vote, it only breaks ties.
        action = np.argmax(votes + 0.5 * policy, axis=1).astype(np.int64)
    return SearchResult(visits=np.minimum(visits, np.iinfo(np.int32).max).astype(np.int32),
                        policy=policy.astype(np.float32), value=value, tree=result.tree, action=action)


def _search(game: Game, evaluate: Evaluator, roots: np.ndarray, params: MctsParams, rng: np.random.Generator,
            noise: bool, simulations: int | None, ucb: float) -> SearchResult:
    """:func:`search` with one tree per root."""
    sims = simulations or params.simulations
    leaves = params.leaves_per_step
    batch, two_player = roots.shape[0], game.num_players == 2
    outcomes = params.chance_outcomes if game.stochastic else 1
    afterstates = params.afterstates and game.stochastic
    if afterstates and not hasattr(game, "afterstate"):
        raise TriError(f"mcts.afterstates: the game {game.name} has no afterstate()")
    scale = 1.0 if two_player else params.value_scale
    bonus = 0.0 if two_player else params.move_bonus
    if scale != 1.0:
        evaluate = _scaled(evaluate, scale)
    tree = Tree.empty(batch, sims + 1, game.state_size, game.num_actions)
    if game.stochastic:
        roots = game.reseed(roots, rng.integers(0, 2**62, size=batch))
    tree.states[:, 0] = roots
    priors, legal, values = evaluate(roots)
    gumbel = None
    if params.gumbel:
        gumbel = GumbelRoot(priors, legal, values, rng, noise=noise, considered=params.gumbel_actions,
                            simulations=sims, c_visit=params.gumbel_c_visit, c_scale=params.gumbel_c_scale,
                            two_player=two_player, discount=params.discount)
    elif noise and params.dirichlet_fraction > 0:
        eps = params.dirichlet_fraction
        priors = (1 - eps) * priors + eps * _dirichlet(rng, legal, params.dirichlet_alpha)
    tree.prior[:, 0] = np.where(legal, priors, -1.0)
    _list_legal(legal, tree.legal_actions[:, 0], tree.num_legal[:, 0])
    tree.visits[:, 0] = 1
    tree.value_sum[:, 0] = values
    tree.terminal[:, 0] = ~legal.any(axis=1)
    solver = params.solver and two_player
    tree.exact[:, 0] = np.where(tree.terminal[:, 0], 0, UNKNOWN)

    out_leaf = np.empty((batch, leaves), np.int32)
    out_kind = np.empty((batch, leaves), np.int8)
    out_action = np.empty((batch, leaves), np.int32)
    root_score = np.zeros((batch, game.num_actions))
    root_target = np.full((batch, leaves), -1, np.int64)
    no_prior = np.zeros((0, game.num_actions), np.float32)
    no_legal = np.zeros((0, game.num_actions), bool)
    no_value = np.zeros(0, np.float32)
    no_after = np.zeros(batch * leaves, bool)
    done = 0
    while done < sims:
        if gumbel is not None:
            root_score, root_target = gumbel.scores(tree, root_score), gumbel.targets(done, leaves)
        _select_outcomes(tree.children, tree.prior, tree.legal_actions, tree.num_legal, tree.visits,
                         tree.virtual, tree.value_sum, tree.reward, tree.terminal, tree.exact, tree.parent,
                         tree.num_nodes, tree.qmin, tree.qmax, params.c_puct, params.discount, two_player, solver,
                         leaves, root_score, root_target, out_leaf, out_kind, out_action, ucb, tree.next_outcome,
                         tree.chance, outcomes)
        done += leaves
        new_b, new_node, actions, parent_states, fresh, term_b, term_node = _leaves(
            tree.states, tree.parent, out_leaf, out_kind, out_action)
        rows = np.empty(new_b.size, np.int64)
        leaf_prior, leaf_legal, leaf_value = no_prior, no_legal, no_value
        if new_b.size:
            if outcomes > 1 and fresh.any():  # a chance edge's new outcome: its own draw, the search's
                seeds = rng.integers(0, 2**62, size=int(fresh.sum()))
                parent_states[fresh] = game.reseed(parent_states[fresh], seeds)
            step = game.step(parent_states, actions)
            # mcts.move_bonus: every move's edge earns it, as in the value targets (never the score)
            reward = step.reward + bonus if bonus else step.reward
            drew = np.zeros(new_b.size, bool)
            if outcomes > 1 or afterstates:  # a game that does not say which steps drew: any step may have
                drew = np.ones(new_b.size, bool) if step.chance is None else step.chance
            none = no_after[:new_b.size]
            # With chance nodes too, an edge's first outcome is its afterstate; the later ones are
            # the search's own draws, searched on past the refill.
            after = (drew & ~fresh if outcomes > 1 else drew) if afterstates else none
            live = _store(tree.states, tree.reward, tree.terminal, tree.exact, tree.chance, new_b, new_node,
                          step.states, reward, step.terminal, drew if outcomes > 1 else none, after, rows)
            if live:
                states = step.states if live == new_b.size else step.states[rows >= 0]
                if afterstates and after.any():  # valued before the draw, over every draw
                    states = states.copy()
                    at = after[rows >= 0]
                    states[at] = game.afterstate(states[at])
                leaf_prior, leaf_legal, leaf_value = evaluate(states)
        _backup(tree.prior, tree.legal_actions, tree.num_legal, tree.visits, tree.virtual, tree.value_sum,
                tree.reward, tree.terminal, tree.exact, tree.children, tree.parent, tree.qmin, tree.qmax, new_b,
                new_node, rows, leaf_prior, leaf_legal, leaf_value, term_b, term_node, params.discount,
                two_player, solver)
        # Abandoned selections (collisions, full trees) left no virtual visits; nothing to undo.

    children = tree.children[:, 0]
    visits = np.where(children >= 0, np.take_along_axis(tree.visits, np.maximum(children, 0), axis=1), 0)
    if outcomes > 1:  # an edge's visits are its outcomes' (tri.chance)
        visits = root_edges(tree.children, tree.next_outcome, tree.visits, tree.value_sum, tree.reward,
                            two_player, params.discount, np.zeros(children.shape, np.int64),
                            np.zeros(children.shape))[0]
    total = visits.sum(axis=1, keepdims=True)
    policy = np.divide(visits, total, out=np.zeros(visits.shape, np.float32), where=total > 0).astype(np.float32)
    value = (tree.value_sum[:, 0] / tree.visits[:, 0]).astype(np.float32)
    action = None
    if gumbel is not None:
        action, policy = gumbel.result(tree)
    if solver:
        visits, policy, action, value = _proven_root(tree, visits, policy, action, value)
    return SearchResult(visits=visits.astype(np.int32), policy=policy, value=value, tree=tree, action=action)
