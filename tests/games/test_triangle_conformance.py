"""Replay the reference engine's recorded games (``../shared/triangle-conformance``) through the
scalar and the batched API: every legal-action list, board, clear count, reward, game-over flag
and refill must match the records exactly (rewards within 1e-9)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from tri.games.triangle.rules import DEFAULT_PLAYABLE, TriangleConfig

CONFORMANCE = (Path(__file__).resolve().parents[2].parent / "shared" / "triangle-conformance")
SAMPLE = CONFORMANCE / "sample.jsonl.gz"
NUM_GAMES = 20
TOL = 1e-9


@pytest.fixture(scope="module")
def records() -> dict:
    """``{"games": {g: header}, "steps": {g: [step, ...]}, "ends": {g: end}}``."""
    if not CONFORMANCE.is_dir():
        pytest.skip(f"conformance data folder {CONFORMANCE} is absent (it lives beside the repo)")
    assert SAMPLE.is_file(), f"{SAMPLE} is missing although {CONFORMANCE} exists"
    games, steps, ends = {}, {}, {}
    with gzip.open(SAMPLE, "rt") as f:
        for line in f:
            rec = json.loads(line)
            if rec["type"] == "game":
                games[rec["game"]] = rec
            elif rec["type"] == "step":
                steps.setdefault(rec["game"], []).append(rec)
            elif rec["type"] == "end":
                ends[rec["game"]] = rec
            else:
                raise AssertionError(f"unknown record type {rec['type']!r}")
    for g in steps:
        steps[g].sort(key=lambda r: r["step"])
        assert [r["step"] for r in steps[g]] == list(range(len(steps[g]))), f"game {g}: steps not 0..n-1"
    assert sorted(games) == sorted(steps) == sorted(ends)
    assert len(games) == NUM_GAMES, f"expected {NUM_GAMES} recorded games, found {len(games)}"
    return {"games": games, "steps": steps, "ends": ends, "ids": sorted(games)}


def norm_shape(shape) -> tuple | None:
    """A shape as a canonical sorted tuple of ``(dr, dc, is_up)`` (order of triangles is free)."""
    if shape is None:
        return None
    return tuple(sorted((int(dr), int(dc), bool(up)) for dr, dc, up in shape))


def norm_slots(slots) -> list:
    return [norm_shape(s) for s in slots]


def grid_list(state) -> list[list[int]]:
    return state.grid.astype(int).tolist()


# ---- the records describe the default config ------------------------------------------------


def test_records_use_the_default_config(records, game):
    cfg = TriangleConfig()
    for g, header in records["games"].items():
        assert (header["rows"], header["cols"], header["num_slots"]) == (cfg.rows, cfg.cols, cfg.num_slots)
        assert [tuple(p) for p in header["playable_range"]] == list(DEFAULT_PLAYABLE)
        assert np.array_equal(1 - np.array(header["death"]), game.geometry.playable.astype(int)), g
        rw = header["rewards"]
        assert (rw["placed"], rw["cleared"], rw["alive"], rw["game_over"]) == (
            cfg.rewards.placed, cfg.rewards.cleared, cfg.rewards.alive, cfg.rewards.illegal)
        first = records["steps"][g][0]
        assert norm_slots(header["shapes"]) == norm_slots(first["shapes"])
        assert not any(map(any, first["grid"])), f"game {g} does not start on an empty board"


def test_records_are_consistent(records):
    """The data itself chains (so a continuous replay is meaningful) and ends where it says."""
    for g, steps in records["steps"].items():
        for prev, nxt in zip(steps, steps[1:]):
            assert nxt["grid"] == prev["grid_after"] and nxt["shapes"] == prev["shapes_after"], g
            assert not prev["game_over"]
        assert steps[-1]["game_over"], f"game {g} does not end with game_over"
        assert records["ends"][g]["steps"] == len(steps)


# ---- scalar API, every step rebuilt from its record -----------------------------------------


@pytest.mark.parametrize("index", range(NUM_GAMES))
def test_scalar_steps_from_records(records, game, index):
    g = records["ids"][index]
    steps = records["steps"][g]
    score = 0.0
    for rec in steps:
        where = f"game {g} step {rec['step']}"
        state = game.position(rec["grid"], rec["shapes"])
        assert grid_list(state) == rec["grid"], where
        assert norm_slots(state.shapes) == norm_slots(rec["shapes"]), where
        assert not state.game_over, where
        assert [list(a) for a in game.legal_actions(state)] == rec["valid"], where
        action = tuple(rec["action"])
        assert game.action_index(action) == rec["action_id"], where
        assert game.action_tuple(rec["action_id"]) == action, where
        refill = rec["shapes_after"] if rec["refilled"] else None
        after, step = game.place(state, action, refill=refill)
        assert grid_list(after) == rec["grid_after"], where
        assert step.cleared == rec["cleared"], where
        assert abs(step.reward - rec["reward"]) <= TOL, (where, step.reward, rec["reward"])
        assert step.game_over == rec["game_over"] == after.game_over, where
        assert step.refilled == rec["refilled"], where
        assert step.placed == len(rec["shapes"][action[0]]), where
        assert norm_slots(after.shapes) == norm_slots(rec["shapes_after"]), where
        # The state the record says we are in is a fresh position too.
        assert (game.legal_actions(after) == []) == rec["game_over"], where
        score += step.reward
        assert abs(score - rec["score"]) <= TOL, (where, score, rec["score"])
    assert abs(score - records["ends"][g]["score"]) <= TOL


def test_records_exercise_clears_refills_and_game_over(records):
    """Guard against a sample that would not test much."""
    steps = [r for s in records["steps"].values() for r in s]
    assert len(steps) >= 500
    assert sum(r["cleared"] > 0 for r in steps) >= 10
    assert sum(r["refilled"] for r in steps) >= 50
    assert sum(r["game_over"] for r in steps) == NUM_GAMES
    policies = sorted(h["policy"] for h in records["games"].values())
    assert policies == ["greedy"] * 10 + ["uniform"] * 10


# ---- scalar API, each game played continuously ----------------------------------------------


@pytest.mark.parametrize("index", range(NUM_GAMES))
def test_scalar_continuous_game(records, game, index):
    g = records["ids"][index]
    steps = records["steps"][g]
    header = records["games"][g]
    state = game.position(steps[0]["grid"], header["shapes"], seed=g)
    score = 0.0
    for rec in steps:
        where = f"game {g} step {rec['step']}"
        assert grid_list(state) == rec["grid"], where
        assert norm_slots(state.shapes) == norm_slots(rec["shapes"]), where
        assert not state.game_over, where
        assert [list(a) for a in game.legal_actions(state)] == rec["valid"], where
        refill = rec["shapes_after"] if rec["refilled"] else None
        state, step = game.place(state, tuple(rec["action"]), refill=refill)
        assert grid_list(state) == rec["grid_after"], where
        assert norm_slots(state.shapes) == norm_slots(rec["shapes_after"]), where
        assert step.cleared == rec["cleared"], where
        assert abs(step.reward - rec["reward"]) <= TOL, where
        assert step.game_over == rec["game_over"] == state.game_over, where
        score += step.reward
    assert state.game_over and game.legal_actions(state) == []
    assert abs(score - records["ends"][g]["score"]) <= TOL


# ---- batched API: all games in one batch, in lockstep ---------------------------------------


def test_batched_lockstep(records, game):
    rows, cols, S = game.geometry.rows, game.geometry.cols, game.num_slots
    n = rows * cols
    games = records["ids"]
    B = len(games)
    steps = [records["steps"][g] for g in games]
    states = np.concatenate(
        [game.position(steps[i][0]["grid"], records["games"][g]["shapes"], seed=g).data
         for i, g in enumerate(games)])
    assert states.shape == (B, game.state_size) and states.dtype == np.uint64
    rng = np.random.default_rng(0)
    scores = np.zeros(B)
    horizon = max(len(s) for s in steps)
    for t in range(horizon + 2):  # two extra rounds where every game has ended
        active = np.array([t < len(s) for s in steps])
        decoded = game.states(states)
        mask = game.legal(states)
        assert mask.shape == (B, game.num_actions) and mask.dtype == bool
        term = game.terminal(states)
        actions = np.empty(B, dtype=np.int64)
        refills = np.full((B, S), -2, dtype=np.int32)
        for i in range(B):
            where = f"game {games[i]} step {t}"
            if not active[i]:
                assert term[i] and not mask[i].any(), where
                # any action at all, legal-looking or not, must be ignored
                actions[i] = rng.integers(-1, game.num_actions + 5)
                continue
            rec = steps[i][t]
            assert not term[i], where
            assert grid_list(decoded[i]) == rec["grid"], where
            assert norm_slots(decoded[i].shapes) == norm_slots(rec["shapes"]), where
            want = np.zeros(game.num_actions, dtype=bool)
            for s, r, c in rec["valid"]:
                want[s * n + r * cols + c] = True
            assert np.array_equal(mask[i], want), (where, np.flatnonzero(mask[i] != want))
            actions[i] = rec["action_id"]
            if rec["refilled"]:
                refills[i] = [-1 if sh is None else game.shape_table.intern(sh) for sh in rec["shapes_after"]]
        before = states.copy()
        tr, info = game.step_info(states, actions, refills)
        assert np.array_equal(states, before), "step modified its input"
        assert tr.states.shape == states.shape and tr.reward.shape == (B,) and tr.terminal.shape == (B,)
        for i in range(B):
            where = f"game {games[i]} step {t}"
            if not active[i]:
                assert np.array_equal(tr.states[i], states[i]), where
                assert tr.reward[i] == 0.0 and tr.terminal[i], where
                continue
            rec = steps[i][t]
            assert abs(tr.reward[i] - rec["reward"]) <= TOL, where
            assert bool(tr.terminal[i]) == rec["game_over"], where
            assert int(info[i, 1]) == rec["cleared"], where
            assert bool(info[i, 5]) == rec["refilled"], where
            scores[i] += tr.reward[i]
        assert np.array_equal(game.terminal(tr.states), tr.terminal)
        after = game.states(tr.states)
        for i in np.flatnonzero(active):
            rec = steps[i][t]
            assert grid_list(after[i]) == rec["grid_after"], f"game {games[i]} step {t}"
            assert norm_slots(after[i].shapes) == norm_slots(rec["shapes_after"]), f"game {games[i]} step {t}"
        states = tr.states
    assert game.terminal(states).all()
    for i, g in enumerate(games):
        assert abs(scores[i] - records["ends"][g]["score"]) <= TOL, g
