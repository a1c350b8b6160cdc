"""Othello (tri/games/othello): perft counts from the standard start, the rules' edge cases, the
symmetries, moves typed by a person; and the engine against the plain-Python reference engine
(``reference_othello.py``, written apart from the kernels: a grid of lists and a walk along each
direction) on random games of every size, move by move."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.games import reference_othello as reference
from tri.games.othello.game import OthelloGame
from tri.games.othello.rules import OthelloConfig

# Perft from the 8 x 8 start (the published counts; a pass counts as a move).
PERFT_8 = [4, 12, 56, 244, 1396, 8200, 55092]


def perft(game: OthelloGame, states: np.ndarray, depth: int) -> int:
    """Leaves of the game tree ``depth`` moves deep (a finished game is a leaf where it ends)."""
    if depth == 0:
        return states.shape[0]
    over = game.terminal(states)
    live = states[~over]
    if live.shape[0] == 0:
        return int(over.sum())
    b, a = np.nonzero(game.legal(live))
    return int(over.sum()) + perft(game, game.step(live[b], a).states, depth - 1)


@pytest.mark.parametrize("depth", range(1, len(PERFT_8) + 1))
def test_perft_from_the_standard_start(depth):
    game = OthelloGame(OthelloConfig(size=8))
    assert perft(game, game.new()[None], depth) == PERFT_8[depth - 1]


def test_the_start_and_the_first_moves():
    game = OthelloGame(OthelloConfig(size=8))
    s = game.new()
    assert [game.action_name(a) for a in game.legal_actions(s)] == ["d3", "c4", "f5", "e6"]
    assert game.board(s)[3, 3] == 2 and game.board(s)[3, 4] == 1 and game.to_move(s) == 0
    s2, reward, over = game.play(s, game.parse_move("d3", s))
    assert (reward, over) == (0.0, False) and game.discs(s2) == (4, 1) and game.to_move(s2) == 1
    assert game.board(s2)[3, 3] == 1  # d4 flipped to black


def test_a_pass_is_legal_only_without_a_placement_and_the_end_scores_the_discs():
    game = OthelloGame(OthelloConfig(size=4))
    rng = np.random.default_rng(1)
    passes = finished = 0
    for _ in range(200):
        s = game.new()
        while not game.is_over(s):
            legal = game.legal_actions(s)
            if legal == [game.pass_action]:
                passes += 1
            else:
                assert game.pass_action not in legal
                with pytest.raises(ValueError, match="cannot pass"):
                    game.parse_move("pass", s)
            s, _, _ = game.play(s, legal[int(rng.integers(len(legal)))])
        finished += 1
        black, white = game.discs(s)
        assert game.result(s) == np.sign(black - white) and game.legal_actions(s) == []
    assert passes > 0 and finished == 200


def test_an_illegal_action_ends_the_game_as_a_loss_for_its_player():
    game = OthelloGame()
    s = game.new()
    t = game.step(s[None], np.array([0]))  # a1 flips nothing
    assert t.terminal[0] and t.reward[0] == -1.0 and game.result(t.states[0]) == -1.0


@pytest.mark.parametrize("text, message", [
    ("zz", 'could not read "zz"'), ("g1", "g1 is off the board (columns a-f, rows 1-6)"),
    ("a9", "off the board"), ("c3", "c3 is taken"), ("a1", "a1 flips nothing"), ("pass", "cannot pass"),
    ("x" * 500, "could not read"), ("d" + "9" * 400, "could not read"),
])
def test_moves_typed_by_a_person(text, message):
    game = OthelloGame()
    with pytest.raises(ValueError, match=re.escape(message)):
        game.parse_move(text, game.new())
    assert game.parse_move(" C2 ", game.new()) == 1 * 6 + 2


def test_symmetric_positions_have_the_mapped_legal_actions():
    game = OthelloGame()
    rng = np.random.default_rng(3)
    states = []
    for _ in range(30):
        s = game.new()
        for _ in range(int(rng.integers(1, 20))):
            legal = game.legal_actions(s)
            if not legal:
                break
            s = game.step(s[None], np.array([legal[int(rng.integers(len(legal)))]])).states[0]
        states.append(s)
    batch = np.stack(states)
    legal = game.legal(batch)
    for sym in game.symmetries():
        moved = game.transform(batch, sym)
        assert np.array_equal(game.legal(moved), sym.apply_policy(legal)), sym.name
        assert np.array_equal(game.encode(moved), sym.apply_planes(game.encode(batch))), sym.name
    assert len(game.symmetries()) == 7


def test_the_reference_engine_gives_the_published_counts_too():
    for depth in range(1, 6):
        assert reference.perft(reference.ReferenceOthello(8), depth) == PERFT_8[depth - 1]


def test_against_the_reference_engine_on_random_games():
    rng = np.random.default_rng(20261124)
    for size in (4, 6, 8):
        game = OthelloGame(OthelloConfig(size=size))
        for _ in range(60 if size < 8 else 20):
            ref, s = reference.ReferenceOthello(size), game.new()
            while True:
                assert game.legal_actions(s) == ref.legal_actions()
                assert game.board(s).tolist() == ref.grid
                assert game.is_over(s) == ref.is_over()
                if ref.is_over():
                    assert game.result(s) == ref.result() and game.discs(s) == ref.counts()
                    break
                legal = ref.legal_actions()
                action = legal[int(rng.integers(len(legal)))]
                ref.play(action)
                s = game.step(s[None], np.array([action])).states[0]
