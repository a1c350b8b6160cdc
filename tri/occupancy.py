"""The occupancy head's targets (``net.occupancy_steps``): which cells are filled k moves later.

KataGo trains its network to predict, beside the move and the outcome, who will own each point
of the board at the game's end: hundreds of targets per position where the value has one, and
they teach the shared trunk what the value alone learns slowly. The triangle puzzle's value is
the weaker half of its network ("Learning runs" in the README), and its analogue of ownership is
the board ``k`` moves on: the cells still filled then, those cleared by then, and those filled in
between. Like the value target it is one sample of what the real draws and the player's own
moves made of the position, not an expectation; the head (:class:`tri.net.PolicyValueNet`, a
1x1 convolution) learns the expectation, per cell, by binary cross-entropy (:mod:`tri.train`),
and the search never reads it.

A position fewer than ``k`` moves before its game's end takes the board the game ended with: the
last move's result, stepped again from the recorded state and action (the state carries its
chance stream, so the step draws what the game drew). A game cut by ``selfplay.max_moves`` ends
on its last board too. An afterstate row (:mod:`tri.afterstates`) is the board one move after
its move's position, so its target looks ``k`` moves on from there.
"""

from __future__ import annotations

import numpy as np

from tri.errors import TriError


def future_occupancy(game, states: np.ndarray, actions: np.ndarray, game_ids: np.ndarray, moves: np.ndarray,
                     steps: int, *, rows: np.ndarray | None = None, offset: int = 0, where: str) -> np.ndarray:
    """``[Q, rows * cols] bool``: the cells occupied ``steps + offset`` moves after each of
    ``rows`` (default: every position) of one self-play folder's positions (``states [P, L]``,
    ``actions [P]``, ``game_ids [P]``, ``moves [P]``, any row order), or at its game's end where
    that comes first. Every game must be recorded move after move; otherwise a
    :class:`TriError` naming ``where``."""
    if not hasattr(game, "occupied"):
        raise TriError(f"net.occupancy_steps: the game {game.name} has no occupancy target")
    count = len(states)
    rows = np.arange(count) if rows is None else np.asarray(rows, np.int64)
    if count == 0:
        return np.zeros((len(rows), int(np.prod(game.obs_shape[1:]))), bool)
    order = np.lexsort((moves, game_ids))
    ids, sorted_moves = game_ids[order], moves[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    lengths = np.diff(np.r_[starts, count])
    which = np.repeat(np.arange(len(starts)), lengths)  # each sorted row's game
    rank = np.arange(count) - starts[which]  # moves since the game's first recorded one
    if not np.array_equal(sorted_moves - sorted_moves[starts][which], rank):
        raise TriError(f"{where}: a game's moves are not recorded one after another")
    last = order[starts + lengths - 1]
    final = game.occupied(game.step(states[last], actions[last]).states)  # [G, cells]: the boards games ended on
    game_of, rank_of = np.empty(count, np.int64), np.empty(count, np.int64)
    game_of[order], rank_of[order] = which, rank
    g, ahead = game_of[rows], rank_of[rows] + steps + offset
    inside = ahead < lengths[g]
    out = final[g]
    out[inside] = game.occupied(states[order[starts[g[inside]] + ahead[inside]]])
    return out
