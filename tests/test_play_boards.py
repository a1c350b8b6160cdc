"""``tri play connect4`` / ``tri play tictactoe``: a person against an agent in the terminal,
through :func:`tri.terminal.play` with scripted input and through the command."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from tri.agents import Decision
from tri.games.kinrow.connect4 import Connect4Game
from tri.games.kinrow.mnk import MnkGame
from tri.players import GreedyAgent
from tri.terminal import PlayResult
from tri.terminal import play as play_game

from tests.pipeline_fixtures import assert_clean_error, save_model


class LowestAgent:
    """Plays the lowest legal action: predictable opponent moves."""

    name = "lowest"

    def __init__(self, game):
        self.game = game

    def act(self, states, moves):
        return Decision(np.argmax(self.game.legal(states), axis=1).astype(np.int64))


def play(game, agent, lines: list[str], *, person_first: bool = True) -> tuple[PlayResult, str]:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, no_color=True, highlight=False, width=100)
    result = play_game(game, io.StringIO("".join(f"{line}\n" for line in lines)).readline, agent=agent,
                       person_seat=0 if person_first else 1, interactive=False, console=console)
    return result, buf.getvalue()


def ended(result: PlayResult) -> tuple:
    return result.moves, result.outcome, result.quit


def test_connect4_person_wins_after_bad_input():
    game = Connect4Game()
    # The lowest-column opponent stacks column 1; the person builds column 4 and wins vertically.
    script = ["foo", "0", "8", "", "?", "4", "4", "4", "4"]
    result, out = play(game, LowestAgent(game), script)
    assert ended(result) == ([3, 0, 3, 0, 3, 0, 3], 1.0, False) and result.game_over
    assert 'could not read "foo": type a column number 1-7' in out
    assert "column 0 is off the board (columns are 1-7)" in out
    assert "column 8 is off the board (columns are 1-7)" in out
    assert "type a column number (1-7)" in out and "legal now: 1, 2, 3, 4, 5, 6, 7" in out
    assert "1. you (X): column 4" in out and "2. lowest (O): column 1" in out and "you win." in out
    assert out.count(" 1 2 3 4 5 6 7") == len(result.moves) + 1  # the board after every move
    final = game.render(game.from_moves("4141414"))
    assert out.split("7. you (X): column 4\n")[1].startswith(final + "\nyou win.")


def test_connect4_full_column_and_playing_second():
    game = Connect4Game()
    # The opponent (X) keeps to column 1; the person's third "1" fills it, the fourth is refused.
    result, out = play(game, LowestAgent(game), ["1", "1", "1", "1", "2"], person_first=False)
    assert "you are O (moving second), lowest is X" in out
    assert out.count("column 1 is full") == 1
    assert result.moves == [0, 0, 0, 0, 0, 0, 1, 1, 1]
    assert result.quit and result.outcome is None  # input ran out before the end
    assert "your move: (end of input)" in out and "stopped after 9 moves." in out


def test_connect4_person_loses():
    game = Connect4Game()
    result, out = play(game, LowestAgent(game), ["7", "6", "5", "7"])
    assert ended(result) == ([6, 0, 5, 0, 4, 0, 6, 0], -1.0, False)
    assert out.rstrip().endswith("lowest wins.")


def test_tictactoe_cells_rows_and_columns_and_quit():
    game = MnkGame()
    script = ["5", "5", "1 1", "0", "10", "4 4", "x y", "q"]
    result, out = play(game, LowestAgent(game), script, person_first=False)
    # X (the agent) takes cell 1, the person's "5" works once, then "5" is taken, ...
    assert result.moves[:2] == [0, 4]
    assert "cell 5 (row 2, column 2) is already taken" in out
    assert "cell 1 (row 1, column 1) is already taken" in out  # "1 1" names the agent's cell
    assert "cell 0 is off the board" in out and "cell 10 is off the board (cells are 1-9)" in out
    assert "row 4, column 4 is off the board" in out and 'could not read "x y"' in out
    assert result.quit and "stopped after 3 moves." in out
    assert " X 2 3\n 4 O 6\n 7 8 9" in out


def test_tictactoe_draw_against_greedy():
    game = MnkGame()
    # Greedy (X) opens in the centre, takes a corner and blocks; the person blocks back: a draw.
    result, out = play(game, GreedyAgent(game), ["1", "7", "6", "2"], person_first=False)
    assert ended(result) == ([4, 0, 2, 6, 3, 5, 7, 1, 8], 0.0, False)
    assert out.rstrip().endswith(" O O X\n X X O\n O X X\ndraw.")


def test_moves_read_as_the_game_names_them():
    game = MnkGame()
    script = ["cell 5 (row 2, column 2)", "row 3 column 3", "cell 4 (row 1, column 1)", "q"]
    result, out = play(game, LowestAgent(game), script)
    assert result.moves[::2] == [4, 8] and "cell 4 is not at row 1, column 1 (cell 1 is)" in out


def test_a_two_player_game_needs_an_opponent():
    with pytest.raises(ValueError, match="needs an agent"):
        play_game(Connect4Game(), io.StringIO("4\n").readline, interactive=False)


# ---- the command ---------------------------------------------------------------------------------


def games_cli(*args, stdin: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tri.cli", *map(str, args)], input=stdin, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_play_commands_scripted(tmp_path):
    proc = games_cli("play", "connect4", "--opponent", "random", "--seed", "1", stdin="foo\n4\n4\nq\n",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and "\x1b" not in proc.stdout
    assert 'could not read "foo"' in proc.stdout and "1. you (X): column 4" in proc.stdout
    assert "stopped after" in proc.stdout
    proc = games_cli("play", "tictactoe", "--opponent", "greedy", "--colour", "second", stdin="", cwd=tmp_path)
    assert proc.returncode == 0 and "1. greedy (X): cell 5" in proc.stdout and "(end of input)" in proc.stdout


def test_play_command_errors_are_one_line(tmp_path):
    assert_clean_error(games_cli("play", "connect4", "--opponent", "nobody", stdin="", cwd=tmp_path), 1,
                       "unknown player 'nobody'")
    save_model(tmp_path / "tri.pt")  # a small triangle-puzzle network
    assert_clean_error(games_cli("play", "tictactoe", "--opponent", f"net:{tmp_path / 'tri.pt'}", stdin="",
                                 cwd=tmp_path), 1, "it is for the game 'triangle', not 'tictactoe'")
    proc = games_cli("play", "connect4", "--colour", "purple", stdin="", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


HUGE = "1" * 100_000  # past Python's 4300-digit limit for int()


def test_a_100000_digit_move_gets_the_usual_message_and_the_game_goes_on(tmp_path):
    proc = games_cli("play", "connect4", "--opponent", "random", "--seed", "1", stdin=f"{HUGE}\n{'0' * 5000}4\nq\n",
                     cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "limit" not in proc.stdout and 'could not read "111111111...": type a column number 1-7' in proc.stdout
    assert "1. you (X): column 4" in proc.stdout  # leading zeros are still a number
    proc = games_cli("play", "tictactoe", "--opponent", "greedy", stdin=f"2 {HUGE}\n-{HUGE}\n5\nq\n", cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "limit" not in proc.stdout
    assert 'could not read "2 111111111...": type a cell number 1-9 or row and column (e.g. 2 3)' in proc.stdout
    assert 'could not read "-111111111...": type a cell number 1-9' in proc.stdout
    assert "1. you (X): cell 5 (row 2, column 2)" in proc.stdout


def test_an_opponent_search_that_does_not_fit_is_one_line(tmp_path):
    from tests.pipeline_fixtures import TINY_NET
    from tri.config import GameParams, Params

    model = tmp_path / "c4.pt"
    save_model(model, Params(game=GameParams(name="connect4"), net=TINY_NET))
    assert_clean_error(games_cli("play", "connect4", "--opponent", f"mcts:{model}:10000000000", stdin="",
                                 cwd=tmp_path), 1, "at most 2147483646 simulations")
    from tri.resources import machine_memory
    from tri.search import search_bytes

    if (machine_memory() or 0) >= search_bytes(1, 2_000_000_000, 7, 3):
        pytest.skip("this machine has 0.2 TiB of memory or more: a 2e9-simulation search fits")
    proc = games_cli("play", "connect4", "--opponent", f"mcts:{model}:2000000000", stdin="4\n", cwd=tmp_path)
    assert_clean_error(proc, 1, f"player 'mcts:{model}:2000000000': 2000000000 simulations for 1 game at once "
                                "need about ", "lower N in mcts:PATH:N")
    assert proc.stdout == ""  # refused before the game started
