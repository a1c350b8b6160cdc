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
from tri.net import load_checkpoint, make_evaluator

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
    result = train.run(TRAIN, model, [data], out, metrics=metrics, losses=losses, progress=False)
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
                            "policy_loss", "value_loss", "model_id"}
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
    result = train.run(TRAIN, setup["model"], [setup["data"]], out, losses=losses, progress=False)
    assert out.read_bytes() == setup["out"].read_bytes()
    assert losses.read_bytes() == setup["losses"].read_bytes()
    assert result.model_id == setup["result"].model_id
    # Another training seed gives another candidate.
    other = with_section(TRAIN, "train", seed=1)
    train.run(other, setup["model"], [setup["data"]], tmp_path / "other.pt", progress=False)
    assert (tmp_path / "other.pt").read_bytes() != out.read_bytes()


def test_generation_window_and_continued_optimizer(setup, tmp_path):
    """Training the candidate again on a two-folder window: the given generation, the window's
    sizes, steps from the newest folder only, and the optimizer continues counting."""
    game = setup["game"]
    newer = tmp_path / "gen-0002"
    new_episodes = write_synthetic_folder(newer, game, games=6, seed=1, value=VALUE)
    params = with_section(TRAIN, "train", samples_per_position=2.0)
    out = tmp_path / "next.pt"
    result = train.run(params, setup["out"], [setup["data"], newer], out, generation=10, progress=False)
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
    from tri.games.triangle import TriangleGame

    other = tmp_path / "other"
    write_synthetic_folder(other, TriangleGame(OTHER_BOARD))
    with pytest.raises(TriError, match="configuration") as info:
        train.run(TRAIN, setup["model"], [setup["data"], other], tmp_path / "c.pt", progress=False)
    assert str(other) in str(info.value)
    assert not (tmp_path / "c.pt").exists()


def test_refuses_missing_data(setup, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TriError, match="no shards") as info:
        train.run(TRAIN, setup["model"], [setup["data"], empty], tmp_path / "c.pt", progress=False)
    assert str(empty) in str(info.value)
    with pytest.raises(TriError):
        train.run(TRAIN, setup["model"], [], tmp_path / "c.pt", progress=False)
    with pytest.raises(TriError, match="not found"):
        train.run(TRAIN, tmp_path / "missing.pt", [setup["data"]], tmp_path / "c.pt", progress=False)
    assert not (tmp_path / "c.pt").exists()


def test_cli_missing_model(setup, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_params(tmp_path / "params.yaml", TRAIN)
    shutil.copytree(setup["data"], tmp_path / "data")
    proc = tri_cli("train", "--model", "nope.pt", "--data", "data", "--out", "c.pt", "--no-progress",
                   "--params", "params.yaml", cwd=tmp_path)
    assert_clean_error(proc, 1, "nope.pt", "not found")
    assert not (tmp_path / "c.pt").exists()
