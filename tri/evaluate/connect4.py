"""``tri eval connect4``: a player's move in each of Pascal Pons' Connect Four test positions
(``../shared/connect4-testsets/Test_*``: lines ``moves score``, 1-based columns;
``Test_*.moves.tsv`` beside each gives the exact score of every move), graded per file by
:func:`tri.evaluate.common.score_positions`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tri import atomic
from tri.config import Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.errors import TriError
from tri.evaluate.common import make_player, score_positions
from tri.evaluate.result import EvalResult
from tri.games.kinrow.connect4 import Connect4Config, Connect4Game
from tri.progress import Report

DEFAULT_TESTSETS = Path("../shared/connect4-testsets")


@dataclass(frozen=True)
class TestSet:
    """A Pons test file: ``moves`` (1-based column strings), ``score [P]`` (exact, side to move),
    ``move_scores [P, 7]`` (exact score of each column, NaN when the column is full)."""

    __test__ = False  # not a pytest test class
    name: str
    moves: list[str]
    score: np.ndarray
    move_scores: np.ndarray


def find_testsets(files: Sequence[Path], testsets: Path = DEFAULT_TESTSETS) -> list[Path]:
    """The test files to read: ``files`` as given (a ``.moves.tsv`` path names its test file),
    or every ``Test_*`` file in ``testsets``."""
    if files:
        return [Path(str(f).removesuffix(".moves.tsv")) for f in files]
    testsets = Path(testsets)
    if not testsets.is_dir():
        raise TriError(f"connect4 test sets: folder {testsets} not found (give --testsets DIR or files)")
    paths = sorted(p for p in testsets.glob("Test_*") if not p.name.endswith(".moves.tsv"))
    if not paths:
        raise TriError(f"connect4 test sets: no Test_* files in {testsets}")
    return paths


def load_testset(path: Path, limit: int | None = None, columns: int = 7) -> TestSet:
    """Read ``path`` (``moves score`` lines) and ``path.moves.tsv`` beside it, checking that they
    describe the same positions; the first ``limit`` positions. :class:`TriError` names the file
    and line of any problem."""
    path = Path(path)
    tsv = path.with_name(path.name + ".moves.tsv")
    for p in (path, tsv):
        if not p.is_file():
            raise TriError(f"connect4 test set {p}: file not found")
    plain = []
    for i, line in enumerate(_lines(path), 1):
        parts = line.split()
        if len(parts) != 2 or not parts[0].isdigit() or not _is_int(parts[1]):
            raise TriError(f"{path}:{i}: expected 'moves score' (e.g. '4453 -2'), got {line[:60]!r}")
        plain.append((parts[0], int(parts[1])))
    moves, score, move_scores = [], [], []
    for i, line in enumerate(_lines(tsv), 1):
        if line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 + columns or not parts[0].isdigit() or not _is_int(parts[1]) \
                or not all(p == "" or _is_int(p) for p in parts[2:]):
            raise TriError(f"{tsv}:{i}: expected moves, score and {columns} column scores, tab-separated")
        moves.append(parts[0])
        score.append(int(parts[1]))
        move_scores.append([float(p) if p else np.nan for p in parts[2:]])
    if [m for m, _ in plain] != moves or [s for _, s in plain] != score:
        raise TriError(f"{tsv}: its positions or scores differ from {path}")
    if limit is not None:
        moves, score, move_scores = moves[:limit], score[:limit], move_scores[:limit]
    return TestSet(path.name, moves, np.array(score, np.float64),
                   np.array(move_scores, np.float64).reshape(-1, columns))


def _lines(path: Path) -> list[str]:
    try:
        return [line.rstrip("\r\n") for line in path.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise TriError(f"connect4 test set {path}: cannot be read ({exc})") from None


def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def run_connect4(params: Params, player, files: Sequence[Path] = (), *, testsets: Path = DEFAULT_TESTSETS,
                 limit: int | None = None, simulations: int | None = None, seed: int = 0,
                 out: Path | None = None, runtime: Runtime | None = None,
                 progress: Report | None = None) -> EvalResult:
    """Grade ``player`` (a spec or an agent) on Pons' test files; write ``out`` (JSON) if given;
    ``progress`` hears how far each file is (:mod:`tri.progress`)."""

    start = time.perf_counter()
    config = params.game.connect4
    if config != Connect4Config():
        raise TriError(f"Pons' test sets are 7 x 6 Connect Four positions; params.yaml's game.connect4 is "
                       f"{config.cols} x {config.rows}, connect {config.connect}")
    game = Connect4Game(config)
    sets = [load_testset(p, limit) for p in find_testsets(files, testsets)]  # bad files fail first
    agent, evaluate, name, sims = make_player(player, game, params, simulations=simulations, seed=seed,
                                              device=resolve_device((runtime or Runtime()).device))
    result = EvalResult("connect4", name, sims)
    with torch_threads():  # as in the arena: results must not depend on the machine
        for ts in sets:
            states = np.stack([_position(game, ts, i) for i in range(len(ts.moves))]) if ts.moves \
                else np.zeros((0, game.state_size), np.uint64)
            result.rows.append(score_positions(ts.name, states, ts.score, ts.move_scores, agent, evaluate,
                                               progress=progress))
    result.seconds = time.perf_counter() - start
    if out is not None:
        atomic.write_text(out, result.to_json() + "\n")
    return result


def _position(game, ts: TestSet, i: int) -> np.ndarray:
    try:
        state = game.from_moves(ts.moves[i])
    except ValueError as exc:
        raise TriError(f"{ts.name}: position {i + 1} ({ts.moves[i]}): {exc}") from None
    legal = game.legal(state[None])[0]
    if not np.array_equal(legal, ~np.isnan(ts.move_scores[i])):
        raise TriError(f"{ts.name}: position {i + 1} ({ts.moves[i]}): its column scores do not match "
                       f"the columns that are open")
    return state
