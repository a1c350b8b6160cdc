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
from tri.net import InferenceNet, PolicyValueNet

# Columns of the positions file :func:`reanalysed_targets` reads, beside ``state``.
COLUMNS = ["game", "move", "reward", "value_target"]
_BATCH = 1024  # positions per forward pass (InferenceNet splits them into cache-sized pieces)


def network_values(model: PolicyValueNet, game, states: np.ndarray, dtype: torch.dtype,
                   device: str = "cpu") -> np.ndarray:
    """The value ``[P]`` (float64) of each packed state ``[P, L]`` by ``model`` alone (no search),
    through an :class:`~tri.net.InferenceNet` snapshot in ``dtype`` on ``device`` (the model
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
        raise TriError(f"train.reanalyse: self-play folder {folder}: no games files (shard-SSS.games.parquet)")
    try:
        frame = pl.concat([pl.read_parquet(p, columns=["game", "terminal", "model_id"]) for p in paths])
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise TriError(f"train.reanalyse: self-play folder {folder}: games files cannot be read "
                       f"({str(exc).splitlines()[0] if str(exc) else exc!r})") from None
    if frame["game"].is_duplicated().any():
        raise TriError(f"train.reanalyse: self-play folder {folder}: a game is listed twice in its games files")
    return frame


def reanalysed_targets(positions: pl.DataFrame, ends: pl.DataFrame, value_of: Callable[[np.ndarray], np.ndarray],
                       *, keep_model: str, discount: float, td_steps: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """New value targets ``[P]`` (float32, in ``positions``' row order) and which rows were
    reanalysed (``[P]`` bool). ``positions``: one self-play folder's :data:`COLUMNS`; ``ends``:
    its :func:`game_ends`; ``value_of(rows [R]) -> [R]``: the network's value of those rows'
    states (called once, with the rows of every game to reanalyse). Games played by
    ``keep_model`` keep their targets. Each other game must hold its moves ``0..T-1`` once; its
    targets become :func:`~tri.episodes.value_targets` of its recorded rewards and end, with the
    network's values in place of the search's. Raises :class:`TriError` (naming ``where``) for
    positions of a game the games files do not list, or a game with a missing or repeated move."""
    targets = positions["value_target"].to_numpy().astype(np.float32, copy=True)
    info = dict(zip(ends["game"].to_list(), zip(ends["terminal"].to_list(), ends["model_id"].to_list())))
    game_ids, moves = positions["game"].to_numpy(), positions["move"].to_numpy()
    order = np.lexsort((moves, game_ids))
    starts = np.flatnonzero(np.r_[True, game_ids[order][1:] != game_ids[order][:-1]]) if order.size else order
    games = []  # (rows of one game in move order, terminal) for each game to reanalyse
    for lo, hi in zip(starts, np.r_[starts[1:], order.size]):
        rows = order[lo:hi]
        gid = int(game_ids[rows[0]])
        if gid not in info:
            raise TriError(f"train.reanalyse: {where}: positions of game {gid}, which its games files do not list")
        terminal, model_id = info[gid]
        if model_id == keep_model:
            continue
        if not np.array_equal(moves[rows], np.arange(rows.size)):
            raise TriError(f"train.reanalyse: {where}: game {gid} does not hold each of its moves 0-{rows.size - 1} once")
        games.append((rows, bool(terminal)))
    changed = np.zeros(len(positions), bool)
    if not games:
        return targets, changed
    for rows, _ in games:
        changed[rows] = True
    values = np.zeros(len(positions), np.float64)
    values[changed] = value_of(np.flatnonzero(changed))
    rewards = positions["reward"].to_numpy()
    for rows, terminal in games:
        targets[rows] = value_targets(rewards[rows], values[rows], terminal, discount, False, td_steps)
    return targets, changed
