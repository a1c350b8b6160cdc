"""Random games through the scalar API, the batched API and an independent reference
(``reference_triangle``), on the default rules and on other configs; then the engine's contract:
illegal actions, terminal states, errors, determinism of the chance stream, the draw's
distribution, ``encode``, ``symmetries`` and state copies."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.games.reference_triangle import ReferenceBoard, ReferenceGame
from tri.games.triangle.game import TriangleGame, TriangleState
from tri.games.triangle.rules import DEFAULT_TEMPLATES, TriangleConfig, TriangleRewards

TOL = 1e-9


# ---- configs ----------------------------------------------------------------------------------


def reference_for(game: TriangleGame) -> ReferenceBoard:
    cfg = game.config
    return ReferenceBoard(cfg.rows, cfg.cols, [tuple(p) for p in cfg.playable])


def rewards_of(game: TriangleGame) -> tuple[float, float, float, float]:
    rw = game.config.rewards
    return (rw.placed, rw.cleared, rw.alive, rw.illegal)


def random_shape(rng: np.random.Generator, max_dr: int = 2) -> tuple:
    """A shape of 1-6 triangles around the anchor; orientations follow the board's parity (so it
    can fit somewhere) except, now and then, one flipped triangle that makes it fit nowhere."""
    size = int(rng.integers(1, 7))
    base_up = bool(rng.integers(2))
    offsets: list[tuple[int, int]] = []
    while len(offsets) < size:
        off = (int(rng.integers(-max_dr, max_dr + 1)), int(rng.integers(-3, 4)))
        if off not in offsets:
            offsets.append(off)
    shape = [(dr, dc, base_up if (dr + dc) % 2 == 0 else not base_up) for dr, dc in offsets]
    if size > 1 and rng.random() < 0.08:
        dr, dc, up = shape[-1]
        shape[-1] = (dr, dc, not up)
    return tuple(shape)


def random_config(rng: np.random.Generator) -> TriangleConfig:
    """A random small config: ragged (sometimes empty) rows, 1-4 slots, some default templates and
    some random shapes, unusual rewards."""
    rows, cols = int(rng.integers(1, 11)), int(rng.integers(1, 17))
    margin = max(1, cols // 3)
    playable = []
    for _ in range(rows):
        if rng.random() < 0.3:
            start = int(rng.integers(0, cols + 1))
        else:
            start = int(rng.integers(0, margin))
        if rng.random() < 0.3:
            end = int(rng.integers(start, cols + 1))
        else:
            end = max(start, cols - int(rng.integers(0, margin)))
        playable.append((start, end))
    picks = rng.choice(len(DEFAULT_TEMPLATES), size=int(rng.integers(1, 12)), replace=True)
    templates = [DEFAULT_TEMPLATES[i] for i in picks]
    templates += [random_shape(rng) for _ in range(int(rng.integers(0, 4)))]
    rewards = TriangleRewards(placed=float(rng.choice([0.01, 0.03, 1.0])),
                              cleared=float(rng.choice([0.5, 0.2, 2.0])),
                              alive=float(rng.choice([0.005, 0.0, 0.25])),
                              illegal=float(rng.choice([-10.0, -1.0])))
    return TriangleConfig(rows=rows, cols=cols, playable=tuple(playable),
                          num_slots=int(rng.integers(1, 5)), templates=tuple(templates), rewards=rewards)


SMALL = TriangleConfig(  # 28 cells, 2 slots, a few templates (incl. negative column offsets)
    rows=4, cols=7, playable=((1, 6), (0, 7), (0, 7), (1, 6)), num_slots=2,
    templates=tuple(DEFAULT_TEMPLATES[i] for i in (0, 2, 4, 5, 7, 15, 24, 26, 28)),
    rewards=TriangleRewards(placed=0.03, cleared=0.25, alive=0.1, illegal=-3.0))
WIDE = TriangleConfig(  # 160 cells: three words per board
    rows=10, cols=16, playable=((0, 16),) * 10)
EXACT_WORD = TriangleConfig(  # 64 cells: exactly one word
    rows=8, cols=8, playable=((0, 8),) * 8, num_slots=4)
HOLE = TriangleConfig(  # 65 cells (one bit in the second word), a dead row and ragged rows
    rows=5, cols=13, playable=((2, 11), (0, 13), (0, 0), (1, 13), (0, 9)), num_slots=3,
    templates=DEFAULT_TEMPLATES[:12] + (((0, 0, True), (0, 1, False), (0, 2, True), (0, 3, False)),),
    rewards=TriangleRewards(placed=1.0, cleared=2.0, alive=0.0))


# ---- playing: batched first, then each game through the scalar API and the reference ----------


def play_batched(game: TriangleGame, seeds: np.ndarray, choice_seed: int, max_steps: int = 5000):
    """Random legal moves for all games in lockstep. Returns per step t: ``states[t]`` (before
    step t; one more than steps), ``masks[t]``, ``us[t]`` (the uniform numbers that chose the
    moves), ``infos[t]``."""
    rng = np.random.default_rng(choice_seed)
    states = game.initial(seeds)
    trajectory, masks, us, infos = [states], [], [], []
    for _ in range(max_steps):
        term = game.terminal(states)
        if term.all():
            break
        mask = game.legal(states)
        assert not mask[term].any(), "a terminal state has legal actions"
        assert mask[~term].any(axis=1).all(), "a live state has no legal action"
        counts = mask.sum(axis=1)
        u = rng.random(len(seeds))
        pick = np.minimum((u * counts).astype(np.int64), np.maximum(counts - 1, 0))
        cum = np.cumsum(mask, axis=1)
        actions = np.where(counts > 0, np.argmax(cum > pick[:, None], axis=1), 0)
        tr, info = game.step_info(states, actions)
        states = tr.states
        trajectory.append(states)
        masks.append(mask)
        us.append(u)
        infos.append(info)
    else:
        raise AssertionError(f"games did not end within {max_steps} steps")
    return trajectory, masks, us, infos


def check_encoding(game: TriangleGame, trajectory: list[np.ndarray], masks: list[np.ndarray]) -> None:
    """``encode`` of live states: occupancy plane = grid, constant planes, slot planes non-empty
    iff the slot holds a shape, legal-anchor planes = the legal mask per slot."""
    S, rows, cols = game.num_slots, game.geometry.rows, game.geometry.cols
    up = (np.add.outer(np.arange(rows), np.arange(cols)) % 2 == 1)
    W = game.geometry.num_words
    for states, mask in zip(trajectory, masks):
        live = ~game.terminal(states)
        states, mask = states[live], mask[live]
        x = game.encode(states)
        planes = 3 + 2 * S + len(game.template_kinds) + 4
        assert x.shape == (len(states), planes, rows, cols) == (len(states), *game.obs_shape)
        assert x.dtype == np.float32
        bits = np.unpackbits(np.ascontiguousarray(states[:, :W]).astype("<u8").view(np.uint8), axis=1,
                             bitorder="little")
        grids = bits[:, : rows * cols].reshape(len(states), rows, cols)
        assert np.array_equal(x[:, 0], grids.astype(np.float32))
        assert (x[:, 1] == game.geometry.playable).all() and (x[:, 2] == up).all()
        ids = states[:, W + 2:].astype(np.int64) - 1
        images = np.where((ids >= 0)[:, :, None, None], game.shape_table.images[np.maximum(ids, 0)], 0)
        assert np.array_equal(x[:, 3:3 + S], images)
        if cols >= 2:  # on a one-column board a shape's fixed drawing can fall off the board
            assert np.array_equal(x[:, 3:3 + S].reshape(len(states), S, -1).any(axis=2), ids >= 0)
        assert np.array_equal(x[:, 3 + S : 3 + 2 * S], mask.reshape(len(states), S, rows, cols).astype(np.float32))


def check_games(game: TriangleGame, seeds: np.ndarray, choice_seed: int, slow_every: int = 25) -> dict:
    """Play ``seeds`` batched, then replay each through the scalar API and the reference and
    compare everything. Returns counters so callers can check the games exercised the rules."""
    board = reference_for(game)
    rewards = rewards_of(game)
    trajectory, masks, us, infos = play_batched(game, seeds, choice_seed)
    check_encoding(game, trajectory, masks)
    stats = {"steps": 0, "clears": 0, "multi_line": 0, "refills": 0, "games": len(seeds)}
    for i, seed in enumerate(seeds.tolist()):
        state = game.new_game(seed)
        assert np.array_equal(state.data[0], trajectory[0][i]), f"seed {seed}: initial differs from new_game"
        ref = ReferenceGame(board, list(state.shapes), rewards)
        if i % slow_every == 0:
            assert ref.legal_actions() == ref.legal_actions_slow()
        score, t = 0.0, 0
        while True:
            where = f"seed {seed} step {t}"
            assert state.grid.astype(int).tolist() == ref.grid_ints(), where
            assert list(state.shapes) == ref.slots, where
            legal = game.legal_actions(state)
            assert legal == ref.legal_actions(), where
            assert state.game_over == ref.game_over == (not legal), where
            if state.game_over:
                break
            assert [game.action_index(a) for a in legal] == np.flatnonzero(masks[t][i]).tolist(), where
            action = legal[min(int(us[t][i] * len(legal)), len(legal) - 1)]
            state, step = game.place(state, action)
            assert np.array_equal(state.data[0], trajectory[t + 1][i]), f"{where}: scalar != batched state"
            info = infos[t][i]
            assert (step.reward, step.cleared, step.lines, step.placed, step.game_over, step.refilled) == (
                info[0], info[1], info[2], info[3], bool(info[4]), bool(info[5])), where
            want = ref.place(action, refill=list(state.shapes) if step.refilled else None)
            assert abs(step.reward - want.reward) <= TOL, (where, step.reward, want.reward)
            assert (step.cleared, step.lines, step.placed, step.game_over, step.refilled) == (
                want.cleared, want.lines, want.placed, want.game_over, want.refilled), where
            score += step.reward
            stats["steps"] += 1
            stats["clears"] += step.cleared > 0
            stats["multi_line"] += step.lines > 1
            stats["refills"] += step.refilled
            t += 1
        assert abs(score - ref.score) <= TOL, f"seed {seed}: score"
        if i % slow_every == 0:
            assert ref.legal_actions_slow() == []
        batched_rewards = np.array([infos[j][i, 0] for j in range(len(infos))])
        assert (batched_rewards[t:] == 0).all(), f"seed {seed}: reward after the end"
        assert abs(batched_rewards.sum() - score) <= TOL
        for later in trajectory[t + 1:]:
            assert np.array_equal(later[i], trajectory[t][i]), f"seed {seed}: terminal state changed"
    return stats


def test_random_games_default_rules(game):
    seeds = np.arange(1000, 3000, dtype=np.int64)  # 2,000 games, in batches of 500
    stats = {"steps": 0, "clears": 0, "multi_line": 0, "refills": 0}
    for j, batch in enumerate(np.split(seeds, 4)):
        for key, value in check_games(game, batch, choice_seed=j).items():
            stats[key] = stats.get(key, 0) + value
    assert stats["steps"] > 15 * len(seeds)
    assert stats["clears"] > 100 and stats["multi_line"] > 5 and stats["refills"] > 1000


@pytest.mark.parametrize("cfg, games, min_steps", [
    (SMALL, 300, 5), (WIDE, 60, 20), (EXACT_WORD, 150, 10), (HOLE, 200, 8),
], ids=["small-4x7-2slots", "wide-10x16-3words", "8x8-one-word", "5x13-dead-row"])
def test_random_games_other_configs(cfg, games, min_steps):
    game = TriangleGame(cfg)
    seeds = np.arange(games, dtype=np.int64) * 7919 + 3
    stats = check_games(game, seeds, choice_seed=games)
    assert stats["steps"] >= min_steps * games
    assert stats["clears"] > 0 and stats["refills"] > 0


def test_random_games_random_configs():
    rng = np.random.default_rng(20240611)
    total = {"steps": 0, "clears": 0, "refills": 0}
    for _ in range(50):
        cfg = random_config(rng)
        game = TriangleGame(cfg)
        stats = check_games(game, np.arange(16, dtype=np.int64) + int(rng.integers(1 << 40)),
                            choice_seed=int(rng.integers(1 << 30)), slow_every=4)
        for key in total:
            total[key] += stats[key]
    assert total["steps"] > 2000 and total["clears"] > 200 and total["refills"] > 200


def test_random_games_largest_board():
    """32 x 32, 16 words; shapes reaching up to three rows away, so offsets exceed one word."""
    rng = np.random.default_rng(32)
    extra = tuple(random_shape(rng, max_dr=3) for _ in range(6))
    cfg = TriangleConfig(rows=32, cols=32, playable=((0, 32),) * 32, num_slots=3,
                         templates=DEFAULT_TEMPLATES[::2] + extra)
    game = TriangleGame(cfg)
    assert game.geometry.num_words == 16 and game.num_actions == 3 * 1024
    check_games(game, np.array([5, 6], dtype=np.int64), choice_seed=3, slow_every=1)


# ---- hand-made positions against the reference ----------------------------------------------


def test_simultaneous_lines_clear_together_cells_counted_once(game):
    """Fill row 3 but one cell and the "\\" line through that cell but that cell: one placement
    clears both lines, and the shared cell counts once."""
    ref_board = reference_for(game)
    target = (3, 7)
    row = [(3, c) for c in range(15)]
    back = next(line for line in ref_board.lines if target in line and not all(r == 3 for r, _ in line))
    filled = (set(row) | set(back)) - {target}
    grid = [[int((r, c) in filled) for c in range(15)] for r in range(8)]
    up = (3 + 7) % 2 == 1
    state = game.position(grid, [((0, 0, up),), None, None])
    after, step = game.place(state, (0, *target), refill=[((0, 0, True),)] * 3)
    cleared = set(row) | set(back)
    assert step.lines == 2 and step.cleared == len(cleared)
    assert abs(step.reward - (0.01 + 0.5 * len(cleared) + 0.005)) <= TOL
    assert not after.grid.any()
    ref = ReferenceGame(ref_board, [((0, 0, up),), None, None], rewards_of(game))
    for r, c in filled:
        ref.grid[r][c] = True
    want = ref.place((0, *target), refill=[((0, 0, True),)] * 3)
    assert (want.lines, want.cleared) == (step.lines, step.cleared)


def test_full_line_not_through_placement_is_not_cleared(game):
    """A line that is already full but does not contain a placed cell stays (only lines through a
    just-placed cell clear; position() may set up such a board)."""
    grid = np.zeros((8, 15), dtype=int)
    grid[0, 3:12] = 1  # row 0 is one whole horizontal line
    state = game.position(grid, [((0, 0, True),), ((0, 0, True),), None])
    after, step = game.place(state, (0, 4, 1))
    assert step.cleared == 0 and step.lines == 0
    assert after.grid[0, 3:12].all() and after.grid[4, 1]


# ---- illegal actions, terminal states, place errors ------------------------------------------


def test_illegal_action_in_batch_ends_game_with_penalty(game):
    states = game.initial(np.arange(6, dtype=np.int64))
    # make row 1 have a filled cell where its slot-0 shape would go
    first = game.legal_actions(game.states(states[1:2])[0])[0]
    s1, r1, c1 = first
    st = game.states(states[1:2])[0]
    grid = st.grid.astype(int)
    dr, dc, _ = st.shapes[s1][0]
    grid[r1 + dr, c1 + dc] = 1
    states[1] = game.position(grid, st.shapes).data[0]
    # row 2: empty slot; rows 3-5: off the board, wrong orientation, out of range
    st2 = game.states(states[2:3])[0]
    legal2 = game.legal_actions(st2)
    s2 = legal2[0][0]
    mid = game.place(st2, legal2[0])[0]
    states[2] = mid.data[0]
    n = game.geometry.num_cells
    actions = np.array([
        0 * n + 0 * 15 + 0,                   # death cell (0, 0)
        game.action_index(first),             # overlaps a filled cell
        game.action_index((s2, *legal2[0][1:])),  # slot now empty
        game.num_actions,                     # out of range
        -1,                                   # negative
        0,
    ])
    # row 5: the wrong orientation for its slot-0 shape: shift a legal anchor by one column
    st5 = game.states(states[5:6])[0]
    s5, r5, c5 = next(a for a in game.legal_actions(st5) if a[0] == 0)
    actions[5] = game.action_index((0, r5, c5 + 1))
    assert game.legal(states)[[0, 1, 2, 5], actions[[0, 1, 2, 5]]].tolist() == [False] * 4
    tr, info = game.step_info(states, actions)
    W = game.geometry.num_words
    assert tr.reward.tolist() == [-10.0] * 6
    assert tr.terminal.all() and game.terminal(tr.states).all()
    assert np.array_equal(tr.states[:, :W], states[:, :W]), "board changed"
    assert np.array_equal(tr.states[:, W + 2:], states[:, W + 2:]), "slots changed"
    assert np.array_equal(tr.states[:, W], states[:, W]), "chance stream changed"
    assert (info[:, 1:4] == 0).all() and (info[:, 5] == 0).all()
    assert not game.legal(tr.states).any()


def test_illegal_penalty_follows_config():
    game = TriangleGame(SMALL)
    states = game.initial(np.array([1, 2], dtype=np.int64))
    tr = game.step(states, np.array([game.num_actions + 1, -5]))
    assert tr.reward.tolist() == [-3.0, -3.0] and tr.terminal.all()


def test_stepping_terminal_state_is_noop(game):
    states = game.initial(np.arange(4, dtype=np.int64))
    dead = game.step(states, np.full(4, -1)).states
    assert game.terminal(dead).all()
    mask_all = np.arange(game.num_actions)
    for actions in (np.zeros(4, dtype=np.int64), mask_all[[5, 100, 200, 359]], np.full(4, 10**6)):
        tr, info = game.step_info(dead, actions)
        assert np.array_equal(tr.states, dead)
        assert tr.reward.tolist() == [0.0] * 4 and tr.terminal.all()
        assert (info[:, [0, 1, 2, 3, 5]] == 0).all()
    # a game over reached by play, too
    state = game.new_game(3)
    while not state.game_over:
        state, _ = game.place(state, game.legal_actions(state)[-1])
    tr = game.step(state.data, np.array([game.action_index((0, 4, 7))]))
    assert np.array_equal(tr.states, state.data) and tr.reward[0] == 0.0 and tr.terminal[0]


def test_place_illegal_raises_naming_action(game):
    state = game.new_game(11)
    before = state.copy()
    with pytest.raises(ValueError, match=r"\(0, 0, 0\)"):
        game.place(state, (0, 0, 0))
    with pytest.raises(ValueError, match=r"\(7, 3, 3\)"):
        game.place(state, (7, 3, 3))
    legal = game.legal_actions(state)
    after, _ = game.place(state, legal[0])
    s, r, c = legal[0]
    with pytest.raises(ValueError, match=rf"\({s}, {r}, {c}\)"):
        game.place(after, legal[0])  # slot now empty
    assert state == before, "a failed place changed the state"
    with pytest.raises(ValueError):
        game.place(state, "nonsense")
    # over: any action is illegal
    over = game.position(np.zeros((8, 15), dtype=int), [((0, 0, True), (0, 0, False))] * 3)
    assert over.game_over and game.legal_actions(over) == []
    with pytest.raises(ValueError, match="over"):
        game.place(over, (0, 4, 4))


# ---- position() errors ------------------------------------------------------------------------


def test_position_rejects_bad_input(game):
    empty = np.zeros((8, 15), dtype=int)
    slots = [((0, 0, True),)] * 3
    game.position(empty, slots)  # fine
    with pytest.raises(ValueError, match="8 x 15"):
        game.position(np.zeros((7, 15), dtype=int), slots)
    with pytest.raises(ValueError):
        game.position(np.zeros((8, 16), dtype=int), slots)
    with pytest.raises(ValueError):
        game.position([[0] * 15] * 8 + [[0] * 15], slots)
    bad = empty.copy()
    bad[4, 4] = 2
    with pytest.raises(ValueError, match="0 or 1"):
        game.position(bad, slots)
    bad[4, 4] = -1
    with pytest.raises(ValueError):
        game.position(bad, slots)
    death = empty.copy()
    death[0, 0] = 1
    with pytest.raises(ValueError, match=r"\(0, 0\)"):
        game.position(death, slots)
    death = empty.copy()
    death[7, 12] = 1
    with pytest.raises(ValueError, match=r"\(7, 12\)"):
        game.position(death, slots)
    with pytest.raises(ValueError, match="3 slots"):
        game.position(empty, slots[:2])
    with pytest.raises(ValueError):
        game.position(empty, slots + [None])


def test_position_round_trips(game):
    state = game.new_game(5)
    for _ in range(6):
        state, _ = game.place(state, game.legal_actions(state)[len(game.legal_actions(state)) // 2])
    again = game.position(state.grid.astype(int), state.shapes)
    assert np.array_equal(again.grid, state.grid) and again.shapes == state.shapes
    assert game.legal_actions(again) == game.legal_actions(state)


# ---- chance stream ----------------------------------------------------------------------------


def test_new_game_is_deterministic(game):
    for seed in (0, 1, 2, 12345, 2**40, -7):
        assert game.new_game(seed) == game.new_game(seed)
    slots = {game.new_game(seed).slot_ids for seed in range(300)}
    assert len(slots) > 250, "different seeds should give different draws"
    datas = {game.new_game(seed).data.tobytes() for seed in range(300)}
    assert len(datas) == 300


def test_initial_matches_new_game(game):
    seeds = np.array([0, 1, 2, 3, 99, 12345, 2**33 + 1, -3], dtype=np.int64)
    batch = game.initial(seeds)
    assert batch.shape == (len(seeds), game.state_size) and batch.dtype == np.uint64
    for i, seed in enumerate(seeds.tolist()):
        assert np.array_equal(batch[i], game.new_game(seed).data[0])
    assert not game.terminal(batch).any()


def _one_triangle_left(game: TriangleGame, seed: int) -> TriangleState:
    """A position whose next placement empties the last slot, so the step draws a refill."""
    grid = np.zeros((8, 15), dtype=int)
    grid[4, 2:9] = 1
    return game.position(grid, [None, ((0, 0, True),), None], seed=seed)


def test_reseed_changes_only_the_chance_stream(game):
    W = game.geometry.num_words
    init = game.initial(np.arange(10, dtype=np.int64))
    re = game.reseed(init, np.arange(10, dtype=np.int64) + 50)
    assert np.array_equal(np.delete(re, W, axis=1), np.delete(init, W, axis=1))
    assert (re[:, W] != init[:, W]).all()
    base = np.repeat(_one_triangle_left(game, 0).data, 40, axis=0)
    base[1::2, W] ^= np.uint64(0xDEADBEEF)  # different streams before reseeding
    seeds = np.repeat(np.arange(20, dtype=np.int64), 2)  # each seed twice
    re = game.reseed(base, seeds)
    assert np.array_equal(re[:, :W], base[:, :W]) and np.array_equal(re[:, W + 1:], base[:, W + 1:])
    assert not np.array_equal(re[:, W], base[:, W])
    action = game.action_index((1, 4, 11))
    tr, info = game.step_info(re, np.full(len(re), action))
    assert info[:, 5].all(), "the placement should have refilled"
    slots = tr.states[:, W + 2:]
    assert np.array_equal(slots[0::2], slots[1::2]), "same seed, different refill"
    assert len({row.tobytes() for row in slots[0::2]}) >= 18, "different seeds, same refills"
    # reseeding with the stream's own seed reproduces an unreseeded game's draws
    plain = _one_triangle_left(game, 7)
    again = game.reseed(_one_triangle_left(game, 123).data, np.array([7]))
    assert np.array_equal(plain.data, again)
    assert np.array_equal(game.step(plain.data, np.array([action])).states,
                          game.step(again, np.array([action])).states)


def test_draw_is_uniform_over_templates(game):
    """Chi-square of many draws (initial and refills) against the template weights: 31 templates,
    duplicates weight their shape. Seeds are fixed; the bound is far out in the tail."""
    ids = game.template_ids
    weights = np.bincount(ids, minlength=len(game.shape_table)) / len(ids)
    assert len(ids) == 31 and len(set(ids.tolist())) < 31
    W = game.geometry.num_words
    init = game.initial(np.arange(20000, dtype=np.int64))
    draws = [init[:, W + 2:].astype(np.int64) - 1]
    refill = game.reseed(np.repeat(_one_triangle_left(game, 0).data, 20000, axis=0),
                         np.arange(20000, dtype=np.int64) + 10**6)
    tr = game.step(refill, np.full(20000, game.action_index((1, 4, 11))))
    draws.append(tr.states[:, W + 2:].astype(np.int64) - 1)
    for d in draws:
        assert d.min() >= 0
        counts = np.bincount(d.reshape(-1), minlength=len(weights))
        expected = weights * d.size
        keep = expected > 0
        assert counts[~keep].sum() == 0
        chi2 = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
        df = int(keep.sum()) - 1
        assert chi2 < df + 6 * math.sqrt(2 * df), (chi2, df)
        # the slots of one draw are independent: P(two slots equal) = sum of squared weights
        same = (d[:, 0] == d[:, 1]).mean()
        assert abs(same - (weights**2).sum()) < 0.01


def test_draw_covers_every_template_of_a_config():
    """With distinct templates each is drawn about 1/N of the time."""
    templates = tuple(DEFAULT_TEMPLATES[i] for i in (0, 2, 4, 5, 7, 9, 13, 15))
    game = TriangleGame(TriangleConfig(templates=templates))
    W = game.geometry.num_words
    d = game.initial(np.arange(8000, dtype=np.int64))[:, W + 2:].astype(np.int64) - 1
    counts = np.bincount(d.reshape(-1), minlength=len(templates))
    expected = d.size / len(templates)
    assert ((counts - expected) ** 2 / expected).sum() < 7 + 6 * math.sqrt(14)


# ---- encode, symmetries, copies ---------------------------------------------------------------


def _varied_states(game: TriangleGame) -> np.ndarray:
    """A batch of live positions from random play: full and partly empty slots, some clears."""
    rng = np.random.default_rng(4)
    states = game.initial(np.arange(64, dtype=np.int64))
    out = [states]
    for _ in range(12):
        mask = game.legal(states)
        live = mask.any(axis=1)
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask])
        states = game.step(states, actions).states
        out.append(states[live & ~game.terminal(states)])
    return np.concatenate(out)


def test_encode_planes(game):
    states = _varied_states(game)
    B, S = len(states), game.num_slots
    rows, cols = game.geometry.rows, game.geometry.cols
    x = game.encode(states)
    kinds = game.template_kinds
    K = len(kinds)
    assert x.shape == (B, 3 + 2 * S + K + 4, 8, 15) == (B, 36, 8, 15) == (B, *game.obs_shape)
    assert x.dtype == np.float32
    assert set(np.unique(x[:, : 3 + 2 * S + K]).tolist()) <= {0.0, 1.0}
    mask = game.legal(states).reshape(B, S, rows, cols)
    up = (np.add.outer(np.arange(rows), np.arange(cols)) % 2 == 1)
    saw_empty = saw_hole = False
    for i, st in enumerate(game.states(states)):
        assert np.array_equal(x[i, 0], st.grid.astype(np.float32))
        assert np.array_equal(x[i, 1], game.geometry.playable.astype(np.float32))
        assert np.array_equal(x[i, 2], up.astype(np.float32))
        for s, sid in enumerate(st.slot_ids):
            assert x[i, 3 + s].any() == (sid >= 0), (i, s)
            if sid >= 0:
                assert np.array_equal(x[i, 3 + s], game.shape_table.images[sid])
                assert x[i, 3 + s].sum() == len(st.shapes[s])
            saw_empty |= sid < 0
        assert np.array_equal(x[i, 3 + S : 3 + 2 * S], mask[i].astype(np.float32)), i
        # Template planes: where each distinct template would fit on this board (its legal
        # anchors if it were alone in slot 0 of a live game).
        for j, kind in enumerate(kinds):
            probe = game.position(st.grid.astype(int), [game.shape_table.shapes[kind]] + [None] * (S - 1))
            expect = np.zeros((rows, cols), np.float32)
            for _, r, c in game.legal_actions(probe):
                expect[r, c] = 1.0
            assert np.array_equal(x[i, 3 + 2 * S + j], expect), (i, j)
        # Line planes: every cell of a line carries the line's filled fraction, per direction.
        grid = st.grid.astype(bool).ravel()
        for line in game.geometry.lines:
            d = next(d for d in range(3) if all(game.geometry.cell_lines[c, d] >= 0 and
                                                game.geometry.lines[game.geometry.cell_lines[c, d]] == line
                                                for c in line))
            plane = x[i, 3 + 2 * S + K + d].ravel()
            assert np.allclose(plane[line], grid[line].mean()), (i, line)
        # Holes: empty playable cells walled in on all three edges (filled or off the board).
        holes = np.zeros(rows * cols, np.float32)
        for cell in np.flatnonzero(game.geometry.playable.ravel() & ~grid):
            r, c = divmod(int(cell), cols)
            sides = [(r, c - 1), (r, c + 1), (r + 1, c) if up[r, c] else (r - 1, c)]
            if all(not game.geometry.on_board(rr, cc) or grid[rr * cols + cc] for rr, cc in sides):
                holes[cell] = 1.0
        assert np.array_equal(x[i, 3 + 2 * S + K + 3].ravel(), holes), i
        saw_hole |= holes.any()
    assert saw_empty and saw_hole
    # the legal planes track the board: more filled cells, fewer anchors on average
    assert x[:, 0].sum() > 0


def test_encode_other_config():
    game = TriangleGame(SMALL)
    states = _varied_states(game)
    x = game.encode(states)
    assert x.shape == (len(states), 3 + 2 * 2 + len(game.template_kinds) + 4, 4, 7)
    mask = game.legal(states).reshape(len(states), 2, 4, 7)
    assert np.array_equal(x[:, 5:7], mask.astype(np.float32))
    for i, st in enumerate(game.states(states)):
        assert np.array_equal(x[i, 0], st.grid.astype(np.float32))


def test_symmetries_empty(game):
    assert game.symmetries() == ()


def test_state_copy_is_equal_and_independent(game):
    state = game.new_game(9)
    state, _ = game.place(state, game.legal_actions(state)[0])
    dup = state.copy()
    assert dup == state and hash(dup) == hash(state) and dup is not state
    assert not np.shares_memory(dup.data, state.data)
    dup.data[0, 0] ^= np.uint64(1 << 40)
    assert dup != state
    assert game.legal_actions(state) == game.legal_actions(state.copy())
    # place never modifies its input
    before = state.copy()
    game.place(state, game.legal_actions(state)[0])
    assert state == before


@pytest.mark.parametrize("tall", [False, True])
def test_encoded_fit_planes_are_the_legal_placements(tall):
    """The encoding's "where the slot's shape fits" planes are the legal actions, slot by slot,
    in random games: on the reference board, and on a 32-wide one with shapes three rows tall,
    whose cells lie more than a 64-bit word from their anchor (the encoding reads the board's
    words once per state into a buffer padded so that such offsets stay inside it)."""
    cols, cfg = 15, TriangleConfig()
    if tall:
        cols, column = 32, [[0, 0, "U"], [1, 0, "D"], [2, 0, "U"], [3, 0, "D"]]
        cfg = TriangleConfig(rows=8, cols=cols, playable=[[0, cols]] * 8, templates=[*DEFAULT_TEMPLATES, column])
    game = TriangleGame(cfg)
    assert not tall or abs(game.tab[2]).max() >= 64
    rng = np.random.default_rng(cols)
    states, n, slots = game.initial(np.arange(32)), cfg.rows * cols, cfg.num_slots
    for _ in range(15):
        legal, planes = game.legal(states), game.encode(states)
        for s in range(slots):
            assert np.array_equal(planes[:, 3 + slots + s].reshape(len(states), n) == 1, legal[:, s * n:(s + 1) * n])
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal])
        states = game.step(states, actions).states
