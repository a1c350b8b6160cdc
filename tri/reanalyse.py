"""Reanalysis of value targets: older self-play bootstrapped from the network training starts from.

A single-player position's value target is an n-step return bootstrapped from the search's value
n moves later, ``z_t = sum_{k<n} discount^k r_{t+k} + discount^n v_{t+n}``
(:func:`tri.episodes.value_targets`, ``selfplay.td_steps``). In a window of several generations
(``train.window``) most positions were played by older networks, and their ``v_{t+n}`` is an
older network's estimate. With ``train.reanalyse`` the training stage recomputes those targets
before it trains, with ``v`` the value of the network training starts from, one forward pass per
position and no search (EfficientZero's value refresh; MuZero Reanalyze also searches again).
The rewards, the horizon and the games' ends are those self-play recorded, so the future draws a
target sums over are still the ones the game met, never the network's guess.

Which games: those whose ``model_id`` (the games sidecar's) is not the starting network's. The
newest self-play was usually played by that very network, and its search values are better
estimates than the same network's raw value, so it keeps them.

**Bootstrapping at afterstates** (``train.bootstrap: afterstate``, with ``mcts.afterstates``).
A target bootstrapped ``n`` moves on still carries every draw within those moves: the refill a
game happened to get decides what the next placements score. Here every game of the window
(the newest too) is recomputed so that a position's target sums its rewards only up to the last
refill within ``n`` moves and then adds the starting network's value of that refill's
*afterstate*, the position before the draw, which the network learns as the expectation over
every draw (:mod:`tri.afterstates`). With ``td_steps: 3`` (one cycle of three placements) a
target holds no draw at all, only the shapes already in hand and the moves played.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import torch

from tri import layout
from tri.episodes import value_targets
from tri.errors import TriError
from tri.inference import InferenceNet
from tri.net import PolicyValueNet

# Columns of the positions file :func:`reanalysed_targets` reads, beside ``state``.
COLUMNS = ["game", "move", "reward", "value_target"]
_BATCH = 1024  # positions per forward pass (InferenceNet splits them into cache-sized pieces)


def network_values(model: PolicyValueNet, game, states: np.ndarray, dtype: torch.dtype,
                   device: str = "cpu") -> np.ndarray:
    """The value ``[P]`` (float64) of each packed state ``[P, L]`` by ``model`` alone (no search),
    through an :class:`~tri.inference.InferenceNet` snapshot in ``dtype`` on ``device`` (the model
    itself stays where it is)."""
    net = InferenceNet(model.eval(), dtype=dtype).to(device)
    out = np.empty(states.shape[0], np.float64)
    with torch.inference_mode():
        for i in range(0, states.shape[0], _BATCH):
            _, value_out = net(torch.from_numpy(game.encode(states[i:i + _BATCH])).to(device))
            out[i:i + _BATCH] = net.value(value_out).float().cpu().numpy()
    return out


def game_ends(folder: Path) -> pl.DataFrame:
    """The games sidecars of a self-play ``folder`` as ``game`` (int64), ``terminal`` (bool) and
    ``model_id`` (str): how each game ended and which network played it."""
    paths = layout.games_paths(folder)
    if not paths:
        raise TriError(f"train: self-play folder {folder}: no games files (shard-SSS.games.parquet)")
    try:
        frame = pl.concat([pl.read_parquet(p, columns=["game", "terminal", "model_id"]) for p in paths])
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise TriError(f"train: self-play folder {folder}: games files cannot be read "
                       f"({str(exc).splitlines()[0] if str(exc) else exc!r})") from None
    if frame["game"].is_duplicated().any():
        raise TriError(f"train: self-play folder {folder}: a game is listed twice in its games files")
    return frame


def game_rows(positions: pl.DataFrame, ends: pl.DataFrame, where: str, keep_model: str | None = None
           ) -> list[tuple[np.ndarray, bool]]:
    """``(rows in move order [T], terminal)`` of each game of ``positions`` (a self-play folder's
    ``game`` and ``move`` columns) not played by ``keep_model``, checked against ``ends``
    (:func:`game_ends`): every game listed, each holding its moves ``0..T-1`` once."""
    info = dict(zip(ends["game"].to_list(), zip(ends["terminal"].to_list(), ends["model_id"].to_list())))
    game_ids, moves = positions["game"].to_numpy(), positions["move"].to_numpy()
    order = np.lexsort((moves, game_ids))
    starts = np.flatnonzero(np.r_[True, game_ids[order][1:] != game_ids[order][:-1]]) if order.size else order
    games = []
    for lo, hi in zip(starts, np.r_[starts[1:], order.size]):
        rows = order[lo:hi]
        gid = int(game_ids[rows[0]])
        if gid not in info:
            raise TriError(f"train: {where}: positions of game {gid}, which its games files do not list")
        terminal, model_id = info[gid]
        if model_id == keep_model:
            continue
        if not np.array_equal(moves[rows], np.arange(rows.size)):
            raise TriError(f"train: {where}: game {gid} does not hold each of its moves 0-{rows.size - 1} once")
        games.append((rows, bool(terminal)))
    return games


def reanalysed_targets(positions: pl.DataFrame, ends: pl.DataFrame, value_of: Callable[[np.ndarray], np.ndarray],
                       *, keep_model: str, discount: float, td_steps: int, where: str,
                       bonus: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """New value targets ``[P]`` (float32, in ``positions``' row order) and which rows were
    reanalysed (``[P]`` bool). ``positions``: one self-play folder's :data:`COLUMNS`; ``ends``:
    its :func:`game_ends`; ``value_of(rows [R]) -> [R]``: the network's value of those rows'
    states (called once, with the rows of every game to reanalyse). Games played by
    ``keep_model`` keep their targets. Each other game must hold its moves ``0..T-1`` once; its
    targets become :func:`~tri.episodes.value_targets` of its recorded rewards (each plus
    ``bonus``, ``mcts.move_bonus``) and end, with the network's values in place of the search's.
    Raises :class:`TriError` (naming ``where``) for positions of a game the games files do not
    list, or a game with a missing or repeated move."""
    targets = positions["value_target"].to_numpy().astype(np.float32, copy=True)
    games = game_rows(positions, ends, where, keep_model)
    changed = np.zeros(len(positions), bool)
    if not games:
        return targets, changed
    for rows, _ in games:
        changed[rows] = True
    values = np.zeros(len(positions), np.float64)
    values[changed] = value_of(np.flatnonzero(changed))
    rewards = positions["reward"].to_numpy()
    for rows, terminal in games:
        targets[rows] = value_targets(rewards[rows], values[rows], terminal, discount, False, td_steps, bonus)
    return targets, changed


def afterstate_bootstrapped(rewards: np.ndarray, drew: np.ndarray, after_values: np.ndarray,
                            values: np.ndarray, terminal: bool, discount: float, td_steps: int,
                            bonus: float = 0.0) -> np.ndarray:
    """One game's value targets ``[T]`` bootstrapped at afterstates (``train.bootstrap:
    afterstate``). ``rewards [T]``; ``drew [T]``: move ``t``'s step drew (the refill);
    ``after_values [T]``: the network's value of move ``t``'s afterstate (read where ``drew``);
    ``values [T]``: each position's recorded value (the search's), for a target with no drawing
    move in reach. Position ``t``'s target sums the discounted rewards of its moves up to the
    last one, ``k``, within ``td_steps`` (0: to the game's end) that drew, and adds
    ``discount^(k + 1 - t) * after_values[k]``: the expectation over that draw and everything
    after it, so no draw after ``k`` moves the target. With no drawing move in reach it is
    :func:`~tri.episodes.value_targets`' (0 past a finished game's end; a cut game's last
    position bootstraps from its own value). ``bonus``: added to every move's reward
    (``mcts.move_bonus``)."""
    rewards = rewards + bonus if bonus else rewards
    n = rewards.shape[0]
    end = n if terminal else n - 1
    if end <= 0:  # no move to sum: a cut game's one position, or a game over before it began
        return value_targets(rewards, values, terminal, discount, False, td_steps)
    horizon = td_steps if td_steps > 0 else end
    t = np.arange(end + 1)
    reach = np.minimum(t + horizon, end)  # rewards t .. reach - 1 are within reach
    value = np.zeros(end + 1, np.float64)
    value[:end] = values[:end]
    value[end] = 0.0 if terminal else float(values[n - 1])
    last = np.maximum.accumulate(np.where(drew[:end], np.arange(end), -1))  # the last drawing move <= j
    k = np.where(reach > t, last[np.maximum(reach - 1, 0)], -1)
    at = k >= t
    stop = np.where(at, k + 1, reach)
    z = discount ** (stop - t) * np.where(at, after_values[np.maximum(k, 0)], value[reach])
    for j in range(min(horizon, end)):
        live = t + j < stop
        z[live] += discount ** j * rewards[t[live] + j]
    return z[:n].astype(np.float32)


def afterstate_targets(positions: pl.DataFrame, ends: pl.DataFrame, drew: np.ndarray,
                       after_value_of: Callable[[np.ndarray], np.ndarray], *, discount: float, td_steps: int,
                       where: str, bonus: float = 0.0) -> np.ndarray:
    """New value targets ``[P]`` (float32, ``positions``' row order) of every game of one self-play
    folder, bootstrapped at afterstates (:func:`afterstate_bootstrapped`). ``positions``: the
    folder's :data:`COLUMNS` and ``root_value``; ``ends``: its :func:`game_ends`; ``drew [P]``:
    the row's move drew; ``after_value_of(rows [R]) -> [R]``: the network's value of those rows'
    afterstates (called once, with every drawing row). Raises :class:`TriError` as
    :func:`reanalysed_targets` does."""
    targets = positions["value_target"].to_numpy().astype(np.float32, copy=True)
    games = game_rows(positions, ends, where)
    after_values = np.zeros(len(positions), np.float64)
    if drew.any():
        after_values[drew] = after_value_of(np.flatnonzero(drew))
    rewards, values = positions["reward"].to_numpy(), positions["root_value"].to_numpy()
    for rows, terminal in games:
        targets[rows] = afterstate_bootstrapped(rewards[rows], drew[rows], after_values[rows], values[rows],
                                                terminal, discount, td_steps, bonus)
    return targets
