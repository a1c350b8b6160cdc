"""``uct:N`` (tri/yardsticks.py): plain UCT with random roll-outs, a game-agnostic yardstick. Its
roll-outs score the side to move, it takes a win in one and stops one, it beats random play, and
it works wherever a player spec does (the arena, the ladder)."""

from __future__ import annotations

import numpy as np
import pytest

from tri import arena, ladder
from tri.config import GameParams, recipe_params
from tri.errors import TriError
from tri.games import make_game
from tri.games.kinrow.connect4 import Connect4Game
from tri.games.kinrow.mnk import MnkGame
from tri.player_specs import parse_spec
from tri.players import make_agent
from tri.yardsticks import UctAgent, rollouts


def test_specs():
    spec = parse_spec("uct:1000")
    assert (spec.kind, spec.simulations, spec.path) == ("uct", 1000, None)
    for bad in ("uct:", "uct:0", "uct:x", "uct:-5", "uct:12345678", "uct:1e3"):
        with pytest.raises(TriError, match="expected uct:SIMULATIONS"):
            parse_spec(bad)
    with pytest.raises(TriError, match="single-player"):
        make_agent(parse_spec("uct:10"), make_game(GameParams(name="triangle")), recipe_params("triangle").mcts,
                   recipe_params("triangle").arena, np.random.default_rng(0))


def test_rollouts_score_the_side_to_move():
    game = MnkGame()
    rng = np.random.default_rng(0)
    # X to move, cell 3 the only one left: it completes 1-2-3 and 3-6-9, so every roll-out is +1.
    s = game.from_moves("1 4 2 5 9 7 6 8")
    assert game.legal_actions(s) == [2]
    assert rollouts(game, np.stack([s] * 8), rng).tolist() == [1.0] * 8
    # X to move, cell 9 the only one left and no row through it: a draw.
    draw = game.from_moves("1 2 3 5 4 7 8 6")
    assert game.legal_actions(draw) == [8]
    assert rollouts(game, draw[None], rng).tolist() == [0.0]
    # O to move with X's win still to come: from O's side, random games lose more than they win.
    values = rollouts(game, np.stack([game.from_moves("5 1 9")] * 400), rng)
    assert set(np.unique(values)) <= {-1.0, 0.0, 1.0} and values.mean() < 0


def test_uct_takes_a_win_and_blocks_a_threat():
    game = Connect4Game()
    agent = UctAgent(game, 300, np.random.default_rng(1))
    to_win = game.from_moves("121212")  # X to move, three in column 1: column 1 wins
    assert int(agent.act(to_win[None], np.array([6])).actions[0]) == 0
    to_block = game.from_moves("12131")  # O to move, X has three in column 1: it must block there
    assert game.to_move(to_block) == 1
    assert int(agent.act(to_block[None], np.array([5])).actions[0]) == 0


def test_uct_beats_random_and_plays_in_the_arena_and_the_ladder(tmp_path):
    params = recipe_params("tictactoe")
    result = arena.run(params, "uct:200", "random", games=10, seed=4)
    assert result.losses == 0 and result.wins >= 16, result
    table = ladder.run(params, ["uct:50", "random"], games=2, out=tmp_path)
    assert {s.name for s in table.standings} == {"uct:50", "random"}
    again = ladder.run(params, ["uct:50", "random"], games=2, out=tmp_path)
    assert again.played == 0 and again.reused > 0  # cached by the player's identity, not by a file


def test_alphabeta_plays_othello_only_and_beats_random_from_sampled_openings():
    from tri.games.othello.game import OthelloGame
    from tri.yardsticks import AlphaBetaAgent, othello_weights

    spec = parse_spec("alphabeta:3")
    assert (spec.kind, spec.simulations) == ("alphabeta", 3)
    for bad in ("alphabeta:", "alphabeta:0", "alphabeta:13", "alphabeta:x"):
        with pytest.raises(TriError, match="expected alphabeta:DEPTH"):
            parse_spec(bad)
    with pytest.raises(TriError, match="plays Othello"):
        AlphaBetaAgent(MnkGame(), 2)
    w = othello_weights(6).reshape(6, 6)
    assert w[0, 0] == w[5, 5] == 20 and w[1, 1] == w[4, 4] == -8 and w[0, 1] == -4 and w[2, 2] == 1
    assert np.array_equal(w, w.T) and np.array_equal(w, w[::-1])  # the square's symmetries
    game = OthelloGame()
    agent = AlphaBetaAgent(game, 2)
    s = game.new()
    assert agent.act(s[None], np.zeros(1)).actions.tolist() == agent.act(s[None], np.zeros(1)).actions.tolist()
    result = arena.run(recipe_params("othello"), "alphabeta:2", "random", games=12, seed=2, opening_moves=4)
    assert result.score_rate >= 0.75, result


def test_sampled_openings_are_shared_by_both_colours_and_differ_by_seed():
    game = make_game(GameParams(name="othello"))
    seeds = np.arange(20, dtype=np.int64)
    starts = arena.openings(game, seeds, 4)
    assert np.array_equal(starts, arena.openings(game, seeds, 4))  # from the seeds alone
    assert len({row.tobytes() for row in starts}) > 10 and not game.terminal(starts).any()
    assert arena.openings(game, seeds, 0) is None
    # Deterministic players: without openings each seed's pair of games is the same pair.
    params = recipe_params("othello")
    plain = arena.run(params, "greedy", "alphabeta:1", games=6, seed=1)
    assert len(set(plain.scores_a[:6])) == 1 and len(set(plain.scores_a[6:])) == 1
    varied = arena.run(params, "greedy", "alphabeta:1", games=6, seed=1, opening_moves=4)
    assert varied.games == 12
    with pytest.raises(TriError, match="single-player"):
        arena.run(recipe_params("triangle"), "greedy", "random", games=2, opening_moves=2)


def test_the_ladder_plays_sampled_openings_and_caches_them_apart(tmp_path):
    params = recipe_params("othello")
    plain = ladder.run(params, ["greedy", "alphabeta:1"], games=4, out=tmp_path)
    opened = ladder.run(params, ["greedy", "alphabeta:1"], games=4, out=tmp_path, opening_moves=4)
    assert opened.played == 1 and opened.reused == 0  # not the cached games without openings
    assert len(set(plain.pairings[0].outcomes[:4])) == 1  # deterministic: one game per colour, repeated
    again = ladder.run(params, ["greedy", "alphabeta:1"], games=4, out=tmp_path, opening_moves=4)
    assert again.played == 0 and again.pairings[0].outcomes == opened.pairings[0].outcomes
    with pytest.raises(TriError, match="single-player"):
        ladder.run(recipe_params("triangle"), ["greedy", "random"], games=2, out=None, opening_moves=2)
