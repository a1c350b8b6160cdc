"""Baseline and checkpoint players: ``greedy`` on hand-made triangle positions and against an
exact (fractions) reference of its rule, ``random``, ``net:PATH``, ``mcts:PATH:N``, and the
spec parser."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

from tri.agents import MctsAgent
from tri.errors import TriError
from tri.games.base import sample_legal
from tri.player_specs import PlayerSpec, parse_spec
from tri.players import GreedyAgent, NetAgent, RandomAgent, make_agent

from tests.pipeline_fixtures import OTHER_BOARD, PARAMS, game_of, save_model

U1 = [(0, 0, True)]  # one up triangle
D1 = [(0, 0, False)]  # one down triangle
T9 = [(0, 0, True), (0, 1, False), (0, 2, True)]  # template 9: up, down, up in a row


@pytest.fixture(scope="module")
def small():
    return game_of()


def empty_grid(game) -> np.ndarray:
    return np.zeros((game.geometry.rows, game.geometry.cols), int)


def greedy_pick(game, state) -> int:
    return int(GreedyAgent(game).act(state.data, np.zeros(1, np.int64)).actions[0])


def exact_fill(game, grid: np.ndarray) -> Fraction:
    """The line-fill heuristic computed exactly: sum over lines of (filled fraction)^2."""
    flat = grid.reshape(-1)
    return sum((Fraction(int(flat[line].sum()), len(line)) ** 2 for line in game.geometry.lines), Fraction(0))


def outcomes(game, row: np.ndarray) -> dict[int, tuple[float, Fraction]]:
    """Per legal action of one state: (rounded reward, exact line fill after it)."""
    legal = np.flatnonzero(game.legal(row[None])[0])
    after = game.step(np.repeat(row[None], legal.size, axis=0), legal)
    grids = [s.grid for s in game.states(after.states)]
    return {int(a): (round(float(r), 9), exact_fill(game, g)) for a, r, g in zip(legal, after.reward, grids)}


def reference_greedy(game, row: np.ndarray) -> int:
    """Best reward, then best line fill, then the lowest action."""
    out = outcomes(game, row)
    return max(out, key=lambda a: (out[a][0], out[a][1], -a))


# ---- greedy ---------------------------------------------------------------------------------------


def test_greedy_takes_the_line_clear(small):
    grid = empty_grid(small)
    grid[0, 1:7] = 1  # row 0 is (0,1)..(0,7): only the up cell (0,7) is missing
    state = small.position(grid, [D1, D1, U1])
    target = small.action_index((2, 0, 7))
    out = outcomes(small, state.data[0])
    rewards = {a: r for a, (r, _) in out.items()}
    assert rewards[target] == max(rewards.values())
    assert sorted(rewards.values())[-2] < rewards[target]  # the only clear
    # The clear empties the row, so the line-fill heuristic alone would play elsewhere.
    assert max(f for _, f in out.values()) > out[target][1]
    assert min(out) < target  # nor is it the lowest action
    assert greedy_pick(small, state) == target
    _, step = small.place(state, (2, 0, 7))
    assert step.cleared == 7 and step.lines >= 1


def test_greedy_takes_the_bigger_clear(small):
    """Two clears on offer: the row of 9 beats the row of 7."""
    grid = empty_grid(small)
    grid[0, 1:7] = 1  # (0,7) missing, up
    grid[2, :] = 1
    grid[2, 8] = 0  # (2,8) missing, down
    state = small.position(grid, [U1, D1, U1])
    assert greedy_pick(small, state) == small.action_index((1, 2, 8))
    assert reference_greedy(small, state.data[0]) == small.action_index((1, 2, 8))


def test_greedy_breaks_reward_ties_by_line_fill(small):
    grid = empty_grid(small)
    grid[0, 1:6] = 1  # row 0 needs (0,6) and (0,7): no single triangle clears anything
    state = small.position(grid, [U1, D1, D1])
    out = outcomes(small, state.data[0])
    assert len({r for r, _ in out.values()}) == 1  # every move has the same reward
    expected = small.action_index((1, 0, 6))  # 6 of the 7 cells of row 0
    assert max(out, key=lambda a: (out[a][1], -a)) == expected
    assert min(out) != expected
    assert greedy_pick(small, state) == expected


def test_greedy_breaks_exact_ties_by_the_lowest_action(small):
    # The same shape in every slot: a placement from slot 0, 1 or 2 leads to the same grid, and
    # mirror-image cells tie too; the lowest action is slot 0's leftmost best cell.
    for shape, cell in ((U1, (0, 1)), (D1, (2, 0))):
        state = small.position(empty_grid(small), [shape, shape, shape])
        out = outcomes(small, state.data[0])
        best = max(f for _, f in out.values())
        tied = sorted(a for a, (_, f) in out.items() if f == best)
        assert len(tied) >= 4  # slots 0-2, and the mirror cell
        assert greedy_pick(small, state) == tied[0] == small.action_index((0, *cell))


def test_greedy_mirror_tie_goes_to_the_lowest_action(small):
    # Template 9 on an empty board at (0,1) or at its mirror image (0,5): same reward, and the
    # same multiset of line fractions (3/7, 1/9, 1/5, 2/5, 1/8), so the lower action must win.
    state = small.position(empty_grid(small), [T9, U1, D1])
    out = outcomes(small, state.data[0])
    low, mirror = small.action_index((0, 0, 1)), small.action_index((0, 0, 5))
    assert out[low] == out[mirror]
    assert reference_greedy(small, state.data[0]) == low
    assert greedy_pick(small, state) == low


def test_greedy_matches_the_reference_up_to_float_ties(small):
    """On positions from random play: the greedy move has the best reward, and the best line fill
    among those (exact arithmetic; fills equal to 1e-12 count as tied)."""
    rng = np.random.default_rng(0)
    states = small.initial(np.arange(30))
    agent = GreedyAgent(small)
    checked = differ_from_lowest = 0
    for _ in range(10):
        live = ~small.terminal(states)
        if not live.any():
            break
        rows = states[live]
        picks = agent.act(rows, np.zeros(rows.shape[0], np.int64)).actions
        legal = small.legal(rows)
        for row, pick, mask in zip(rows, picks, legal):
            out = outcomes(small, row)
            assert pick in out
            best_reward = max(r for r, _ in out.values())
            assert out[pick][0] == best_reward
            best_fill = max(f for r, f in out.values() if r == best_reward)
            assert abs(float(out[pick][1] - best_fill)) < 1e-12
            checked += 1
            differ_from_lowest += pick != np.flatnonzero(mask)[0]
        actions = sample_legal(small.legal(states), rng)
        actions[~live] = 0
        states = np.where(live[:, None], small.step(states, actions).states, states)
    assert checked > 100 and differ_from_lowest > checked // 2


def test_greedy_batch_equals_one_by_one(small):
    states = small.initial(np.arange(12))
    agent = GreedyAgent(small)
    batch = agent.act(states, np.zeros(12, np.int64)).actions
    single = [agent.act(states[i : i + 1], np.zeros(1, np.int64)).actions[0] for i in range(12)]
    np.testing.assert_array_equal(batch, single)
    assert batch.dtype == np.int64


# ---- random ---------------------------------------------------------------------------------------


def _random_states(game, n: int, moves: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    states = game.initial(np.arange(n) + 100)
    out = [states]
    for _ in range(moves):
        live = ~game.terminal(states)
        actions = sample_legal(game.legal(states), rng)
        actions[~live] = 0
        states = np.where(live[:, None], game.step(states, actions).states, states)
        out.append(states[~game.terminal(states)])
    return np.concatenate(out)


def test_random_plays_legal_moves_reproducibly(small):
    states = _random_states(small, 20, 10)
    legal = small.legal(states)
    first = RandomAgent(small, np.random.default_rng(7)).act(states, np.zeros(len(states), np.int64)).actions
    assert legal[np.arange(len(states)), first].all()
    again = RandomAgent(small, np.random.default_rng(7)).act(states, np.zeros(len(states), np.int64)).actions
    np.testing.assert_array_equal(first, again)
    other = RandomAgent(small, np.random.default_rng(8)).act(states, np.zeros(len(states), np.int64)).actions
    assert (other != first).any()
    # Spread over the legal moves, not a fixed choice: one position, many draws.
    one = np.repeat(states[:1], 400, axis=0)
    picks = RandomAgent(small, np.random.default_rng(1)).act(one, np.zeros(400, np.int64)).actions
    n_legal = int(legal[0].sum())
    assert legal[0, picks].all() and np.unique(picks).size > min(n_legal, 40) // 2


# ---- checkpoint players ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("players") / "model.pt"
    save_model(path, seed=3)
    return path


def _agent(text: str, game, seed: int = 0, **search):
    mcts = PARAMS.mcts.model_copy(update=search)
    return make_agent(parse_spec(text), game, mcts, PARAMS.arena, np.random.default_rng(seed))


def test_net_player_picks_the_most_probable_legal_move(small, model):
    from tri.net import load_checkpoint

    agent = _agent(f"net:{model}", small)
    assert isinstance(agent, NetAgent) and agent.name == f"net:{model}"
    states = _random_states(small, 16, 6)
    decision = agent.act(states, np.zeros(len(states), np.int64))
    legal = small.legal(states)
    net = load_checkpoint(model, small).model
    with torch.no_grad():
        logits, _ = net(torch.from_numpy(small.encode(states)))
    logits = logits.numpy()
    expected = np.argmax(np.where(legal, logits, -np.inf), axis=1)
    np.testing.assert_array_equal(decision.actions, expected)
    assert legal[np.arange(len(states)), decision.actions].all()
    # The mask matters: the unmasked favourite is often illegal.
    assert (~legal[np.arange(len(states)), np.argmax(logits, axis=1)]).any()
    np.testing.assert_allclose(decision.policy.sum(axis=1), 1.0, rtol=1e-5)
    assert (decision.policy[~legal] == 0).all()


@pytest.mark.parametrize("sims", [1, 7])
def test_mcts_player_uses_n_simulations(small, model, sims):
    agent = _agent(f"mcts:{model}:{sims}", small)
    assert isinstance(agent, MctsAgent) and agent.simulations == sims and agent.noise is False
    states = _random_states(small, 3, 2)
    decision = agent.act(states, np.zeros(len(states), np.int64))
    visits = decision.policy * sims
    np.testing.assert_allclose(visits, np.round(visits), atol=1e-4)
    np.testing.assert_allclose(decision.policy.sum(axis=1), 1.0, rtol=1e-5)
    legal = small.legal(states)
    assert legal[np.arange(len(states)), decision.actions].all()
    # Temperature 0 in the arena: the most visited move.
    np.testing.assert_array_equal(decision.actions, np.argmax(decision.policy, axis=1))


def test_mcts_player_grows_nxk_trees(small, model):
    """``mcts:PATH:NxK``: K trees of N simulations per move; a bare path takes
    arena.determinizations."""
    agent = _agent(f"mcts:{model}:5x3", small, afterstates=False)
    assert agent.simulations == 5 and agent.determinizations == 3
    states = _random_states(small, 3, 2)
    decision = agent.act(states, np.zeros(len(states), np.int64))
    assert small.legal(states)[np.arange(len(states)), decision.actions].all()
    np.testing.assert_allclose(decision.policy.sum(axis=1), 1.0, rtol=1e-5)
    arena = PARAMS.arena.model_copy(update={"determinizations": 4})
    plain = make_agent(parse_spec(str(model)), small, PARAMS.mcts.model_copy(update={"afterstates": False}),
                       arena, np.random.default_rng(0))
    assert plain.determinizations == 4


def test_mcts_player_with_afterstates_searches_one_tree(small, model):
    """With afterstates no path reaches a draw, so ``K`` trees would repeat one search: the
    player grows one, and moves as the one-tree player does."""
    states = _random_states(small, 6, 3)
    moves = np.zeros(len(states), np.int64)
    one = _agent(f"mcts:{model}:6", small, afterstates=True).act(states, moves)
    agent = _agent(f"mcts:{model}:6x4", small, afterstates=True)
    assert agent.determinizations == 1
    np.testing.assert_array_equal(agent.act(states, moves).actions, one.actions)
    # With chance nodes too, paths go past draws of each tree's own: the trees differ.
    assert _agent(f"mcts:{model}:6x4", small, afterstates=True, chance_outcomes=2).determinizations == 4


def test_plain_checkpoint_uses_arena_simulations(small, model):
    agent = _agent(str(model), small)
    assert isinstance(agent, MctsAgent) and agent.simulations == PARAMS.arena.simulations
    assert agent.temperature == PARAMS.arena.temperature


def test_checkpoint_of_another_game_configuration_is_refused(small, tmp_path):
    other = tmp_path / "other.pt"
    save_model(other, PARAMS.model_copy(update={"game": PARAMS.game.model_copy(update={"triangle": OTHER_BOARD})}))
    for text in (str(other), f"net:{other}", f"mcts:{other}:3"):
        with pytest.raises(TriError, match="configuration"):
            _agent(text, small)
    with pytest.raises(TriError, match="not found"):
        _agent(str(tmp_path / "missing.pt"), small)


# ---- specs ---------------------------------------------------------------------------------------


def test_parse_spec_accepts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_spec("random") == PlayerSpec("random", text="random")
    assert parse_spec("greedy") == PlayerSpec("greedy", text="greedy")
    assert parse_spec("models/gen-0003.pt") == PlayerSpec("mcts", Path("models/gen-0003.pt"),
                                                          text="models/gen-0003.pt")
    assert parse_spec("mcts:models/best.pt:128") == PlayerSpec("mcts", Path("models/best.pt"), 128,
                                                               text="mcts:models/best.pt:128")
    assert parse_spec("mcts:a:b.pt:5").path == Path("a:b.pt")  # the last colon separates N
    assert parse_spec("mcts:models/best.pt:32x4") == PlayerSpec("mcts", Path("models/best.pt"), 32,
                                                                text="mcts:models/best.pt:32x4", determinizations=4)
    assert parse_spec("net:models/best.pt") == PlayerSpec("net", Path("models/best.pt"), text="net:models/best.pt")
    (tmp_path / "weights.bin").write_bytes(b"")
    assert parse_spec("weights.bin").kind == "mcts"  # an existing file, whatever its suffix


@pytest.mark.parametrize("text", ["mcts:x", "mcts:x:0", "mcts:x:-3", "mcts:x:many", "mcts::5", "foo", "Random",
                                  "models:/tri/1", "mcts:x:32x", "mcts:x:32x0", "mcts:x:x4", "mcts:x:32x4x2",
                                  "mcts:x:32x1025", "mcts:x:32X4"])
def test_parse_spec_rejects(text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TriError) as info:
        parse_spec(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("text", ["", "models"])
def test_parse_spec_rejects_empty_and_directories(text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    with pytest.raises(TriError) as info:
        parse_spec(text)
    assert repr(text) in str(info.value)


def test_parse_spec_bounds_the_simulations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_spec("mcts:x.pt:2147483646").simulations == 2**31 - 2  # the search's int32 limit
    assert parse_spec("mcts:x.pt:007").simulations == 7
    for sims in ("2147483647", "10000000000", "9" * 100_000):  # the last: beyond int()'s 4300 digits
        with pytest.raises(TriError) as info:
            parse_spec(f"mcts:x.pt:{sims}")
        message = str(info.value)
        assert message.endswith(": at most 2147483646 simulations (tree nodes are numbered in int32)")
        assert message.startswith("player 'mcts:x.pt:") and len(message) < 300
    with pytest.raises(TriError, match="expected mcts:PATH:SIMULATIONS"):
        parse_spec("mcts:x.pt:²")  # a digit to str.isdigit, not to int()


def test_make_agent_refuses_a_search_that_does_not_fit_before_loading(small, tmp_path, monkeypatch):
    import tri.resources

    monkeypatch.setattr(tri.resources, "machine_memory", lambda: 2**30)
    monkeypatch.chdir(tmp_path)
    missing = Path("missing.pt")  # never read: the check comes first
    spec = parse_spec(f"mcts:{missing}:10000000")
    rng = np.random.default_rng(0)
    with pytest.raises(TriError) as info:
        make_agent(spec, small, PARAMS.mcts, PARAMS.arena, rng)
    assert str(info.value).startswith(f"player 'mcts:{missing}:10000000': 10000000 simulations for 1 game at "
                                      "once need about ")
    assert str(info.value).endswith(" for the search trees, more than this machine's 1.0 GiB of memory; "
                                    "lower N in mcts:PATH:N")
    with pytest.raises(TriError, match=r"for 32 games at once .*; lower N in mcts:PATH:N or arena.concurrent$"):
        make_agent(spec, small, PARAMS.mcts, PARAMS.arena, rng, batch=32)
    deep_arena = PARAMS.arena.model_copy(update={"simulations": 10_000_000})
    with pytest.raises(TriError, match=r"^arena.simulations: 10000000 simulations .*; lower arena.simulations$"):
        make_agent(parse_spec(str(missing)), small, PARAMS.mcts, deep_arena, rng)
    for text in ("random", "greedy"):  # no search, nothing to check
        make_agent(parse_spec(text), small, PARAMS.mcts, deep_arena, rng, batch=10**9)
    with pytest.raises(TriError, match="not found"):  # a search that fits goes on to load the file
        make_agent(parse_spec(f"mcts:{missing}:100"), small, PARAMS.mcts, PARAMS.arena, rng)
