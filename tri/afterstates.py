"""Afterstate training rows (``mcts.afterstates``): what the network learns so the search can
stop at a draw.

With ``mcts.afterstates`` the search values a move that draws (the triangle puzzle's refill) by
the network's value of its *afterstate*, the position before the draw (``game.afterstate``: no
shapes in hand), instead of following one sampled draw (:mod:`tri.search`). The network never
meets such a position in play, so training adds one row per drawing move of the window: the
afterstate, with no policy target (its legal actions are none, which the policy loss skips),
and as value target the value target of the position the real draw produced, the game's next
one (a sample of the expectation over draws that the afterstate's value estimates), or 0 where
that draw ended the game. The next position's target is the one training uses, reanalysed
(``train.reanalyse``) or not, so the two values stay consistent.

Self-play records every position with its state and action, and the state carries the game's own
chance stream, so stepping a recorded move again reproduces its draw: the rows are derived at
load time, and shards stay as they are.
"""

from __future__ import annotations

import numpy as np

from tri.errors import TriError


def afterstate_rows(game, states: np.ndarray, actions: np.ndarray, game_ids: np.ndarray, moves: np.ndarray,
                    targets: np.ndarray, *, where: str, with_moves: bool = False) -> tuple[np.ndarray, ...]:
    """From one self-play folder's positions (``states [P, L]``, ``actions [P]``, ``game_ids
    [P]``, ``moves [P]``, value ``targets [P]``, any row order): the afterstate of every move whose
    step drew, ``[R, L]``, and its value target ``[R]`` float32: the target of the same game's
    position one move later, or 0 where the draw ended the game. A drawing move with neither (a
    game's last recorded move, the game cut by ``selfplay.max_moves``) gives no row. Raises
    :class:`TriError` (naming ``where``) if a recorded next position is not the state the move
    leads to: the shard was not written by this game's self-play. ``with_moves``: a third array,
    ``[R]`` the row of the move each afterstate follows."""
    if not hasattr(game, "afterstate"):
        raise TriError(f"mcts.afterstates: the game {game.name} has no afterstates")
    step = game.step(states, actions)
    drew = np.ones(len(states), bool) if step.chance is None else step.chance
    order = np.lexsort((moves, game_ids))
    nxt = np.full(len(states), -1, np.int64)
    if order.size > 1:
        a, b = order[:-1], order[1:]
        follows = (game_ids[b] == game_ids[a]) & (moves[b] == moves[a] + 1)
        nxt[a[follows]] = b[follows]
    has_next = nxt >= 0
    if not np.array_equal(step.states[has_next], states[nxt[has_next]]):
        raise TriError(f"{where}: a recorded position is not the one its game's previous move leads to")
    keep = drew & (has_next | step.terminal)
    target = np.where(has_next, targets[np.maximum(nxt, 0)], 0.0).astype(np.float32)
    if with_moves:
        return game.afterstate(step.states[keep]), target[keep], np.flatnonzero(keep)
    return game.afterstate(step.states[keep]), target[keep]
