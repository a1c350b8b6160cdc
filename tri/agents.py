"""Agents: whatever picks moves for a batch of states. Self-play and the arena use the same
agents through the same loop (:mod:`tri.episodes`).

An agent's ``act(states [B, L], moves [B]) -> Decision`` may also return the search's policy
and value, which self-play records as training targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tri.games.base import Game
from tri.plan import CyclePlan, plan_cycle
from tri.search import Evaluator, MctsParams, search


@dataclass(frozen=True)
class Decision:
    """actions [B] int64; policy [B, A] float32 or None (the search's policy target);
    value [B] float32 or None (root value estimate, side to move); policy_target [B] bool or
    None (which policies are training targets; None: all, see :class:`PlayoutCapAgent`)."""

    actions: np.ndarray
    policy: np.ndarray | None = None
    value: np.ndarray | None = None
    policy_target: np.ndarray | None = None


class Agent(Protocol):
    name: str

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        """Pick an action for each of ``states [B, L]``; ``moves [B]``: moves played so far."""
        ...


def choose(visits: np.ndarray, moves: np.ndarray, temperature: float, temperature_moves: int,
           rng: np.random.Generator) -> np.ndarray:
    """Actions from visit counts ``[B, A]``: sampled in proportion to ``visits ** (1/T)`` for
    games with fewer than ``temperature_moves`` moves played (and ``T > 0``), otherwise the
    most-visited action (lowest index on ties)."""
    actions = np.argmax(visits, axis=1)
    hot = np.flatnonzero(moves < temperature_moves) if temperature > 0 else np.empty(0, np.int64)
    if hot.size:
        weights = visits[hot].astype(np.float64) ** (1.0 / temperature)
        weights /= weights.sum(axis=1, keepdims=True)
        u = rng.random(hot.size)[:, None]
        actions[hot] = np.minimum((weights.cumsum(axis=1) < u).sum(axis=1), visits.shape[1] - 1)
    return actions.astype(np.int64)


class MctsAgent:
    """Plays by :func:`tri.search.search`; ``noise`` adds Dirichlet noise at the root (self-play
    only); moves below ``temperature_moves`` are sampled at ``temperature``; ``determinizations``
    trees per move in a game with chance, each with ``simulations``."""

    def __init__(self, game: Game, evaluate: Evaluator, params: MctsParams, rng: np.random.Generator,
                 *, noise: bool, temperature: float, temperature_moves: int,
                 simulations: int | None = None, determinizations: int = 1, name: str = "mcts"):
        self.game, self.evaluate, self.params, self.rng = game, evaluate, params, rng
        self.noise, self.temperature, self.temperature_moves = noise, temperature, temperature_moves
        self.simulations = simulations or params.simulations
        self.determinizations = determinizations
        self.name = name

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        plan = None
        if self.params.plan_cycle and self.game.stochastic and hasattr(self.game, "afterstate"):
            plan = plan_cycle(self.game, self.evaluate, states, discount=self.params.discount,
                              scale=self.params.value_scale, limit=self.params.plan_cycle,
                              bonus=self.params.move_bonus)
            if plan.planned.all():  # every row planned whole: nothing left to search
                return _planned(plan, self.game.num_actions)
        rows = np.flatnonzero(~plan.planned) if plan is not None else slice(None)
        result = search(self.game, self.evaluate, states[rows], self.params, self.rng, noise=self.noise,
                        simulations=self.simulations, determinizations=self.determinizations)
        if result.action is not None:  # Gumbel: the search chose (its noise is the exploration)
            actions = result.action
        else:
            actions = choose(result.visits, moves[rows], self.temperature, self.temperature_moves, self.rng)
        if self.params.avoid_dead_ends and hasattr(self.game, "dead_ends"):
            actions = avoid_dead_ends(self.game, states[rows], actions, result.policy)
        if plan is None:
            return Decision(actions, result.policy, result.value)
        out = _planned(plan, self.game.num_actions)
        out.actions[rows], out.policy[rows], out.value[rows] = actions, result.policy, result.value
        return out


def _planned(plan: CyclePlan, num_actions: int) -> Decision:
    """A decision from a :class:`~tri.plan.CyclePlan`: each planned row's best first move, as a
    one-hot policy (an exhaustive search's improved policy), its worth as the root value; the
    other rows' entries are placeholders for the search's."""
    actions = np.maximum(plan.action, 0)
    policy = np.zeros((actions.size, num_actions), np.float32)
    policy[np.arange(actions.size), actions] = plan.planned
    return Decision(actions, policy, np.nan_to_num(plan.value).astype(np.float32))


def avoid_dead_ends(game, states: np.ndarray, actions: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """``actions [B]`` with each dead end (``game.dead_ends``: after it the game surely ends within
    its turn) replaced by the legal move of highest ``policy [B, A]`` (the search's) that is not
    one, where there is such a move; a copy. Only the rare dead end costs more than one check."""
    dead = np.flatnonzero(game.dead_ends(states, actions))
    if not dead.size:
        return actions
    actions = actions.copy()
    for b in dead:
        legal = np.flatnonzero(game.legal(states[b : b + 1])[0])
        safe = legal[~game.dead_ends(np.repeat(states[b : b + 1], legal.size, axis=0), legal)]
        if safe.size:
            actions[b] = safe[np.argmax(policy[b, safe])]  # ties: the first
    return actions


class PlayoutCapAgent:
    """KataGo's playout cap randomisation: each game's move is searched in full by ``full``
    with probability ``fraction``, else by ``fast`` (fewer simulations, no noise: it plays the
    game on); only the full searches' policies are training targets (``Decision.policy_target``),
    while every move's root value still feeds the value targets. The coins come from ``rng``,
    one per game and move."""

    def __init__(self, full: MctsAgent, fast: MctsAgent, fraction: float, rng: np.random.Generator,
                 name: str = "mcts"):
        self.full, self.fast, self.fraction, self.rng, self.name = full, fast, fraction, rng, name

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        full = self.rng.random(states.shape[0]) < self.fraction
        actions = np.zeros(states.shape[0], np.int64)
        policy = np.zeros((states.shape[0], self.full.game.num_actions), np.float32)
        value = np.zeros(states.shape[0], np.float32)
        for agent, rows in ((self.full, np.flatnonzero(full)), (self.fast, np.flatnonzero(~full))):
            if rows.size:
                decision = agent.act(states[rows], moves[rows])
                actions[rows], policy[rows], value[rows] = decision.actions, decision.policy, decision.value
        return Decision(actions, policy, value, policy_target=full)
