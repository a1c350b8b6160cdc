"""``train.reanalyse``: older self-play's value targets bootstrapped from the starting network.

On real (tiny) self-play: the search's own values give back the recorded targets exactly, so the
rows, the games' ends and the horizon line up; a constant value gives the n-step sums an
independent loop computes; games the starting network played keep their targets; training
reanalyses every folder but the newest and says how many it changed; two-player games have
nothing to reanalyse; broken games files are refused with one line."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from tri import layout, reanalyse, selfplay, train
from tri.config import Runtime
from tri.errors import TriError
from tri.net import load_checkpoint
from tri.shards import read_positions

from tests.pipeline_fixtures import PARAMS, game_of, save_model, with_section, write_synthetic_folder

# Games of up to 10 moves (some cut there), so a horizon of 3 both bootstraps and reaches games' ends.
SELFPLAY = with_section(with_section(PARAMS, "selfplay", max_moves=10, td_steps=3, games=8),
                        "train", max_steps=4, reanalyse=True)


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """Two generations of self-play by two different networks, and a third network."""
    root = tmp_path_factory.mktemp("reanalyse")
    models = [save_model(root / f"m{i}.pt", SELFPLAY, generation=i, seed=i) for i in range(3)]
    folders = [layout.selfplay_dir(root, g) for g in (1, 2)]
    for model, folder, g in zip(models, folders, (1, 2)):
        selfplay.run(SELFPLAY, root / f"m{g - 1}.pt", folder, generation=g, runtime=Runtime(workers=1))
    return {"root": root, "models": models, "folders": folders, "game": game_of(SELFPLAY)}


def positions_and_ends(folder, game):
    return (read_positions(layout.shard_paths(folder), game, [*reanalyse.COLUMNS, "root_value"]),
            reanalyse.game_ends(folder))


def targets_with(positions, ends, value_of, keep_model="another network"):
    return reanalyse.reanalysed_targets(positions, ends, value_of, keep_model=keep_model,
                                        discount=SELFPLAY.mcts.discount, td_steps=SELFPLAY.selfplay.td_steps,
                                        where="the folder")


def test_the_search_values_give_back_the_recorded_targets(played):
    positions, ends = positions_and_ends(played["folders"][0], played["game"])
    assert not ends["terminal"].all() and ends["terminal"].any()  # both kinds of end are covered
    search = positions["root_value"].to_numpy().astype(np.float64)
    targets, changed = targets_with(positions, ends, lambda rows: search[rows])
    assert changed.all()
    np.testing.assert_allclose(targets, positions["value_target"].to_numpy(), rtol=1e-6, atol=1e-5)


def test_a_constant_value_gives_the_n_step_sums(played):
    positions, ends = positions_and_ends(played["folders"][0], played["game"])
    c, gamma, n = 7.0, SELFPLAY.mcts.discount, SELFPLAY.selfplay.td_steps
    targets, _ = targets_with(positions, ends, lambda rows: np.full(rows.size, c))
    terminal = dict(zip(ends["game"].to_list(), ends["terminal"].to_list()))
    checked = 0
    for (gid,), game in positions.sort("move").group_by(["game"]):
        rewards, T = game["reward"].to_list(), len(game)
        end = T if terminal[gid] else T - 1  # a cut game's last position is its own bootstrap
        expected = []
        for t in range(T):
            stop = min(t + n, end) if t < end else t
            z = sum(gamma ** k * rewards[t + k] for k in range(stop - t))
            z += gamma ** (stop - t) * (0.0 if stop == T else c)
            expected.append(z)
        got = targets[np.flatnonzero(positions["game"].to_numpy() == gid)][np.argsort(game["move"].to_numpy())]
        np.testing.assert_allclose(np.sort(got), np.sort(np.array(expected, np.float32)), rtol=1e-5)
        checked += 1
    assert checked == len(ends)


def test_the_starting_networks_games_keep_their_targets(played):
    positions, ends = positions_and_ends(played["folders"][0], played["game"])
    player = ends["model_id"][0]

    def never(rows):
        raise AssertionError("no game needs the network")

    targets, changed = targets_with(positions, ends, never, keep_model=player)
    assert not changed.any()
    np.testing.assert_array_equal(targets, positions["value_target"].to_numpy())


def test_training_reanalyses_the_older_folders(played, tmp_path):
    """The starting network played neither folder: the older one is reanalysed, the newest not;
    started from the older folder's own player, nothing is (reanalysis alone: no luck taken out,
    which reads every folder)."""
    game, (older, newest) = played["game"], played["folders"]
    params = with_section(SELFPLAY, "train", luck_samples=0)
    metrics, heard = tmp_path / "metrics.json", []

    def report(update):
        heard.append(update)

    report.every = 0.0  # hears every update (tri.progress)
    result = train.run(params, played["root"] / "m2.pt", [older, newest], tmp_path / "c.pt", metrics=metrics,
                       progress=report)
    old_rows = len(read_positions(layout.shard_paths(older), game, ["move"]))
    assert result.reanalysed_positions == old_rows
    assert json.loads(metrics.read_text())["reanalysed_positions"] == old_rows
    assert result.reanalysed_change != 0
    folders = [u for u in heard if u.stage == "reanalyse"]  # the loop shows it before training's steps
    assert folders[-1].final and folders[-1].done == folders[-1].total == 1
    # The older folder's player: its games keep their search values.
    same = train.run(params, played["root"] / "m0.pt", [older, newest], tmp_path / "d.pt")
    assert same.reanalysed_positions == 0 and same.reanalysed_change == 0
    off = train.run(with_section(params, "train", reanalyse=False), played["root"] / "m2.pt",
                    [older, newest], tmp_path / "e.pt")
    assert off.reanalysed_positions == 0
    assert load_checkpoint(tmp_path / "e.pt").model_id != result.model_id  # the targets differ, so does training


def test_a_two_player_game_has_nothing_to_reanalyse(tmp_path):
    """Two-player targets are outcomes: the setting is unused, as mcts.discount is."""
    from tri.config import GameParams

    params = with_section(PARAMS.model_copy(update={"game": GameParams(name="tictactoe")}), "train",
                          reanalyse=True, max_steps=2)
    game = game_of(params)
    save_model(tmp_path / "m.pt", params)
    folders = [tmp_path / "gen-0001", tmp_path / "gen-0002"]
    for k, folder in enumerate(folders):
        write_synthetic_folder(folder, game, games=4, seed=k)  # played by "synthetic", not m.pt
    result = train.run(params, tmp_path / "m.pt", folders, tmp_path / "c.pt")
    assert result.reanalysed_positions == 0 and result.window_positions > result.new_positions


def test_broken_games_files_are_refused(played, tmp_path):
    positions, ends = positions_and_ends(played["folders"][0], played["game"])
    first = ends["game"][0]
    with pytest.raises(TriError, match=rf"the folder: positions of game {first}, which its games files do not list"):
        targets_with(positions, ends.filter(pl.col("game") != first), lambda rows: np.zeros(rows.size))
    repeated = positions.with_columns(move=pl.when(pl.col("move") == 1).then(0).otherwise(pl.col("move")))
    with pytest.raises(TriError, match=r"does not hold each of its moves"):
        targets_with(repeated, ends, lambda rows: np.zeros(rows.size))
    with pytest.raises(TriError, match=r"no games files"):
        reanalyse.game_ends(tmp_path)
    (tmp_path / "shard-000.games.parquet").write_bytes(b"not parquet")
    with pytest.raises(TriError, match=r"games files cannot be read"):
        reanalyse.game_ends(tmp_path)


def afterstate_reference(rewards, drew, after, values, terminal, gamma, n):
    """``train.bootstrap: afterstate`` by a plain loop: the rewards up to the last drawing move
    within reach, then that move's afterstate value; else the n-step target."""
    T = len(rewards)
    end = T if terminal else T - 1
    out = []
    for t in range(T):
        reach = min(t + (n or end), end) if t < end else t
        drawing = [k for k in range(t, reach) if drew[k]]
        if drawing:
            k = drawing[-1]
            z = sum(gamma ** (j - t) * rewards[j] for j in range(t, k + 1)) + gamma ** (k + 1 - t) * after[k]
        else:
            boot = 0.0 if reach == T else values[reach]  # past a finished game's end: nothing
            z = sum(gamma ** (j - t) * rewards[j] for j in range(t, reach)) + gamma ** (reach - t) * boot
        out.append(z)
    return np.array(out)


@pytest.mark.parametrize("terminal", [True, False])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 10])
@pytest.mark.parametrize("pattern", ["cycle", "random"])
def test_afterstate_targets_match_a_plain_loop(terminal, n, pattern):
    rng = np.random.default_rng(n * 4 + terminal + 2 * (pattern == "cycle"))
    for T in (1, 2, 3, 7, 20):
        rewards, after, values = rng.random(T), 10 * rng.random(T), 10 * rng.random(T)
        drew = np.arange(T) % 3 == 2 if pattern == "cycle" else rng.random(T) < 0.3
        got = reanalyse.afterstate_bootstrapped(rewards, drew, after, values, terminal, 0.9, n)
        np.testing.assert_allclose(got, afterstate_reference(rewards, drew, after, values, terminal, 0.9, n),
                                   rtol=1e-5, atol=1e-5, err_msg=f"T={T}")


def test_no_draw_in_reach_is_the_n_step_target():
    """Without a drawing move the targets are those of the positions' values n moves on; and a
    draw within reach makes the target independent of everything after that draw."""
    from tri.episodes import value_targets

    rng = np.random.default_rng(0)
    rewards, after, values = rng.random(12), rng.random(12), rng.random(12)
    none = np.zeros(12, bool)
    for terminal in (True, False):
        np.testing.assert_allclose(reanalyse.afterstate_bootstrapped(rewards, none, after, values, terminal, 0.9, 4),
                                   value_targets(rewards, values, terminal, 0.9, False, 4), rtol=1e-6)
    drew = np.arange(12) % 3 == 2
    base = reanalyse.afterstate_bootstrapped(rewards, drew, after, values, True, 0.9, 3)
    later = rewards.copy()
    later[6:] += 5.0  # what the draw at move 5 brought: moves 6 on
    moved = reanalyse.afterstate_bootstrapped(later, drew, after, values, True, 0.9, 3)
    np.testing.assert_array_equal(moved[:6], base[:6])
    assert (moved[6:] != base[6:]).all()


def test_training_bootstraps_every_folder_at_afterstates(played, tmp_path):
    """``train.bootstrap: afterstate``: every game of every folder, the newest too, is recomputed;
    with the afterstates valued at a constant, the targets are the sums to each refill plus it."""
    game, (older, newest) = played["game"], played["folders"]
    params = with_section(SELFPLAY, "train", bootstrap="afterstate")
    result = train.run(params, played["root"] / "m2.pt", [older, newest], tmp_path / "c.pt")
    rows = sum(len(read_positions(layout.shard_paths(f), game, ["move"])) for f in (older, newest))
    assert result.reanalysed_positions == rows
    train.run(SELFPLAY, played["root"] / "m2.pt", [older, newest], tmp_path / "d.pt")
    assert load_checkpoint(tmp_path / "c.pt").model_id != load_checkpoint(tmp_path / "d.pt").model_id
    positions = read_positions(layout.shard_paths(newest), game, [*reanalyse.COLUMNS, "root_value", "action", "state"])
    ends = reanalyse.game_ends(newest)
    step = game.step(positions["state"].to_numpy().astype(np.uint64), positions["action"].to_numpy())
    drew = np.asarray(step.chance, bool)
    assert drew.any() and not drew.all()
    targets = reanalyse.afterstate_targets(positions, ends, drew, lambda r: np.full(r.size, 7.0),
                                           discount=0.9, td_steps=3, where="the folder")
    terminal = dict(zip(ends["game"].to_list(), ends["terminal"].to_list()))
    ids, moves = positions["game"].to_numpy(), positions["move"].to_numpy()
    for gid in np.unique(ids):
        rows = np.flatnonzero(ids == gid)[np.argsort(moves[ids == gid])]
        r = positions["reward"].to_numpy()[rows]
        expected = afterstate_reference(r, drew[rows], np.full(rows.size, 7.0),
                                        positions["root_value"].to_numpy()[rows], terminal[gid], 0.9, 3)
        np.testing.assert_allclose(targets[rows], expected, rtol=1e-5, atol=1e-5)


def test_a_move_bonus_is_in_self_play_s_targets_and_in_reanalysis(played, tmp_path):
    """``mcts.move_bonus``: self-play records targets with the bonus on every move, which
    reanalysis with the search's values and the same bonus gives back; training passes it on."""
    bonus = 0.7
    params = with_section(SELFPLAY, "mcts", move_bonus=bonus)
    folder = layout.selfplay_dir(tmp_path, 1)
    selfplay.run(params, played["root"] / "m0.pt", folder, generation=1, runtime=Runtime(workers=1))
    positions, ends = positions_and_ends(folder, played["game"])
    search = positions["root_value"].to_numpy().astype(np.float64)

    def again(b):
        return reanalyse.reanalysed_targets(positions, ends, lambda rows: search[rows], keep_model="another",
                                            discount=params.mcts.discount, td_steps=params.selfplay.td_steps,
                                            where="the folder", bonus=b)[0]

    recorded = positions["value_target"].to_numpy()
    np.testing.assert_allclose(again(bonus), recorded, rtol=1e-6, atol=1e-5)
    assert (again(0.0) < recorded - bonus / 2).mean() > 0.5  # most targets sum at least one move's bonus
    # Training reanalyses the older folder with the bonus: its targets rise by at least one move's.
    older, newest = played["folders"]
    plain = train.run(SELFPLAY, played["root"] / "m2.pt", [older, newest], tmp_path / "a.pt")
    with_bonus = train.run(params, played["root"] / "m2.pt", [older, newest], tmp_path / "b.pt")
    assert with_bonus.reanalysed_change > plain.reanalysed_change + bonus / 2
