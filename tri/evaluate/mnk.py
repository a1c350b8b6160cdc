"""``tri eval tictactoe``: a player's move in every non-terminal position of an m,n,k-game
reachable from the empty board, graded against minimax over all of them (:func:`solve`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tri import atomic
from tri.config import Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.errors import TriError
from tri.evaluate.common import make_player, score_positions
from tri.evaluate.result import EvalResult
from tri.games.kinrow.mnk import MnkGame
from tri.progress import Report

MAX_POSITIONS = 500_000  # exhaustive m,n,k solving stops here (Tic-Tac-Toe has 5,478 positions)


@dataclass(frozen=True)
class Solution:
    """Every non-terminal position reachable from the empty board: ``states [P, L]`` (by number
    of stones, then by words), ``value [P]`` (+1 won, 0 drawn, -1 lost for the side to move, with
    perfect play), ``action_values [P, A]`` (the value of each legal action for the side to move:
    its reward if the game ends, else minus the next position's value; NaN = illegal)."""

    states: np.ndarray
    value: np.ndarray
    action_values: np.ndarray


def solve(game, max_positions: int = MAX_POSITIONS) -> Solution:
    """Minimax over every reachable position, level by level (positions with ``d`` stones), with
    the game's own batched ``step``: expand every legal move, keep the distinct non-terminal
    children, then back the values up from the last level. :class:`TriError` past
    ``max_positions``."""
    too_many = TriError(f"{game.name} {game.rows}x{game.cols} k={game.k}: more than {max_positions:,} "
                        f"reachable positions; the exhaustive check is for small boards")
    levels = [game.initial(np.zeros(1, np.int64))]
    edges = []
    total = 1
    while True:
        states = levels[-1]
        b, a = np.nonzero(game.legal(states))
        if b.size > 4 * max_positions:  # before stepping them: memory grows with the moves
            raise too_many
        t = game.step(states[b], a)
        live = ~t.terminal
        children, inverse = np.unique(t.states[live], axis=0, return_inverse=True)
        edges.append((b, a, t.reward, live, inverse.reshape(-1)))
        total += len(children)
        if total > max_positions:
            raise too_many
        if not len(children):
            break
        levels.append(children)
    values: list[np.ndarray] = [np.zeros(0)] * len(levels)
    action_values = [np.zeros(0)] * len(levels)
    for d in range(len(levels) - 1, -1, -1):
        b, a, reward, live, inverse = edges[d]
        q = reward.astype(np.float64).copy()
        if live.any():
            q[live] -= values[d + 1][inverse]
        av = np.full((len(levels[d]), game.num_actions), np.nan)
        av[b, a] = q
        action_values[d] = av
        values[d] = np.nanmax(av, axis=1)
    return Solution(np.concatenate(levels), np.concatenate(values), np.concatenate(action_values))


def run_tictactoe(params: Params, player, *, simulations: int | None = None, seed: int = 0,
                  out: Path | None = None, runtime: Runtime | None = None,
                  max_positions: int = MAX_POSITIONS, progress: Report | None = None) -> EvalResult:
    """Grade ``player`` on every reachable position of ``params.game.tictactoe``; write ``out``;
    ``progress`` hears how far it is (:mod:`tri.progress`)."""

    start = time.perf_counter()
    game = MnkGame(params.game.tictactoe)
    solution = solve(game, max_positions)
    agent, evaluate, name, sims = make_player(player, game, params, simulations=simulations, seed=seed,
                                              device=resolve_device((runtime or Runtime()).device))
    result = EvalResult("tictactoe", name, sims)
    c = game.config
    with torch_threads():  # as in the arena: results must not depend on the machine
        result.rows.append(score_positions(f"{c.m}x{c.n} k={c.k}", solution.states, solution.value,
                                           solution.action_values, agent, evaluate, progress=progress))
    result.rows[0].perfect = None  # win/draw/loss values: "perfect" would be "not wrong"
    result.seconds = time.perf_counter() - start
    if out is not None:
        atomic.write_text(out, result.to_json() + "\n")
    return result
