"""Pyrga (:mod:`tri.games.pyrga`): the engine against the plain-Python reference
(``reference_pyrga.py``, written apart from it) move by move on random games, the rules' edge
cases, symmetries (arrow directions included), and moves typed by a person."""

from __future__ import annotations

import numpy as np
import pytest

from tests.games.reference_pyrga import ReferencePyrga, map_action, transform_cell, transformed
from tri.games.pyrga.game import PyrgaGame
from tri.games.pyrga.kernels import ARROWS, COUNT_SHIFT, FLAGS, MINE, PREV_SHIFT, SECOND, THEIRS


def state_of(board: ReferencePyrga) -> np.ndarray:
    """The engine's state of a reference position (the end not settled)."""
    s = np.zeros(4, np.uint64)
    me = board.to_move
    for cell, pieces in enumerate(board.cells):
        for kind, (owner, direction) in pieces.items():
            word = MINE if owner == me else THEIRS
            s[word] |= np.uint64(1 << (16 * kind + cell))
            if direction is not None:
                s[ARROWS] |= np.uint64(direction << (2 * cell))
    flags = (int(SECOND) if me == 1 else 0) | (board.moves_played << int(COUNT_SHIFT))
    if board.previous is not None:
        cell, kind, direction = board.previous
        flags |= (cell | ((kind + 1) << 4) | ((direction or 0) << 6)) << int(PREV_SHIFT)
    s[FLAGS] = np.uint64(flags)
    return s


def random_positions(count: int, seed: int) -> list[ReferencePyrga]:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        board = ReferencePyrga()
        for _ in range(int(rng.integers(0, 28))):
            legal = board.legal_actions()
            if not legal:
                break
            board.play(legal[int(rng.integers(len(legal)))])
        if not board.is_over():
            out.append(board)
    return out


def test_random_games_agree_with_the_reference_move_by_move():
    game = PyrgaGame()
    rng = np.random.default_rng(1)
    boards = [ReferencePyrga() for _ in range(1500)]
    states = game.initial(np.arange(len(boards)))
    live = np.ones(len(boards), bool)
    compared, fallbacks, results = 0, 0, set()
    while live.any():
        idx = np.flatnonzero(live)
        legal = game.legal(states[idx])
        actions = np.empty(idx.size, np.int64)
        for j, i in enumerate(idx):
            expected = boards[i].legal_actions()
            assert np.flatnonzero(legal[j]).tolist() == expected, (i, boards[i].previous)
            fallbacks += boards[i].uses_fallback()
            actions[j] = expected[int(rng.integers(len(expected)))]
            compared += 1
        t = game.step(states[idx], actions)
        states[idx] = t.states
        for j, i in enumerate(idx):
            board = boards[i]
            mover = board.to_move
            board.play(int(actions[j]))
            got = t.states[j].copy()
            got[FLAGS] &= ~np.uint64(1)  # OVER: the reference settles the end apart
            assert (got == state_of(board)).all()
            assert bool(t.terminal[j]) == board.is_over()
            if board.is_over():
                result = board.result()
                results.add(result)
                assert game.result(t.states[j]) == result
                assert t.reward[j] == (result if mover == 0 else -result)
                assert game.towers(t.states[j]) == board.towers()
                live[i] = False
            else:
                assert t.reward[j] == 0.0
    assert compared > 30_000 and fallbacks > 500 and results == {-1, 0, 1}


def test_perft_from_the_start_matches_the_reference():
    game = PyrgaGame()
    states = game.initial(np.zeros(1, np.int64))
    counts = []
    for _ in range(3):
        b, a = np.nonzero(game.legal(states))
        states = game.step(states[b], a).states
        counts.append(len(a))
    assert counts == [96, 2384, 54752]


def test_each_constraint_and_the_fallback():
    game = PyrgaGame()
    s = game.new()
    s, _, _ = game.play(s, game.parse_move("s a1", s))  # a square in the corner: its 2 neighbours
    assert sorted({a % 16 if a < 32 else (a - 32) // 4 for a in game.legal_actions(s)}) == [1, 4]
    s, _, _ = game.play(s, game.parse_move("c b1", s))  # a circle: its own cell
    assert {a % 16 if a < 32 else (a - 32) // 4 for a in game.legal_actions(s)} == {1}
    assert game.parse_move("s b1", s) == 1
    with pytest.raises(ValueError, match="already has a circle"):
        game.parse_move("c b1", s)
    arrow = game.play(s, game.parse_move("a b1 v", s))[0]  # an arrow down from b1: b2, b3, b4
    assert sorted({a % 16 if a < 32 else (a - 32) // 4 for a in game.legal_actions(arrow)}) == [5, 9, 13]
    with pytest.raises(ValueError, match="not on a1 now: the last piece allows b2, b3, b4"):
        game.parse_move("c a1", arrow)
    s, _, _ = game.play(s, game.parse_move("a b1 ^", s))  # up from the top row: an empty ray -> fallback
    cells = {a % 16 if a < 32 else (a - 32) // 4 for a in game.legal_actions(s)}
    assert cells == set(range(16)) - {0, 1}  # only the empty cells (b1 could still take a square)
    with pytest.raises(ValueError, match="not on b1 now"):
        game.parse_move("s b1", s)
    s, _, _ = game.play(s, game.parse_move("s c1", s))
    s, _, _ = game.play(s, game.parse_move("s b1", s))  # after c1's square: b1 (now full), d1, c2
    with pytest.raises(ValueError, match="b1 is full"):
        game.parse_move("s b1", s)


def test_the_end_and_the_towers():
    # One piece of each type each (a setting for tests): random games end when the side to move
    # has no placement left, and the result follows the towers.
    small = PyrgaGame(PyrgaGame().config.model_copy(update={"pieces": 1}))
    rng = np.random.default_rng(3)
    for _ in range(50):
        s = small.new()
        while not small.is_over(s):
            legal = small.legal_actions(s)
            s, reward, over = small.play(s, legal[int(rng.integers(len(legal)))])
        assert not small.legal(s[None]).any() and small.placements_made(s) <= 6
        first, second = small.towers(s)
        assert small.result(s) == np.sign(first - second)
        mover_first = small.to_move(s) == 1  # the last placement was the other seat's
        assert reward == (np.sign(first - second) if mover_first else np.sign(second - first))


def test_symmetric_positions_get_the_mapped_legal_actions_states_and_planes():
    game = PyrgaGame()
    boards = random_positions(60, seed=7)
    states = np.stack([state_of(b) for b in boards])
    legal = game.legal(states)
    assert len(game.symmetries()) == 7
    for sym in game.symmetries():
        k = next(k for k in range(8) if all(transform_cell(int(sym.cells[j]), k) == j for j in range(16)))
        moved = game.transform(states, sym)
        for i, board in enumerate(boards):
            assert (moved[i] == state_of(transformed(board, k))).all(), sym.name
            for a in board.legal_actions():
                assert sym.actions[map_action(a, k)] == a
        assert (game.legal(moved) == sym.apply_policy(legal)).all(), sym.name
        assert (sym.apply_planes(game.encode(states)) == game.encode(moved)).all(), sym.name


@pytest.mark.parametrize("text, message", [
    ("", "could not read"),
    ("q b2", "could not read"),
    ("s", "could not read"),
    ("s zz", "could not read the cell"),
    ("s e5", "off the board"),
    ("a b2", "needs its direction"),
    ("a b2 north", "needs its direction"),
    ("s b2 >", "only an arrow"),
    ("s b2 > x", "could not read"),
    ("a b2 >", None),
    ("x" * 500, "could not read"),
])
def test_typed_moves(text, message):
    game = PyrgaGame()
    state = game.new()
    if message is None:
        assert game.action_name(game.parse_move(text, state)) == "a b2 >"
    else:
        with pytest.raises(ValueError, match=message) as err:
            game.parse_move(text, state)
        assert "\n" not in str(err.value) and len(str(err.value)) < 200


def test_render_board_and_greedy_tiebreak():
    game = PyrgaGame()
    s = game.new()
    for text in ("c b2", "s b2", "s a2", "a b2 >"):  # b2: X's circle, O's square and arrow: O's tower
        s, _, _ = game.play(s, game.parse_move(text, s))
    text = game.render(s)
    assert "Csa>" in text and "towers X 0, O 1" in text and "X to move" in text
    assert game.board(s)[1, 3:6].tolist() == [2, 1, 2] and game.encode(s[None]).shape == (1, 18, 4, 4)
    assert game.line_fill(s[None])[0] == pytest.approx(1.0)  # O, who just placed, owns one tower
