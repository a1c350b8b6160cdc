"""Santorini (:mod:`tri.games.santorini`): the engine against the plain-Python reference
(``reference_santorini.py``, written apart from it) move by move on random games from the fixed
start and from random starts on 4 x 4 to 6 x 6, the rules' edge cases, symmetries, and moves
typed by a person."""

from __future__ import annotations

import numpy as np
import pytest

from tests.games.reference_santorini import ReferenceSantorini, map_action, perft, random_workers
from tri.games.santorini.game import NUM_ACTIONS, SantoriniGame
from tri.games.santorini.rules import SantoriniConfig


def game_of(n: int, max_actions: int = 200) -> SantoriniGame:
    return SantoriniGame(SantoriniConfig(size=n, max_actions=max_actions))


def state_of(game: SantoriniGame, board: ReferenceSantorini) -> np.ndarray:
    """The engine's state of a reference position (flags of the end not included)."""
    n = board.n
    cells = [[r * n + c for r, c in board.worker_cells(p)] for p in (0, 1)]
    return game.position(np.array(board.height), cells[0], cells[1], second_to_move=board.to_move == 1,
                         actions_played=board.actions_played)


def play_random_games(n: int, games: int, seed: int, *, random_start: bool, max_actions: int = 200) -> int:
    """Play ``games`` random games in the engine (one batch) and the reference side by side,
    comparing legal actions, rewards, the end and the positions at every move; the positions
    compared."""
    game = game_of(n, max_actions)
    rng = np.random.default_rng(seed)
    boards = [ReferenceSantorini(n, max_actions, random_workers(n, rng) if random_start else None)
              for _ in range(games)]
    states = np.stack([state_of(game, b) for b in boards])
    if not random_start:
        assert (states == game.initial(np.arange(games))).all()
    compared = 0
    live = [not b.is_over() for b in boards]
    while any(live):
        idx = np.flatnonzero(live)
        legal = game.legal(states[idx])
        actions = np.empty(idx.size, np.int64)
        for j, i in enumerate(idx):
            expected = boards[i].legal_actions()
            assert np.flatnonzero(legal[j]).tolist() == expected, (i, str(boards[i]))
            actions[j] = expected[int(rng.integers(len(expected)))]
            compared += 1
        t = game.step(states[idx], actions)
        states[idx] = t.states
        for j, i in enumerate(idx):
            board = boards[i]
            mover = board.to_move
            board.play(int(actions[j]))
            over = board.is_over()
            assert bool(t.terminal[j]) == over
            assert t.reward[j] == (1.0 if board.winner == mover else 0.0)
            expected = state_of(game, board)
            assert (t.states[j, :6] == expected[:6]).all()
            assert game.to_move(t.states[j]) == board.to_move
            assert game.actions_played(t.states[j]) == board.actions_played
            if over:
                assert game.result(t.states[j]) == board.result()
                assert not game.legal(t.states[j][None]).any()
                live[i] = False
    return compared


def test_random_games_agree_with_the_reference_move_by_move():
    compared = play_random_games(5, 400, seed=1, random_start=False)
    compared += play_random_games(5, 300, seed=2, random_start=True)
    compared += play_random_games(4, 200, seed=3, random_start=True)
    compared += play_random_games(6, 150, seed=4, random_start=True)
    compared += play_random_games(5, 100, seed=5, random_start=False, max_actions=12)  # cut games
    assert compared > 20_000


def test_perft_from_the_start_matches_the_reference():
    game = game_of(5)
    states = game.initial(np.zeros(1, np.int64))
    counts = []
    for _ in range(3):
        b, a = np.nonzero(game.legal(states))
        states = game.step(states[b], a).states
        counts.append(len(a))
    assert counts == [68, 5156, 350208]
    assert perft(ReferenceSantorini(5), 2) == 5156


def heights_with(n: int, cells: dict[tuple[int, int], int]) -> np.ndarray:
    h = np.zeros((n, n), np.int64)
    for (r, c), v in cells.items():
        h[r, c] = v
    return h


def test_climbing_onto_three_wins_with_one_action_and_no_build():
    game = game_of(5)
    h = heights_with(5, {(0, 0): 2, (0, 1): 3, (1, 1): 1})
    state = game.position(h, [0, 24], [12, 14])  # X on a1 (height 2) and e5; O on c3, e3
    legal = np.flatnonzero(game.legal(state[None])[0])
    win = [a for a in legal if a // 64 == 0 and (a // 8) % 8 == 4]  # worker 0, moving right onto 3
    assert len(win) == 1
    nxt, reward, over = game.play(state, win[0])
    assert (reward, over) == (1.0, True) and game.result(nxt) == 1.0
    assert (game.heights(nxt[None])[0] == h.reshape(-1)).all()  # nothing was built
    with pytest.raises(ValueError, match="two levels|more than one level"):
        game.parse_move("e5 e4 e3", game.position(heights_with(5, {(3, 4): 2}), [0, 24], [12, 14]))


def test_a_build_on_three_is_a_dome_that_nothing_enters_or_builds_on():
    game = game_of(5)
    h = heights_with(5, {(0, 1): 3, (1, 1): 3})
    state = game.position(h, [0, 24], [12, 14])
    action = game.parse_move("a1 a2 b1", state)  # move down, build the dome on b1
    nxt, reward, over = game.play(state, action)
    assert (reward, over) == (0.0, False)
    assert game.heights(nxt[None])[0, 1] == 4
    # O's turn, then X's: the dome is never a destination nor a build site again.
    for s in (nxt, game.position(game.heights(nxt[None])[0].reshape(5, 5), [5, 24], [12, 14])):
        for a in np.flatnonzero(game.legal(s[None])[0]):
            start, to, build = game.decode(s, int(a))
            assert to != 1 and build != 1


def test_a_player_who_cannot_move_loses():
    game = game_of(5)
    # O's workers on a1 and b1, boxed in by domes on a2 and b2 and a tower of 2 on c1 and c2 (O stands on 0).
    h = heights_with(5, {(1, 0): 4, (1, 1): 4, (0, 2): 2, (1, 2): 2})
    state = game.position(h, [12, 24], [0, 1], second_to_move=False)
    assert not game.terminal(state[None])[0]
    # X builds the last open neighbour... there is none: O is already stuck, so any X move ends it.
    a = int(np.flatnonzero(game.legal(state[None])[0])[0])
    nxt, reward, over = game.play(state, a)
    assert (reward, over) == (1.0, True) and game.result(nxt) == 1.0
    board = ReferenceSantorini(5, workers=[(2, 2), (4, 4), (0, 0), (0, 1)])
    for (r, c), v in {(1, 0): 4, (1, 1): 4, (0, 2): 2, (1, 2): 2}.items():
        board.height[r][c] = v
    board.play(a)
    assert board.winner == 0


def test_the_length_cap_cuts_the_game_as_a_draw():
    game = game_of(5, max_actions=3)
    state = game.new()
    for _ in range(3):
        t = game.step(state[None], np.array([int(np.flatnonzero(game.legal(state[None])[0])[0])]))
        state = t.states[0]
    assert t.terminal[0] and t.reward[0] == 0.0 and game.result(state) == 0.0


def test_symmetric_positions_get_the_mapped_legal_actions_and_targets():
    game = game_of(5)
    rng = np.random.default_rng(7)
    boards = []
    for _ in range(40):
        board = ReferenceSantorini(5, workers=random_workers(5, rng))
        for _ in range(int(rng.integers(0, 30))):
            legal = board.legal_actions()
            if not legal:
                break
            board.play(legal[int(rng.integers(len(legal)))])
        if not board.is_over():
            boards.append(board)
    states = np.stack([state_of(game, b) for b in boards])
    legal = game.legal(states)
    policy = np.where(legal, rng.random(legal.shape), 0.0)
    policy = (policy / policy.sum(axis=1, keepdims=True)).astype(np.float32)
    assert len(game.symmetries()) == 7
    names = ["mirror_lr", "mirror_ud", "rot180", "rot90", "rot270", "transpose", "antitranspose"]
    assert [s.name for s in game.symmetries()] == names
    for sym in game.symmetries():
        moved = game.transform(states, sym)
        p, lg = sym.apply_targets(policy, legal, states)
        assert (lg == game.legal(moved)).all(), sym.name
        assert np.allclose(p.sum(axis=1), 1.0) and not (p[~lg] > 0).any()
        # The reference's own map of each action, by the same symmetry (found by its cells).
        k = _reference_k(game, sym)
        for i, board in enumerate(boards):
            for a in board.legal_actions():
                assert p[i, map_action(board, a, k)] >= policy[i, a] - 1e-6
    empty = game.symmetries()[0].apply_targets(policy[:0], legal[:0], states[:0])  # a batch may pick none
    assert empty[0].shape == (0, NUM_ACTIONS) and empty[1].shape == (0, NUM_ACTIONS)
    # The planes the network sees move with the cells.
    x = game.encode(states)
    for sym in game.symmetries():
        assert (sym.apply_planes(x) == game.encode(game.transform(states, sym))).all()


def _reference_k(game: SantoriniGame, sym) -> int:
    """The reference's symmetry number ``k`` that moves cells as ``sym`` does."""
    from tests.games.reference_santorini import transform_cell

    n = game.size
    for k in range(8):
        image = np.empty(n * n, np.int64)
        for cell in range(n * n):
            r, c = transform_cell(cell // n, cell % n, n, k)
            image[r * n + c] = cell
        if (image == sym.cells).all():
            return k
    raise AssertionError(f"no reference symmetry moves cells like {sym.name}")


@pytest.mark.parametrize("text, message", [
    ("", "could not read"),
    ("c2", "could not read"),
    ("c2 c1 b1 a1", "could not read"),
    ("zz c1 b1", "could not read"),
    ("f9 c1 b1", "off the board"),
    ("a1 a2 a3", "no worker of yours"),
    ("c2 c4 c3", "not next to"),
    ("c2 b3 b2", "cannot move to"),
    ("c2 c1", "say where to build"),
    ("c2 c1 a1", "not next to"),
    ("c2 b2 c2", None),
    ("c2 b2 b3", "cannot build"),
    ("x" * 500, "could not read"),
])
def test_typed_moves(text, message):
    game = game_of(5)
    state = game.new()  # X (first) on c2 and c4, O on b3 and d3
    assert game.workers(state) == ([7, 17], [11, 13])
    if message is None:
        action = game.parse_move(text, state)
        assert game.action_name(action, state) == "c2 b2 c2"
    else:
        with pytest.raises(ValueError, match=message) as err:
            game.parse_move(text, state)
        assert "\n" not in str(err.value) and len(str(err.value)) < 200


def test_render_and_board():
    game = game_of(5)
    state = game.new()
    text = game.render(state)
    assert "0X" in text and "0O" in text and "X to move" in text
    assert game.board(state)[1, 2] == 1 and game.board(state)[2, 1] == 2
    assert game.encode(state[None]).shape == (1, 8, 5, 5)
    assert NUM_ACTIONS == game.num_actions == 128
