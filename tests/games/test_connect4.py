"""Connect Four: hand-made positions (a win in every direction, a full-board draw, illegal moves),
the batched engine against the plain-Python reference on random games (bit for bit), the mirror
symmetry, speed, and a self-play smoke through the shared game loop."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tri.games import game_from_meta
from tri.games.base import Game, sample_legal
from tri.games.kinrow.connect4 import Connect4Config, Connect4Game
from tri.games.kinrow.engine import ILLEGAL, OVER, WON

from tests.games.reference_kinrow import ReferenceBoard, random_positions

# A game that fills the board with no four in a row (found by a search for one; the reference
# engine below agrees it is a draw).
FULL_BOARD_DRAW = "667772143763557145476536142255624411322133"


@pytest.fixture(scope="module")
def game() -> Connect4Game:
    return Connect4Game()


def play_string(game: Connect4Game, moves: str) -> tuple[np.ndarray, list[float], list[bool]]:
    """Play 1-based columns through the batched step; the final state, rewards and terminals."""
    state = game.new()[None]
    rewards, terminals = [], []
    for ch in moves:
        t = game.step(state, np.array([int(ch) - 1]))
        state = t.states
        rewards.append(float(t.reward[0]))
        terminals.append(bool(t.terminal[0]))
    return state[0], rewards, terminals


# ---- hand-made positions -------------------------------------------------------------------------


@pytest.mark.parametrize("moves, winner, direction", [
    ("1122334", 1.0, "horizontal"),
    ("1212121", 1.0, "vertical"),
    ("12233434474", 1.0, "diagonal /"),
    ("76655454414", 1.0, "diagonal \\"),
    ("12121232", -1.0, "vertical, second player"),
    ("7172737", 1.0, "vertical, last column"),
    ("4455667", 1.0, "horizontal, right edge"),
])
def test_wins_in_every_direction(game, moves, winner, direction):
    state, rewards, terminals = play_string(game, moves)
    assert rewards == [0.0] * (len(moves) - 1) + [1.0], direction  # +1 to the mover who wins
    assert terminals == [False] * (len(moves) - 1) + [True]
    assert game.result(state) == winner
    assert state[2] == OVER | WON
    assert not game.legal(state[None]).any()
    with pytest.raises(ValueError, match="the game is over"):
        game.play(state, 0)
    np.testing.assert_array_equal(game.from_moves(moves), state)
    with pytest.raises(ValueError, match=f"move {len(moves) + 1}: the game is over"):
        game.from_moves(moves + "1")


def test_three_in_a_row_does_not_win(game):
    state, rewards, terminals = play_string(game, "112233")
    assert rewards == [0.0] * 6 and not any(terminals) and game.result(state) is None


def test_full_board_draw(game):
    state, rewards, terminals = play_string(game, FULL_BOARD_DRAW)
    assert len(FULL_BOARD_DRAW) == 42
    assert rewards == [0.0] * 42
    assert terminals == [False] * 41 + [True]
    assert state[2] == OVER and game.result(state) == 0.0
    assert (state[0] | state[1]) == (1 << 42) - 1
    ref = ReferenceBoard(6, 7, 4, gravity=True)
    for ch in FULL_BOARD_DRAW:
        ref.play(int(ch) - 1)
    assert ref.over and not ref.won


def test_illegal_moves_end_the_game_with_a_penalty(game):
    full = game.from_moves("111111")
    assert game.legal(full[None])[0].tolist() == [False] + [True] * 6
    for action in (0, -1, 7, 100):  # a full column, off the board either side
        t = game.step(full[None], np.array([action]))
        assert t.reward[0] == -1.0 and t.terminal[0]
        np.testing.assert_array_equal(t.states[0, :2], full[:2])  # no stone, no swap
        assert t.states[0, 2] == OVER | ILLEGAL
        assert game.result(t.states[0]) == -1.0  # X was to move and lost
        # Stepping a finished game changes nothing and pays nothing.
        again = game.step(t.states, np.array([3]))
        np.testing.assert_array_equal(again.states, t.states)
        assert again.reward[0] == 0.0 and again.terminal[0]
    with pytest.raises(ValueError, match="column 1 is full"):
        game.play(full, 0)
    with pytest.raises(ValueError, match=r"column 8 is off the board \(columns are 1-7\)"):
        game.play(full, 7)
    with pytest.raises(ValueError, match="move 7: column 1 is full"):
        game.from_moves("1111111")
    with pytest.raises(ValueError, match="not a column number"):
        game.from_moves("12x")
    # The input states are not modified.
    before = full.copy()
    game.step(full[None], np.array([3]))
    np.testing.assert_array_equal(full, before)


def test_from_moves_layout_and_render(game):
    state = game.from_moves("4453")  # X 4, O 4, X 5, O 3: X to move
    x_stones = (1 << 3) | (1 << 4)  # row 0 is the bottom row: bit r * 7 + c
    o_stones = (1 << 2) | (1 << (7 + 3))
    assert state.tolist() == [x_stones, o_stones, 0]
    assert game.first_to_move(state)
    assert game.render(state).splitlines() == [
        " . . . . . . .",
        " . . . . . . .",
        " . . . . . . .",
        " . . . . . . .",
        " . . . O . . .",
        " . . O X X . .",
        " 1 2 3 4 5 6 7",
    ]
    after = game.from_moves("44535")  # now O is to move: the words swap
    assert not game.first_to_move(after)
    assert after[1] == x_stones | (1 << (7 + 4)) and after[0] == o_stones
    x = game.encode(np.stack([state, after]))
    assert x.shape == (2, 4, 6, 7) and x.dtype == np.float32
    assert x[0, 0, 0, 3] == 1 and x[0, 1, 1, 3] == 1 and x[1, 1, 1, 4] == 1 and x[1, 0, 1, 3] == 1
    assert (x[:, 2] == 1).all() and (x[0, 3] == 1).all() and (x[1, 3] == 0).all()


def test_parse_move_messages(game):
    state = game.from_moves("111111")
    assert game.parse_move(" 4 ", state) == 3
    for text, message in [("foo", 'could not read "foo": type a column number 1-7'),
                          ("", 'could not read ""'), ("0", "column 0 is off the board"),
                          ("8", "column 8 is off the board (columns are 1-7)"), ("1", "column 1 is full"),
                          ("3 4", 'could not read "3 4"')]:
        with pytest.raises(ValueError) as info:
            game.parse_move(text, state)
        assert message in str(info.value) and "\n" not in str(info.value)


def test_protocol_and_registry(game):
    assert isinstance(game, Game)
    assert (game.num_players, game.num_actions, game.state_size, game.obs_shape) == (2, 7, 3, (4, 6, 7))
    assert not game.stochastic
    built = game_from_meta("connect4", Connect4Config().model_dump(mode="json"))
    assert isinstance(built, Connect4Game) and built.config == game.config
    s = game.from_moves("44")[None]
    np.testing.assert_array_equal(game.reseed(s, np.array([5])), s)


def test_config_validation():
    with pytest.raises(ValueError, match="at most 361"):
        Connect4Config(rows=20, cols=19)
    with pytest.raises(ValueError, match="nobody could win"):
        Connect4Config(rows=3, cols=3, connect=4)
    small = Connect4Game(Connect4Config(rows=4, cols=5, connect=3))
    state, rewards, _ = play_string(small, "11223")
    assert rewards[-1] == 1.0 and small.result(state) == 1.0


# ---- batched engine against the reference --------------------------------------------------------


@pytest.mark.parametrize("config", [Connect4Config(), Connect4Config(rows=5, cols=4, connect=3),
                                    Connect4Config(rows=8, cols=8, connect=5),
                                    Connect4Config(rows=9, cols=10, connect=4)])  # two words a side
def test_batched_engine_matches_the_reference_bit_for_bit(config):
    game = Connect4Game(config)
    rng = np.random.default_rng(7)
    batch = 48
    refs = [ReferenceBoard(config.rows, config.cols, config.connect, gravity=True) for _ in range(batch)]
    states = game.initial(np.arange(batch))
    for _ in range(config.rows * config.cols + 2):
        legal = game.legal(states)
        assert legal.tolist() == [r.legal() for r in refs]
        actions = sample_legal(legal, rng)
        # Now and then an illegal action (a full column or off the board), and some games
        # stepped after they ended.
        wild = rng.random(batch) < 0.03
        actions[wild] = rng.integers(-1, config.cols + 1, size=int(wild.sum()))
        actions[actions < 0] = rng.integers(-2, config.cols + 2, size=int((actions < 0).sum()))
        t = game.step(states, actions)
        expected = [r.play(int(a)) for r, a in zip(refs, actions)]
        assert t.reward.tolist() == expected
        assert t.terminal.tolist() == [r.over for r in refs]
        assert t.states.tolist() == [r.words() for r in refs]
        assert [game.result(s) for s in t.states] == [r.result() for r in refs]
        planes = game.encode(t.states)
        for b in (0, batch - 1):
            mover = refs[b].to_move
            for r in range(config.rows):
                for c in range(config.cols):
                    v = refs[b].grid[r][c]
                    assert planes[b, 0, r, c] == (v == mover) and planes[b, 1, r, c] == (v not in (0, mover))
        states = t.states
    assert game.terminal(states).all()


def test_random_games_are_fast(game):
    rng = np.random.default_rng(0)
    states = game.initial(np.arange(1024))
    game.step(states[:1], np.zeros(1, np.int64))  # compiled and cached before timing
    start = time.perf_counter()
    done = np.zeros(1024, bool)
    while not done.all():
        actions = sample_legal(game.legal(states), rng)
        t = game.step(states, np.maximum(actions, 0))
        states, done = t.states, done | t.terminal
    assert time.perf_counter() - start < 0.5  # about 2 ms on the 2-core machine


# ---- symmetry ------------------------------------------------------------------------------------


def test_mirror_keeps_legal_masks_encodings_and_moves_consistent(game):
    (mirror,) = game.symmetries()
    assert mirror.actions.tolist() == [6, 5, 4, 3, 2, 1, 0]
    assert sorted(mirror.cells.tolist()) == list(range(42))
    np.testing.assert_array_equal(mirror.cells[mirror.cells], np.arange(42))  # an involution
    states = random_positions(game, 200, seed=3)
    assert len(states) > 100
    images = game.transform(states, mirror)
    np.testing.assert_array_equal(game.transform(images, mirror), states)
    np.testing.assert_array_equal(game.legal(images), mirror.apply_policy(game.legal(states)))
    np.testing.assert_array_equal(game.encode(images), mirror.apply_planes(game.encode(states)))
    # Playing column a in a position is playing its mirror image in the mirrored position.
    inverse = np.argsort(mirror.actions)
    for a in range(7):
        t = game.step(states, np.full(len(states), a))
        tm = game.step(images, np.full(len(states), inverse[a]))
        np.testing.assert_array_equal(tm.states, game.transform(t.states, mirror))
        np.testing.assert_array_equal(tm.reward, t.reward)
    # A policy over columns follows the board: mass on column 1 goes to column 7.
    policy = np.zeros((1, 7), np.float32)
    policy[0, 0] = 1.0
    assert mirror.apply_policy(policy)[0, 6] == 1.0
    assert game.from_moves("1").tolist()[1] == game.transform(game.from_moves("7")[None], mirror)[0, 1]


# ---- the shared game loop ------------------------------------------------------------------------


def test_selfplay_smoke_with_search_on_an_untrained_network(game, one_torch_thread):
    from tri.agents import MctsAgent
    from tri.config import MctsParams, NetParams
    from tri.episodes import run_episodes
    from tri.evaluator import make_evaluator
    from tri.net import build_model

    evaluate = make_evaluator(build_model(game, NetParams(channels=8, blocks=1, value_hidden=16)), game)
    agent = MctsAgent(game, evaluate, MctsParams(simulations=8), np.random.default_rng(0), noise=True,
                      temperature=1.0, temperature_moves=6)
    episodes = run_episodes(game, [agent, agent], np.arange(4), concurrent=4, max_moves=42, record=True)
    p = episodes.positions
    assert len(episodes.games) == 4 and len(p) == sum(g.steps for g in episodes.games)
    for g in episodes.games:
        assert g.terminal and g.outcome in (-1.0, 0.0, 1.0)
        rows = p.game == g.index
        z = p.value_target[rows]
        assert z[-1] == p.reward[rows][-1]  # the last mover's reward
        if g.outcome != 0:
            assert (z[:-1] == -z[1:]).all() and abs(z[-1]) == 1.0  # signs alternate back
    np.testing.assert_allclose(p.policy.sum(axis=1), 1.0, rtol=1e-5)
    assert not (p.policy * ~p.legal).any()
