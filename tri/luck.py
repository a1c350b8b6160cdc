"""Value targets without the luck of the draw (``train.luck_samples``): a control variate at each
refill.

A single-player position's value target sums the rewards of the next ``selfplay.td_steps`` moves
and bootstraps from a value there (:func:`tri.episodes.value_targets`). In the triangle puzzle
every cycle of placements ends in a draw of new shapes, so a 10-move target holds about three
draws: shapes that fit or shapes that do not move it though nothing in the position or its play
caused them. The network learns the average over many games, but the draws' spread is noise in
every target it learns from.

With ``luck_samples`` K > 0, training takes each draw's luck out of the targets it reaches. For
a move ``d`` whose step drew, giving reward ``r`` and the next position ``S``:

    luck_d = f(r, S) - mean_k f(r_k, S_k),    f(r, S) = r + discount * V(S)   (V = 0 where S is over)

where ``(r_k, S_k)`` are the same move stepped again with K other draws, made as the engine
makes them (:meth:`~tri.games.triangle.game.TriangleGame.sample_refills`, from a generator seeded
by ``train.seed``, the generation and the folder), and ``V`` is the value of the network training
starts from. A position target ``z_t`` that reaches ``d`` (``t <= d`` and ``d`` before the move
it bootstraps at) becomes ``z_t - discount^(d - t) * luck_d``; the afterstate row of move ``d``
(:mod:`tri.afterstates`, whose target is the next position's) subtracts ``V(S) - mean_k V(S_k)``.

``luck_d`` has mean zero whatever ``V`` is: the real draw and the K others come from the same
distribution, independent of everything before it. So the targets' expectation is unchanged (no
bias from the network's errors); only their spread shrinks, as far as ``V`` tells a good draw
from a bad one (a control variate: the input-driven baselines of Mao et al., 2019). Nothing of
the real game's future is read beyond what its target already sums.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from tri.device import resolve_precision
from tri.episodes import value_targets
from tri.errors import TriError
from tri.reanalyse import game_ends, game_rows, network_values


def draw_luck(game, states: np.ndarray, actions: np.ndarray, value_of: Callable[[np.ndarray], np.ndarray], *,
              samples: int, discount: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(luck [P], value_luck [P])`` float64 of each recorded move ``actions [P]`` on ``states
    [P, L]``: where its step drew, ``f(r, S) - mean_k f(r_k, S_k)`` and ``V(S) - mean_k V(S_k)``
    (module docstring) over ``samples`` other draws from ``rng``; 0 where it did not draw.
    ``value_of(states [M, L]) -> [M]``: the network's values (called once, with every next
    position that is not over)."""
    luck, value_luck = np.zeros(len(states)), np.zeros(len(states))
    step = game.step(states, actions)
    rows = np.flatnonzero(np.ones(len(states), bool) if step.chance is None else step.chance)
    if not rows.size:
        return luck, value_luck
    m = rows.size
    other = game.step(np.repeat(states[rows], samples, axis=0), np.repeat(actions[rows], samples),
                      game.sample_refills(rng, m * samples))
    nxt = np.concatenate([step.states[rows], other.states])
    over = np.concatenate([step.terminal[rows], other.terminal])
    value = np.zeros(len(nxt))
    if (~over).any():
        value[~over] = value_of(nxt[~over])
    worth = np.concatenate([step.reward[rows], other.reward]) + discount * value
    luck[rows] = worth[:m] - worth[m:].reshape(m, samples).mean(axis=1)
    value_luck[rows] = value[:m] - value[m:].reshape(m, samples).mean(axis=1)
    return luck, value_luck


def without_luck(targets: np.ndarray, luck: np.ndarray, terminal: bool, discount: float,
                 td_steps: int) -> np.ndarray:
    """One game's value ``targets [T]`` (:func:`~tri.episodes.value_targets`' with the same
    ``terminal``, ``discount`` and ``td_steps``) less the ``luck [T]`` (:func:`draw_luck`) of every
    move each one sums the reward of, discounted to it: ``z_t - sum_j discount^j luck_{t+j}`` over
    ``t + j`` before the move ``z_t`` bootstraps at (a cut game's last move is in no target). That
    sum is ``value_targets`` of the luck as rewards with values of 0, so the two share one window."""
    summed = value_targets(luck, np.zeros(luck.shape[0]), terminal, discount, False, td_steps)
    return (targets.astype(np.float64) - summed).astype(np.float32)


def luck_free_targets(game, positions, ends, states: np.ndarray, value_of: Callable[[np.ndarray], np.ndarray], *,
                      samples: int, discount: float, td_steps: int, rng: np.random.Generator,
                      where: str) -> tuple[np.ndarray, np.ndarray]:
    """One self-play folder's value targets without the draws' luck: ``(targets [P] float32,
    value_luck [P])`` in ``positions``' row order. ``positions``: the folder's ``game``,
    ``move``, ``action`` and ``value_target`` (as training uses them: reanalysed or not);
    ``ends``: its :func:`tri.reanalyse.game_ends`; ``states [P, L]``; ``value_of``, ``samples``,
    ``rng``: :func:`draw_luck`'s; ``value_luck``: what each drawing row's afterstate row
    subtracts. Raises :class:`~tri.errors.TriError` (naming ``where``) as
    :func:`tri.reanalyse.game_rows` does."""
    luck, value_luck = draw_luck(game, states, positions["action"].to_numpy(), value_of, samples=samples,
                                 discount=discount, rng=rng)
    targets = positions["value_target"].to_numpy().astype(np.float32, copy=True)
    for rows, terminal in game_rows(positions, ends, where):
        targets[rows] = without_luck(targets[rows], luck[rows], terminal, discount, td_steps)
    return targets, value_luck


def luck_remover(params, game, model, device: str, generation: int):
    """Training's ``train.luck_samples`` for ``game``: a function ``(k, folder, positions, states)
    -> (targets, value_luck)`` (:func:`luck_free_targets` of the ``k``-th folder of the window,
    ``model``'s values on ``device`` in training's number format, the draws seeded by
    ``train.seed``, ``generation`` and ``k``), or None when off, or for a game without draws."""
    tp = params.train
    if not tp.luck_samples or game.num_players != 1 or not game.stochastic:
        return None
    if not hasattr(game, "sample_refills"):
        raise TriError(f"train.luck_samples: the game {game.name} cannot sample its draws (sample_refills)")
    dtype = getattr(torch, resolve_precision(tp.precision, device))

    def remove(k: int, folder: Path, positions, states: np.ndarray):
        return luck_free_targets(game, positions, game_ends(folder), states,
                                 lambda s: network_values(model, game, s, dtype, device), samples=tp.luck_samples,
                                 discount=params.mcts.discount, td_steps=params.selfplay.td_steps,
                                 rng=np.random.default_rng([tp.seed, generation, k]),
                                 where=f"self-play folder {folder}")
    return remove
