"""The one game-playing loop, shared by self-play and the arena.

:func:`run_episodes` plays one game per seed, ``concurrent`` games at a time (a finished game's
slot takes the next seed, so batches stay full), asking the agent of the seat to move for all
of its games at once. Two-player games alternate seats; ``first_seat`` says who opens each game.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tri.agents import Agent
from tri.games.base import Game


class Stopped(Exception):
    """:func:`run_episodes` was asked to stop (its run is being interrupted): Python cannot
    interrupt a thread, so a loop running in one checks between moves instead."""


@dataclass
class GameSummary:
    """One finished game: ``index`` (position in ``seeds``), ``seed``, ``score`` (sum of rewards
    to the player who opened), ``steps``, ``terminal`` (ended by the rules, not the move cap),
    ``stats`` (summed per-step game counts, e.g. lines), ``outcome`` (two-player: +1/0/-1 for
    seat 0), ``first_seat``."""

    index: int
    seed: int
    score: float
    steps: int
    terminal: bool
    stats: dict[str, int] = field(default_factory=dict)
    outcome: float = 0.0
    first_seat: int = 0


@dataclass
class Positions:
    """Recorded positions, one row per move, in play order within each game (numpy arrays):
    game [P] (index into seeds), move [P], state [P, L], legal [P, A], policy [P, A], value_target
    [P], root_value [P], action [P], reward [P], score [P] (score before the move, single-player);
    policy_target [P] bool, whose policy is a training target, or None when every one is (no agent
    said otherwise: :class:`tri.agents.PlayoutCapAgent` does)."""

    game: np.ndarray
    move: np.ndarray
    state: np.ndarray
    legal: np.ndarray
    policy: np.ndarray
    value_target: np.ndarray
    root_value: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    score: np.ndarray
    policy_target: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.game.shape[0])


@dataclass
class Episodes:
    games: list[GameSummary]
    positions: Positions | None


def value_targets(rewards: np.ndarray, root_values: np.ndarray, terminal: bool, discount: float,
                  two_player: bool, td_steps: int = 0, bonus: float = 0.0) -> np.ndarray:
    """Value targets ``[T]`` for one game's positions, from each position's side to move.

    Single-player: the discounted return ``z_t = r_t + discount * z_{t+1}``, or with
    ``td_steps = n > 0`` the n-step return bootstrapped from the search's value n moves later,
    ``z_t = sum_{k<n} discount^k r_{t+k} + discount^n v_{t+n}`` (MuZero's targets). The random
    draws make a full return a noisy target; the search value averages over them (1-ply play from
    a value trained on the same games: 66 -> 75 with n = 10). A game cut by the move cap has no
    known future, so it bootstraps from its last position's search value (its own target).
    ``bonus`` (``mcts.move_bonus``) is added to every move's reward, as the search adds it.
    Two-player: the final outcome, sign-alternating back from the last mover (0 if cut).
    """
    n = rewards.shape[0]
    if two_player:
        z = np.zeros(n, np.float64)
        if terminal and n:
            sign = np.where((n - 1 - np.arange(n)) % 2 == 0, 1.0, -1.0)
            z = sign * rewards[-1]
        return z.astype(np.float32)
    # Positions 0..end-1 collect rewards; value[end] is what follows the last of them.
    end = n if terminal else n - 1
    value = np.zeros(end + 1, np.float64)
    value[:end] = root_values[:end]
    value[end] = 0.0 if terminal else float(root_values[n - 1])
    horizon = td_steps if td_steps > 0 else end
    t = np.arange(end + 1)
    stop = np.minimum(t + horizon, end)  # where each target bootstraps
    z = discount ** (stop - t) * value[stop]
    for k in range(min(horizon, end)):
        live = t + k < stop
        z[live] += discount ** k * (rewards[t[live] + k] + bonus)
    return z[:n].astype(np.float32)


def run_episodes(game: Game, agents: Sequence[Agent], seeds: np.ndarray, *, concurrent: int,
                 max_moves: int, record: bool = False, discount: float = 1.0, td_steps: int = 0, bonus: float = 0.0,
                 first_seat: np.ndarray | None = None, starts: np.ndarray | None = None,
                 on_game: Callable[[GameSummary, int], None] | None = None,
                 on_moves: Callable[[int], None] | None = None,
                 stop: Callable[[], bool] | None = None) -> Episodes:
    """Play one game per seed. ``agents[s]`` moves for seat ``s`` (one agent for single-player
    games). ``record`` keeps every position with the agent's policy and value (the agent must
    return them); its value targets (:func:`value_targets`) use ``discount``, ``td_steps`` and
    ``bonus``. ``on_game(summary, positions_in_game)`` is called as each game ends, and
    ``on_moves(n)`` after each round of moves (``n`` games moved once; for progress reports).
    ``stop()`` is asked before every move; when it says yes, :class:`Stopped` is raised.
    ``starts [total, L]``: the position each game starts from (default ``game.initial(seed)``;
    the arena's sampled openings); moves are counted from there."""
    seeds = np.asarray(seeds, dtype=np.int64)
    total = seeds.shape[0]
    first_seat = np.zeros(total, np.int64) if first_seat is None else np.asarray(first_seat, np.int64)
    two_player = game.num_players == 2
    slots = min(concurrent, total)
    slot_game = np.full(slots, -1, np.int64)
    states = np.zeros((slots, game.state_size), np.uint64)
    moves = np.zeros(slots, np.int64)
    score = np.zeros(slots, np.float64)
    stats: list[dict[str, int]] = [{} for _ in range(slots)]
    history: list[list[tuple]] = [[] for _ in range(slots)]
    summaries: list[GameSummary] = []
    rows: list[list[tuple]] = []
    capped = False  # an agent said which policies are targets (Decision.policy_target)
    next_game = 0

    def start(slot_ids: np.ndarray) -> None:
        nonlocal next_game
        take = slot_ids[: max(0, total - next_game)]
        slot_game[slot_ids] = -1
        if take.size:
            slot_game[take] = np.arange(next_game, next_game + take.size)
            states[take] = game.initial(seeds[slot_game[take]]) if starts is None else starts[slot_game[take]]
            moves[take] = 0
            score[take] = 0.0
            for s in take:
                stats[s], history[s] = {}, []
            next_game += take.size

    start(np.arange(slots))
    while (active := np.flatnonzero(slot_game >= 0)).size:
        if stop is not None and stop():
            raise Stopped(f"stopped with {len(summaries)} of {total} games finished")
        actions = np.zeros(active.size, np.int64)
        policy = np.zeros((active.size, game.num_actions), np.float32) if record else None
        root_value = np.zeros(active.size, np.float32)
        target = np.ones(active.size, bool)
        seat = (first_seat[slot_game[active]] + moves[active]) % len(agents)
        for s in range(len(agents)):
            mine = np.flatnonzero(seat == s)
            if not mine.size:
                continue
            decision = agents[s].act(states[active[mine]], moves[active[mine]])
            actions[mine] = decision.actions
            if record:
                policy[mine] = decision.policy
                root_value[mine] = decision.value
                if decision.policy_target is not None:
                    target[mine] = decision.policy_target
                    capped = True
        legal = game.legal(states[active]) if record else None
        t = game.step(states[active], actions)
        for i, slot in enumerate(active):
            if record:
                history[slot].append((moves[slot], states[slot].copy(), legal[i], policy[i], root_value[i],
                                      actions[i], t.reward[i], score[slot], target[i]))
            for name, values in t.stats.items():
                stats[slot][name] = stats[slot].get(name, 0) + int(values[i])
        # Single-player score is the sum of rewards; two-player "score" is seat 0's outcome.
        mover_sign = np.where(seat == 0, 1.0, -1.0) if two_player else 1.0
        score[active] += t.reward * mover_sign
        states[active] = t.states
        moves[active] += 1
        if on_moves is not None:
            on_moves(int(active.size))
        ended = active[t.terminal | (moves[active] >= max_moves)]
        for slot in ended:
            g = int(slot_game[slot])
            terminal = bool(game.terminal(states[slot : slot + 1])[0])
            summary = GameSummary(index=g, seed=int(seeds[g]), score=float(score[slot]), steps=int(moves[slot]),
                                  terminal=terminal, stats=stats[slot],
                                  outcome=float(np.sign(score[slot])) if two_player else 0.0,
                                  first_seat=int(first_seat[g]))
            summaries.append(summary)
            if record:
                h = history[slot]
                z = value_targets(np.array([r[6] for r in h]), np.array([r[4] for r in h]), terminal,
                                  discount, two_player, td_steps, bonus)
                rows.append([(g, *r[:6], z[j], *r[6:]) for j, r in enumerate(h)])
            if on_game is not None:
                on_game(summary, len(history[slot]) if record else summary.steps)
        if ended.size:
            start(ended)
    summaries.sort(key=lambda s: s.index)
    return Episodes(summaries, _positions(game, rows, capped) if record else None)


def _positions(game: Game, rows: list[list[tuple]], capped: bool) -> Positions:
    """Stack recorded rows (sorted by game, then move) into arrays; ``policy_target`` only if
    ``capped``."""
    flat = sorted((r for game_rows in rows for r in game_rows), key=lambda r: (r[0], r[1]))
    if not flat:
        return Positions(*(np.zeros(0) for _ in range(10)), policy_target=np.zeros(0, bool) if capped else None)
    game_ids, move, state, legal, policy, root_value, action, value_target, reward, score, target = zip(*flat)
    return Positions(game=np.array(game_ids, np.int64), move=np.array(move, np.int32),
                     state=np.stack(state), legal=np.stack(legal), policy=np.stack(policy),
                     value_target=np.array(value_target, np.float32),
                     root_value=np.array(root_value, np.float32), action=np.array(action, np.int32),
                     reward=np.array(reward, np.float32), score=np.array(score, np.float64),
                     policy_target=np.array(target, bool) if capped else None)
