"""The arena: Student-t intervals, the promotion rule, paired seeds (both players see the same
shape draws), result files, and the ``tri arena`` command.

Games run on the small 5 x 9 board with the baseline players (``greedy``, ``random``), which
need no network, so every arena here takes a fraction of a second.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tri.arena as arena
import tri.players as players
from tri.arena import arena_seeds, mean_ci, t_quantile
from tri.arena_result import ArenaResult, load_result
from tri.config import Runtime, recipe_params
from tri.errors import TriError

from tests.pipeline_fixtures import (OTHER_BOARD, PARAMS, assert_clean_error, fake_episodes, save_model,
                                     tri_cli, with_section, write_params)

ONE = Runtime(workers=1, device="cpu")


# ---- statistics ---------------------------------------------------------------------------------


@pytest.mark.parametrize("p, df, expected", [
    (0.975, 5, 2.5706), (0.975, 10, 2.2281), (0.975, 30, 2.0423), (0.975, 200, 1.9719),
    (0.95, 10, 1.8125), (0.995, 20, 2.8453), (0.975, 1000, 1.9623),
])
def test_t_quantile_matches_student_t_tables(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, rel=5e-3)


def test_t_quantile_is_symmetric_and_tends_to_the_normal():
    assert t_quantile(0.025, 10) == pytest.approx(-t_quantile(0.975, 10), rel=1e-9)
    assert t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-9)
    assert t_quantile(0.975, 10**6) == pytest.approx(1.959964, rel=1e-5)
    assert t_quantile(0.975, 5) > t_quantile(0.975, 10) > t_quantile(0.975, 100)  # heavier tails for small df


def test_mean_ci_on_hand_made_data():
    # 1..11: mean 6, sample variance n(n+1)/12 = 11, so the half-width is t(0.975, 10) * 1.
    mean, low, high = mean_ci(np.arange(1, 12))
    assert mean == 6.0
    assert low == pytest.approx(6 - 2.2281, rel=2e-3) and high == pytest.approx(6 + 2.2281, rel=2e-3)
    assert high - 6 == pytest.approx(6 - low, rel=1e-12)
    # Identical values: no uncertainty.
    assert mean_ci(np.full(5, 2.5)) == (2.5, 2.5, 2.5)
    # A 90% interval is narrower than the 95% one.
    _, low90, high90 = mean_ci(np.arange(1, 12), level=0.90)
    assert low < low90 < 6 < high90 < high
    # One value: unbounded interval; none: no mean.
    m1, l1, h1 = mean_ci(np.array([4.0]))
    assert (m1, l1, h1) == (4.0, -math.inf, math.inf)
    assert math.isnan(mean_ci(np.array([]))[0])


def test_arena_seeds_are_deterministic_distinct_and_not_selfplay_seeds():
    a = arena_seeds(1, 50)
    assert a.dtype == np.int64 and a.shape == (50,)
    assert (a >= 0).all() and np.unique(a).size == 50
    np.testing.assert_array_equal(a, arena_seeds(1, 50))
    np.testing.assert_array_equal(arena_seeds(1, 10), a[:10])  # more games extend the same list
    assert set(arena_seeds(2, 50).tolist()).isdisjoint(a.tolist())


# ---- the decision rule, on controlled scores -----------------------------------------------------


def _fake_arena(monkeypatch, scores_a, scores_b, **arena_updates):
    """Run the arena with ``greedy`` (A) against ``random`` (B) but with the given per-seed
    scores instead of played games."""
    scores = {"greedy": scores_a, "random": scores_b}
    calls = []

    def fake_run_episodes(game, agents, seeds, **kwargs):
        calls.append((agents[0].name, np.asarray(seeds).copy()))
        return fake_episodes(scores[agents[0].name])

    monkeypatch.setattr(arena, "run_episodes", fake_run_episodes)
    params = with_section(PARAMS, "arena", **arena_updates) if arena_updates else PARAMS
    result = arena.run(params, "greedy", "random", games=len(scores_a), runtime=ONE)
    assert [name for name, _ in calls] == ["greedy", "random"]
    np.testing.assert_array_equal(calls[0][1], calls[1][1])  # the same seeds for both
    return result


def test_rule_ci_lower_promotes_a_consistent_improvement(monkeypatch):
    b = np.linspace(1.0, 3.0, 11)
    a = b + 0.5 + 0.01 * np.sin(np.arange(11))
    r = _fake_arena(monkeypatch, a.tolist(), b.tolist())
    d_mean, d_low, d_high = mean_ci(a - b)
    assert (r.diff_mean, r.diff_low, r.diff_high) == pytest.approx((d_mean, d_low, d_high))
    assert 0 < r.diff_low < r.diff_mean < r.diff_high
    assert r.promote is True and r.rule == "ci_lower > 0"
    assert (r.wins, r.ties, r.losses) == (11, 0, 0)
    assert r.scores_a == pytest.approx(a.tolist()) and r.scores_b == pytest.approx(b.tolist())
    assert r.a.name == "greedy" and r.b.name == "random"
    assert r.a.mean == pytest.approx(a.mean()) and r.b.mean == pytest.approx(b.mean())


def test_rule_ci_lower_keeps_b_when_the_interval_straddles_zero(monkeypatch):
    b = np.full(11, 2.0)
    diff = np.array([5, -4, 5, -4, 5, -4, 5, -4, 5, -4, 1.5])  # mean +0.5, but noisy
    r = _fake_arena(monkeypatch, (b + diff).tolist(), b.tolist())
    assert r.diff_mean == pytest.approx(diff.mean()) and r.diff_mean > 0
    assert r.diff_low < 0 < r.diff_high
    assert r.promote is False
    assert (r.wins, r.ties, r.losses) == (6, 0, 5)
    # The same scores under the rule "mean": the positive mean promotes.
    r = _fake_arena(monkeypatch, (b + diff).tolist(), b.tolist(), rule="mean")
    assert r.promote is True and r.rule == "mean > 0"


def test_rule_threshold_and_strict_inequality(monkeypatch):
    b = np.linspace(0.0, 1.0, 11)
    a = b + 0.5
    r = _fake_arena(monkeypatch, a.tolist(), b.tolist(), threshold=1.0, rule="mean")
    assert r.diff_mean == pytest.approx(0.5) and r.promote is False and r.rule == "mean > 1"
    # Equal scores everywhere: the bound is exactly 0, which is not above a threshold of 0.
    r = _fake_arena(monkeypatch, b.tolist(), b.tolist())
    assert (r.diff_low, r.diff_mean, r.diff_high) == (0.0, 0.0, 0.0)
    assert r.promote is False and (r.wins, r.ties, r.losses) == (0, 11, 0)
    r = _fake_arena(monkeypatch, b.tolist(), b.tolist(), rule="mean")
    assert r.promote is False
    # A worse candidate is kept out whatever the rule.
    r = _fake_arena(monkeypatch, (b - 0.5).tolist(), b.tolist(), rule="mean", threshold=-0.1)
    assert r.promote is False and r.losses == 11


def test_rule_always_promotes_every_candidate_and_still_measures(monkeypatch):
    """No gate: a clearly worse candidate is promoted, and the comparison is still reported."""
    b = np.linspace(1.0, 3.0, 11)
    r = _fake_arena(monkeypatch, (b - 2.0).tolist(), b.tolist(), rule="always")
    assert r.promote is True and r.rule == "always"
    assert r.diff_mean == pytest.approx(-2.0) and r.losses == 11


# ---- the decision rule, on real games -----------------------------------------------------------


def test_greedy_beats_random_and_not_the_other_way():
    r = arena.run(PARAMS, "greedy", "random", games=20, runtime=ONE)
    assert r.games == 20 and r.paired and len(r.scores_a) == len(r.scores_b) == 20
    assert r.a.mean > r.b.mean and r.diff_low > 0 and r.promote is True
    assert r.seeds == arena_seeds(PARAMS.arena.seed, 20).tolist()
    assert r.wins + r.ties + r.losses == 20
    assert r.a.stats.keys() >= {"lines", "cleared"}
    back = arena.run(PARAMS, "random", "greedy", games=20, runtime=ONE)
    assert back.promote is False and back.diff_high < 0
    mean_rule = with_section(PARAMS, "arena", rule="mean")
    assert arena.run(mean_rule, "greedy", "random", games=20, runtime=ONE).promote is True
    assert arena.run(mean_rule, "random", "greedy", games=20, runtime=ONE).promote is False


def test_rule_always_promotes_a_losing_two_player_candidate():
    params = with_section(recipe_params("tictactoe"), "arena", rule="always")
    r = arena.run(params, "random", "uct:200", games=6, seed=4, runtime=ONE)
    assert r.score_rate < params.arena.win_rate  # random loses to the search ...
    assert r.promote is True and r.rule == "always"  # ... and is promoted all the same
    gated = arena.run(with_section(params, "arena", rule="mean"), "random", "uct:200", games=6, seed=4, runtime=ONE)
    assert gated.promote is False and gated.score_rate == r.score_rate


def test_same_player_is_never_promoted_over_itself():
    r = arena.run(PARAMS, "greedy", "greedy", games=8, runtime=ONE)
    assert r.scores_a == r.scores_b and r.ties == 8 and r.promote is False
    # Both players draw from the same generator seed (common random numbers), so even two random
    # players make the same moves: identical players tie on every seed.
    r = arena.run(PARAMS, "random", "random", games=20, runtime=ONE)
    assert r.scores_a == r.scores_b and r.ties == 20 and r.promote is False
    assert r.diff_mean == 0.0


def test_same_arguments_same_result():
    one = arena.run(PARAMS, "random", "greedy", games=6, seed=5, runtime=ONE)
    two = arena.run(PARAMS, "random", "greedy", games=6, seed=5, runtime=ONE)
    assert one.to_json() == two.to_json()
    # Two workers: each player's games on its own thread, the same result.
    threads = arena.run(PARAMS, "random", "greedy", games=6, seed=5, runtime=Runtime(workers=2, device="cpu"))
    assert threads.to_json() == one.to_json() and one.a.mean < one.b.mean
    other = arena.run(PARAMS, "random", "greedy", games=6, seed=6, runtime=ONE)
    assert other.seeds != one.seeds


def test_checkpoint_players_are_deterministic_across_worker_counts(tmp_path):
    """Network players in the arena: the same result twice, and with 1 or 2 workers (the runtime
    must not change results)."""
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    save_model(a, seed=1)
    save_model(b, seed=2)
    params = with_section(PARAMS, "arena", games=6, simulations=6, max_moves=20)
    one = arena.run(params, str(a), f"mcts:{b}:3", runtime=ONE)
    again = arena.run(params, str(a), f"mcts:{b}:3", runtime=ONE)
    two = arena.run(params, str(a), f"mcts:{b}:3", runtime=Runtime(workers=2, device="cpu"))
    assert one.to_json() == again.to_json() == two.to_json()
    assert one.a.name == str(a) and one.b.name == f"mcts:{b}:3"
    net = arena.run(params, f"net:{a}", "greedy", runtime=ONE)
    assert net.a.name == f"net:{a}" and len(net.scores_a) == 6


def test_an_interrupted_paired_arena_stops_both_players_at_once(tmp_path):
    """Ctrl-C while the paired players play on their two threads (here a signal whose handler
    raises, as Ctrl-C's does): the arena raises within moments and both threads end at their
    next move. Python cannot interrupt a thread, so before they were told to stop, the pool
    waited for both to play every game (``tri loop`` stopped in an arena: up to two minutes)."""

    class Interrupted(Exception):
        pass

    def interrupt(signum, frame):
        raise Interrupted

    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    save_model(a, seed=1)
    save_model(b, seed=2)
    params = with_section(PARAMS, "arena", games=16, simulations=64, max_moves=1000)  # about 11 s uninterrupted
    previous = signal.signal(signal.SIGUSR1, interrupt)
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        start = time.monotonic()
        timer.start()
        with pytest.raises(Interrupted):
            arena.run(params, str(a), str(b), runtime=Runtime(workers=2, device="cpu"))
        seconds = time.monotonic() - start
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert seconds < 4.0, seconds
    assert [t.name for t in threading.enumerate() if t.name.startswith("paired")] == []


# ---- pairing: both players see the same draws ---------------------------------------------------


class _Recorder:
    """Wraps an agent: follows every game it plays from its seed and records the slot contents
    after every refill (the initial draw included) and the game's score, keyed by its seed."""

    def __init__(self, inner, game, registry: dict[bytes, int], log: dict[int, list[tuple[int, ...]]]):
        self.inner, self.game, self.registry, self.log = inner, game, registry, log
        self.name = inner.name
        self.scores: dict[int, float] = {}

    def _slots(self, state_row) -> tuple[int, ...]:
        return self.game.states(state_row[None])[0].slot_ids

    def act(self, states, moves):
        seeds = []
        for i in range(states.shape[0]):
            key = states[i].tobytes()
            assert key in self.registry, "the agent was shown a state that no seed leads to"
            seeds.append(self.registry[key])
            if moves[i] == 0:
                assert seeds[-1] not in self.log, "a seed was played twice"
                self.log[seeds[-1]] = [self._slots(states[i])]
                self.scores[seeds[-1]] = 0.0
        decision = self.inner.act(states, moves)
        after = self.game.step(states, decision.actions)
        for i, seed in enumerate(seeds):
            self.registry[after.states[i].tobytes()] = seed
            self.scores[seed] += float(after.reward[i])
            slots = self._slots(after.states[i])
            if all(s >= 0 for s in slots):  # every slot full after a placement: a refill
                self.log[seed].append(slots)
        return decision


@pytest.mark.parametrize("a, b, concurrent", [("greedy", "random", 3), ("random", "greedy", 8)])
def test_paired_seeds_give_both_players_the_same_draws(monkeypatch, a, b, concurrent):
    games = 8
    params = with_section(PARAMS, "arena", max_moves=15, concurrent=concurrent)
    seeds = arena_seeds(params.arena.seed, games)
    recorders: list[_Recorder] = []
    real_make_agent = players.make_agent

    def recording_make_agent(spec, game_, *args, **kwargs):
        registry = {row.tobytes(): int(s) for row, s in zip(game_.initial(seeds), seeds)}
        recorders.append(_Recorder(real_make_agent(spec, game_, *args, **kwargs), game_, registry, {}))
        return recorders[-1]

    monkeypatch.setattr(arena, "make_agent", recording_make_agent)
    result = arena.run(params, a, b, games=games, runtime=ONE)
    assert result.seeds == seeds.tolist()
    assert [r.name for r in recorders] == [a, b]
    log_a, log_b = recorders[0].log, recorders[1].log
    # The i-th paired scores are both the i-th seed's games.
    assert result.scores_a == pytest.approx([recorders[0].scores[s] for s in seeds.tolist()])
    assert result.scores_b == pytest.approx([recorders[1].scores[s] for s in seeds.tolist()])
    assert set(log_a) == set(log_b) == set(seeds.tolist())
    longer_than_one = 0
    for seed in seeds.tolist():
        ra, rb = log_a[seed], log_b[seed]
        k = min(len(ra), len(rb))
        assert ra[:k] == rb[:k], f"seed {seed}: A and B were dealt different shapes"
        longer_than_one += k >= 3
    # The check has teeth: most games see several refills in both runs, and games differ.
    assert longer_than_one >= games // 2
    assert len({tuple(log_a[s][0]) for s in seeds.tolist()}) > 1
    # The players did play differently (otherwise pairing would be trivial).
    assert result.scores_a != result.scores_b


def test_draws_do_not_depend_on_the_moves_played(game):
    """The engine property pairing relies on: the k-th refill of a seed is the same whatever is
    placed before it (checked with two different move streams on the default board)."""
    from tri.games.base import sample_legal

    seeds = arena_seeds(3, 6)
    refills = []
    for stream in (1, 2):
        rng = np.random.default_rng(stream)
        states = game.initial(seeds)
        seen = [[game.states(states)[i].slot_ids] for i in range(len(seeds))]
        for _ in range(30):
            live = ~game.terminal(states)
            if not live.any():
                break
            actions = sample_legal(game.legal(states), rng)
            actions[~live] = 0
            states = np.where(live[:, None], game.step(states, actions).states, states)
            for i, st in enumerate(game.states(states)):
                if live[i] and all(s >= 0 for s in st.slot_ids):
                    seen[i].append(st.slot_ids)
        refills.append(seen)
    for x, y in zip(*refills):
        k = min(len(x), len(y))
        assert k >= 2 and x[:k] == y[:k]


# ---- result files -------------------------------------------------------------------------------


def test_result_json_round_trips(tmp_path):
    out = tmp_path / "sub" / "a.json"
    r = arena.run(PARAMS, "greedy", "random", games=4, out=out, runtime=ONE)
    assert out.is_file() and not [p for p in out.parent.iterdir() if p.name.startswith(".")]
    back = load_result(out)
    assert isinstance(back, ArenaResult)
    assert back == r
    assert json.loads(out.read_text())["promote"] == r.promote


def test_load_result_errors(tmp_path):
    with pytest.raises(TriError, match="not found"):
        load_result(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    for text in ("{not json", "[1, 2]", '{"x": 1}', '"text"', "",
                 '{"game": "triangle", "a": {"name": "a"}, "b": {}}'):
        bad.write_text(text)
        with pytest.raises(TriError, match="not an arena result") as info:
            load_result(bad)
        assert str(bad) in str(info.value)


def test_unknown_player_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TriError, match="'foo'"):
        arena.run(PARAMS, "greedy", "foo", games=2, runtime=ONE)
    with pytest.raises(TriError, match="missing.pt"):
        arena.run(PARAMS, "missing.pt", "greedy", games=2, runtime=ONE)


# ---- the command --------------------------------------------------------------------------------


def test_cli_arena(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    out = tmp_path / "x.json"
    proc = tri_cli("arena", "greedy", "random", "--games", 20, "--params", params, "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    text = proc.stdout
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 4 and cells[0] in ("greedy", "random"):
            rows[cells[0]] = cells
    assert set(rows) == {"greedy", "random"}, text
    assert "paired difference" in text
    decision = [line for line in text.splitlines() if line.startswith("decision")]
    assert decision == ["decision (ci_lower > 0): promote A"], text
    result = load_result(out)
    assert result.games == 20 and result.a.name == "greedy" and result.b.name == "random" and result.promote
    assert rows["greedy"][1] == f"{result.a.mean:.3f}" and rows["random"][1] == f"{result.b.mean:.3f}"


def test_cli_arena_names_the_players_by_role(tmp_path):
    """The loop's arena (dvc.yaml) names the players by role, so the file does not depend on paths."""
    params = write_params(tmp_path / "params.yaml")
    out = tmp_path / "x.json"
    proc = tri_cli("arena", "greedy", "random", "--games", 2, "--params", params, "--out", out,
                   "--names", "candidate,best", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = load_result(out)
    assert (result.a.name, result.b.name) == ("candidate", "best")
    bad = tri_cli("arena", "greedy", "random", "--games", 2, "--params", params, "--names", "candidate", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "--names 'candidate': expected two names" in bad.stderr.strip().splitlines()[-1]


def test_cli_arena_refuses_checkpoints_of_another_configuration(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    mine, other = tmp_path / "mine.pt", tmp_path / "other.pt"
    save_model(mine)
    other_params = PARAMS.model_copy(update={"game": PARAMS.game.model_copy(update={"triangle": OTHER_BOARD})})
    save_model(other, other_params)
    proc = tri_cli("arena", mine, other, "--games", 2, "--params", params, cwd=tmp_path)
    assert_clean_error(proc, 1, str(other), "configuration")



@pytest.mark.parametrize("players, message", [
    (["nobody", "greedy"], "unknown player 'nobody'"),
    (["greedy", "mcts:missing.pt:8"], "checkpoint missing.pt: file not found"),
    (["net:missing.pt", "greedy"], "checkpoint missing.pt: file not found"),
    (["champion:connect4", "greedy"], "plays connect4, but this plays triangle"),
])
def test_cli_arena_refuses_bad_players_before_torch_loads(tmp_path, players, message):
    """A mistyped player is a one-line error in about a second: the specs are parsed and their
    files checked before the arena (and torch) is imported."""
    params = write_params(tmp_path / "params.yaml")
    code = ("import sys; from click.testing import CliRunner; from tri.cli import main; "
            "r = CliRunner().invoke(main, sys.argv[1:]); print(r.exit_code, 'torch' in sys.modules); print(r.output)")
    proc = subprocess.run([sys.executable, "-c", code, "arena", *players, "--params", str(params), "--game", "triangle"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    status, rest = proc.stdout.split("\n", 1)
    assert status == "1 False", proc.stdout + proc.stderr
    assert message in rest and "Traceback" not in rest

def test_each_generation_gets_fresh_arena_seeds():
    """A best model lucky on one generation's seeds meets the next candidate on new ones."""
    one, two = arena_seeds(1, 50, 1), arena_seeds(1, 50, 2)
    assert set(one.tolist()).isdisjoint(two.tolist())
    np.testing.assert_array_equal(arena_seeds(1, 50), arena_seeds(1, 50, 0))


# ---- what fits in memory ------------------------------------------------------------------------


def test_run_refuses_a_search_that_does_not_fit_before_loading_either_player(tmp_path, monkeypatch):
    import tri.resources

    monkeypatch.setattr(tri.resources, "machine_memory", lambda: 2**30)
    missing = tmp_path / "missing.pt"
    with pytest.raises(TriError, match=rf"^player 'mcts:{missing}:10000000': 10000000 simulations for 6 games "
                                       r"at once need about .*; lower N in mcts:PATH:N or arena.concurrent$"):
        arena.run(PARAMS, "greedy", f"mcts:{missing}:10000000", runtime=ONE)
    deep = PARAMS.model_copy(update={"arena": PARAMS.arena.model_copy(update={"simulations": 10_000_000})})
    with pytest.raises(TriError, match=r"^arena.simulations: 10000000 simulations for 4 games at once .*; lower "
                                       r"arena.simulations or arena.concurrent$"):
        arena.run(deep, "greedy", str(missing), games=4, runtime=ONE)  # --games 4: 4 at once


@pytest.mark.parametrize("player, setting, needle", [
    ("mcts:{model}:2000000000", None, "player 'mcts:"),
    ("{model}", 2_000_000_000, "arena.simulations: 2000000000 simulations for 6 games at once need about "),
    ("mcts:{model}:3000000000", None, ":3000000000': at most 2147483646 simulations"),
], ids=["spec", "params", "int32"])
def test_cli_arena_refuses_a_search_that_does_not_fit(tmp_path, player, setting, needle):
    model = tmp_path / "m.pt"
    save_model(model)
    params = PARAMS if setting is None else with_section(PARAMS, "arena", simulations=setting)
    proc = tri_cli("arena", player.format(model=model), "random", "--params",
                   write_params(tmp_path / "params.yaml", params), cwd=tmp_path)
    assert_clean_error(proc, 1, needle)
    assert len(proc.stderr.splitlines()) == 1
