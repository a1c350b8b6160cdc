"""Playout cap randomisation (``selfplay.full_fraction``, ``fast_simulations``): each self-play
move is searched in full or fast by a coin, only the full searches' policies are training
targets, and shards say which (the ``policy_target`` column, absent without caps)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from tri import layout
from tri.agents import MctsAgent, PlayoutCapAgent
from tri.config import GameParams, MctsParams, NetParams, Params, Runtime, SelfplayParams
from tri.errors import TriError
from tri.evaluator import make_evaluator
from tri.games import make_game
from tri.net import Checkpoint, build_model, save_checkpoint
from tri.selfplay import run, shard_tasks
from tri.shards import read_positions
from tri.train import load_window, row_losses

from tests.test_selfplay import SMALL_BOARD

PARAMS = Params(game=GameParams(triangle=SMALL_BOARD), net=NetParams(channels=8, blocks=1, value_hidden=16),
                mcts=MctsParams(simulations=8),  # Gumbel, the recipe's search
                selfplay=SelfplayParams(games=8, shards=2, concurrent=4, max_moves=24, noise=True, td_steps=3,
                                         full_fraction=0.25, fast_simulations=2))
ONE = Runtime(workers=1, device="cpu")


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    """A network and one self-play run of it with playout caps."""
    root = tmp_path_factory.mktemp("caps")
    game = make_game(PARAMS.game)
    ckpt = Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"), net_params=PARAMS.net,
                      generation=1, model=build_model(game, PARAMS.net))
    model = root / "model.pt"
    save_checkpoint(ckpt, model)
    out = layout.selfplay_dir(root, 1)
    run(PARAMS, model, out, runtime=ONE)
    return {"root": root, "game": game, "ckpt": ckpt, "model": model, "out": out}


def test_each_game_is_searched_in_full_or_fast_as_its_coin_says(capped):
    game, ckpt = capped["game"], capped["ckpt"]
    evaluate = make_evaluator(ckpt.model, game, fast=True)
    states = game.initial(np.arange(16, dtype=np.int64) + 100)
    moves = np.zeros(16, np.int64)

    def agents(seed: int):
        full = MctsAgent(game, evaluate, PARAMS.mcts, np.random.default_rng([seed, 1]), noise=True,
                         temperature=1.0, temperature_moves=0)
        fast = MctsAgent(game, evaluate, PARAMS.mcts, np.random.default_rng([seed, 2]), noise=False,
                         temperature=1.0, temperature_moves=0, simulations=2)
        return full, fast

    full, fast = agents(0)
    decision = PlayoutCapAgent(full, fast, 0.5, np.random.default_rng(9)).act(states, moves)
    coins = np.random.default_rng(9).random(16) < 0.5
    assert 0 < coins.sum() < 16
    np.testing.assert_array_equal(decision.policy_target, coins)
    full, fast = agents(0)  # the same streams again, each on its own rows
    for agent, rows in ((full, coins), (fast, ~coins)):
        alone = agent.act(states[rows], moves[rows])
        np.testing.assert_array_equal(decision.actions[rows], alone.actions)
        np.testing.assert_array_equal(decision.policy[rows], alone.policy)
        np.testing.assert_array_equal(decision.value[rows], alone.value)
    # The two searches differ on these rows, so the routing above is not a coincidence.
    assert not np.array_equal(agents(0)[1].act(states, moves).policy, agents(0)[0].act(states, moves).policy)


def test_shards_mark_the_full_searches_and_training_takes_policy_from_them_only(capped):
    game, out = capped["game"], capped["out"]
    frame = read_positions(layout.shard_paths(out), game, ["legal", "policy_target"], validate=True)
    target = frame["policy_target"].to_numpy()
    n = target.size
    # A quarter of the moves in full: within five standard deviations of n / 4.
    assert abs(target.sum() - n / 4) < 5 * np.sqrt(n * 0.25 * 0.75) and 0 < target.sum() < n
    data, new, *_ = load_window(game, [out])
    assert new == n
    legal = frame["legal"].to_numpy()
    np.testing.assert_array_equal(data["legal"][target], legal[target])
    assert not data["legal"][~target].any()  # no policy target: skipped by the policy loss
    assert legal[~target].any(axis=1).all()  # though the positions had legal moves
    # Training's policy loss is the mean over the full searches' rows alone: the fast rows add nothing.
    net = capped["ckpt"].model
    with torch.no_grad():
        logits, value, _ = net.forward_all(torch.from_numpy(game.encode(data["state"])))
        policy_rows, _ = row_losses(game, net.params, logits, value, torch.tensor(data["legal"]),
                                    torch.tensor(data["policy"]), torch.tensor(data["value_target"]))
    assert (policy_rows[torch.from_numpy(~target)] == 0).all() and policy_rows[torch.from_numpy(target)].sum() > 0


def test_without_caps_shards_have_no_column_and_read_as_all_targets(capped, tmp_path):
    params = PARAMS.model_copy(update={"selfplay": PARAMS.selfplay.model_copy(update={"full_fraction": 1.0})})
    run(params, capped["model"], tmp_path / "out", runtime=ONE)
    paths = layout.shard_paths(tmp_path / "out")
    assert "policy_target" not in pq.read_schema(paths[0]).names
    frame = read_positions(paths, capped["game"], ["policy_target"], validate=True)
    assert frame.height > 0 and frame["policy_target"].all()
    data, *_ = load_window(capped["game"], [tmp_path / "out"])
    assert data["legal"].any(axis=1).all()


@pytest.mark.parametrize("change, needle", [
    (lambda t: t.set_column(t.schema.get_field_index("policy_target"), "policy_target",
                            pa.array(np.ones(t.num_rows, np.int8))), "column policy_target holds Int8 values, not Boolean"),
    (lambda t: t.set_column(t.schema.get_field_index("policy_target"), "policy_target",
                            pa.array([None] + [True] * (t.num_rows - 1), pa.bool_())),
     "column policy_target, row 0: missing value"),
    (lambda t: t.drop(["legal"]), "no column legal"),
])
def test_a_damaged_shard_is_a_one_line_error(capped, tmp_path, change, needle):
    path = tmp_path / "shard-000.parquet"
    source = layout.shard_paths(capped["out"])[0]
    table = pq.read_table(source)
    pq.write_table(change(table).replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(TriError) as info:
        read_positions([path], capped["game"], ["legal", "policy_target"], validate=True)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_a_fast_search_larger_than_the_full_one_is_checked_for_memory(capped, tmp_path, monkeypatch):
    import tri.resources

    monkeypatch.setattr(tri.resources, "machine_memory", lambda: 2**30)
    deep = PARAMS.model_copy(update={"selfplay": PARAMS.selfplay.model_copy(update={"fast_simulations": 10_000_000})})
    with pytest.raises(TriError) as info:
        shard_tasks(deep, capped["model"], tmp_path / "out")
    assert str(info.value).startswith("selfplay.fast_simulations: 10000000 simulations for 4 games at once need")
    assert str(info.value).endswith("lower selfplay.fast_simulations or selfplay.concurrent")
