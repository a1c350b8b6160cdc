"""Fatal draws (``tri.games.triangle.fatal``) against the plain reference engine
(``reference_triangle``): whether a hand can be placed, by brute force over orders and placements;
the chance that the next draw cannot, over every ordered draw of the templates (not the
multisets the kernel weighs); the ends of a cycle. Then ``tri eval deaths`` end to end."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from click.testing import CliRunner

from tests.games.reference_triangle import ReferenceGame
from tests.games.test_triangle_random import SMALL, reference_for, rewards_of
from tri.cli import main
from tri.config import Params
from tri.evaluate.deaths import format_deaths, run_deaths
from tri.games.triangle import fatal
from tri.games.triangle.game import TriangleGame
from tri.games.triangle.rules import DEFAULT_TEMPLATES, TriangleConfig

# 3 slots and 5 templates (one duplicated, so a shape weighs double): 125 ordered draws
THREE = SMALL.model_copy(update={"num_slots": 3, "templates": tuple(DEFAULT_TEMPLATES[i] for i in (0, 2, 2, 5, 15))})


def ref_placeable(game: TriangleGame, grid: np.ndarray, shapes: list) -> bool:
    """Brute force on the reference engine: some order and placements place every shape."""
    if not shapes:
        return True
    ref = ReferenceGame(reference_for(game), list(shapes), rewards_of(game))
    ref.grid = [[bool(v) for v in row] for row in grid]
    ref.game_over = not ref.legal_actions()
    if ref.game_over:
        return False
    for slot, r, c in ref.legal_actions():
        nxt = copy.deepcopy(ref)
        nxt.place((slot, r, c), refill=[None] * len(shapes))
        rest = [s for i, s in enumerate(shapes) if i != slot]
        if ref_placeable(game, np.array(nxt.grid_ints()), rest):
            return True
    return False


def boards_from_play(game: TriangleGame, games: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(afterstates [B, L], cycle starts [C, L])`` from random play: boards of every tightness."""
    rng = np.random.default_rng(seed)
    afters, starts = [], []
    for g in range(games):
        s = game.initial(np.array([seed * 1000 + g]))
        starts.append(s[0].copy())
        while not game.terminal(s)[0]:
            t = game.step(s, np.array([rng.choice(np.flatnonzero(game.legal(s)[0]))]))
            if t.chance[0]:
                afters.append(game.afterstate(t.states)[0])
                starts.append(t.states[0].copy())
            s = t.states
    return np.array(afters), np.array(starts)


@pytest.mark.parametrize("config", [SMALL, THREE], ids=["2 slots", "3 slots"])
def test_draw_table_is_the_ordered_draws_summed(config: TriangleConfig) -> None:
    game = TriangleGame(config)
    hands, weights = fatal.draw_table(game.template_ids, game.num_slots)
    n, s = len(game.template_ids), game.num_slots
    expected: dict[tuple, float] = {}
    for draw in itertools.product(game.template_ids.tolist(), repeat=s):
        key = tuple(sorted(draw))
        expected[key] = expected.get(key, 0.0) + 1 / n**s
    assert {tuple(h): w for h, w in zip(hands.tolist(), weights)} == pytest.approx(expected)
    assert len(hands) == len(expected) and np.all(np.diff(hands, axis=1) >= 0)


@pytest.mark.parametrize("config", [SMALL, THREE, TriangleConfig()], ids=["2 slots", "3 slots", "default"])
def test_placeable_matches_brute_force(config: TriangleConfig) -> None:
    game = TriangleGame(config)
    _, starts = boards_from_play(game, 6, 1)
    rng = np.random.default_rng(2)
    k = len(game.shape_table)
    hands = fatal.hands_of(game, starts)
    hands[::3] = rng.integers(-1, k, size=hands[::3].shape)  # other hands on the same boards, empty slots too
    got = fatal.placeable(game, starts, hands)
    for state, hand, ok in zip(starts, hands, got):
        grid = game.board(state)
        shapes = [game.shape_table.shapes[i] for i in hand if i >= 0]
        assert ok == ref_placeable(game, grid, shapes), (grid, hand)
    assert 0 < got.mean() < 1  # both answers occur


@pytest.mark.parametrize("config", [SMALL, THREE], ids=["2 slots", "3 slots"])
def test_fatal_chance_matches_every_ordered_draw(config: TriangleConfig) -> None:
    game = TriangleGame(config)
    afters, _ = boards_from_play(game, 5, 3)
    afters = np.concatenate([game.afterstate(game.initial(np.array([0]))), afters[:: max(1, len(afters) // 6)]])
    got = fatal.fatal_chance(game, afters)
    n, s = len(game.template_ids), game.num_slots
    for state, chance in zip(afters, got):
        grid = game.board(state)
        memo: dict[tuple, bool] = {}
        dead = 0
        for draw in itertools.product(game.template_ids.tolist(), repeat=s):  # every ordered draw counted
            key = tuple(sorted(draw))  # the reference is asked once per multiset: order does not matter
            if key not in memo:
                memo[key] = ref_placeable(game, grid, [game.shape_table.shapes[i] for i in key])
            dead += not memo[key]
        assert chance == pytest.approx(dead / n**s, abs=1e-12)
    assert got.max() > 0 and got.min() == 0  # safe and risky boards both tested
    assert fatal.least_fatal_chance(game, afters[::-1]) == got.min()  # the bound cuts the rest, the least stays


def test_fatal_chance_of_an_empty_and_a_full_board() -> None:
    game = TriangleGame()
    empty = game.afterstate(game.initial(np.array([0])))
    assert fatal.fatal_chance(game, empty)[0] == 0
    full = empty.copy()
    full[0, : game.geometry.num_words] = game.tab[0]  # every playable cell taken: nothing fits
    assert fatal.fatal_chance(game, full)[0] == pytest.approx(1.0)


def ref_ends(game: TriangleGame, grid: np.ndarray, shapes: list, out: set) -> None:
    """Add to ``out`` the reference's board (bytes) after every order and placement of ``shapes``."""
    if not shapes:
        out.add(grid.tobytes())
        return
    ref = ReferenceGame(reference_for(game), list(shapes), rewards_of(game))
    ref.grid = [[bool(v) for v in row] for row in grid]
    for slot, r, c in ref.legal_actions():
        nxt = copy.deepcopy(ref)
        nxt.place((slot, r, c), refill=[None] * len(shapes))
        ref_ends(game, np.array(nxt.grid_ints(), dtype=grid.dtype), [x for i, x in enumerate(shapes) if i != slot], out)


def test_cycle_ends_are_every_way_to_place_the_hand() -> None:
    game = TriangleGame(THREE)
    _, starts = boards_from_play(game, 3, 4)
    for start in starts[1:4]:  # past the first: boards with triangles on them
        ends = fatal.cycle_ends(game, start)
        expected: set = set()
        hand = [game.shape_table.shapes[i] for i in fatal.hands_of(game, start[None])[0] if i >= 0]
        ref_ends(game, game.board(start), hand, expected)
        assert {game.board(e).tobytes() for e in ends} == expected
        assert len(ends) == len(expected) and not fatal.hands_of(game, ends).max() >= 0


def test_run_deaths_reads_every_game_back(tmp_path) -> None:
    params = Params.model_validate({"arena": {"max_moves": 40}})
    report = run_deaths(params, "greedy", games=6, seed=5, plans=True, out=tmp_path / "d.json")
    assert sum(report.deaths.values()) == 6 and report.deaths["move cap"] >= 1
    for g in report.per_game:
        assert g.death in ("fatal draw", "misplay", "move cap")
        assert len(g.least) == len(g.chances)
        for c, lo in zip(g.chances, g.least):
            assert (lo is None) == (c <= report.risky)
            assert lo is None or 0 <= lo <= c
    assert report.cycles == sum(len(g.chances) for g in report.per_game)
    assert report.expected_fatal == pytest.approx(np.mean([sum(g.chances) for g in report.per_game]))
    assert (tmp_path / "d.json").exists() and "deaths: fatal draw" in format_deaths(report)
    # the greedy player's full games (no cap) all end by a draw no placement survives
    full = run_deaths(Params(), "greedy", games=4, seed=5)
    assert full.deaths == {"fatal draw": 4, "misplay": 0, "move cap": 0}
    assert len(full.at_fatal_draw) == 4 and min(full.at_fatal_draw) > 0


def test_cli_deaths_and_its_bad_input(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no project here: default params, nothing tracked
    runner = CliRunner()
    ok = runner.invoke(main, ["eval", "deaths", "greedy", "--games", "2", "--no-progress",
                              "--out", str(tmp_path / "d.json")])
    assert ok.exit_code == 0, ok.output
    assert "deaths: fatal draw 2" in ok.output and (tmp_path / "d.json").exists()
    bad = runner.invoke(main, ["eval", "deaths", "greedy", "--risky", "1"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output
    bad = runner.invoke(main, ["eval", "deaths", "nosuchplayer.pt", "--games", "1"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output


# ---- dead ends: moves after which the hand can no longer be placed (mcts.avoid_dead_ends) ------


def dead_end_cases(game: TriangleGame, games: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(state [L], dead actions, safe actions)`` from random play where a state has both."""
    rng = np.random.default_rng(seed)
    cases = []
    for g in range(games):
        s = game.initial(np.array([seed * 1000 + g]))
        while not game.terminal(s)[0]:
            legal = np.flatnonzero(game.legal(s)[0])
            dead = game.dead_ends(np.repeat(s, legal.size, axis=0), legal)
            if dead.any() and not dead.all():
                cases.append((s[0].copy(), legal[dead], legal[~dead]))
            s = game.step(s, np.array([rng.choice(legal)])).states
    return cases


@pytest.mark.parametrize("config", [THREE, TriangleConfig()], ids=["3 slots", "default"])
def test_dead_ends_match_brute_force(config: TriangleConfig) -> None:
    game = TriangleGame(config)
    _, starts = boards_from_play(game, 4, 6)
    w = game.geometry.num_words
    checked = 0
    for state in starts[:: max(1, len(starts) // 10)]:
        legal = np.flatnonzero(game.legal(state[None])[0])
        got = game.dead_ends(np.repeat(state[None], legal.size, axis=0), legal)
        after = game.step(np.repeat(state[None], legal.size, axis=0), legal,
                          np.full((legal.size, game.num_slots), -1, np.int32)).states
        for a, s, dead in zip(legal, after, got):
            rest = [game.shape_table.shapes[int(i) - 1] for i in s[w + 2:] if i]
            assert dead == (bool(rest) and not ref_placeable(game, game.board(s), rest)), (state, a)
            checked += 1
    assert checked > 50


def test_avoid_dead_ends_takes_the_searchs_best_safe_move(game) -> None:
    from tri.agents import avoid_dead_ends

    cases = dead_end_cases(game, 6, 7)
    assert len(cases) >= 2
    states = np.stack([c[0] for c in cases])
    policy = np.zeros((len(cases), game.num_actions), np.float32)
    chosen = np.array([c[1][0] for c in cases])
    best_safe = np.array([c[2][-1] for c in cases])
    policy[np.arange(len(cases)), chosen] = 0.6
    policy[np.arange(len(cases)), best_safe] = 0.3  # the search's second choice, and safe
    np.testing.assert_array_equal(avoid_dead_ends(game, states, chosen, policy), best_safe)
    safe_chosen = np.array([c[2][0] for c in cases])
    np.testing.assert_array_equal(avoid_dead_ends(game, states, safe_chosen, policy), safe_chosen)


def test_an_agent_avoids_the_dead_end_its_network_prefers(game) -> None:
    """A network that puts all its prior on a dead end: the search plays it, unless avoid_dead_ends."""
    from tri.agents import MctsAgent
    from tri.config import MctsParams

    cases = dead_end_cases(game, 6, 8)
    states = np.stack([c[0] for c in cases])
    trap = {c[0].tobytes(): c[1][0] for c in cases}

    def evaluate(batch):
        legal = game.legal(batch)
        priors = legal / legal.sum(axis=1, keepdims=True).clip(1)
        for i, s in enumerate(batch):
            if s.tobytes() in trap:
                priors[i] = 0
                priors[i, trap[s.tobytes()]] = 1
        return priors.astype(np.float32), legal, np.zeros(len(batch), np.float32)

    def play(avoid: bool) -> np.ndarray:
        params = MctsParams(simulations=8, gumbel=False, avoid_dead_ends=avoid)
        agent = MctsAgent(game, evaluate, params, np.random.default_rng(0), noise=False, temperature=0.0,
                          temperature_moves=0)
        return agent.act(states, np.zeros(len(states), np.int64)).actions

    plain, avoided = play(False), play(True)
    walked = game.dead_ends(states, plain)
    assert walked.sum() >= 2  # the search alone walks into some
    assert not game.dead_ends(states, avoided).any()
    np.testing.assert_array_equal(avoided[~walked], plain[~walked])  # the others' moves untouched


def test_a_shard_s_key_names_avoid_dead_ends_when_on() -> None:
    """Off, it is left out of self-play's shard keys (shards written before it keep theirs:
    ``tests/test_behaviour.py``); on, it changes the games, so a kept shard is not reused."""
    from tri.config import MctsParams
    from tri.selfplay import ShardTask, _task_key

    def key(**mcts):
        return _task_key(ShardTask(Params(mcts=MctsParams(**mcts)), "m.pt", "out", 1, 0, 0, (1, 2)), "model-id")

    assert key(avoid_dead_ends=True) != key() == key(avoid_dead_ends=False)
