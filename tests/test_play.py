"""``tri play triangle``: a person's game in the terminal, scripted through the real CLI and
through :func:`tri.terminal.play` directly."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from rich.console import Console
from rich.text import Text

from tri.games.triangle.game import TriangleGame, parse_placement
from tri.terminal import PlayResult, play


def api_game(seed: int, pick, max_moves: int = 1000):
    """Moves chosen by ``pick(legal_actions)`` and the totals the scalar API reports for them
    (a :class:`PlayResult` whose ``moves`` are the actions)."""
    game = TriangleGame()
    state = game.new_game(seed)
    moves, score, lines, cleared = [], 0.0, 0, 0
    while not state.game_over and len(moves) < max_moves:
        move = pick(game.legal_actions(state))
        state, step = game.place(state, move)
        moves.append(move)
        score += step.reward
        lines += step.lines
        cleared += step.cleared
    return moves, PlayResult(moves=[game.action_index(m) for m in moves], score=score,
                             stats={"lines": lines, "cleared": cleared}, game_over=state.game_over,
                             quit=not state.game_over)


def plain_console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=False, no_color=True, highlight=False, width=100), buf


def totals(r: PlayResult) -> str:
    return f"score {r.score:.3f}, steps {r.steps}, lines {r.stats['lines']}, triangles {r.stats['cleared']}"


def test_scripted_game_through_the_cli(tmp_path):
    moves, expected = api_game(3, lambda legal: legal[0], max_moves=40)
    script = ["foo", "9 9 9", "", "0 1", "?"]
    script += [f"{s},{r},{c}" if i == 1 else f"{s} {r} {c}" for i, (s, r, c) in enumerate(moves)]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run([sys.executable, "-m", "tri.cli", "play", "triangle", "--seed", "3"],
                          input="\n".join(script) + "\n", capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env=env)  # cwd: no params.yaml, so the default rules
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in out + proc.stderr
    assert "\x1b" not in out  # piped: no colours or control codes
    assert 'could not read "foo": type a move as: slot row col (for example ' in out
    assert "illegal move 9 9 9: there is no slot 9 (slots are 0-2)" in out
    assert 'could not read "0 1"' in out
    assert "rules:" in out and "legal moves)" in out
    for s, r, c in moves:  # one summary per move, in order
        assert f"{s} {r} {c}: placed " in out
    assert out.count(": placed ") == len(moves)
    assert "move (slot row col), ? for help, q to quit:" in out
    assert "slot 0" in out and "slot 1" in out and "slot 2" in out
    assert any(g in out for g in "▲▼") and any(g in out for g in "△▽")
    final = out.rstrip().splitlines()[-1]
    word = "game over" if expected.game_over else "stopped"
    assert final == f"{word}: {totals(expected)}"


def test_quit_returns_the_result():
    game = TriangleGame()
    first = game.legal_actions(game.new_game(5))[0]
    _, step = game.place(game.new_game(5), first)
    console, buf = plain_console()
    lines = io.StringIO(f"{first[0]} {first[1]} {first[2]}\nq\n0 3 4\n")
    result = play(game, lines.readline, seed=5, interactive=False, console=console)
    assert result == PlayResult(moves=[game.action_index(first)], score=step.reward,
                                stats={"lines": step.lines, "cleared": step.cleared}, game_over=False,
                                quit=True)
    assert lines.readline() == "0 3 4\n"  # nothing read after q
    out = buf.getvalue()
    assert out.rstrip().splitlines()[-1] == f"stopped: {totals(result)}"
    assert "q to quit: q\n" in out  # the line read is echoed


def test_end_of_input_and_ctrl_c_stop_the_game():
    console, buf = plain_console()
    result = play(TriangleGame(), io.StringIO("").readline, seed=5, interactive=False, console=console)
    assert (result.steps, result.score, result.quit, result.game_over) == (0, 0.0, True, False)
    assert "(end of input)" in buf.getvalue()
    assert buf.getvalue().rstrip().endswith("stopped: score 0.000, steps 0, lines 0, triangles 0")

    def interrupted() -> str:
        raise KeyboardInterrupt

    console, buf = plain_console()
    result = play(TriangleGame(), interrupted, seed=5, interactive=False, console=console)
    assert result.quit and not result.game_over


@pytest.mark.parametrize("interactive", [False, True])
def test_game_played_to_game_over(interactive):
    moves, expected = api_game(1, lambda legal: legal[-1])
    assert expected.game_over and expected.stats["lines"] > 0  # this game ends after clearing a line
    text = "\n".join(f"{s} {r} {c}" for s, r, c in moves) + "\nq\n"
    buf = io.StringIO()
    console = Console(file=buf, width=100, force_terminal=interactive, no_color=not interactive,
                      color_system="truecolor" if interactive else None)
    result = play(TriangleGame(), io.StringIO(text).readline, seed=1, interactive=interactive,
                  console=console)
    assert result.game_over and not result.quit
    assert result.steps == len(moves)
    assert result.stats == expected.stats and result.moves == expected.moves
    assert f"{result.score:.3f}" == f"{expected.score:.3f}"
    out = buf.getvalue()
    assert ("\x1b[" in out) == interactive
    plain = Text.from_ansi(out).plain  # without the styles, for the text checks
    assert "no shape fits anywhere." in plain
    assert plain.rstrip().splitlines()[-1] == f"game over: {totals(result)}"
    assert f"cleared {expected.stats['lines']} line" in plain


def test_parse_placement():
    assert parse_placement("0 3 4") == (0, 3, 4)
    assert parse_placement("0 03 -4") == (0, 3, -4)
    assert parse_placement("0 3 0000000000004") == (0, 3, 4)  # leading zeros are still a number
    assert parse_placement("0 3 1234567890") is None  # no board is that big: not a move
    assert parse_placement("0 3 " + "4" * 100_000) is None  # nor one int() refuses (4300 digits)
    assert parse_placement("0 3 1_0") is None
    assert parse_placement(" 0,3,4 ") == (0, 3, 4)
    assert parse_placement("(1, 2, 10)") == (1, 2, 10)
    assert parse_placement("0 3") is None
    assert parse_placement("a b c") is None
    assert parse_placement("0 3 4 5") is None


def test_a_100000_digit_move_through_the_cli(tmp_path):
    huge = "1" * 100_000
    proc = subprocess.run([sys.executable, "-m", "tri.cli", "play", "triangle", "--seed", "3"],
                          input=f"{huge}\n0 0 {huge}\n{huge} {huge} {huge}\nq\n", capture_output=True,
                          text=True, timeout=60, cwd=tmp_path, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "limit" not in proc.stdout
    for start in ("1111111111", "0 0 111111", "1111111111"):
        assert f'could not read "{start}' in proc.stdout
    assert proc.stdout.count("could not read") == 3
    assert proc.stdout.rstrip().splitlines()[-1] == "stopped: score 0.000, steps 0, lines 0, triangles 0"


def test_a_game_without_a_champion_is_played_against_greedy(tmp_path):
    """`tri play GAME` plays the shipped champion by default; a game with none yet (an empty
    champions folder here) gets greedy rather than an error."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "TRI_CHAMPIONS": str(tmp_path / "none")}
    proc = subprocess.run([sys.executable, "-m", "tri.cli", "play", "gobang"], input="e5\nq\n",
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "2. greedy (O): " in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
