"""The plain-Python Santorini reference (``reference_santorini.py``) on its own, on hand-built
positions: the start, climbing and winning (one action per winning move), domes, blocking workers,
a boxed-in player losing, the length cap, the action encoding, the 8 symmetries, and random games.
The fast engine is held against this reference elsewhere; these tests hold the reference against
the rules (``/work/shared/santorini-rules.md``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.games import reference_santorini as ref
from tests.games.reference_santorini import DIRECTIONS, ReferenceSantorini, decode, encode


def board_with(p0, p1, heights=None, to_move=0, n=5, max_actions=200) -> ReferenceSantorini:
    """A hand-built position: player 0's two cells, player 1's two cells, {(r, c): height}."""
    board = ReferenceSantorini(n, max_actions, (p0, p1))
    for (r, c), h in (heights or {}).items():
        board.height[r][c] = h
    board.to_move = to_move
    return board


def actions_of_move(board: ReferenceSantorini, worker: int, move_dir: int) -> list[int]:
    return [a for a in board.legal_actions() if decode(a)[:2] == (worker, move_dir)]


def moves(board: ReferenceSantorini) -> set[tuple[int, int]]:
    """The (worker, move_dir) pairs that have a legal action."""
    return {decode(a)[:2] for a in board.legal_actions()}


def test_encoding_and_directions():
    assert DIRECTIONS == [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]
    assert [decode(encode(w, m, b)) for w in (0, 1) for m in range(8) for b in range(8)] == [
        (w, m, b) for w in (0, 1) for m in range(8) for b in range(8)]
    assert encode(1, 2, 3) == 64 + 16 + 3 and decode(127) == (1, 7, 7)


def test_the_start_position():
    board = ReferenceSantorini()
    assert board.worker_cells(0) == [(1, 2), (3, 2)] and board.worker_cells(1) == [(2, 1), (2, 3)]
    assert board.to_move == 0 and board.winner is None and not board.cut and board.result() is None
    # By hand: worker 0 on (1, 2) can step to (0,1), (0,2), (0,3), (1,1), (1,3), (2,2) -- (2,1) and
    # (2,3) hold the other player's workers. Its builds around the new cell (the cell it left is
    # free; the other three workers block): (0,1): (0,0) (0,2) (1,0) (1,1) (1,2) = 5; (0,2): 5;
    # (0,3): 5; (1,1): 8 neighbours minus (2,1) = 7; (1,3): 8 minus (2,3) = 7; (2,2): 8 minus
    # (2,1), (2,3), (3,2) = 5. So 34, and worker 1 on (3,2) is the mirror image: 34. Total 68.
    assert len(board.legal_actions()) == 68
    assert len(actions_of_move(board, 0, 6)) == 5 and len(actions_of_move(board, 1, 1)) == 5
    assert ref.perft(board, 1) == 68
    assert ref.perft(board, 2) == 5156  # recorded from this reference (not derived by hand)
    assert ReferenceSantorini(4).worker_cells(0) == [(1, 2), (3, 2)]
    assert ReferenceSantorini(7).worker_cells(1) == [(3, 2), (3, 4)]


def test_a_win_by_climbing_from_2_onto_3():
    # Worker 0 of player 0 on (2, 2) at height 2; (1, 2) is at height 3. Around (1, 2), build
    # direction 0 -> (0, 1) holds a dome and direction 1 -> (0, 2) a worker, so the move's one
    # legal action has build direction 2.
    board = board_with([(2, 2), (4, 4)], [(0, 2), (0, 4)], {(2, 2): 2, (1, 2): 3, (0, 1): 4})
    assert actions_of_move(board, 0, 1) == [encode(0, 1, 2)]
    for b in (0, 1, 3, 4, 5, 6, 7):
        with pytest.raises(ValueError):
            board.copy().play(encode(0, 1, b))
    before = [row[:] for row in board.height]
    board.play(encode(0, 1, 2))
    assert board.height == before  # a winning move builds nothing
    assert board.worker_cells(0) == [(1, 2), (4, 4)]
    assert board.winner == 0 and board.is_over() and board.result() == 1 and not board.cut
    assert board.legal_actions() == [] and board.to_move == 1 and board.actions_played == 1
    with pytest.raises(ValueError):
        board.play(0)


def test_a_win_takes_the_lowest_legal_build_direction_not_direction_0():
    # Player 1 climbs from (1, 1) (height 2) onto the corner (0, 0) (height 3): the builds around
    # (0, 0) are directions 4, 6, 7 only, so the legal action has build direction 4.
    board = board_with([(4, 0), (4, 4)], [(1, 1), (3, 3)], {(1, 1): 2, (0, 0): 3}, to_move=1)
    assert actions_of_move(board, 0, 0) == [encode(0, 0, 4)]
    board.play(encode(0, 0, 4))
    assert board.winner == 1 and board.result() == -1


def test_moving_from_3_onto_3_wins():
    # Only possible in a hand-built position: "moved onto height 3" means the new cell has height 3.
    board = board_with([(2, 2), (4, 4)], [(0, 0), (0, 4)], {(2, 2): 3, (2, 3): 3, (3, 3): 2})
    assert actions_of_move(board, 0, 4) == [encode(0, 4, 0)]
    assert len(actions_of_move(board, 0, 7)) > 1  # stepping down from 3 onto 2: no win, all builds
    board.play(encode(0, 4, 0))
    assert board.winner == 0


def test_climbing_two_levels_is_illegal():
    board = board_with([(2, 2), (4, 4)], [(0, 0), (0, 4)],
                       {(1, 2): 2, (2, 3): 3, (2, 1): 1, (3, 2): 4})
    assert moves(board) >= {(0, 3), (0, 0), (0, 2)}  # onto height 1 and 0
    assert (0, 1) not in moves(board)  # 0 -> 2
    assert (0, 4) not in moves(board)  # 0 -> 3
    assert (0, 6) not in moves(board)  # a dome
    board.height[2][2] = 1
    assert (0, 1) in moves(board)  # 1 -> 2
    assert (0, 4) not in moves(board)  # 1 -> 3


def test_stepping_down_several_levels_is_legal():
    board = board_with([(2, 2), (4, 4)], [(0, 0), (0, 4)], {(2, 2): 2, (2, 3): 0})
    assert len(actions_of_move(board, 0, 4)) == 8  # 2 -> 0, and all 8 builds around (2, 3)
    board.height[2][2] = 3  # hand-built: standing on 3, stepping down to 0 (no win)
    action = actions_of_move(board, 0, 4)[0]
    board.play(action)
    assert board.winner is None and not board.is_over() and board.worker_cells(0)[0] == (2, 3)


def test_a_dome_on_height_3_and_nothing_moves_onto_or_builds_on_a_dome():
    board = board_with([(2, 2), (4, 4)], [(0, 0), (0, 4)], {(2, 4): 3})
    board.play(encode(0, 4, 4))  # (2, 2) -> (2, 3), build on (2, 4): 3 -> dome
    assert board.height[2][4] == 4
    # Domes beside a worker standing on 3 (hand-built): no move onto them, no build on them.
    board = board_with([(2, 2), (4, 4)], [(0, 0), (4, 0)], {(2, 2): 3, (2, 3): 4, (1, 2): 4})
    for action in board.legal_actions():
        w, m, b = decode(action)
        r, c = board.worker_cells(0)[w]
        nr, nc = r + DIRECTIONS[m][0], c + DIRECTIONS[m][1]
        assert board.height[nr][nc] != 4
        br, bc = nr + DIRECTIONS[b][0], nc + DIRECTIONS[b][1]
        assert board.height[br][bc] != 4
    assert (0, 4) not in moves(board) and (0, 1) not in moves(board)
    # (2, 2) -> (1, 3): build directions 3 -> (1, 2) and 6 -> (2, 3) are domes.
    assert [decode(a)[2] for a in actions_of_move(board, 0, 2)] == [0, 1, 2, 4, 5, 7]


def test_building_on_the_cell_just_left_is_legal():
    board = ReferenceSantorini()
    action = encode(0, 1, 6)  # (1, 2) -> (0, 2), build back on (1, 2)
    assert action in board.legal_actions()
    board.play(action)
    assert board.height[1][2] == 1 and board.worker_cells(0) == [(0, 2), (3, 2)]
    assert board.to_move == 1 and board.actions_played == 1


def test_workers_block_moves_and_builds():
    board = ReferenceSantorini()
    # Worker 0 on (1, 2): (2, 1) and (2, 3) hold the other player's workers.
    assert (0, 5) not in moves(board) and (0, 7) not in moves(board)
    assert (1, 0) not in moves(board) and (1, 2) not in moves(board)
    # (1, 2) -> (2, 2): no build on (2, 1), (2, 3) (opponent) nor (3, 2) (own worker).
    assert [decode(a)[2] for a in actions_of_move(board, 0, 6)] == [0, 1, 2, 5, 7]
    # The player's own worker blocks a move too.
    board = board_with([(2, 2), (2, 3)], [(0, 0), (4, 4)])
    assert (0, 4) not in moves(board) and (1, 3) not in moves(board)
    builds = [decode(a)[2] for a in actions_of_move(board, 0, 1)]  # (2, 2) -> (1, 2)
    assert 4 in builds and 7 not in builds  # (1, 3) is free, (2, 3) holds the own worker


def test_the_worker_index_is_the_row_major_order_at_the_start_of_the_turn():
    board = board_with([(1, 4), (1, 0)], [(4, 0), (4, 4)])
    assert board.worker_cells(0) == [(1, 0), (1, 4)]
    board.play(encode(0, 7, 0))  # (1, 0) -> (2, 1), build on (1, 0)
    assert board.worker_cells(0) == [(1, 4), (2, 1)] and board.height[1][0] == 1
    board.play(encode(0, 2, 0))  # player 1: (4, 0) -> (3, 1), build on (2, 0)
    board.play(encode(0, 6, 0))  # worker 0 is now (1, 4): -> (2, 4), build on (1, 3)
    assert board.worker_cells(0) == [(2, 1), (2, 4)] and board.height[1][3] == 1


def boxed_in() -> ReferenceSantorini:
    """Player 1 in two corners, walled in by domes, but (3, 3) at height 1 still lets (4, 4) out;
    player 0's worker 1 on (2, 2) can step to (2, 3) and build on (3, 3) (encode(1, 4, 6))."""
    domes = {cell: 4 for cell in [(0, 1), (1, 0), (1, 1), (3, 4), (4, 3)]}
    return board_with([(2, 2), (0, 4)], [(0, 0), (4, 4)], {**domes, (3, 3): 1})


def test_a_player_boxed_in_at_the_start_of_their_turn_loses():
    board = boxed_in()
    board.play(encode(1, 4, 6))  # (3, 3) -> height 2: player 1 cannot move
    assert board.to_move == 1 and board.is_over() and board.winner == 0 and board.result() == 1
    assert board.legal_actions() == [] and not board.cut
    # A hand-built position with the player to move already boxed in (player 0 here).
    walls = {**{cell: 4 for cell in [(0, 1), (1, 0), (1, 1), (3, 4), (4, 3)]}, (3, 3): 2}
    board = board_with([(0, 0), (4, 4)], [(2, 2), (0, 4)], walls)
    assert board.legal_actions() == [] and board.winner == 1 and board.result() == -1
    # One worker boxed in is not a loss: the other worker moves.
    board = board_with([(0, 0), (2, 0)], [(2, 2), (0, 4)], walls)
    assert not board.is_over() and {w for w, _ in moves(board)} == {1}


def test_the_cap_is_a_draw_marked_cut():
    board = ReferenceSantorini(max_actions=4)
    rng = np.random.default_rng(3)
    for _ in range(4):
        assert not board.is_over()
        legal = board.legal_actions()
        board.play(legal[int(rng.integers(len(legal)))])
    assert board.is_over() and board.cut and board.winner is None and board.result() == 0
    assert board.legal_actions() == []
    with pytest.raises(ValueError):
        board.play(0)
    assert len(ref.random_game(5, np.random.default_rng(0), max_actions=7)) == 7


def test_a_win_or_a_loss_on_the_capped_action_is_not_cut():
    board = boxed_in()
    board.max_actions = 1
    board.play(encode(1, 4, 6))
    assert board.winner == 0 and not board.cut and board.result() == 1
    board = board_with([(2, 2), (4, 4)], [(0, 2), (0, 4)], {(2, 2): 2, (1, 2): 3}, max_actions=1)
    board.play(actions_of_move(board, 0, 1)[0])
    assert board.winner == 0 and not board.cut


def test_illegal_actions_raise():
    board = ReferenceSantorini()
    for action in (-1, 128, encode(0, 5, 0), encode(1, 0, 0)):
        with pytest.raises(ValueError):
            board.play(action)
    with pytest.raises(ValueError):
        ReferenceSantorini(workers=((0, 0), (0, 0), (1, 1), (2, 2)))


# ---- symmetries ---------------------------------------------------------------------------------


def test_the_eight_cell_maps():
    n = 5
    cells = [(r, c) for r in range(n) for c in range(n)]
    images = [tuple(ref.transform_cell(r, c, n, k) for r, c in cells) for k in range(8)]
    assert images[0] == tuple(cells) and len(set(images)) == 8
    assert all(sorted(image) == cells for image in images)
    assert ref.transform_cell(0, 0, n, 1) == (0, 4) and ref.transform_cell(0, 0, n, 4) == (0, 4)
    assert ref.transform_cell(1, 0, n, 1) == (0, 3) and ref.transform_cell(1, 0, n, 4) == (1, 4)
    for k in range(8):
        assert sorted(ref.transform_direction(d, k) for d in range(8)) == list(range(8))
        for r, c in cells:
            for d, (dr, dc) in enumerate(DIRECTIONS):
                if 0 <= r + dr < n and 0 <= c + dc < n:
                    tr, tc = ref.transform_cell(r, c, n, k)
                    er, ec = DIRECTIONS[ref.transform_direction(d, k)]
                    assert ref.transform_cell(r + dr, c + dc, n, k) == (tr + er, tc + ec)


def random_positions(count: int, seed: int) -> list[ReferenceSantorini]:
    """Positions (not over) from random games on 4 x 4 to 6 x 6, fixed and random starts."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        n = int(rng.integers(4, 7))
        workers = ref.random_workers(n, rng) if rng.integers(2) else None
        actions = ref.random_game(n, rng, workers=workers)
        board = ReferenceSantorini(n, workers=workers)
        for i, action in enumerate(actions):
            if i % 7 == 3 or i >= len(actions) - 3:  # also the late positions, with wins about
                if not board.is_over():
                    out.append(board.copy())
            board.play(action)
    return out[:count]


def test_symmetry_maps_the_legal_actions_and_commutes_with_play():
    rng = np.random.default_rng(11)
    wins_seen = 0
    for board in random_positions(60, seed=5):
        legal = board.legal_actions()
        for k in range(8):
            t = ref.transformed(board, k)
            assert sorted(ref.map_action(board, a, k) for a in legal) == t.legal_actions()
            action = legal[int(rng.integers(len(legal)))]
            mapped = ref.map_action(board, action, k)
            after = board.copy()
            after.play(action)
            t.play(mapped)
            assert ref.transformed(after, k).key() == t.key()
        for a in legal:
            w, m, _ = decode(a)
            r, c = board.worker_cells(board.to_move)[w]
            if board.height[r + DIRECTIONS[m][0]][c + DIRECTIONS[m][1]] == 3:
                wins_seen += 1
    assert wins_seen > 0


def test_transformed_keeps_the_game_state():
    board = random_positions(1, seed=2)[0]
    for k in range(8):
        t = ref.transformed(board, k)
        assert (t.to_move, t.actions_played, t.winner, t.cut) == (
            board.to_move, board.actions_played, board.winner, board.cut)
        assert sorted(h for row in t.height for h in row) == sorted(h for row in board.height for h in row)
    assert ref.transformed(board, 0).key() == board.key()


# ---- random games -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [4, 5, 6])
def test_random_games_end_and_every_action_was_legal(n):
    rng = np.random.default_rng(100 + n)
    results = set()
    for i in range(12):
        workers = ref.random_workers(n, rng) if i % 2 else None
        cap = 30 if i % 4 == 3 else 200
        actions = ref.random_game(n, rng, max_actions=cap, workers=workers)
        board = ReferenceSantorini(n, cap, workers)
        for action in actions:
            assert action in board.legal_actions()
            board.play(action)
        assert board.is_over() and board.legal_actions() == [] and len(actions) <= cap
        assert board.result() in (-1, 0, 1) and (board.result() == 0) == board.cut
        assert board.cut == (board.winner is None)
        results.add(board.result())
    assert results & {-1, 1}
    again = ref.random_game(n, np.random.default_rng(7))
    assert again == ref.random_game(n, np.random.default_rng(7))
