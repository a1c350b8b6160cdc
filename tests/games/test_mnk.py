"""m,n,k-games (Tic-Tac-Toe by default): hand-made positions, the batched engine against the
plain-Python reference and against the search tests' tic-tac-toe fake, the symmetries of the
square and of the rectangle, and the shared game loop and arena."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tri.games import game_from_meta, make_game
from tri.games.base import Game, sample_legal
from tri.games.kinrow.engine import ILLEGAL, OVER, WON
from tri.games.kinrow.mnk import MnkConfig, MnkGame

from tests.games.reference_kinrow import ReferenceBoard, random_positions
from tests.search.fakes import TicTacToe

# X: 1 9 8 3 4, O: 5 2 7 6 -> X O X / X O O / O X X, no three in a row.
DRAW = "159287364"


@pytest.fixture(scope="module")
def game() -> MnkGame:
    return MnkGame()


def play(game: MnkGame, cells: list[int]) -> tuple[np.ndarray, list[float], list[bool]]:
    state = game.new()[None]
    rewards, terminals = [], []
    for cell in cells:
        t = game.step(state, np.array([cell]))
        state = t.states
        rewards.append(float(t.reward[0]))
        terminals.append(bool(t.terminal[0]))
    return state[0], rewards, terminals


@pytest.mark.parametrize("moves, winner, direction", [
    ("14253", 1.0, "top row"), ("41526", 1.0, "middle row"), ("17283", 1.0, "top row again"),
    ("12457", 1.0, "left column"), ("21538", 1.0, "middle column"), ("135649", -1.0, "O: right column"),
    ("12569", 1.0, "diagonal \\"), ("31527", 1.0, "diagonal /"), ("123578", -1.0, "O: middle column"),
])
def test_wins_in_every_direction(game, moves, winner, direction):
    cells = [int(ch) - 1 for ch in moves]
    state, rewards, terminals = play(game, cells)
    assert rewards == [0.0] * (len(cells) - 1) + [1.0], direction
    assert terminals == [False] * (len(cells) - 1) + [True]
    assert game.result(state) == winner and state[2] == OVER | WON
    assert not game.legal(state[None]).any()
    np.testing.assert_array_equal(game.from_moves(moves), state)
    np.testing.assert_array_equal(game.from_moves(" ".join(moves)), state)


def test_full_board_draw(game):
    state, rewards, terminals = play(game, [int(ch) - 1 for ch in DRAW])
    assert rewards == [0.0] * 9 and terminals == [False] * 8 + [True]
    assert state[2] == OVER and game.result(state) == 0.0
    assert game.render(state).splitlines() == [" X O X", " X O O", " O X X"]


def test_illegal_moves_end_the_game_with_a_penalty(game):
    state = game.from_moves("5")
    for action in (4, -1, 9):  # occupied, off the board either side
        t = game.step(state[None], np.array([action]))
        assert t.reward[0] == -1.0 and t.terminal[0]
        np.testing.assert_array_equal(t.states[0, :2], state[:2])
        assert t.states[0, 2] == OVER | ILLEGAL
        assert game.result(t.states[0]) == 1.0  # O tried it and lost: X wins
        again = game.step(t.states, np.array([0]))
        np.testing.assert_array_equal(again.states, t.states)
        assert again.reward[0] == 0.0 and again.terminal[0]
    with pytest.raises(ValueError, match=r"cell 5 \(row 2, column 2\) is already taken"):
        game.play(state, 4)
    with pytest.raises(ValueError, match="move 2: cell 5"):
        game.from_moves("55")
    with pytest.raises(ValueError, match="not a cell number"):
        game.from_moves("5a")


def test_render_and_parse_move(game):
    state = game.from_moves("519")
    assert game.render(state).splitlines() == [" O 2 3", " 4 X 6", " 7 8 X"]
    assert game.parse_move("2", state) == 1
    assert game.parse_move("3 2", state) == 7 and game.parse_move("3,2", state) == 7
    for text, message in [("x", 'could not read "x": type a cell number 1-9 or row and column'),
                          ("1", "cell 1 (row 1, column 1) is already taken"),
                          ("10", "cell 10 is off the board (cells are 1-9)"),
                          ("0", "cell 0 is off the board"),
                          ("4 1", "row 4, column 1 is off the board (rows 1-3, columns 1-3)"),
                          ("1 2 3", 'could not read "1 2 3"')]:
        with pytest.raises(ValueError) as info:
            game.parse_move(text, state)
        assert message in str(info.value) and "\n" not in str(info.value)


def test_protocol_registry_and_params(game):
    from tri.config import GameParams

    assert isinstance(game, Game)
    assert (game.name, game.num_players, game.num_actions, game.state_size, game.obs_shape) == \
        ("tictactoe", 2, 9, 3, (4, 3, 3))
    assert isinstance(make_game(GameParams(name="tictactoe")), MnkGame)
    built = game_from_meta("tictactoe", {"m": 4, "n": 5, "k": 3})
    assert (built.rows, built.cols, built.k, built.num_actions) == (4, 5, 3, 20)
    with pytest.raises(ValueError, match="nobody could win"):
        MnkConfig(m=3, n=3, k=4)
    with pytest.raises(ValueError, match="at most 361"):
        MnkConfig(m=20, n=19, k=5)
    assert MnkGame(MnkConfig(m=9, n=9, k=5)).state_size == 5  # two words a side, and the flags


# ---- batched engine against references -----------------------------------------------------------


@pytest.mark.parametrize("config", [MnkConfig(), MnkConfig(m=4, n=5, k=3), MnkConfig(m=5, n=5, k=4),
                                    MnkConfig(m=1, n=7, k=3), MnkConfig(m=8, n=8, k=5),
                                    MnkConfig(m=9, n=9, k=5), MnkConfig(m=13, n=11, k=4)])  # 1, 2 and 3 words
def test_batched_engine_matches_the_reference_bit_for_bit(config):
    game = MnkGame(config)
    rng = np.random.default_rng(11)
    batch = 40
    refs = [ReferenceBoard(config.m, config.n, config.k, gravity=False) for _ in range(batch)]
    states = game.initial(np.arange(batch))
    for _ in range(config.m * config.n + 2):
        legal = game.legal(states)
        assert legal.tolist() == [r.legal() for r in refs]
        actions = sample_legal(legal, rng)
        wild = (rng.random(batch) < 0.03) | (actions < 0)
        actions[wild] = rng.integers(-2, game.num_cells + 2, size=int(wild.sum()))
        t = game.step(states, actions)
        assert t.reward.tolist() == [r.play(int(a)) for r, a in zip(refs, actions)]
        assert t.terminal.tolist() == [r.over for r in refs]
        assert t.states.tolist() == [r.words() for r in refs]
        assert [game.result(s) for s in t.states] == [r.result() for r in refs]
        states = t.states
    assert game.terminal(states).all()


def test_agrees_with_the_search_tests_tictactoe_fake(game):
    """The fake in tests/search/fakes.py uses the same board words (its flags differ)."""
    fake = TicTacToe()
    rng = np.random.default_rng(5)
    states = game.initial(np.arange(64))
    fake_states = fake.initial(np.arange(64))
    for _ in range(9):
        live = ~game.terminal(states)
        np.testing.assert_array_equal(game.legal(states), fake.legal(fake_states))
        np.testing.assert_array_equal(game.terminal(states), fake.terminal(fake_states))
        actions = np.where(live, sample_legal(game.legal(states), rng), 0)
        t, ft = game.step(states, actions), fake.step(fake_states, actions)
        np.testing.assert_array_equal(t.states[live, :2], ft.states[live, :2])
        np.testing.assert_array_equal(t.reward[live], ft.reward[live])
        np.testing.assert_array_equal(game.encode(t.states)[live, :2], fake.encode(ft.states)[live])
        states, fake_states = t.states, ft.states


# ---- symmetries ----------------------------------------------------------------------------------


def compose(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Cells of "q after p" (apply p, then q): cell j comes from p's cell q[j]."""
    return p[q]


@pytest.mark.parametrize("config, count", [(MnkConfig(), 7), (MnkConfig(m=4, n=4, k=3), 7),
                                           (MnkConfig(m=3, n=4, k=3), 3), (MnkConfig(m=5, n=2, k=2), 3)])
def test_symmetries_form_the_board_group(config, count):
    game = MnkGame(config)
    syms = game.symmetries()
    assert len(syms) == count
    identity = np.arange(game.num_cells)
    perms = [identity] + [s.cells for s in syms]
    assert len({p.tobytes() for p in perms}) == count + 1  # distinct
    for s in syms:
        assert sorted(s.cells.tolist()) == identity.tolist()
        np.testing.assert_array_equal(s.actions, s.cells)  # actions are cells
    for p, q in itertools.product(perms, repeat=2):  # closed under composition: a group
        assert any(np.array_equal(compose(p, q), r) for r in perms)


@pytest.mark.parametrize("config", [MnkConfig(), MnkConfig(m=3, n=4, k=3), MnkConfig(m=4, n=4, k=3),
                                    MnkConfig(m=9, n=9, k=5), MnkConfig(m=7, n=10, k=5)])
def test_symmetries_keep_legal_masks_encodings_and_moves_consistent(config):
    game = MnkGame(config)
    states = random_positions(game, 120, seed=2)
    encoded, legal = game.encode(states), game.legal(states)
    for sym in game.symmetries():
        images = game.transform(states, sym)
        np.testing.assert_array_equal(game.legal(images), sym.apply_policy(legal), err_msg=sym.name)
        np.testing.assert_array_equal(game.encode(images), sym.apply_planes(encoded), err_msg=sym.name)
        inverse = np.argsort(sym.actions)
        for a in range(game.num_actions):
            t = game.step(states, np.full(len(states), a))
            ti = game.step(images, np.full(len(states), inverse[a]))
            np.testing.assert_array_equal(ti.states, game.transform(t.states, sym), err_msg=sym.name)
            np.testing.assert_array_equal(ti.reward, t.reward)
    # On Tic-Tac-Toe a quarter turn takes the top left corner to the top right.
    if config == MnkConfig():
        rot = next(s for s in game.symmetries() if s.name == "rot270")
        corner = game.from_moves("1")
        assert game.render(game.transform(corner[None], rot)[0]).splitlines()[0] == " 1 2 X"


# ---- the shared game loop and the arena ----------------------------------------------------------


def test_selfplay_smoke_and_arena(game, one_torch_thread):
    from tri.agents import MctsAgent
    from tri.arena import run as arena_run
    from tri.config import ArenaParams, GameParams, MctsParams, NetParams, Params, Runtime
    from tri.episodes import run_episodes
    from tri.evaluator import make_evaluator
    from tri.net import build_model

    evaluate = make_evaluator(build_model(game, NetParams(channels=8, blocks=1, value_hidden=16)), game)
    agent = MctsAgent(game, evaluate, MctsParams(simulations=16), np.random.default_rng(0), noise=True,
                      temperature=1.0, temperature_moves=2)
    episodes = run_episodes(game, [agent, agent], np.arange(6), concurrent=3, max_moves=9, record=True)
    p = episodes.positions
    assert all(g.terminal for g in episodes.games)
    assert len(p) == sum(g.steps for g in episodes.games)
    np.testing.assert_allclose(p.policy.sum(axis=1), 1.0, rtol=1e-5)
    # Two-player arena with colour alternation: greedy (wins when it can, builds rows, blocks)
    # against random.
    params = Params(game=GameParams(name="tictactoe"), arena=ArenaParams(games=20, concurrent=20))
    result = arena_run(params, "greedy", "random", runtime=Runtime(workers=1, device="cpu"))
    assert result.games == 40 and result.wins + result.ties + result.losses == 40
    assert result.score_rate > 0.7, result
