"""``tri eval loss`` (:mod:`tri.evaluate.loss`): a network's losses on held-out self-play are
training's own (checked against :func:`tri.train._losses` on the same rows), afterstate rows
count for the value and not the policy, the paired interval is over games (a game's positions
are one sample), and bad input is one line. On the small triangle board's tiny networks."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from tri import layout, train
from tri.arena import mean_ci
from tri.cli import main
from tri.evaluate.loss import clustered_mean_ci, run
from tri.net import load_checkpoint, save_checkpoint

from tests.pipeline_fixtures import PARAMS, game_of, save_model, with_section, write_params, \
    write_synthetic_folder

AFTER = with_section(PARAMS, "mcts", afterstates=True)
PLAIN = with_section(PARAMS, "mcts", afterstates=False)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A folder of self-play (two shards' worth of games, targets not constant) and two networks."""
    root = tmp_path_factory.mktemp("loss")
    game = game_of()
    folder = layout.selfplay_dir(root, 3)
    episodes = write_synthetic_folder(folder, game, games=20, seed=4)
    rng = np.random.default_rng(0)
    episodes.positions.value_target[:] = rng.uniform(0, 8, size=len(episodes.positions.value_target))
    from tri.shards import write_shard
    write_shard(game, episodes, layout.shard_path(folder, 0), layout.games_path(folder, 0), generation=3,
                model_id="synthetic")
    for name, seed in (("a", 1), ("b", 2)):  # a fresh network's heads output zeros: give them some
        ckpt = save_model(root / f"{name}.pt", seed=seed)
        with torch.no_grad():
            for p in ckpt.model.parameters():
                p.add_(0.3 * torch.randn_like(p, generator=torch.Generator().manual_seed(seed)))
        save_checkpoint(ckpt, root / f"{name}.pt")
    return root, folder, episodes


@pytest.mark.parametrize("params", [PLAIN, AFTER], ids=["positions", "with-afterstates"])
def test_the_losses_are_trainings_own(project, params):
    root, folder, episodes = project
    game = game_of()
    result = run(params, root / "a.pt", [folder])
    window, *_, added = train.load_window(game, [folder], afterstates=params.mcts.afterstates)
    assert result.positions == len(window["state"]) == len(episodes.positions.value_target) + added
    assert result.policy_positions == len(episodes.positions.value_target) and result.games == 20
    assert (added > 0) == params.mcts.afterstates
    net = load_checkpoint(root / "a.pt", game).model.eval()
    batch = train._minibatch(game, [], window, np.arange(len(window["state"])), np.random.default_rng(0))
    tp = params.train.model_copy(update={"precision": "float32"})
    with torch.no_grad():
        _, policy, value = train._losses(net, game, tp, batch, "cpu")
    assert result.policy == pytest.approx(float(policy), rel=1e-5)
    assert result.value == pytest.approx(float(value), rel=1e-5)
    assert result.baseline is None and result.value_diff is None
    # The value error: the search's value (the distribution's expectation) against the target, squared.
    with torch.no_grad():
        _, out = net(torch.from_numpy(batch["x"]))
        values = net.value(out).double().numpy()
    assert result.value_error == pytest.approx(float(((values - window["value_target"]) ** 2).mean()), rel=1e-5)


def test_a_network_against_itself_differs_by_nothing_and_another_by_its_means(project):
    root, folder, _ = project
    same = run(AFTER, root / "a.pt", [folder], root / "a.pt")
    assert (same.policy_diff, same.policy_low, same.policy_high) == (0.0, 0.0, 0.0)
    assert (same.value_diff, same.value_low, same.value_high) == (0.0, 0.0, 0.0)
    other = run(AFTER, root / "a.pt", [folder], root / "b.pt")
    assert other.value_diff == pytest.approx(other.value - other.baseline_value, rel=1e-9)
    assert other.policy_diff == pytest.approx(other.policy - other.baseline_policy, rel=1e-9)
    assert other.value_low < other.value_diff < other.value_high
    assert (same.value_error_diff, same.value_error_low, same.value_error_high) == (0.0, 0.0, 0.0)
    assert other.value_error_diff == pytest.approx(other.value_error - other.baseline_value_error, rel=1e-9)
    assert other.value_error_low < other.value_error_diff < other.value_error_high


def test_the_interval_counts_games_not_positions():
    rng = np.random.default_rng(3)
    per_game = rng.normal(size=40)
    one_row_each = clustered_mean_ci(per_game, np.arange(40))
    np.testing.assert_allclose(one_row_each, mean_ci(per_game))  # one row a game: the plain t interval
    repeated = clustered_mean_ci(np.repeat(per_game, 5), np.repeat(np.arange(40), 5))
    np.testing.assert_allclose(repeated, one_row_each)  # five copies of a game's row are not five samples
    sizes = rng.integers(1, 9, size=40)
    values, games = np.repeat(per_game, sizes), np.repeat(np.arange(40), sizes)
    mean, low, high = clustered_mean_ci(values, games)
    assert mean == pytest.approx(values.mean()) and low < mean < high  # the positions' mean, weighted so


def test_the_command_prints_and_writes_and_refuses_bad_input_in_one_line(project, tmp_path):
    root, folder, _ = project
    params = write_params(tmp_path / "params.yaml", AFTER)
    out = tmp_path / "loss.json"
    ok = CliRunner().invoke(main, ["eval", "loss", str(root / "a.pt"), "--baseline", str(root / "b.pt"),
                                   "--data", str(folder), "--params", str(params), "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "held-out loss on" in ok.output and "paired difference network - baseline" in ok.output
    assert "value error" in ok.output
    assert json.loads(out.read_text())["games"] == 20
    other_game = tmp_path / "c4.pt"
    save_model(other_game, with_section(PARAMS, "game", name="connect4"))
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, words in ((["eval", "loss", str(other_game), "--data", str(folder)], "checkpoint"),
                        (["eval", "loss", str(root / "a.pt"), "--data", str(empty)], "no shards found"),
                        (["eval", "loss", str(tmp_path / "missing.pt"), "--data", str(folder)], "file not found"),
                        (["eval", "loss", "champion:connect4", "--data", str(folder)], "plays connect4"),
                        # the shipped champion by name, refused for its rules (these tests' board is smaller)
                        (["eval", "loss", str(root / "a.pt"), "--baseline", "champion", "--data", str(folder)],
                         "champions/triangle.pt: it is for a different triangle configuration")):
        bad = CliRunner().invoke(main, [*args, "--params", str(params)])
        assert bad.exit_code != 0 and words in bad.output, bad.output
        assert "Traceback" not in bad.output and len(bad.output.strip().splitlines()) == 1, bad.output
