"""Gobang, the m,n,k engine's named preset: the rules (five or more in a row, on a 9 x 9 board by
default and 15 x 15 as a setting), the engine on boards of two and four words against the
plain-Python reference, the ``e5`` notation a person types, and greedy's blocking."""

from __future__ import annotations

import numpy as np
import pytest

from tri.config import GameParams, recipe_params
from tri.games import entry, make_game
from tri.games.base import sample_legal
from tri.games.kinrow.engine import OVER, WON
from tri.games.kinrow.gobang import GobangConfig, GobangGame
from tri.players import GreedyAgent

from tests.games.reference_kinrow import ReferenceBoard


@pytest.fixture(scope="module")
def game() -> GobangGame:
    return GobangGame()


def cells(game: GobangGame, names: str) -> list[int]:
    """``"e5 f5"`` -> actions."""
    out = []
    state = game.new()
    for name in names.split():
        out.append(game.parse_move(name, state))
    return out


def test_the_preset_is_five_in_a_row_on_nine_by_nine(game):
    assert (game.name, game.rows, game.cols, game.k) == ("gobang", 9, 9, 5)
    assert (game.num_actions, game.state_size, game.obs_shape) == (81, 5, (4, 9, 9))
    assert len(game.symmetries()) == 7
    assert isinstance(make_game(GameParams(name="gobang")), GobangGame)
    assert entry("gobang").recipe and recipe_params("gobang").game.name == "gobang"
    big = GobangGame(GobangConfig(m=15, n=15))
    assert (big.num_actions, big.state_size, big.words) == (225, 9, 4)
    with pytest.raises(ValueError, match="nobody could win"):
        GobangConfig(m=4, n=4)


def test_five_wins_and_so_does_an_overline(game):
    # X: a1 b1 c1 d1 e1 (five across the top), O elsewhere.
    x_moves, o_moves = "a1 b1 c1 d1 e1".split(), "a9 b9 c9 d9".split()
    state = game.new()
    for i in range(4):
        state = game.play(state, game.parse_move(x_moves[i], state))[0]
        state = game.play(state, game.parse_move(o_moves[i], state))[0]
    state, reward, over = game.play(state, game.parse_move("e1", state))
    assert (reward, over, game.result(state)) == (1.0, True, 1.0)
    assert state[game.flags] == OVER | WON
    # Six: X fills a gap between two and three of its stones (freestyle: an overline wins).
    state = game.new()
    for x, o in zip("a5 b5 d5 e5 f5".split(), "a9 b9 c9 d8 i1".split()):
        state = game.play(state, game.parse_move(x, state))[0]
        state = game.play(state, game.parse_move(o, state))[0]
    state, reward, over = game.play(state, game.parse_move("c5", state))
    assert (reward, over, game.result(state)) == (1.0, True, 1.0)
    # Four is not enough.
    state = game.from_actions(cells(game, "a1 a9 b1 b9 c1 c9 d1"))
    assert not game.is_over(state)


@pytest.mark.parametrize("config", [GobangConfig(), GobangConfig(m=15, n=15)])
def test_the_engine_matches_the_reference_on_boards_of_several_words(config):
    game = GobangGame(config)
    rng = np.random.default_rng(3)
    batch = 24
    refs = [ReferenceBoard(config.m, config.n, config.k, gravity=False) for _ in range(batch)]
    states = game.initial(np.arange(batch))
    for _ in range(config.m * config.n + 1):
        legal = game.legal(states)
        assert legal.tolist() == [r.legal() for r in refs]
        actions = sample_legal(legal, rng)
        wild = (rng.random(batch) < 0.02) | (actions < 0)
        actions[wild] = rng.integers(-1, game.num_cells + 1, size=int(wild.sum()))
        t = game.step(states, actions)
        assert t.reward.tolist() == [r.play(int(a)) for r, a in zip(refs, actions)]
        assert t.states.tolist() == [r.words() for r in refs]
        assert [game.result(s) for s in t.states] == [r.result() for r in refs]
        states = t.states
        if game.terminal(states).all():
            break
    assert game.terminal(states).all()


def test_moves_as_a_person_types_them(game):
    state = game.new()
    assert game.parse_move("e5", state) == game.parse_move("E 5", state) == game.parse_move("5 5", state) == 40
    assert game.action_name(40) == "e5" and game.parse_move("i9", state) == 80
    state = game.play(state, 40)[0]
    for text, message in [("e5", "e5 is already taken"), ("j1", r"j1 is off the board \(columns a-i, rows 1-9\)"),
                          ("a10", "off the board"), ("0 3", "off the board"), ("hello", "could not read"),
                          ("x" * 500, "could not read")]:
        with pytest.raises(ValueError, match=message) as info:
            game.parse_move(text, state)
        assert "\n" not in str(info.value) and len(str(info.value)) < 160
    assert "for example e4" in game.move_help(state)  # the empty cell nearest the centre
    lines = game.render(state).splitlines()
    assert lines[0].split() == list("abcdefghi") and lines[5].split() == ["5", ".", ".", ".", ".", "X", ".", ".",
                                                                          ".", "."]


def test_greedy_wins_when_it_can_and_blocks_an_open_four(game):
    greedy = GreedyAgent(game)
    # X has four in a row (b5-e5) and is to move again: it completes five.
    state = game.from_actions(cells(game, "b5 a9 c5 b9 d5 i9 e5 i1"))
    action = int(greedy.act(state[None], np.zeros(1, np.int64)).actions[0])
    assert game.play(state, action)[1] == 1.0
    # O (to move) faces X's four b5-e5 with both ends open: it must take a5 or f5.
    state = game.from_actions(cells(game, "b5 a9 c5 b9 d5 i9 e5"))
    action = int(greedy.act(state[None], np.zeros(1, np.int64)).actions[0])
    assert game.action_name(action) in ("a5", "f5")
