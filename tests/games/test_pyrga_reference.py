"""The plain-Python Pyrga reference (``reference_pyrga.py``) on its own, against the rules
(``/work/shared/pyrga-rules.md``): hand-built positions for each constraint, the fallback, full
cells, spent pieces, the end of the game, towers and the result; the symmetries; and random games.
The fast engine is tested against this reference elsewhere, so these tests pin the reference down."""

from __future__ import annotations

import numpy as np
import pytest

from tests.games import reference_pyrga as ref
from tests.games.reference_pyrga import ARROW, CIRCLE, SQUARE, ReferencePyrga

ALL_TYPES_ON = 6  # actions on one cell that takes everything: a square, a circle, 4 arrows


def put(board: ReferencePyrga, cell: int, piece_type: int, owner: int, direction: int | None = None):
    """Put a piece on the board by hand, taking it from its owner's stock."""
    assert piece_type not in board.cells[cell]
    board.cells[cell][piece_type] = (owner, direction if piece_type == ARROW else None)
    board.stock[owner][piece_type] -= 1


def after(piece_type: int, cell: int, direction: int | None = None, mover: int = 1) -> ReferencePyrga:
    """A position where the opponent of ``mover`` has just placed one piece (and nothing else)."""
    board = ReferencePyrga()
    put(board, cell, piece_type, 1 - mover, direction)
    board.previous = (cell, piece_type, direction)
    board.moves_played = 1
    board.to_move = mover
    return board


def cells_of(actions: list[int]) -> set[int]:
    return {ReferencePyrga.decode(a)[1] for a in actions}


def snapshot(board: ReferencePyrga):
    return (
        [dict(c) for c in board.cells],
        [row[:] for row in board.stock],
        board.to_move,
        board.previous,
        board.moves_played,
    )


def positions_from_random_games(games: int, seed: int) -> list[ReferencePyrga]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(games):
        board = ReferencePyrga()
        out.append(board.copy())
        for action in ref.random_game(rng):
            board.play(action)
            out.append(board.copy())
    return out


# --- encoding ------------------------------------------------------------------------------------


def test_encode_and_decode_are_inverse_over_all_96_actions():
    seen = set()
    for action in range(96):
        piece_type, cell, direction = ReferencePyrga.decode(action)
        assert ReferencePyrga.encode(piece_type, cell, direction) == action
        seen.add((piece_type, cell, direction))
    assert len(seen) == 96
    assert ReferencePyrga.decode(0) == (SQUARE, 0, None)
    assert ReferencePyrga.decode(16 + 5) == (CIRCLE, 5, None)
    assert ReferencePyrga.decode(32 + 4 * 7 + 3) == (ARROW, 7, 3)
    for bad in (-1, 96):
        with pytest.raises(ValueError):
            ReferencePyrga.decode(bad)


# --- the start -----------------------------------------------------------------------------------


def test_the_start():
    board = ReferencePyrga()
    assert board.to_move == 0 and board.previous is None and board.moves_played == 0
    assert board.stock == [[5, 5, 5], [5, 5, 5]]
    assert all(cell == {} for cell in board.cells)
    assert not board.is_over() and board.result() is None


def test_the_first_move_goes_anywhere_with_any_piece():
    board = ReferencePyrga()
    assert board.allowed_cells() == list(range(16))
    assert board.legal_actions() == list(range(96))  # 16 squares + 16 circles + 64 arrows
    assert not board.uses_fallback()


def test_perft():
    board = ReferencePyrga()
    assert ref.perft(board, 0) == 1
    assert ref.perft(board, 1) == 96
    # By hand: a square on c allows its n(c) neighbours (sum of n(c) = 48, 6 actions each): 288;
    # a circle allows its own cell, which takes a square or an arrow: 16 * 5 = 80; an arrow allows
    # its ray (the rays of all 64 arrows have 96 cells in all): 6 * 96 = 576; the 16 arrows pointing
    # off the board leave an empty ray, so the fallback gives the 15 empty cells: 16 * 15 * 6 = 1440.
    assert ref.perft(board, 2) == 288 + 80 + 576 + 1440


# --- the constraint ------------------------------------------------------------------------------


def test_after_a_square_at_a_corner_only_its_two_neighbours():
    board = after(SQUARE, 0)
    assert board.allowed_cells() == [1, 4]
    legal = board.legal_actions()
    assert cells_of(legal) == {1, 4} and len(legal) == 2 * ALL_TYPES_ON
    assert not board.uses_fallback()


def test_after_a_square_in_the_middle_its_four_neighbours():
    board = after(SQUARE, 5)
    assert board.allowed_cells() == [1, 4, 6, 9]
    assert cells_of(board.legal_actions()) == {1, 4, 6, 9}


def test_after_a_circle_only_that_cell_and_not_a_second_circle():
    board = after(CIRCLE, 6)
    assert board.allowed_cells() == [6]
    assert board.legal_actions() == [6] + [32 + 4 * 6 + d for d in range(4)]  # a square or an arrow


@pytest.mark.parametrize(
    "cell, direction, ray",
    [
        (0, 1, [1, 2, 3]),  # right along the top row
        (0, 2, [4, 8, 12]),  # down the left column
        (5, 0, [1]),
        (5, 3, [4]),
        (10, 2, [14]),
        (15, 3, [12, 13, 14]),
        (15, 0, [3, 7, 11]),
        (6, 1, [7]),
    ],
)
def test_after_an_arrow_its_ray_to_the_edge_without_its_own_cell(cell, direction, ray):
    board = after(ARROW, cell, direction)
    assert board.allowed_cells() == sorted(ray)
    assert cell not in board.allowed_cells()
    assert cells_of(board.legal_actions()) == set(ray)
    assert len(board.legal_actions()) == ALL_TYPES_ON * len(ray)


@pytest.mark.parametrize(
    "cell, direction", [(0, 0), (0, 3), (3, 0), (3, 1), (12, 2), (12, 3), (7, 1), (13, 2)]
)
def test_an_arrow_pointing_off_the_board_leaves_an_empty_ray_and_the_fallback_applies(cell, direction):
    board = after(ARROW, cell, direction)
    assert board.allowed_cells() == []
    assert board.uses_fallback()
    # Every empty cell, i.e. all but the arrow's own.
    assert cells_of(board.legal_actions()) == set(range(16)) - {cell}
    assert len(board.legal_actions()) == ALL_TYPES_ON * 15


def test_the_fallback_lists_only_empty_cells():
    board = after(ARROW, 3, 1)  # top-right corner, pointing right: empty ray
    put(board, 5, SQUARE, 0)  # one piece: no longer empty
    put(board, 10, CIRCLE, 1)
    put(board, 10, ARROW, 0, 2)
    assert board.uses_fallback()
    assert cells_of(board.legal_actions()) == set(range(16)) - {3, 5, 10}
    # Any piece the mover has may go on an empty cell.
    assert {ReferencePyrga.decode(a)[0] for a in board.legal_actions()} == {SQUARE, CIRCLE, ARROW}


def test_the_fallback_applies_when_the_allowed_cell_cannot_take_any_piece_the_mover_has():
    board = after(CIRCLE, 6, mover=1)
    put(board, 6, SQUARE, 1)  # cell 6: a circle and a square; only an arrow fits
    board.stock[1][ARROW] = 0
    assert board.allowed_cells() == [6]
    assert board.uses_fallback()
    legal = board.legal_actions()
    assert 6 not in cells_of(legal) and cells_of(legal) == set(range(16)) - {6}
    assert {ReferencePyrga.decode(a)[0] for a in legal} == {SQUARE, CIRCLE}  # no arrows left
    # With an arrow in hand the allowed cell takes it, and nothing else is legal.
    board.stock[1][ARROW] = 1
    assert not board.uses_fallback()
    assert board.legal_actions() == [32 + 4 * 6 + d for d in range(4)]


def test_a_full_cell_takes_nothing():
    board = after(CIRCLE, 9, mover=0)
    put(board, 9, SQUARE, 0)
    put(board, 9, ARROW, 1, 0)
    assert len(board.cells[9]) == 3
    assert board.uses_fallback()
    assert 9 not in cells_of(board.legal_actions())
    # A full neighbour of a square is not in the legal set either.
    board.previous = (8, SQUARE, None)
    put(board, 8, SQUARE, 1)
    assert board.allowed_cells() == [4, 9, 12]
    assert cells_of(board.legal_actions()) == {4, 12}


@pytest.mark.parametrize("circle_owner", [0, 1])
def test_a_cell_holding_a_circle_takes_no_second_circle_of_either_owner(circle_owner):
    board = after(SQUARE, 0, mover=0)
    put(board, 1, CIRCLE, circle_owner)
    legal = board.legal_actions()
    assert ReferencePyrga.encode(CIRCLE, 1) not in legal
    assert ReferencePyrga.encode(SQUARE, 1) in legal and ReferencePyrga.encode(ARROW, 1, 2) in legal
    assert ReferencePyrga.encode(CIRCLE, 4) in legal
    with pytest.raises(ValueError):
        board.play(ReferencePyrga.encode(CIRCLE, 1))


def test_a_player_with_no_circles_left_cannot_place_circles():
    board = ReferencePyrga()
    board.stock[0][CIRCLE] = 0
    legal = board.legal_actions()
    assert len(legal) == 80 and not any(16 <= a < 32 for a in legal)
    with pytest.raises(ValueError):
        board.play(ReferencePyrga.encode(CIRCLE, 0))
    # The other player's stock is theirs alone.
    board.play(ReferencePyrga.encode(SQUARE, 0))
    assert ReferencePyrga.encode(CIRCLE, 1) in board.legal_actions()


def test_play_places_the_piece_and_hands_over_the_move():
    board = ReferencePyrga()
    board.play(ReferencePyrga.encode(ARROW, 5, 1))
    assert board.cells[5] == {ARROW: (0, 1)}
    assert board.stock == [[5, 5, 4], [5, 5, 5]]
    assert board.previous == (5, ARROW, 1) and board.to_move == 1 and board.moves_played == 1
    assert board.allowed_cells() == [6, 7]
    board.play(ReferencePyrga.encode(CIRCLE, 7))
    assert board.cells[7] == {CIRCLE: (1, None)} and board.stock[1] == [5, 4, 5]
    assert board.previous == (7, CIRCLE, None) and board.to_move == 0 and board.moves_played == 2
    with pytest.raises(ValueError):
        board.play(ReferencePyrga.encode(SQUARE, 6))  # only cell 7 is allowed


# --- the end and the result ----------------------------------------------------------------------


def test_the_mover_without_pieces_ends_the_game():
    board = after(SQUARE, 5, mover=1)
    board.stock[1] = [0, 0, 0]
    assert board.is_over() and board.legal_actions() == [] and not board.uses_fallback()
    assert board.result() == 0  # no towers
    with pytest.raises(ValueError):
        board.play(ReferencePyrga.encode(SQUARE, 1))


def test_no_room_anywhere_ends_the_game_even_with_pieces_left():
    # Every cell holds a piece (none empty) and the circle's cell is full.
    board = ReferencePyrga()
    for cell in range(16):
        put(board, cell, SQUARE if cell < 8 else ARROW, cell % 2, None if cell < 8 else 0)
    board.stock = [[5, 5, 5], [5, 5, 5]]  # pretend stocks: pieces are left
    put(board, 0, CIRCLE, 1)
    put(board, 0, ARROW, 1, 3)
    board.previous, board.moves_played, board.to_move = (0, ARROW, 3), 18, 0
    assert board.allowed_cells() == []
    assert board.is_over() and board.legal_actions() == []
    # An arrow to the right from cell 0 reaches cells that still have room: the game goes on.
    board.previous = (0, ARROW, 1)
    assert not board.is_over() and cells_of(board.legal_actions()) == {1, 2, 3}


def test_tower_owner_by_majority():
    board = ReferencePyrga()
    put(board, 0, SQUARE, 0)
    put(board, 0, CIRCLE, 0)
    assert board.tower_owner(0) is None  # two pieces: not a tower
    put(board, 0, ARROW, 1, 2)
    assert board.tower_owner(0) == 0  # 2-1
    put(board, 1, SQUARE, 1)
    put(board, 1, CIRCLE, 0)
    put(board, 1, ARROW, 1, 0)
    assert board.tower_owner(1) == 1  # 1-2
    for t in (SQUARE, CIRCLE):
        put(board, 2, t, 1)
    put(board, 2, ARROW, 1, 3)
    assert board.tower_owner(2) == 1  # 0-3
    for t in (SQUARE, CIRCLE):
        put(board, 3, t, 0)
    put(board, 3, ARROW, 0, 1)
    assert board.tower_owner(3) == 0  # 3-0
    assert board.tower_owner(4) is None  # empty
    assert board.towers() == (2, 2)


def tower(board: ReferencePyrga, cell: int, owners: tuple[int, int, int]):
    put(board, cell, SQUARE, owners[0])
    put(board, cell, CIRCLE, owners[1])
    put(board, cell, ARROW, owners[2], 0)


def finished(board: ReferencePyrga) -> ReferencePyrga:
    """End the game by emptying the mover's hand."""
    board.stock[board.to_move] = [0, 0, 0]
    board.previous = (0, SQUARE, None)
    return board


def test_the_result_counts_towers():
    board = ReferencePyrga()
    tower(board, 0, (0, 0, 1))
    tower(board, 5, (1, 1, 0))
    tower(board, 10, (0, 0, 0))
    assert board.towers() == (2, 1)
    assert board.result() is None  # the game goes on
    assert finished(board).result() == 1

    board = ReferencePyrga()
    tower(board, 3, (1, 0, 1))
    tower(board, 7, (1, 1, 1))
    tower(board, 11, (0, 1, 0))
    assert board.towers() == (1, 2) and finished(board).result() == -1


def test_equal_tower_counts_are_a_draw():
    board = ReferencePyrga()
    tower(board, 0, (0, 0, 1))
    tower(board, 15, (1, 0, 1))
    put(board, 6, SQUARE, 0)
    put(board, 6, CIRCLE, 0)  # two pieces of player 0: not a tower
    assert board.towers() == (1, 1) and finished(board).result() == 0


# --- symmetries ----------------------------------------------------------------------------------


def test_the_eight_symmetries_are_distinct_permutations():
    maps = set()
    for k in range(8):
        image = tuple(ref.transform_cell(cell, k) for cell in range(16))
        assert sorted(image) == list(range(16))
        maps.add(image)
        assert sorted(ref.transform_direction(d, k) for d in range(4)) == [0, 1, 2, 3]
        assert sorted(ref.map_action(a, k) for a in range(96)) == list(range(96))
    assert len(maps) == 8
    assert all(ref.transform_cell(cell, 0) == cell for cell in range(16))
    assert ref.transform_cell(0, 1) == 3 and ref.transform_direction(0, 1) == 1  # a clockwise turn
    assert ref.transform_cell(0, 4) == 3 and ref.transform_direction(1, 4) == 3  # a mirror


def test_directions_turn_with_the_board():
    """A ray's image is the ray of the image arrow, for every arrow and symmetry."""
    for k in range(8):
        for cell in range(16):
            for d in range(4):
                image = sorted(ref.transform_cell(c, k) for c in ref.ray(cell, d))
                assert image == sorted(ref.ray(ref.transform_cell(cell, k), ref.transform_direction(d, k)))


def test_symmetries_map_legal_sets_and_moves():
    for board in positions_from_random_games(12, seed=7):
        legal = board.legal_actions()
        for k in range(8):
            image = ref.transformed(board, k)
            assert image.legal_actions() == sorted(ref.map_action(a, k) for a in legal)
            assert image.allowed_cells() == sorted(ref.transform_cell(c, k) for c in board.allowed_cells())
            assert image.uses_fallback() == board.uses_fallback()
            assert image.towers() == board.towers() and image.result() == board.result()
            for action in legal[:: max(1, len(legal) // 6)]:
                played = board.copy()
                played.play(action)
                mapped = image.copy()
                mapped.play(ref.map_action(action, k))
                assert snapshot(ref.transformed(played, k)) == snapshot(mapped)


def test_transformed_keeps_the_board_unchanged_and_the_identity_is_a_copy():
    board = positions_from_random_games(1, seed=3)[8]
    before = snapshot(board)
    for k in range(8):
        ref.transformed(board, k)
    assert snapshot(board) == before
    assert snapshot(ref.transformed(board, 0)) == before


# --- random games --------------------------------------------------------------------------------


def test_random_games_end_and_every_action_played_was_legal():
    rng = np.random.default_rng(2024)
    fallbacks = 0
    results = set()
    for _ in range(150):
        actions = ref.random_game(rng)
        assert 1 <= len(actions) <= 30  # 30 pieces in all
        board = ReferencePyrga()
        for action in actions:
            assert not board.is_over()
            legal = board.legal_actions()
            assert action in legal and legal == sorted(set(legal))
            fallbacks += board.uses_fallback()
            board.play(action)
            assert all(0 <= n <= 5 for row in board.stock for n in row)
            assert all(len(cell) <= 3 for cell in board.cells)
        assert board.is_over() and board.legal_actions() == []
        assert board.moves_played == len(actions)
        assert sum(len(cell) for cell in board.cells) == len(actions) == 30 - sum(map(sum, board.stock))
        results.add(board.result())
    assert fallbacks > 0 and results == {-1, 0, 1}


def test_random_games_depend_only_on_the_generator():
    a = ref.random_game(np.random.default_rng(5))
    b = ref.random_game(np.random.default_rng(5))
    assert a == b
