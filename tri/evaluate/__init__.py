"""How good a player is: against perfect play (``tri eval connect4``, ``tri eval tictactoe``), or
against a baseline on seeds of its own (``tri eval triangle``).

**Connect Four** (:mod:`tri.evaluate.connect4`): Pascal Pons' test positions
(``../shared/connect4-testsets/Test_*``: lines ``moves score``, 1-based columns;
``Test_*.moves.tsv`` beside each gives the exact score of every move). **m,n,k-games**
(:mod:`tri.evaluate.mnk`): every non-terminal position reachable from the empty board by legal
play, solved exactly by minimax (:func:`solve`).

Per file (Connect Four) or over all reachable positions (m,n,k), with the player's move in each
position (:func:`score_positions`):

- **wrong**: the move's game-theoretic outcome is worse than the position's: it loses a won or
  drawn position, or draws a won one (Pons' README). In an m,n,k-game, where values are only
  win/draw/loss, this is exactly "not among the minimax-optimal moves".
- **losing**: the move turns a won or drawn position into a lost one (a subset of wrong). A
  deterministic player that makes no losing move from any reachable position **never loses**,
  whoever it plays and from wherever: the opponent's moves cannot improve a position for the
  side that is not moving, so its value stays won-or-drawn to the end. Conversely one losing
  move is a position from which a perfect opponent beats it. ``never_loses`` is ``losing == 0``
  over every reachable position.
- **perfect** (Connect Four only): the move's exact score equals the position's (the fastest
  win, or the slowest loss).
- **value sign accuracy** (players with a network): over the *decided* positions (score not 0),
  the share where the sign of the network's value (from the side to move) equals the sign of the
  score; a value of exactly 0 counts as wrong. Drawn positions have no sign and are left out of
  it; they count in the **value outcome accuracy**, over all positions: the value rounded to the
  nearest outcome (-1, 0 or +1; ``|v| <= 0.5`` reads as a draw) equals the position's outcome.

A position's value is what the network alone says (``evaluate``), also when the player searches:
the search's root value is not the value head.

Results come back as an :class:`EvalResult` (:mod:`tri.evaluate.result`); its
:meth:`EvalResult.metrics` are the flat numbers a tracker (MLflow) logs.

**The triangle puzzle** (:mod:`tri.evaluate.triangle`) has no perfect play to grade against: the
player and a baseline play the same evaluation seeds, paired as in the arena, which are never
self-play's or the arena's (:func:`eval_seeds`); a :class:`TriangleEval` reports both mean scores,
the paired difference, each with a 95% interval, and per-seed wins, ties and losses.

**Held-out loss** (:mod:`tri.evaluate.loss`, ``tri eval loss``, any game): a network's policy
and value loss on self-play folders it never trained on, against a baseline network with a
paired interval over games: whether a change learns better, long before play can tell.

A network player runs on the device ``TRI_DEVICE`` resolves to (:func:`tri.device.resolve_device`),
torch on one thread as in the arena (:func:`tri.device.torch_threads`).
"""

from __future__ import annotations

from tri.config import Params
from tri.errors import TriError
from tri.evaluate.common import BATCH, make_player, score_positions
from tri.evaluate.connect4 import DEFAULT_TESTSETS, TestSet, find_testsets, load_testset, run_connect4
from tri.evaluate.mnk import MAX_POSITIONS, Solution, run_tictactoe, solve
from tri.evaluate.result import EvalResult, EvalRow, format_table
from tri.evaluate.triangle import TriangleEval, eval_seeds, format_triangle, run_triangle

RUNS = {"connect4": run_connect4, "tictactoe": run_tictactoe, "triangle": run_triangle}


def run(params: Params, game: str, player, **kwargs) -> EvalResult | TriangleEval:
    """``run_connect4``, ``run_tictactoe`` or ``run_triangle`` by name, with ``kwargs``."""
    if game not in RUNS:
        raise TriError(f"no evaluation for the game {game!r} (tri evaluates {', '.join(RUNS)})")
    return RUNS[game](params, player, **kwargs)


__all__ = ["BATCH", "DEFAULT_TESTSETS", "MAX_POSITIONS", "RUNS", "EvalResult", "EvalRow", "Solution",
           "TestSet", "TriangleEval", "eval_seeds", "find_testsets", "format_table", "format_triangle",
           "load_testset", "make_player", "run", "run_connect4", "run_tictactoe", "run_triangle",
           "score_positions", "solve"]
