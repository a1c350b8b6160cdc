"""The picture of a candidate's game (tri/record/render.py) shows the whole game: the triangle
puzzle's strip of key moments ends with the final position of a finished game, and a
two-player picture is the final board."""

from __future__ import annotations

import numpy as np
import pytest

from tri.config import GameParams
from tri.games import make_game
from tri.record import render

from tests.pipeline_fixtures import PARAMS, PNG_SIGNATURE, save_model, with_section

# Room for a whole game: the tiny board fills up long before this many moves.
LONG = with_section(PARAMS, "arena", max_moves=500)


@pytest.fixture
def drawn(monkeypatch):
    """What render_game hands to the drawing functions."""
    calls = {}

    def spy(name):
        real = getattr(render, name)

        def record(*args, **kwargs):
            calls[name] = (args, kwargs)
            return real(*args, **kwargs)

        monkeypatch.setattr(render, name, record)

    for name in ("_draw_triangle_game", "_draw_boards", "_draw_stones"):
        spy(name)
    return calls


def test_triangle_picture_shows_the_whole_game(tmp_path, drawn):
    checkpoint = tmp_path / "cand.pt"
    save_model(checkpoint, LONG, seed=3)
    out = tmp_path / "pictures" / "gen-0001.png"
    assert render.render_game(LONG, checkpoint, out, generation=1) == out
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    game = make_game(LONG.game)
    (_, states, actions, _, _), kw = drawn["_draw_triangle_game"]
    n = len(actions)
    assert n > 7 and len(states) == n + 1  # more than the 7 moves it used to stop at
    assert kw["terminal"] and game.terminal(states[-1:])[0]  # played to the end: game over
    # The strip's last board is the final position, labelled with the last move.
    (_, boards, _, _, titles, _, full_title), kw = drawn["_draw_boards"]
    final = game.states(states[-1:])[0].grid
    assert np.array_equal(boards[-1], final)
    assert titles[-1].startswith(f"move {n}:") and titles[-1].endswith("(last)")
    assert f"{n} moves" in full_title and "game over" in full_title
    assert len(boards) <= 12 and kw["shown"][-1] == n
    assert kw["score"].shape == (n + 1,) and len(kw["lines"]) == n  # the score after every move


def test_a_cut_game_says_so(tmp_path, drawn):
    checkpoint = tmp_path / "cand.pt"
    save_model(checkpoint, LONG, seed=3)
    render.render_game(LONG, checkpoint, tmp_path / "g.png", generation=1, max_moves=3)
    (_, _, actions, _, _), kw = drawn["_draw_triangle_game"]
    assert len(actions) == 3 and not kw["terminal"]
    assert "cut at the move limit" in drawn["_draw_boards"][0][6]


def test_key_moves_spread_over_the_game_prefer_clears_and_end_last():
    lines = np.zeros(100, int)
    lines[[9, 33, 34, 70]] = 1  # moves 10, 34, 35 and 71 cleared lines
    shown = render.key_moves(lines, 6)
    assert shown[-1] == 100 and len(shown) <= 6 and shown == sorted(set(shown))
    assert {10, 34, 71} <= set(shown)  # each within half a spacing of an even place
    assert render.key_moves(lines[:5], 12) == [1, 2, 3, 4, 5]  # a short game: every move
    assert render.key_moves(lines[:0], 12) == []


def test_two_player_picture_is_the_final_board(tmp_path, drawn):
    params = PARAMS.model_copy(update={"game": GameParams(name="tictactoe")})
    params = with_section(params, "arena", max_moves=500)
    checkpoint = tmp_path / "ttt.pt"
    save_model(checkpoint, params, seed=1)
    assert render.render_game(params, checkpoint, tmp_path / "ttt.png", generation=2) == tmp_path / "ttt.png"
    (_, boards, _, title), _ = drawn["_draw_stones"]
    assert "(cut)" not in title and "final position" in title
    assert len(boards) - 1 >= 5  # at least five stones: a finished game of Tic-Tac-Toe
    assert (boards[-1] != 0).sum() == len(boards) - 1


def test_animation_has_a_frame_per_move(tmp_path, drawn):
    from PIL import Image

    checkpoint = tmp_path / "cand.pt"
    save_model(checkpoint, LONG, seed=3)
    gif = tmp_path / "game.gif"
    render.render_game(LONG, checkpoint, tmp_path / "game.png", generation=1, animation=gif)
    (_, _, actions, _, _), _ = drawn["_draw_triangle_game"]
    with Image.open(gif) as im:
        assert im.n_frames == len(actions) + 1  # the start and every move
        im.seek(im.n_frames - 1)
        assert im.info["duration"] == 3000  # the final position is held
    assert render.render_game(LONG, checkpoint, tmp_path / "again.png", generation=1) is not None
    assert not (tmp_path / "again.gif").exists()  # only when asked for
