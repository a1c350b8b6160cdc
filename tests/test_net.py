"""The network's value transform and two-hot targets, the masked policy, and self-describing
checkpoints: round trip, refusal of damaged or foreign files (without running pickled code), and
the same through the ``tri`` command."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from tests.search.fakes import TicTacToe
from tri.cli import main as cli
from tri.config import NetParams, Params
from tri.errors import TriError
from tri.games import make_game
from tri.games.triangle.game import TriangleGame
from tri.games.triangle.rules import TriangleConfig
from tri.evaluator import make_evaluator
from tri.net import (FORMAT, FORMAT_VERSION, Checkpoint, build_model, h, h_inv, load_checkpoint,
                     masked_policy, save_checkpoint, two_hot)

SMALL = NetParams(channels=8, blocks=1, value_hidden=16)
SUPPORT = NetParams().support_max
EPS = NetParams().support_eps


# ---- value transform and two-hot targets --------------------------------------------------------


def expectation(targets: torch.Tensor) -> torch.Tensor:
    return (targets * torch.arange(targets.shape[1], dtype=targets.dtype)).sum(dim=1)


VALUES = torch.cat([torch.linspace(0, 500, 20001),
                    torch.tensor([0.005, 0.015, 0.1, 0.2, 1.0, 1.5, 7.25, 99.99, 499.99])])


def test_two_hot_is_a_distribution_on_two_neighbouring_bins():
    t = two_hot(VALUES, SUPPORT, EPS)
    assert t.shape == (VALUES.shape[0], SUPPORT + 1)
    assert (t >= 0).all()
    torch.testing.assert_close(t.sum(dim=1), torch.ones(VALUES.shape[0]))
    nonzero = (t > 0).sum(dim=1)
    assert nonzero.max() <= 2
    first = (t > 0).float().argmax(dim=1)
    last = SUPPORT - (t > 0).flip(1).float().argmax(dim=1)
    assert (last - first <= 1).all()


def test_two_hot_expectation_is_h_of_the_value():
    """The two bins share the mass so that the expectation is exactly ``h(x)`` (clipped to the
    support): values outside the support go to its ends."""
    t = two_hot(VALUES, SUPPORT, EPS)
    torch.testing.assert_close(expectation(t), h(VALUES, EPS).clamp(0, SUPPORT), rtol=0, atol=1e-5)
    ends = two_hot(torch.tensor([-5.0, 1e6]), SUPPORT, EPS)
    assert ends[0, 0] == 1 and ends[1, SUPPORT] == 1


def test_two_hot_round_trip_coarse():
    """``h_inv(E[two_hot(x)])`` gives ``x`` back, to float32 accuracy of a sort (see the strict
    version below)."""
    back = h_inv(expectation(two_hot(VALUES, SUPPORT, EPS)), EPS)
    err = (back - VALUES).abs()
    assert (err <= 5e-4 + 1e-5 * VALUES).all(), float(err.max())


def test_two_hot_round_trip_within_1e4():
    """Within 1e-4 on [0, 500], allowing float32's own resolution at the top (1e-6 relative)."""
    back = h_inv(expectation(two_hot(VALUES, SUPPORT, EPS)), EPS)
    err = (back - VALUES).abs()
    assert (err <= 1e-4 + 1e-6 * VALUES).all(), float(err.max())


@pytest.mark.parametrize("eps", [0.0, 0.001, 0.01])
def test_h_inv_inverts_h(eps):
    x = torch.cat([torch.linspace(-1000, 1000, 4001, dtype=torch.float64),
                   torch.tensor([0.0, 1e-6, -1e-6, 0.005, 12345.0], dtype=torch.float64)])
    torch.testing.assert_close(h_inv(h(x, eps), eps), x, rtol=1e-9, atol=1e-9)
    y = torch.linspace(-30, 30, 601, dtype=torch.float64)
    torch.testing.assert_close(h(h_inv(y, eps), eps), y, rtol=1e-9, atol=1e-9)
    assert (h(x.unique(), eps).diff() > 0).all()  # strictly increasing (unique() sorts)
    assert h(torch.tensor([0.0], dtype=torch.float64), eps).item() == 0.0


def test_masked_policy():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(5, 12, generator=gen) * 10
    legal = torch.rand(5, 12, generator=gen) < 0.4
    legal[0] = False  # no legal action: all zeros
    legal[1] = False
    legal[1, 7] = True  # a single legal action gets everything
    legal[2] = True
    p = masked_policy(logits, legal)
    assert (p[~legal] == 0).all()
    assert (p[0] == 0).all()
    assert p[1, 7] == 1
    torch.testing.assert_close(p[1:].sum(dim=1), torch.ones(4))
    torch.testing.assert_close(p[2], torch.softmax(logits[2], dim=0))
    # Among legal actions: the softmax of the legal logits.
    row = 3
    torch.testing.assert_close(p[row, legal[row]], torch.softmax(logits[row, legal[row]], dim=0))


# ---- checkpoints --------------------------------------------------------------------------------


def make_checkpoint(game, params: NetParams = SMALL, generation: int = 3) -> Checkpoint:
    """A small network with non-trivial batch-norm statistics and optimizer state."""
    model = build_model(game, params)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) - 0.5)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    logits, value = model(torch.from_numpy(game.encode(game.initial(np.arange(2)))))
    (logits.sum() + value.sum()).backward()
    opt.step()
    opt.zero_grad()
    model.eval()
    return Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"), net_params=params,
                      generation=generation, model=model,
                      provenance={"parent": "gen-0002", "commit": "abc123"}, optimizer=opt.state_dict())


@pytest.fixture(scope="module")
def saved(game, tmp_path_factory):
    ckpt = make_checkpoint(game)
    path = tmp_path_factory.mktemp("ckpt") / "gen-0003.pt"
    save_checkpoint(ckpt, path)
    return ckpt, path


def test_checkpoint_round_trip(game, saved):
    ckpt, path = saved
    assert os.listdir(path.parent) == [path.name]  # written atomically: no temporary left
    loaded = load_checkpoint(path, game)
    assert loaded.model_id == ckpt.model_id
    assert loaded.meta() == ckpt.meta()
    assert (loaded.game, loaded.generation, loaded.net_params) == ("triangle", 3, SMALL)
    assert loaded.provenance == {"parent": "gen-0002", "commit": "abc123"}
    assert not loaded.model.training
    # Optimizer state comes back and can be loaded into an optimizer of the loaded model.
    assert loaded.optimizer["param_groups"] == ckpt.optimizer["param_groups"]
    for k, v in ckpt.optimizer["state"].items():
        torch.testing.assert_close(loaded.optimizer["state"][k]["exp_avg"], v["exp_avg"], rtol=0, atol=0)
    torch.optim.Adam(loaded.model.parameters()).load_state_dict(loaded.optimizer)
    # Identical outputs, buffers included.
    states = game.initial(np.arange(6))
    x = torch.from_numpy(game.encode(states))
    with torch.inference_mode():
        for a, b in zip(ckpt.model(x), loaded.model(x)):
            assert torch.equal(a, b)
    pa, la, va = make_evaluator(ckpt.model, game)(states)
    pb, lb, vb = make_evaluator(loaded.model, game)(states)
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(la, lb)
    np.testing.assert_array_equal(va, vb)
    # Without a game, the checkpoint rebuilds its own.
    assert load_checkpoint(path).model_id == ckpt.model_id


def test_model_id_is_a_content_hash(game, saved):
    ckpt, _ = saved
    other = make_checkpoint(game)
    assert other.model_id == ckpt.model_id  # same seed, same updates
    with torch.no_grad():
        next(other.model.parameters()).view(-1)[0] += 1e-3
    assert other.model_id != ckpt.model_id
    assert make_checkpoint(game, SMALL.model_copy(update={"seed": 1})).model_id != ckpt.model_id


def test_build_model_leaves_the_global_generator_alone(game):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_model(game, SMALL)
    assert torch.equal(torch.rand(3), expected)


class _Payload:
    """Unpickling this object creates ``marker`` (it must never happen in ``load_checkpoint``)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _corrupt(kind: str, path: Path, valid: bytes, marker: Path) -> None:
    if kind == "truncated":
        path.write_bytes(valid[: len(valid) // 2])
    elif kind == "random":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "plain_pickle":
        with open(path, "wb") as f:
            pickle.dump({"format": FORMAT, "format_version": FORMAT_VERSION, "x": _Payload(marker)}, f)
    elif kind == "torch_pickle":
        torch.save({"format": FORMAT, "format_version": FORMAT_VERSION, "meta": _Payload(marker)}, path)
    elif kind == "not_tri":
        torch.save({"weights": torch.zeros(3)}, path)
    elif kind == "version":
        buf = io.BytesIO(valid)
        payload = torch.load(buf, weights_only=True)
        payload["format_version"] = FORMAT_VERSION + 1
        torch.save(payload, path)
    elif kind == "bad_meta":
        payload = torch.load(io.BytesIO(valid), weights_only=True)
        payload["meta"] = "{not json"
        torch.save(payload, path)
    elif kind == "bad_weights":
        payload = torch.load(io.BytesIO(valid), weights_only=True)
        payload["model"] = {k: v for i, (k, v) in enumerate(payload["model"].items()) if i}
        torch.save(payload, path)
    else:
        raise AssertionError(kind)


KINDS = ["truncated", "random", "empty", "plain_pickle", "torch_pickle", "not_tri", "version",
         "bad_meta", "bad_weights"]


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_checkpoint_raises_one_line_error(game, saved, tmp_path, kind):
    valid = saved[1].read_bytes()
    path = tmp_path / f"{kind}.pt"
    marker = tmp_path / "pickle-ran"
    _corrupt(kind, path, valid, marker)
    with pytest.raises(TriError) as info:
        load_checkpoint(path, game)
    message = str(info.value)
    assert str(path) in message
    assert "\n" not in message
    assert not marker.exists()
    with pytest.raises(TriError):
        load_checkpoint(path)  # without a game too
    assert not marker.exists()


ADVICE = ("trust", "weights_only` set to `False`", "Re-running", "file an issue", "http", "\x1b")


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("kind, reason", [
    ("torch_pickle", (r": it holds Python objects \((builtins|io)\.open\) that tri will not unpickle \(it "
                      r"loads checkpoints with weights_only=True\)")),
    ("plain_pickle", r" \(torch's weights-only loader cannot read it: Unsupported operand \d+\)"),
    ("random", r" \(torch's weights-only loader cannot read it: Unsupported operand \d+\)"),
    ("truncated", r" \(PytorchStreamReader failed reading zip archive: [^.]*\)"),
    ("empty", r" \(the file is empty\)"),
])
def test_unreadable_checkpoint_says_why_without_torchs_advice(game, saved, tmp_path, kind, reason):
    path = tmp_path / f"{kind}.pt"
    _corrupt(kind, path, saved[1].read_bytes(), tmp_path / "pickle-ran")
    with pytest.raises(TriError) as info:
        load_checkpoint(path, game)
    message = str(info.value)
    assert re.fullmatch(re.escape(f"checkpoint {path}: not a readable tri checkpoint") + reason, message), message
    assert not any(advice in message for advice in ADVICE), message


def test_shortened_reasons_end_at_a_word():
    from tri.net import _first_sentence, _shorten

    text = "the quick brown fox jumps over the lazy dog " * 10
    short = _shorten(text, 40)
    assert short == "the quick brown fox jumps over the..." and len(short) <= 40
    assert _shorten("short enough", 40) == "short enough"
    assert _first_sentence(RuntimeError("First part. Second part.\nmore")) == "First part"
    assert _first_sentence(EOFError()) == "EOFError"
    assert _first_sentence(RuntimeError("x" * 500)).endswith("...")


def test_the_pickle_payload_is_live(tmp_path):
    """The control for the two pickle cases: plain ``pickle.load`` of such a file runs the
    payload (so their passing above means ``load_checkpoint`` did not)."""
    path, marker = tmp_path / "p.pt", tmp_path / "pickle-ran"
    _corrupt("plain_pickle", path, b"", marker)
    with open(path, "rb") as f:
        pickle.load(f).get("x").close()
    assert marker.exists()


def test_missing_checkpoint(tmp_path, game):
    path = tmp_path / "nope.pt"
    with pytest.raises(TriError, match="file not found") as info:
        load_checkpoint(path, game)
    assert str(path) in str(info.value)


def _rewrite_meta(src: Path, dst: Path, change) -> None:
    payload = torch.load(src, weights_only=True)
    meta = json.loads(payload["meta"])
    change(meta)
    payload["meta"] = json.dumps(meta)
    torch.save(payload, dst)


@pytest.mark.parametrize("key", ["game", "generation"])
def test_metadata_missing_a_key_raises_trierror(game, saved, tmp_path, key):
    path = tmp_path / "meta.pt"
    _rewrite_meta(saved[1], path, lambda meta: meta.pop(key))
    with pytest.raises(TriError):
        load_checkpoint(path, game)


def test_checkpoint_of_an_unknown_game_raises_trierror_without_a_game(saved, tmp_path):
    path = tmp_path / "unknown.pt"
    _rewrite_meta(saved[1], path, lambda meta: meta.update(game="chess"))
    with pytest.raises(TriError):
        load_checkpoint(path)


def test_checkpoint_of_an_earlier_input_encoding(game, saved, tmp_path):
    """A checkpoint whose first layer reads fewer planes than this tri encodes (one saved before
    the triangle input gained its line and hole planes) names the mismatch."""
    path = tmp_path / "old.pt"
    payload = torch.load(saved[1], weights_only=True)
    payload["model"]["stem.0.weight"] = payload["model"]["stem.0.weight"][:, :32].clone()
    torch.save(payload, path)
    with pytest.raises(TriError, match=f"made for 32 input planes, but this tri encodes triangle as "
                                       f"{game.obs_shape[0]}") as info:
        load_checkpoint(path, game)
    assert "\n" not in str(info.value)


SIX_ROWS = TriangleConfig(rows=6, playable=[(2, 13), (1, 14), (0, 15), (0, 15), (1, 14), (2, 13)])


def test_checkpoint_of_another_configuration(game, tmp_path):
    small = TriangleGame(SIX_ROWS)
    path = tmp_path / "six.pt"
    save_checkpoint(make_checkpoint(small), path)
    with pytest.raises(TriError, match="configuration") as info:
        load_checkpoint(path, game)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    # It loads for its own configuration, and on its own.
    assert load_checkpoint(path, TriangleGame(SIX_ROWS)).game_config["rows"] == 6
    assert load_checkpoint(path).game_config == SIX_ROWS.model_dump(mode="json")


def test_checkpoint_of_another_game(game, tmp_path):
    ttt = TicTacToe()
    model = build_model(ttt, SMALL)
    path = tmp_path / "ttt.pt"
    save_checkpoint(Checkpoint(game=ttt.name, game_config={}, net_params=SMALL, generation=0, model=model), path)
    with pytest.raises(TriError, match="tictactoe") as info:
        load_checkpoint(path, game)
    assert str(path) in str(info.value)


# ---- through the command ------------------------------------------------------------------------


def test_cli_selfplay_with_a_corrupt_checkpoint_subprocess(tmp_path):
    model = tmp_path / "bad.pt"
    model.write_bytes(np.random.default_rng(1).bytes(1000))
    proc = subprocess.run([sys.executable, "-m", "tri.cli", "selfplay", "--model", str(model),
                           "--out", str(tmp_path / "out"), "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert str(model) in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("kind", ["truncated", "empty", "torch_pickle"])
def test_cli_selfplay_with_a_corrupt_checkpoint(saved, tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "pickle-ran"
    _corrupt(kind, tmp_path / "bad.pt", saved[1].read_bytes(), marker)
    result = CliRunner().invoke(cli, ["selfplay", "--model", "bad.pt", "--out", "out", "--no-progress"])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: checkpoint bad.pt")
    assert not marker.exists()


def test_cli_init_writes_a_generation_zero_checkpoint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("net:\n  channels: 8\n  blocks: 1\n  value_hidden: 16\n")
    runner = CliRunner()
    first = runner.invoke(cli, ["init", "--out", "models/gen-0000.pt"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(cli, ["init", "--out", "again.pt"])
    assert second.exit_code == 0, second.output
    params = Params(net=SMALL)
    game = make_game(params.game)
    a = load_checkpoint(tmp_path / "models" / "gen-0000.pt", game)
    b = load_checkpoint(tmp_path / "again.pt", game)
    assert a.generation == 0 and a.net_params == SMALL
    assert a.provenance.get("created_by") == "tri init"
    assert a.model_id == b.model_id
    assert a.model_id in first.output
    assert a.model_id == Checkpoint(game="triangle", game_config={}, net_params=SMALL, generation=0,
                                    model=build_model(game, SMALL)).model_id
    # Another net.seed, another network.
    (tmp_path / "params.yaml").write_text("net:\n  channels: 8\n  blocks: 1\n  value_hidden: 16\n  seed: 5\n")
    third = runner.invoke(cli, ["init", "--out", "seed5.pt"])
    assert third.exit_code == 0, third.output
    assert load_checkpoint(tmp_path / "seed5.pt", game).model_id != a.model_id
    # A --game that disagrees with params.yaml is a one-line error.
    bad = runner.invoke(cli, ["init", "--game", "connect4", "--out", "x.pt"])
    assert bad.exit_code == 1 and bad.stderr.startswith("error: ")
    assert not (tmp_path / "x.pt").exists()


def _random_model(name: str, spread: float):
    """``(game, a small eval-mode network)`` for ``name``'s recipe game, its weights uniform in
    ``[-spread, spread]`` and its BatchNorm statistics a trained network's (not the initial zero
    heads and unit statistics)."""
    from tri.config import recipe_params

    game = make_game(recipe_params(name).game)
    torch.manual_seed(0)
    model = build_model(game, NetParams(channels=16, blocks=2, value_hidden=16))
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-spread, spread)
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return game, model.eval()


@pytest.mark.parametrize("name", ["triangle", "connect4", "santorini", "pyrga"])
def test_inference_net_computes_what_the_model_does(name):
    """Self-play's snapshot (BatchNorm folded into the convolutions, channels-last weights) gives
    the model's policy logits and values up to float rounding, for random weights and BatchNorm
    statistics (a trained network's, not the initial zero heads), on a batch and on one
    position; and training the model afterwards leaves the snapshot as it was."""
    from tri.inference import InferenceNet

    game, model = _random_model(name, 0.3)
    fast = InferenceNet(model)
    states = game.initial(np.arange(9))
    for x in (torch.from_numpy(game.encode(states)), torch.from_numpy(game.encode(states[:1]))):
        with torch.inference_mode():
            (pa, va), (pb, vb) = model(x), fast(x)
            assert pa.abs().max() > 0.1  # not the zero heads of an initial network
            torch.testing.assert_close(pb, pa, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(fast.value(vb), model.value(va), rtol=1e-5, atol=1e-4)
    # A batch over the chunk size goes through in pieces, to the same numbers.
    with torch.inference_mode():
        x = torch.from_numpy(game.encode(states))
        for whole, parts in zip(fast(x), InferenceNet(model, chunk=4)(x)):
            assert parts.shape == whole.shape
            torch.testing.assert_close(parts, whole, rtol=1e-5, atol=1e-5)
    a = make_evaluator(model, game)(states)
    b = make_evaluator(model, game, fast=True)(states)
    np.testing.assert_allclose(b[0], a[0], rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(b[1], a[1])
    np.testing.assert_allclose(b[2], a[2], rtol=1e-4, atol=1e-4)
    before = [t.clone() for t in fast.state_dict().values()]
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    assert all(torch.equal(t, u) for t, u in zip(before, fast.state_dict().values()))


@pytest.mark.parametrize("name", ["triangle", "connect4"])
def test_bfloat16_snapshot_is_close_and_its_heads_stay_float32(name):
    """``mcts.precision: bfloat16``: the snapshot's convolutions in bfloat16 give the model's
    priors and values to within bfloat16's rounding (8 significant bits), the outputs are
    float32, and every evaluator that reads ``precision`` takes it."""
    from tri.inference import InferenceNet

    game, model = _random_model(name, 0.1)
    half = InferenceNet(model, dtype=torch.bfloat16)
    assert half.stem.weight.dtype == torch.bfloat16 and half.policy_out.weight.dtype == torch.float32
    states = game.initial(np.arange(9))
    a = make_evaluator(model, game)(states)
    b = make_evaluator(model, game, precision="bfloat16")(states)
    assert b[0].dtype == np.float32 and b[2].dtype == np.float32
    assert not np.array_equal(b[0], a[0])  # it did compute in bfloat16
    np.testing.assert_allclose(b[0], a[0], atol=0.02)
    np.testing.assert_allclose(b[2], a[2], rtol=0.05, atol=0.02)
    np.testing.assert_array_equal(b[1], a[1])


def _midgame(game, moves: int, seed: int = 0) -> np.ndarray:
    """16 positions after ``moves`` random moves each (games that ended stay at their end)."""
    from tri.games.base import sample_legal

    rng = np.random.default_rng(seed)
    states = game.initial(np.arange(16))
    for _ in range(moves):
        live = ~game.terminal(states)
        if not live.any():
            break
        step = game.step(states[live], sample_legal(game.legal(states[live]), rng))
        states[live] = step.states
    return states[~game.terminal(states)]


@pytest.mark.parametrize("name, moves", [("connect4", 9), ("tictactoe", 3), ("othello", 6), ("pyrga", 5)])
def test_symmetrize_averages_the_network_over_the_positions_images(name, moves):
    """``mcts.symmetrize``: the priors and value are the mean, over the position and its images
    under every symmetry (the board moved by ``game.transform``, not by the evaluator's plane
    mapping), of the plain evaluation, each image's priors read back on the position's actions;
    so an image of a position gets the same evaluation moved (equivariance, rotations included)."""
    game, model = _random_model(name, 0.3)
    states = _midgame(game, moves)
    plain, averaged = make_evaluator(model, game), make_evaluator(model, game, symmetrize=True)
    priors, legal, values = plain(states)
    total_p, total_v = priors.astype(np.float64), values.astype(np.float64)
    for s in game.symmetries():
        p, _, v = plain(game.transform(states, s))
        back = np.empty_like(p)
        back[:, s.actions] = p
        total_p, total_v = total_p + back, total_v + v
    n = 1 + len(game.symmetries())
    ap, al, av = averaged(states)
    np.testing.assert_array_equal(al, legal)
    np.testing.assert_allclose(ap, total_p / n, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(av, total_v / n, rtol=1e-4, atol=1e-5)
    assert np.abs(ap - priors).max() > 1e-3  # it changed something
    for s in game.symmetries():
        mp, _, mv = averaged(game.transform(states, s))
        np.testing.assert_allclose(mp, ap[:, s.actions], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(mv, av, rtol=1e-4, atol=1e-5)


def test_distinct_rows_keeps_first_appearances_in_order_and_maps_every_row_back():
    from tri.evaluator import distinct_rows

    planes = np.zeros((6, 1, 2, 2), np.float32)
    planes[[1, 4], 0, 0, 0] = 1.0  # rows 1 and 4 alike
    planes[3, 0, 1, 1] = 2.0
    legal = np.ones((6, 3), bool)
    legal[5, 2] = False  # row 5: row 0's planes, other legal actions
    rows, back = distinct_rows(planes, legal)
    np.testing.assert_array_equal(rows, [0, 1, 3, 5])
    np.testing.assert_array_equal(back, [0, 1, 0, 2, 1, 3])
    np.testing.assert_array_equal(planes[rows][back], planes)
    np.testing.assert_array_equal(legal[rows][back], legal)


def test_distinct_evaluates_repeated_positions_once_with_the_same_results():
    """``distinct``: a triangle position repeated under other chance seeds (as a player's several
    trees hold it) goes through the network once, and every row gets its own position's
    evaluation; a batch with nothing repeated is evaluated as it is."""
    game, model = _random_model("triangle", 0.3)
    states = _midgame(game, 2)[:4]
    repeated = np.concatenate([game.reseed(states, np.arange(4) + 100 * k) for k in range(3)])
    assert not np.array_equal(repeated[:4], repeated[4:8])  # other futures, the same planes
    seen = []
    real_forward = model.forward
    model.forward = lambda x: (seen.append(x.shape[0]), real_forward(x))[1]
    plain, distinct = make_evaluator(model, game), make_evaluator(model, game, distinct=True)
    p, legal, v = plain(repeated)
    dp, dlegal, dv = distinct(repeated)
    assert seen == [12, 4]
    np.testing.assert_array_equal(dlegal, legal)
    np.testing.assert_allclose(dp, p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dv, v, rtol=1e-5, atol=1e-5)
    for k in (1, 2):
        np.testing.assert_array_equal(dp[4 * k:4 * k + 4], dp[:4])
    assert np.abs(dp[0] - dp[1]).max() > 1e-3  # the rows are not all one evaluation
    seen.clear()
    for a, b in zip(distinct(states), plain(states)):
        np.testing.assert_array_equal(a, b)
    assert seen == [4, 4]


def test_cache_evaluates_each_position_once_across_calls_and_forgets_the_least_recently_used():
    """``cache``: a position seen in an earlier call (or twice in one) does not go through the
    network again, and gets the figures it got then; past ``capacity`` positions the least
    recently used is forgotten and evaluated again when it comes back."""
    game, model = _random_model("triangle", 0.3)
    states = _midgame(game, 2)[:6]
    seen = []
    real_forward = model.forward
    model.forward = lambda x: (seen.append(x.shape[0]), real_forward(x))[1]
    plain, cached = make_evaluator(model, game), make_evaluator(model, game, cache=5)
    p, legal, v = plain(states)
    seen.clear()
    first = cached(states[:4])
    again = cached(np.concatenate([states[2:5], states[4:5], game.reseed(states[:1], np.array([7]))]))
    assert seen == [4, 1]  # the second call: only states[4] is new (twice in it; states[0] under another seed)
    for rows, out in ((slice(0, 4), first), ([2, 3, 4, 4, 0], again)):
        np.testing.assert_array_equal(out[1], legal[rows])
        np.testing.assert_allclose(out[0], p[rows], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out[2], v[rows], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(again[0][0], first[0][2])  # the remembered figures themselves
    seen.clear()
    cached(states[5:6])  # a sixth position: states[1], the least recently used, is forgotten
    cached(states[0:1])  # remembered (used again in the second call)
    assert seen == [1]
    cached(states[1:2])  # forgotten, so evaluated again; states[2], now the oldest, is forgotten
    cached(states[3:5])
    assert seen == [1, 1]
    cached(states[2:3])
    assert seen == [1, 1, 1]
    with pytest.raises(ValueError, match="at least one position"):
        make_evaluator(model, game, cache=-1)


def test_a_player_with_the_cache_plays_the_same_game_evaluating_fewer_positions():
    """The triangle champion's kind of search (one tree with afterstates, 4 leaves a call) through
    the cache plays the moves the plain snapshot plays, with the same policies, and the network sees
    fewer positions (transpositions, and the last move's tree). The policies agree up to float
    rounding, which a smaller batch may change (another kernel) and Gumbel's ``sigma(q)`` scales
    up: 6e-5 on ONNX Runtime, as players run it, 2e-4 through torch, on an Intel Xeon."""
    from tri.agents import MctsAgent
    from tri.config import recipe_params

    game, model = _random_model("triangle", 0.3)
    search = recipe_params("triangle").mcts.model_copy(update={"leaves_per_step": 4, "precision": "float32"})
    games = []
    for cache in (0, 1 << 12):
        evaluate = make_evaluator(model, game, fast=True, cache=cache, onnx=True)
        agent = MctsAgent(game, evaluate, search, np.random.default_rng(3), noise=False, temperature=0.0,
                          temperature_moves=0, simulations=64)
        state, moves = game.initial(np.array([5])), []
        for move in range(9):
            decision = agent.act(state, np.array([move]))
            moves.append((int(decision.actions[0]), decision.policy[0]))
            state = game.step(state, decision.actions).states
        games.append(moves)
    for (a, pa), (b, pb) in zip(*games):
        assert a == b
        np.testing.assert_allclose(pa, pb, atol=1e-3)  # Gumbel's sigma(q) scales a value's rounding ~100x
    assert evaluate.cache.hits > 0.2 * (evaluate.cache.hits + evaluate.cache.misses)


def test_symmetrize_is_plain_without_symmetries_and_refused_where_actions_move_by_position():
    game, model = _random_model("triangle", 0.3)
    states = game.initial(np.arange(4))
    for a, b in zip(make_evaluator(model, game)(states), make_evaluator(model, game, symmetrize=True)(states)):
        np.testing.assert_array_equal(a, b)
    game, model = _random_model("santorini", 0.3)
    with pytest.raises(TriError, match="mcts.symmetrize: santorini's symmetries map actions differently"):
        make_evaluator(model, game, symmetrize=True)
