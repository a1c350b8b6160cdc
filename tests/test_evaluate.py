"""``tri eval``: the exhaustive Tic-Tac-Toe solver against an independent plain-Python minimax,
the grading of moves and values on controlled data, oracle players (0% wrong), Pons' real test
sets (when ``../shared/connect4-testsets`` is there), checkpoints, JSON output and the command's
one-line errors."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from tri.agents import Decision
from tri.config import GameParams, NetParams, Params, Runtime
from tri.errors import TriError
from tri.evaluate import (EvalRow, load_testset, run_connect4, run_tictactoe, score_positions, solve,
                          find_testsets)
from tri.games.kinrow.connect4 import Connect4Config, Connect4Game
from tri.games.kinrow.mnk import MnkConfig, MnkGame
from tri.net import Checkpoint, build_model, save_checkpoint

from tests.games.reference_kinrow import ReferenceBoard
from tests.pipeline_fixtures import assert_clean_error, save_model

PONS = Path(__file__).resolve().parents[2] / "shared" / "connect4-testsets"
needs_pons = pytest.mark.skipif(not (PONS / "Test_L1_R1.moves.tsv").is_file(),
                                reason="no Pons test sets here")
CPU = Runtime(workers=1, device="cpu")
TINY_NET = NetParams(channels=8, blocks=1, value_hidden=16)


class TableAgent:
    """A test player: the move a table gives for each state (keyed by the state's bytes)."""

    def __init__(self, table: dict[bytes, int], name: str):
        self.table, self.name = table, name

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        return Decision(np.array([self.table[s.tobytes()] for s in states], np.int64))


# ---- Tic-Tac-Toe: solved exhaustively -------------------------------------------------------------


def reference_negamax():
    """Plain-Python negamax over the reference board: value of each position (by its grid and
    side to move) and of each of its moves, from the side to move."""

    @lru_cache(maxsize=None)
    def value(grid: tuple, to_move: int) -> tuple[int, tuple]:
        board = ReferenceBoard(3, 3, 3, gravity=False)
        board.grid = [list(grid[r * 3:(r + 1) * 3]) for r in range(3)]
        board.to_move = to_move
        moves = []
        for a in range(9):
            if grid[a]:
                moves.append(None)
                continue
            child = ReferenceBoard(3, 3, 3, gravity=False)
            child.grid = [row[:] for row in board.grid]
            child.to_move = to_move
            reward = child.play(a)
            nxt = tuple(v for row in child.grid for v in row)
            moves.append(int(reward) if child.over else -value(nxt, child.to_move)[0])
        return max(m for m in moves if m is not None), tuple(moves)

    return value


def test_solver_matches_a_plain_python_minimax_on_every_reachable_position():
    game = MnkGame()
    solution = solve(game)
    # 5,478 positions are reachable, 958 of them final: 4,520 positions with a move to make.
    assert solution.states.shape == (4520, 3)
    assert len({s.tobytes() for s in solution.states}) == 4520
    assert solution.value[0] == 0 and (solution.action_values[0] == 0).all()  # every opening draws
    negamax = reference_negamax()
    for state, v, av in zip(solution.states, solution.value, solution.action_values):
        grid = tuple(int(x) for x in game.board(state).reshape(-1))
        ref_v, ref_moves = negamax(grid, 1 if game.first_to_move(state) else 2)
        assert v == ref_v
        assert [None if np.isnan(x) else int(x) for x in av] == list(ref_moves)


def perfect_tictactoe_player(game) -> TableAgent:
    solution = solve(game)
    best = np.nanargmax(solution.action_values, axis=1)
    return TableAgent({s.tobytes(): int(a) for s, a in zip(solution.states, best)}, "minimax")


def test_minimax_player_is_never_wrong_and_random_is():
    params = Params()
    game = MnkGame()
    perfect = run_tictactoe(params, perfect_tictactoe_player(game), runtime=CPU)
    (row,) = perfect.rows
    assert (row.positions, row.wrong, row.losing) == (4520, 0, 0) and perfect.never_loses
    assert perfect.player == "minimax" and row.perfect is None
    rand = run_tictactoe(params, "random", seed=3, runtime=CPU)
    assert rand.rows[0].wrong > 1000 and 0 < rand.rows[0].losing <= rand.rows[0].wrong
    assert not rand.never_loses
    again = run_tictactoe(params, "random", seed=3, runtime=CPU)
    assert again.rows[0] == rand.rows[0]  # reproducible from the seed
    greedy = run_tictactoe(params, "greedy", runtime=CPU).rows[0]
    assert greedy.wrong < rand.rows[0].wrong / 4  # it wins when it can and blocks


def test_other_mnk_boards_and_the_size_guard():
    params = Params(game=GameParams(tictactoe=MnkConfig(m=2, n=3, k=2)))
    result = run_tictactoe(params, "greedy", runtime=CPU)
    assert result.rows[0].name == "2x3 k=2" and result.rows[0].positions > 0
    with pytest.raises(TriError, match="more than 1,000 reachable positions"):
        solve(MnkGame(MnkConfig(m=4, n=4, k=3)), max_positions=1000)


# ---- grading, on controlled data ------------------------------------------------------------------


def test_wrong_losing_perfect_and_value_accuracies():
    game = Connect4Game()
    states = np.stack([game.from_moves(m) for m in ["4", "44", "443", "4433"]])
    score = np.array([3.0, 0.0, -2.0, 5.0])
    nan = np.nan
    move_scores = np.array([[-1, 0, 3, 2, 3, nan, -4],   # won: 0 or a loss is wrong, 3 perfect
                            [0, -1, -2, 0, -3, -3, -3],  # drawn: only a loss is wrong
                            [-2, -3, -4, -5, -5, -5, -5],  # lost anyway: nothing is wrong
                            [1, 5, -1, 0, 2, 2, 2]], float)
    actions = {0: [2, 1, 0, 5], 1: [0, 1, 0, 0], 2: [6, 6, 6, 6], 3: [1, 0, 3, 2]}
    values = np.array([0.9, 0.2, 0.0, -0.7])

    keys = [s.tobytes() for s in states]

    def evaluate(batch: np.ndarray):  # the value accuracies read only the values
        return None, None, values[[keys.index(s.tobytes()) for s in batch]]

    def row(col: int) -> EvalRow:
        agent = TableAgent({s.tobytes(): actions[i][col] for i, s in enumerate(states)}, "t")
        return score_positions("x", states, score, move_scores, agent, evaluate=evaluate, batch=3)

    r0 = row(0)  # moves 3(3), 1(0), 7(-5), 2(5): all fine, two perfect
    assert (r0.wrong, r0.losing, r0.perfect) == (0, 0, 3)
    r1 = row(1)  # 2(0): won->draw, wrong, not losing; 2(-1) from a draw: wrong and losing
    assert (r1.wrong, r1.losing, r1.perfect) == (2, 1, 0)
    r2 = row(2)  # 1(-1): won->lost; 1(0) draw kept; 7(-5); 4(0): won->draw
    assert (r2.wrong, r2.losing) == (2, 1)
    r3 = row(3)  # no score for column 6 (as if full): an illegal move is wrong and losing
    assert (r3.wrong, r3.losing) == (2, 2)
    # Decided positions 0, 2, 3: value signs +, 0 (counts wrong), - against +, -, +: one right.
    assert (r0.value_decided, r0.value_sign_correct) == (3, 1)
    # Nearest outcome of 0.9, 0.2, 0.0, -0.7 is +1, 0, 0, -1 against +1, 0, -1, +1: two right.
    assert r0.value_outcome_correct == 2 and r0.value_outcome_accuracy == 0.5
    assert r0.to_dict()["wrong_rate"] == 0.0 and r3.to_dict()["losing_rate"] == 0.5


def write_testset(folder: Path, name: str, rows: list[tuple[str, int, list]]) -> Path:
    """A test file in Pons' format and its .moves.tsv beside it (made-up scores)."""
    path = folder / name
    path.write_text("".join(f"{m} {s}\n" for m, s, _ in rows))
    cells = ["\t".join("" if v is None else str(v) for v in ms) for _, _, ms in rows]
    path.with_name(name + ".moves.tsv").write_text(
        "# moves\tscore\tcol1..col7\n" + "".join(f"{m}\t{s}\t{c}\n" for (m, s, _), c in zip(rows, cells)))
    return path


SMALL_SET = [("4", 3, [-1, 0, 3, 2, 3, 1, -4]), ("44", 0, [0, -1, -2, 0, -3, -3, -3]),
             ("4444441", -2, [-3, -2, -4, None, -5, -5, -5]), ("1212", 5, [1, 5, -1, 0, 2, 2, 2])]


def oracle(path: Path, worst: bool = False) -> TableAgent:
    """Plays the best (or worst) move of each position of a test file, read from its .moves.tsv."""
    game = Connect4Game()
    ts = load_testset(path)
    pick = np.nanargmin if worst else np.nanargmax
    return TableAgent({game.from_moves(m).tobytes(): int(pick(ms))
                       for m, ms in zip(ts.moves, ts.move_scores)},
                      "worst" if worst else "oracle")


def test_connect4_oracle_on_a_small_file_and_json_output(tmp_path):
    path = write_testset(tmp_path, "Test_small", SMALL_SET)
    out = tmp_path / "eval" / "result.json"
    result = run_connect4(Params(), oracle(path), [path], out=out, runtime=CPU)
    (row,) = result.rows
    assert (row.name, row.positions, row.wrong, row.losing, row.perfect) == ("Test_small", 4, 0, 0, 4)
    saved = json.loads(out.read_text())
    assert saved == json.loads(result.to_json())
    assert saved["rows"][0]["wrong_rate"] == 0.0 and saved["rows"][0]["perfect_rate"] == 1.0
    metrics = result.metrics()
    assert metrics["Test_small/wrong_rate"] == 0.0 and "Test_small/value_sign_accuracy" not in metrics
    assert not list(out.parent.glob(".*.tmp"))  # written atomically
    worst = run_connect4(Params(), oracle(path, worst=True), [path.with_name("Test_small.moves.tsv")],
                         runtime=CPU)
    assert (worst.rows[0].wrong, worst.rows[0].losing) == (3, 3)  # the lost position has no wrong move
    limited = run_connect4(Params(), "greedy", [path], limit=2, runtime=CPU)
    assert limited.rows[0].positions == 2


def test_connect4_bad_inputs_are_user_errors(tmp_path):
    good = write_testset(tmp_path, "Test_ok", SMALL_SET)
    with pytest.raises(TriError, match="Test_missing: file not found"):
        run_connect4(Params(), "greedy", [tmp_path / "Test_missing"], runtime=CPU)
    (tmp_path / "Test_alone").write_text("4 1\n")
    with pytest.raises(TriError, match=r"Test_alone.moves.tsv: file not found"):
        run_connect4(Params(), "greedy", [tmp_path / "Test_alone"], runtime=CPU)
    bad = write_testset(tmp_path, "Test_bad", [("4", 3, [-1, 0, 3, 2, 3, 1, -4])])
    bad.write_text("4 three\n")
    with pytest.raises(TriError, match=r"Test_bad:1: expected 'moves score'"):
        load_testset(bad)
    other = write_testset(tmp_path, "Test_other", [("4", 3, [-1, 0, 3, 2, 3, 1, -4])])
    other.write_text("4 2\n")
    with pytest.raises(TriError, match="differ from"):
        load_testset(other)
    full = write_testset(tmp_path, "Test_full", [("444444", 1, [1, 1, 1, 1, 1, 1, 1])])
    with pytest.raises(TriError, match="do not match the columns that are open"):
        run_connect4(Params(), "greedy", [full], runtime=CPU)
    wide = Params(game=GameParams(connect4=Connect4Config(cols=8)))
    with pytest.raises(TriError, match="7 x 6 Connect Four"):
        run_connect4(wide, "greedy", [good], runtime=CPU)
    with pytest.raises(TriError, match="--simulations applies to a checkpoint"):
        run_connect4(Params(), "random", [good], simulations=4, runtime=CPU)
    with pytest.raises(TriError, match="folder .* not found"):
        find_testsets([], tmp_path / "nowhere")


@needs_pons
def test_oracle_is_never_wrong_on_pons_sets():
    paths = find_testsets([], PONS)
    assert [p.name for p in paths] == ["Test_L1_R1", "Test_L2_R1", "Test_L3_R1"]
    for path in paths:
        result = run_connect4(Params(), oracle(path), [path], limit=60, runtime=CPU)
        (row,) = result.rows
        assert (row.positions, row.wrong, row.losing, row.perfect) == (60, 0, 0, 60)
    rand = run_connect4(Params(), "random", paths, limit=60, runtime=CPU)
    assert all(0 < r.wrong < 60 for r in rand.rows)


# ---- network players -----------------------------------------------------------------------------


def save_net(path: Path, game) -> Path:
    save_checkpoint(Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"),
                               net_params=TINY_NET, generation=0, model=build_model(game, TINY_NET)), path)
    return path


def test_network_players_report_value_accuracy(tmp_path, one_torch_thread):
    path = write_testset(tmp_path, "Test_small", SMALL_SET)
    ckpt = save_net(tmp_path / "c4.pt", Connect4Game())
    net = run_connect4(Params(), f"net:{ckpt}", [path], runtime=CPU)
    row = net.rows[0]
    assert net.simulations is None and row.value_decided == 3
    assert row.value_sign_accuracy is not None and row.value_outcome_accuracy is not None
    searched = run_connect4(Params(), str(ckpt), [path], simulations=4, runtime=CPU)
    assert searched.simulations == 4 and searched.rows[0].value_sign_correct == row.value_sign_correct
    ttt = save_net(tmp_path / "ttt.pt", MnkGame())
    result = run_tictactoe(Params(), f"mcts:{ttt}:2", runtime=CPU)
    assert result.simulations == 2 and result.rows[0].value_decided > 0
    with pytest.raises(TriError, match="it is for the game 'tictactoe', not 'connect4'"):
        run_connect4(Params(), f"net:{ttt}", [path], runtime=CPU)


# ---- the command ---------------------------------------------------------------------------------


def games_cli(*args, cwd: Path):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "tri.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_eval_command_prints_a_table_and_writes_json(tmp_path):
    path = write_testset(tmp_path, "Test_small", SMALL_SET)
    proc = games_cli("eval", "connect4", "greedy", path, "--out", tmp_path / "r.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "connect4: greedy" and lines[1].split()[:3] == ["file", "positions", "wrong"]
    assert lines[2].split()[:2] == ["Test_small", "4"] and lines[-1] == f"wrote {tmp_path / 'r.json'}"
    assert json.loads((tmp_path / "r.json").read_text())["player"] == "greedy"
    proc = games_cli("eval", "tictactoe", "random", cwd=tmp_path)
    assert proc.returncode == 0 and "never loses: no" in proc.stdout


def test_eval_command_errors_are_one_line(tmp_path):
    triangle = tmp_path / "tri.pt"
    save_model(triangle)  # a small triangle-puzzle network
    write_testset(tmp_path, "Test_small", SMALL_SET)
    assert_clean_error(games_cli("eval", "connect4", "greedy", tmp_path / "Test_nope", cwd=tmp_path), 1,
                       "Test_nope: file not found")
    assert_clean_error(games_cli("eval", "connect4", "greedy", cwd=tmp_path), 1, "not found")  # no ../shared
    proc = games_cli("eval", "connect4", f"net:{triangle}", tmp_path / "Test_small", cwd=tmp_path)
    assert_clean_error(proc, 1, "it is for the game 'triangle', not 'connect4'")
    assert_clean_error(games_cli("eval", "tictactoe", "greedy", "--simulations", "4", cwd=tmp_path), 1,
                       "--simulations applies")
    assert_clean_error(games_cli("eval", "tictactoe", "nobody", cwd=tmp_path), 1, "unknown player 'nobody'")
