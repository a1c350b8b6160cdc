"""Training on a tiny synthetic dataset with fixed, learnable targets (policy: the highest legal
action, one-hot; value: a constant): the loss falls and the network learns both targets; the
candidate checkpoint, its provenance and optimizer state; the metrics and losses files;
determinism; refusing bad data; and the ``tri train`` command's error for a missing model."""

from __future__ import annotations

import csv
import json
import math
import shutil

import numpy as np
import pytest

from tri import layout, train
from tri.errors import TriError
from tri.evaluator import make_evaluator
from tri.net import load_checkpoint

from tests.pipeline_fixtures import (OTHER_BOARD, PARAMS, assert_clean_error, game_of, save_model, tri_cli,
                                     with_section, write_params, write_synthetic_folder)

VALUE = 3.0
TRAIN = with_section(PARAMS, "train", samples_per_position=20.0, max_steps=100)
PARENT_GENERATION = 3


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A generation-3 model, one synthetic self-play folder, and one training run on it."""
    root = tmp_path_factory.mktemp("train")
    game = game_of()
    model = root / "models" / "best.pt"
    parent = save_model(model, generation=PARENT_GENERATION, provenance={"created_by": "test"})
    data = layout.selfplay_dir(root, 1)
    episodes = write_synthetic_folder(data, game, value=VALUE)
    model_bytes = model.read_bytes()
    out = root / "candidate.pt"
    metrics, losses = root / "train" / "metrics.json", root / "train" / "losses.csv"
    result = train.run(TRAIN, model, [data], out, metrics=metrics, losses=losses)
    return {"root": root, "game": game, "model": model, "parent": parent, "data": data, "episodes": episodes,
            "out": out, "metrics": metrics, "losses": losses, "result": result, "model_bytes": model_bytes}


def read_losses(path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_loss_falls(setup):
    rows = read_losses(setup["losses"])
    loss = np.array([float(r["loss"]) for r in rows])
    tenth = len(loss) // 10
    first, last = loss[:tenth].mean(), loss[-tenth:].mean()
    assert last < 0.25 * first, (first, last)
    for name in ("policy_loss", "value_loss"):
        part = np.array([float(r[name]) for r in rows])
        assert part[-tenth:].mean() < 0.5 * part[:tenth].mean(), name


def test_the_network_learns_the_targets(setup):
    game, positions = setup["game"], setup["episodes"].positions
    ckpt = load_checkpoint(setup["out"], game)
    priors, legal, values = make_evaluator(ckpt.model, game)(positions.state)
    highest = legal.shape[1] - 1 - legal[:, ::-1].argmax(axis=1)
    accuracy = (priors.argmax(axis=1) == highest).mean()
    assert accuracy > 0.9
    assert abs(float(np.median(values)) - VALUE) < 0.5
    # The untrained parent does neither.
    priors0, _, values0 = make_evaluator(load_checkpoint(setup["model"], game).model, game)(positions.state)
    assert (priors0.argmax(axis=1) == highest).mean() < 0.5
    assert abs(float(np.median(values0)) - VALUE) > 0.5


def test_losses_file(setup):
    rows = read_losses(setup["losses"])
    assert setup["losses"].read_text().splitlines()[0] == "step,lr,loss,policy_loss,value_loss"
    steps = setup["result"].steps
    positions = len(setup["episodes"].positions)
    assert steps == min(TRAIN.train.max_steps,
                        math.ceil(positions * TRAIN.train.samples_per_position / TRAIN.train.batch_size))
    assert [int(r["step"]) for r in rows] == list(range(steps))
    lr = np.array([float(r["lr"]) for r in rows])
    tp = TRAIN.train
    warm = min(tp.warmup_steps, steps // 10)
    assert lr[0] == pytest.approx(tp.lr / warm, rel=1e-4)
    assert lr.max() == pytest.approx(tp.lr, rel=1e-4) and np.argmax(lr) == warm - 1
    assert (np.diff(lr[warm:]) <= 1e-12).all()  # cosine decay after the warm-up
    assert tp.lr_min <= lr[-1] < 0.1 * tp.lr
    for r in rows:
        total = float(r["policy_loss"]) + tp.value_weight * float(r["value_loss"])
        assert float(r["loss"]) == pytest.approx(total, abs=2e-6)


def test_candidate_checkpoint(setup):
    game, parent = setup["game"], setup["parent"]
    ckpt = load_checkpoint(setup["out"], game)  # of this game and config
    assert ckpt.generation == PARENT_GENERATION + 1 == setup["result"].generation
    assert ckpt.net_params == parent.net_params
    assert ckpt.model_id == setup["result"].model_id != parent.model_id
    prov = ckpt.provenance
    assert prov["parent_model_id"]  # its value: test_provenance_names_the_parent_model
    assert prov["parent_generation"] == str(PARENT_GENERATION)
    assert prov["train_steps"] == str(setup["result"].steps)
    assert prov["data"] == setup["data"].name  # folder names: no machine-specific paths in the bytes
    # The optimizer state travels: one Adam state per parameter, with the step count.
    opt = ckpt.optimizer
    assert opt and opt["state"] and opt["param_groups"]
    n_params = sum(1 for _ in ckpt.model.parameters())
    assert len(opt["state"]) == n_params
    assert all(float(s["step"]) == setup["result"].steps for s in opt["state"].values())
    # The parent's file is untouched, and no temporaries are left beside the candidate.
    assert setup["model"].read_bytes() == setup["model_bytes"]
    assert not [p for p in setup["out"].parent.iterdir() if p.name.startswith(".")]


def test_provenance_names_the_parent_model(setup):
    ckpt = load_checkpoint(setup["out"], setup["game"])
    assert ckpt.provenance["parent_model_id"] == setup["parent"].model_id
    assert ckpt.provenance["parent_model_id"] != ckpt.model_id


def test_metrics_file(setup):
    metrics = json.loads(setup["metrics"].read_text())
    # No wall time in the file: a rerun must write the same bytes (dvc repro).
    assert set(metrics) == {"generation", "steps", "window_positions", "new_positions", "loss",
                            "policy_loss", "value_loss", "model_id", "reanalysed_positions", "reanalysed_change",
                            "afterstate_positions"}
    assert metrics["reanalysed_positions"] == 0  # train.reanalyse is off (tests/test_reanalyse.py)
    result = setup["result"]
    positions = len(setup["episodes"].positions)
    assert metrics["generation"] == PARENT_GENERATION + 1 and metrics["steps"] == result.steps
    assert metrics["window_positions"] == metrics["new_positions"] == positions
    assert metrics["model_id"] == load_checkpoint(setup["out"]).model_id
    assert result.seconds > 0
    rows = read_losses(setup["losses"])
    tail = rows[-max(1, len(rows) // 10):]
    for name in ("loss", "policy_loss", "value_loss"):
        assert metrics[name] == pytest.approx(np.mean([float(r[name]) for r in tail]), abs=1e-5)


def test_same_inputs_same_bytes(setup, tmp_path):
    out, losses = tmp_path / "again.pt", tmp_path / "losses.csv"
    result = train.run(TRAIN, setup["model"], [setup["data"]], out, losses=losses)
    assert out.read_bytes() == setup["out"].read_bytes()
    assert losses.read_bytes() == setup["losses"].read_bytes()
    assert result.model_id == setup["result"].model_id
    # Another training seed gives another candidate.
    other = with_section(TRAIN, "train", seed=1)
    train.run(other, setup["model"], [setup["data"]], tmp_path / "other.pt")
    assert (tmp_path / "other.pt").read_bytes() != out.read_bytes()


def test_generation_window_and_continued_optimizer(setup, tmp_path):
    """Training the candidate again on a two-folder window: the given generation, the window's
    sizes, steps from the newest folder only, and the optimizer continues counting."""
    game = setup["game"]
    newer = tmp_path / "gen-0002"
    new_episodes = write_synthetic_folder(newer, game, games=6, seed=1, value=VALUE)
    params = with_section(TRAIN, "train", samples_per_position=2.0)
    out = tmp_path / "next.pt"
    result = train.run(params, setup["out"], [setup["data"], newer], out, generation=10)
    new = len(new_episodes.positions)
    assert result.generation == 10 and load_checkpoint(out).generation == 10
    assert result.new_positions == new
    assert result.window_positions == new + len(setup["episodes"].positions)
    assert result.steps == math.ceil(new * 2.0 / params.train.batch_size) < setup["result"].steps
    ckpt = load_checkpoint(out)
    assert ckpt.provenance["parent_generation"] == str(PARENT_GENERATION + 1)
    first = setup["result"].steps
    assert all(float(s["step"]) == first + result.steps for s in ckpt.optimizer["state"].values())


def test_refuses_a_shard_of_another_configuration(setup, tmp_path):
    from tri.games.triangle.game import TriangleGame

    other = tmp_path / "other"
    write_synthetic_folder(other, TriangleGame(OTHER_BOARD))
    with pytest.raises(TriError, match="configuration") as info:
        train.run(TRAIN, setup["model"], [setup["data"], other], tmp_path / "c.pt")
    assert str(other) in str(info.value)
    assert not (tmp_path / "c.pt").exists()


def test_refuses_missing_data(setup, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TriError, match="no shards") as info:
        train.run(TRAIN, setup["model"], [setup["data"], empty], tmp_path / "c.pt")
    assert str(empty) in str(info.value)
    with pytest.raises(TriError):
        train.run(TRAIN, setup["model"], [], tmp_path / "c.pt")
    with pytest.raises(TriError, match="not found"):
        train.run(TRAIN, tmp_path / "missing.pt", [setup["data"]], tmp_path / "c.pt")
    assert not (tmp_path / "c.pt").exists()


def test_cli_missing_model(setup, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_params(tmp_path / "params.yaml", TRAIN)
    shutil.copytree(setup["data"], tmp_path / "data")
    proc = tri_cli("train", "--model", "nope.pt", "--data", "data", "--out", "c.pt", "--no-progress",
                   "--params", "params.yaml", cwd=tmp_path)
    assert_clean_error(proc, 1, "nope.pt", "not found")
    assert not (tmp_path / "c.pt").exists()


# ---- refusing what does not fit, and damaged shards ---------------------------------------------------


def test_refuses_a_window_that_does_not_fit(setup, tmp_path, monkeypatch):
    import tri.resources

    monkeypatch.setattr(tri.resources, "machine_memory", lambda: 100_000)
    rows = len(setup["episodes"].positions)
    with pytest.raises(TriError) as info:
        train.run(TRAIN, setup["model"], [setup["data"]], tmp_path / "c.pt")
    message = str(info.value)
    assert message.startswith(f"train.window: 1 self-play folder holds {rows:,} positions, about ")
    assert message.endswith("once loaded, more than this machine's 97.7 KiB of memory; train on fewer folders "
                            "(lower train.window) or smaller ones (lower selfplay.games)")
    assert not (tmp_path / "c.pt").exists()


def corrupt_shard(folder, column: str, change) -> None:
    """Rewrite the folder's shard with ``change(values)`` applied in place to one column (as
    numpy), keeping the file's metadata (so only the validation can notice)."""
    import polars as pl
    import pyarrow.parquet as pq

    path = layout.shard_path(folder, 0)
    table = pq.read_table(path)
    frame = pl.from_arrow(table)
    values = frame[column].to_numpy().copy()
    change(values)
    frame = frame.with_columns(pl.Series(column, values, dtype=frame[column].dtype))
    pq.write_table(frame.to_arrow().replace_schema_metadata(table.schema.metadata), path)


ROW = 5


def illegal_action(episodes) -> int:
    return int(np.flatnonzero(~episodes.positions.legal[ROW])[0])


def move_policy_to(action):
    def change(policy):
        policy[ROW] = 0
        policy[ROW, action] = 1
    return change


def set_row(value):
    def change(values):
        values[ROW] = value
    return change


def scale_policy(factor):
    def change(policy):
        policy[ROW] *= factor
    return change


def negative_policy(policy):
    a, b = np.flatnonzero(policy[ROW] == 0)[:2]
    policy[ROW, a], policy[ROW, b] = -0.5, 0.5


CORRUPTIONS = {  # name: (column, change(values, episodes), the problem the message names)
    "nan_value": ("value_target", lambda e: set_row(np.nan), "nan is not a finite number"),
    "inf_root_value": ("root_value", lambda e: set_row(-np.inf), "-inf is not a finite number"),
    "negative_policy": ("policy", lambda e: negative_policy, "-0.5 at action "),
    "nan_policy": ("policy", lambda e: set_row(np.nan), "nan at action 0 is not a probability"),
    "illegal_policy": ("policy", lambda e: move_policy_to(illegal_action(e)),
                       "1 on action {illegal}, which is not legal"),
    "policy_sum": ("policy", lambda e: scale_policy(0.5), "sums to 0.5, not 1"),
    "action_range": ("action", lambda e: set_row(game_of().num_actions),
                     f"{game_of().num_actions} is not an action (0-{game_of().num_actions - 1})"),
    "negative_action": ("action", lambda e: set_row(-1), "-1 is not an action"),
    "illegal_action": ("action", lambda e: set_row(illegal_action(e)),
                       "{illegal} is not legal in the row's position"),
}


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_damaged_shard_is_refused_naming_file_column_and_row(setup, tmp_path, kind):
    from tri.shards import read_positions

    folder = tmp_path / "data"
    shutil.copytree(setup["data"], folder)
    column, change, problem = CORRUPTIONS[kind]
    corrupt_shard(folder, column, change(setup["episodes"]))
    path = layout.shard_path(folder, 0)
    read_positions([path], setup["game"])  # without validation it reads
    with pytest.raises(TriError) as info:
        read_positions([path], setup["game"], ["state"], validate=True)
    problem = problem.format(illegal=illegal_action(setup["episodes"]))
    assert str(info.value).startswith(f"shard {path}: column {column}, row {ROW}: {problem}")
    assert "\n" not in str(info.value)


def test_missing_value_wrong_type_and_missing_column_are_refused(setup, tmp_path):
    import polars as pl
    import pyarrow.parquet as pq

    from tri.shards import read_positions

    path = tmp_path / "shard-000.parquet"
    table = pq.read_table(layout.shard_path(setup["data"], 0))

    def rewrite(frame: pl.DataFrame) -> None:
        pq.write_table(frame.to_arrow().replace_schema_metadata(table.schema.metadata), path)

    frame = pl.from_arrow(table)
    rewrite(frame.with_columns(action=pl.when(pl.int_range(pl.len()) == ROW).then(None).otherwise(pl.col("action"))))
    with pytest.raises(TriError, match=rf"^shard {path}: column action, row {ROW}: missing value$"):
        read_positions([path], setup["game"], validate=True)
    rewrite(frame.with_columns(pl.col("action").cast(pl.Int64)))
    with pytest.raises(TriError, match=rf"^shard {path}: column action holds Int64 values, not Int32$"):
        read_positions([path], setup["game"], validate=True)
    rewrite(frame.drop("root_value"))
    with pytest.raises(TriError, match=rf"^shard {path}: no column root_value$"):
        read_positions([path], setup["game"], ["state"], validate=True)


@pytest.mark.parametrize("kind", ["nan_value", "negative_policy", "action_range"])
def test_cli_train_on_a_damaged_shard(setup, tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    write_params(tmp_path / "params.yaml", TRAIN)
    shutil.copytree(setup["data"], tmp_path / "data")
    shutil.copy(setup["model"], tmp_path / "best.pt")
    column, change, problem = CORRUPTIONS[kind]
    corrupt_shard(tmp_path / "data", column, change(setup["episodes"]))
    proc = tri_cli("train", "--model", "best.pt", "--data", "data", "--out", "c.pt", "--no-progress",
                   "--params", "params.yaml", cwd=tmp_path)
    assert_clean_error(proc, 1, f"error: shard {layout.shard_path('data', 0)}: column {column}, row {ROW}: "
                                f"{problem}")
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "c.pt").exists()
