"""Self-play end to end on a tiny setup: the shards' documented schema and contents, the games
sidecar, determinism (same seed, same bytes; workers 1 or 2), resuming, and refusing shards of
another game configuration.

The game is a small triangle board (5 x 9) so that some games end by the rules within the move
cap and others are cut by it: both kinds of value target are checked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from tri import layout
from tri.config import GameParams, MctsParams, NetParams, Params, Runtime, SelfplayParams
from tri.errors import TriError
from tri.games import make_game
from tri.games.triangle.game import TriangleGame
from tri.games.triangle.rules import TriangleConfig
from tri.net import Checkpoint, build_model, save_checkpoint
from tri.selfplay import run
from tri.shards import check_shard, read_games, read_positions

SMALL_BOARD = TriangleConfig(rows=5, cols=9, playable=[(1, 8), (0, 9), (0, 9), (0, 9), (1, 8)])
PARAMS = Params(game=GameParams(triangle=SMALL_BOARD),
                net=NetParams(channels=8, blocks=1, value_hidden=16),
                mcts=MctsParams(simulations=4, discount=0.9, gumbel=False),  # PUCT: visit-count policies
                selfplay=SelfplayParams(games=6, shards=2, concurrent=2, max_moves=6, temperature_moves=4,
                                         td_steps=3))
GENERATION = 2
ONE = Runtime(workers=1, device="cpu")

@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A generation-2 checkpoint and one self-play run of it (workers 1)."""
    root = tmp_path_factory.mktemp("selfplay")
    game = make_game(PARAMS.game)
    ckpt = Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"),
                      net_params=PARAMS.net, generation=GENERATION, model=build_model(game, PARAMS.net))
    model = layout.model_path(root, GENERATION)
    save_checkpoint(ckpt, model)
    out = layout.selfplay_dir(root, GENERATION)
    result = run(PARAMS, model, out, runtime=ONE)
    return {"root": root, "game": game, "ckpt": ckpt, "model": model, "out": out, "result": result}


def shard_files(folder: Path) -> list[Path]:
    return sorted(Path(folder).glob("*.parquet"))


def file_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in shard_files(folder)}


def positions_of(folder: Path, game) -> pl.DataFrame:
    return read_positions(layout.shard_paths(folder), game)


def games_of(folder: Path) -> pl.DataFrame:
    return read_games(sorted(Path(folder).glob("shard-*.games.parquet")))


# ---- what a run writes --------------------------------------------------------------------------


def test_run_result_and_files(setup):
    result, out = setup["result"], setup["out"]
    assert result.games == PARAMS.selfplay.games
    assert result.shards == tuple(str(layout.shard_path(out, i)) for i in range(2))
    assert [p.name for p in shard_files(out)] == ["shard-000.games.parquet", "shard-000.parquet",
                                                  "shard-001.games.parquet", "shard-001.parquet"]
    assert not [p for p in Path(out).iterdir() if p.name.startswith(".")]  # no temporaries left
    positions = positions_of(out, setup["game"])
    assert result.positions == positions.height > 0
    games = games_of(out)
    assert result.mean_score == pytest.approx(games["score"].mean())


def test_positions_schema(setup):
    game = setup["game"]
    L, A = game.state_size, game.num_actions
    for path in layout.shard_paths(setup["out"]):
        schema = pq.read_schema(path)
        expected = [("game", pa.int64()), ("move", pa.int32()), ("state", pa.list_(pa.uint64(), L)),
                    ("legal", pa.list_(pa.bool_(), A)), ("policy", pa.list_(pa.float32(), A)),
                    ("value_target", pa.float32()), ("root_value", pa.float32()), ("action", pa.int32()),
                    ("reward", pa.float32()), ("score", pa.float64()), ("generation", pa.int32())]
        assert schema.names == [n for n, _ in expected] + ["model_id"]
        for name, typ in expected:
            assert schema.field(name).type == typ, name
        model_id = schema.field("model_id").type
        assert pa.types.is_string(model_id) or pa.types.is_large_string(model_id)
        meta = {k.decode(): v.decode() for k, v in schema.metadata.items()}
        assert meta["tri.game"] == "triangle"
        assert meta["tri.state_size"] == str(L) and meta["tri.num_actions"] == str(A)
        check_shard(path, game)


def test_positions_contents(setup):
    game, ckpt = setup["game"], setup["ckpt"]
    df = positions_of(setup["out"], game)
    games = games_of(setup["out"]).sort("game")
    state = df["state"].to_numpy()
    legal = df["legal"].to_numpy()
    policy = df["policy"].to_numpy()
    assert state.dtype == np.uint64 and state.shape == (df.height, game.state_size)
    assert legal.shape == policy.shape == (df.height, game.num_actions)
    # The state re-creates the mask and the network input.
    np.testing.assert_array_equal(game.legal(state), legal)
    assert game.encode(state).shape == (df.height, *game.obs_shape)
    # Policy: a distribution over legal actions (root visit counts / simulations).
    assert (policy[~legal] == 0).all()
    np.testing.assert_allclose(policy.sum(axis=1), 1.0, rtol=1e-6)
    sims = PARAMS.mcts.simulations
    np.testing.assert_allclose(policy * sims, np.round(policy * sims), atol=1e-5)
    # The action played is legal; provenance columns.
    actions = df["action"].to_numpy()
    assert legal[np.arange(df.height), actions].all()
    assert (df["generation"] == GENERATION).all() and (df["model_id"] == ckpt.model_id).all()

    discount = PARAMS.mcts.discount
    terminal_kinds = set()
    for g in games.iter_rows(named=True):
        rows = df.filter(pl.col("game") == g["game"]).sort("move")
        n = rows.height
        assert n == g["steps"] and rows["move"].to_list() == list(range(n))
        r = rows["reward"].to_numpy().astype(np.float64)
        assert g["score"] == pytest.approx(r.sum(), abs=1e-5)
        np.testing.assert_allclose(rows["score"].to_numpy(), np.concatenate([[0.0], np.cumsum(r)[:-1]]),
                                   atol=1e-5)
        # Replaying the recorded actions from the game's seed reproduces every state and reward.
        s = game.initial(np.array([g["seed"]]))
        for t, (st, a) in enumerate(zip(rows["state"].to_numpy(), rows["action"].to_numpy())):
            np.testing.assert_array_equal(st, s[0])
            step = game.step(s, np.array([a]))
            assert np.float32(step.reward[0]) == np.float32(r[t])
            s = step.states
        assert bool(game.terminal(s)[0]) == g["terminal"]
        assert g["terminal"] or n == PARAMS.selfplay.max_moves
        terminal_kinds.add(g["terminal"])
        # Value targets: 3-step returns bootstrapped from the search value 3 moves later; past the
        # end nothing (an ended game) or the last position's search value (a cut game, whose own
        # target is that value).
        v = rows["root_value"].to_numpy().astype(np.float64)
        n_step = PARAMS.selfplay.td_steps
        z = np.zeros(n)
        for t in range(n):
            if not g["terminal"] and t == n - 1:
                z[t] = v[t]
                continue
            last = n if g["terminal"] else n - 1  # rewards that count: r[t:last]
            k = min(n_step, last - t)
            z[t] = sum(discount**i * r[t + i] for i in range(k))
            if t + k < last or not g["terminal"]:
                z[t] += discount**k * v[t + k]
        np.testing.assert_allclose(rows["value_target"].to_numpy(), z, rtol=1e-5, atol=1e-6)
    assert terminal_kinds == {True, False}, "the setup should produce both ended and cut games"


def test_games_sidecar(setup):
    games = games_of(setup["out"])
    assert {"game", "seed", "score", "steps", "terminal", "lines", "cleared", "outcome", "generation",
            "model_id"} <= set(games.columns)
    assert sorted(games["game"].to_list()) == list(range(PARAMS.selfplay.games))
    assert games["seed"].n_unique() == PARAMS.selfplay.games
    assert (games["generation"] == GENERATION).all()
    assert (games["model_id"] == setup["ckpt"].model_id).all()
    assert (games["outcome"] == 0).all()  # single-player
    # Shard i holds a contiguous block of games, in both files.
    for i in range(2):
        g = pl.read_parquet(layout.games_path(setup["out"], i))["game"].to_list()
        p = pl.read_parquet(layout.shard_path(setup["out"], i))["game"].unique().sort().to_list()
        assert g == p == list(range(g[0], g[0] + len(g)))


def test_read_positions_refuses_another_configuration(setup):
    paths = layout.shard_paths(setup["out"])
    with pytest.raises(TriError, match="configuration") as info:
        read_positions(paths, TriangleGame())
    assert str(paths[0]) in str(info.value)
    assert positions_of(setup["out"], setup["game"]).height > 0  # its own config reads fine


def test_read_positions_refuses_a_file_that_is_not_a_shard(setup, tmp_path):
    bad = tmp_path / "shard-000.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(TriError, match="not a readable Parquet"):
        read_positions([bad], setup["game"])
    pl.DataFrame({"x": [1]}).write_parquet(tmp_path / "plain.parquet")
    with pytest.raises(TriError, match="not a tri self-play shard"):
        read_positions([tmp_path / "plain.parquet"], setup["game"])


# ---- determinism and resuming -------------------------------------------------------------------


def test_same_seed_same_shards(setup, tmp_path):
    again = tmp_path / "again"
    result = run(PARAMS, setup["model"], again, runtime=ONE)
    assert result.games == PARAMS.selfplay.games
    game = setup["game"]
    assert positions_of(again, game).equals(positions_of(setup["out"], game))
    assert games_of(again).equals(games_of(setup["out"]))
    assert file_bytes(again) == file_bytes(setup["out"])


def test_different_seed_different_games(setup, tmp_path):
    params = PARAMS.model_copy(update={"selfplay": PARAMS.selfplay.model_copy(update={"seed": 1})})
    other = tmp_path / "other"
    run(params, setup["model"], other, runtime=ONE)
    a, b = games_of(setup["out"]), games_of(other)
    assert set(a["seed"].to_list()).isdisjoint(b["seed"].to_list())
    pa_, pb = positions_of(setup["out"], setup["game"]), positions_of(other, setup["game"])
    assert not pa_.equals(pb)
    assert not np.array_equal(pa_["state"].to_numpy()[:1], pb["state"].to_numpy()[:1])


def test_rerun_skips_complete_shards_and_replays_changed_ones(setup, tmp_path):
    folder = tmp_path / "resume"
    shutil.copytree(setup["out"], folder)
    before = file_bytes(folder)
    result = run(PARAMS, setup["model"], folder, runtime=ONE)
    # Nothing played; the totals are read back from the files (a resumed generation reports them).
    games = games_of(folder)
    assert result.played == 0 and np.isnan(result.positions_per_second)
    assert result.games == games.height and result.mean_score == pytest.approx(games["score"].mean())
    assert result.positions == positions_of(folder, setup["game"]).height
    assert file_bytes(folder) == before
    # An interrupted run: one shard's positions file is missing -> only that shard is played,
    # and it comes out the same.
    layout.shard_path(folder, 1).unlink()
    result = run(PARAMS, setup["model"], folder, runtime=ONE)
    assert result.played == 3 and result.games == games.height and result.positions_per_second > 0
    assert file_bytes(folder) == before
    # Other search params: the shards no longer match their inputs and are played again.
    changed = PARAMS.model_copy(update={"mcts": PARAMS.mcts.model_copy(update={"c_puct": 2.0})})
    result = run(changed, setup["model"], folder, runtime=ONE)
    assert result.games == PARAMS.selfplay.games
    assert file_bytes(folder) != before


def test_workers_two_gives_the_same_shards(setup, tmp_path):
    """Process pool (spawn): each shard is played in its own process, with the same results."""
    out = tmp_path / "pool"
    result = run(PARAMS, setup["model"], out, runtime=Runtime(workers=2, device="cpu"))
    assert result.games == PARAMS.selfplay.games
    assert positions_of(out, setup["game"]).equals(positions_of(setup["out"], setup["game"]))
    assert file_bytes(out) == file_bytes(setup["out"])


def test_run_twice_in_one_process(setup, tmp_path):
    """In-process runs leave torch's thread settings as they found them and can repeat."""
    threads = torch.get_num_threads()
    for folder in ("first", "second"):
        run(PARAMS, setup["model"], tmp_path / folder, runtime=ONE)
    assert torch.get_num_threads() == threads
    assert file_bytes(tmp_path / "first") == file_bytes(tmp_path / "second")


def test_n_step_value_targets_by_hand():
    from tri.episodes import value_targets

    r = np.array([1.0, 2.0, 4.0, 8.0])
    v = np.array([10.0, 20.0, 30.0, 40.0])
    # Ended game, 2 steps, discount 0.5: z_t = r_t + 0.5 r_{t+1} + 0.25 v_{t+2}, nothing past the end.
    np.testing.assert_allclose(value_targets(r, v, True, 0.5, False, 2),
                               [1 + 1 + 0.25 * 30, 2 + 2 + 0.25 * 40, 4 + 4, 8])
    # Cut game: the last position is its own search value, and the others bootstrap from it.
    np.testing.assert_allclose(value_targets(r, v, False, 0.5, False, 2),
                               [1 + 1 + 0.25 * 30, 2 + 2 + 0.25 * 40, 4 + 0.5 * 40, 40])
    # td_steps 0 is the full discounted return.
    np.testing.assert_allclose(value_targets(r, v, True, 0.5, False, 0), [1 + 1 + 1 + 1, 2 + 2 + 2, 4 + 4, 8])


# ---- what fits in memory ------------------------------------------------------------------------


def measure_search_bytes(gumbel: bool, leaves: int) -> tuple[int, int]:
    """``(peak, estimate)``: what tracemalloc sees numpy and Python allocate in one search, and
    :func:`tri.search.search_bytes`. Run in a fresh process (see the test): tracemalloc counts
    every thread's allocations, and threads earlier tests left behind (Prefect's, servers')
    once added 12% to the peak."""
    import tracemalloc

    from tri.gumbel import considered_visits
    from tri.search import search, search_bytes

    game = make_game(GameParams(name="tictactoe"))

    def uniform(states):
        legal = game.legal(states)
        return (legal / legal.sum(axis=1, keepdims=True)).astype(np.float32), legal, np.zeros(len(states), np.float32)

    mcts = MctsParams(simulations=3000, gumbel=gumbel, gumbel_actions=4, leaves_per_step=leaves)
    roots = game.initial(np.arange(6))
    search(game, uniform, roots[:1], MctsParams(simulations=2, gumbel=gumbel, leaves_per_step=leaves),
           np.random.default_rng(0))  # compiled: the same algorithm as measured
    considered_visits.cache_clear()
    tracemalloc.start()
    try:
        search(game, uniform, roots, mcts, np.random.default_rng(0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = search_bytes(6, 3000, game.num_actions, game.state_size, leaves_per_step=leaves,
                            gumbel_actions=4 if gumbel else 0)
    return peak, estimate


@pytest.mark.parametrize("gumbel, leaves", [(False, 1), (False, 3), (True, 1)], ids=["puct", "leaves", "gumbel"])
def test_search_bytes_matches_a_measured_search(gumbel, leaves):
    """The estimate against a measured search (the Gumbel estimate may count more schedules than
    the roots need: all roots here agree)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        peak, estimate = pool.submit(measure_search_bytes, gumbel, leaves).result(timeout=300)
    assert 0.95 * peak < estimate < (1.5 if gumbel else 1.05) * peak


def test_shard_tasks_refuses_what_does_not_fit_before_any_work(setup, tmp_path, monkeypatch):
    import tri.resources
    from tri import selfplay

    monkeypatch.setattr(tri.resources, "machine_memory", lambda: 2**30)

    def no_seeds(*args):
        raise AssertionError("seeds built before the memory check")

    monkeypatch.setattr(selfplay, "game_seeds", no_seeds)
    out = tmp_path / "out"
    deep = PARAMS.model_copy(update={"mcts": PARAMS.mcts.model_copy(update={"simulations": 10_000_000})})
    with pytest.raises(TriError) as info:
        selfplay.shard_tasks(deep, setup["model"], out)
    assert str(info.value) == ("mcts.simulations: 10000000 simulations for 2 games at once need about 26.7 GiB "
                               "for the search trees, more than this machine's 1.0 GiB of memory; lower "
                               "mcts.simulations or selfplay.concurrent")
    many = PARAMS.model_copy(update={"selfplay": PARAMS.selfplay.model_copy(update={"games": 10**8})})
    with pytest.raises(TriError) as info:
        selfplay.shard_tasks(many, tmp_path / "missing.pt", out)  # refused before the checkpoint is read
    message = str(info.value)
    assert message.startswith("selfplay.games: 100000000 games in 2 shards keep up to 300,000,000 positions in "
                              "memory per shard (50,000,000 games of up to 6 moves), about ")
    assert message.endswith("use more selfplay.shards or fewer selfplay.games (or lower selfplay.max_moves)")
    assert "\n" not in message and not out.exists()
    with pytest.raises(TriError, match=r"\(3 games of up to 6 moves; 2 shards at once\).*, or TRI_WORKERS\)$"):
        monkeypatch.setattr(tri.resources, "machine_memory", lambda: 40_000)  # the trees fit
        run(PARAMS, setup["model"], out, runtime=Runtime(workers=2, device="cpu"))
    assert not out.exists()


@pytest.mark.parametrize("section, key, value, needle", [
    ("mcts", "simulations", 2_000_000_000, "mcts.simulations: 2000000000 simulations for 2 games at once"),
    ("selfplay", "games", 10**12, "selfplay.games: 1000000000000 games in 2 shards keep up to "),
], ids=["simulations", "games"])
def test_cli_selfplay_refuses_what_does_not_fit(setup, tmp_path, section, key, value, needle):
    from tests.pipeline_fixtures import assert_clean_error, tri_cli, with_section, write_params

    params = write_params(tmp_path / "params.yaml", with_section(PARAMS, section, **{key: value}))
    proc = tri_cli("selfplay", "--model", setup["model"], "--out", tmp_path / "out", "--no-progress",
                   "--params", params, cwd=tmp_path)
    assert_clean_error(proc, 1, needle, "more than this machine's")
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("game_name, gumbel", [("triangle", True), ("tictactoe", False), ("connect4", True)])
def test_real_shards_pass_the_training_checks(setup, tmp_path, game_name, gumbel):
    """What self-play writes (visit distributions, Gumbel's policies, two-player games) is what
    ``read_positions(validate=True)`` accepts; the module's own run is checked too."""
    read_positions(layout.shard_paths(setup["out"]), setup["game"], validate=True)
    params = PARAMS.model_copy(update={
        "game": PARAMS.game.model_copy(update={"name": game_name}),
        "mcts": PARAMS.mcts.model_copy(update={"gumbel": gumbel, "simulations": 8, "leaves_per_step": 2}),
        "selfplay": PARAMS.selfplay.model_copy(update={"noise": True, "max_moves": 20})})
    game = make_game(params.game)
    model = tmp_path / "model.pt"
    save_checkpoint(Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"),
                               net_params=params.net, generation=0, model=build_model(game, params.net)), model)
    run(params, model, tmp_path / "out", runtime=ONE)
    frame = read_positions(layout.shard_paths(tmp_path / "out"), game, ["policy"], validate=True)
    assert frame.columns == ["policy"] and frame.height > 0
