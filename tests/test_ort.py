"""A player's evaluation on ONNX Runtime (:mod:`tri.ort`, ``make_evaluator(onnx=True)``): the
figures torch gives, up to float rounding, for every kind of network; the same figures for a
position whatever the batch and the thread count; and used exactly where it is meant to be (a
fast-path player on the CPU in float32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.test_net import _random_model
from tri.evaluator import make_evaluator
from tri.inference import InferenceNet
from tri.net import EnsembleNet
from tri.ort import OrtEvaluation


def _states(game, n: int = 9) -> np.ndarray:
    """``n`` positions a few random moves into games of ``game`` (some actions no longer legal)."""
    rng = np.random.default_rng(1)
    states = game.initial(np.arange(n))
    for _ in range(3):
        legal = game.legal(states)
        live = legal.any(axis=1)
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal])
        stepped = game.step(states[live], actions[live]).states
        states = states.copy()
        states[live] = stepped
    return states


@pytest.mark.parametrize("name", ["triangle", "connect4", "santorini", "pyrga"])
def test_onnx_evaluation_gives_torch_s_priors_and_values(name):
    """Priors (masked softmax over the legal actions) and values (decoded from the support for a
    single-player game, tanh for two) as torch's fast path gives them, up to float rounding."""
    game, model = _random_model(name, 0.3)
    states = _states(game)
    torch_eval = make_evaluator(model, game, fast=True)
    onnx_eval = make_evaluator(model, game, fast=True, onnx=True)
    assert (torch_eval.runtime, onnx_eval.runtime) == ("torch", "onnx")
    (pa, la, va), (pb, lb, vb) = torch_eval(states), onnx_eval(states)
    assert pa.dtype == pb.dtype == np.float32 and va.dtype == vb.dtype == np.float32
    assert pb.shape == pa.shape and vb.shape == va.shape == (len(states),)
    np.testing.assert_array_equal(lb, la)
    assert np.abs(va).max() > 0.05  # not the zero heads of an initial network
    np.testing.assert_allclose(pb, pa, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(vb, va, rtol=1e-4, atol=1e-4)
    assert (pb[~lb] == 0).all()
    np.testing.assert_allclose(pb.sum(axis=1), 1.0, rtol=1e-5)


def test_a_position_gets_the_same_figures_in_any_batch_and_on_any_thread_count():
    """ONNX Runtime's kernels do not change with the batch's size or the threads (torch's may), so
    a position's figures are bit for bit the same alone, in a batch, on one thread or two; a row
    with no legal action gets zero priors, as torch's masked softmax gives it."""
    game, model = _random_model("triangle", 0.3)
    snapshot = InferenceNet(model)
    planes, legal = game.encode(_states(game)), game.legal(_states(game))
    one, two = (OrtEvaluation(snapshot, game.obs_shape, game.num_actions, threads=t) for t in (1, 2))
    batch = one(planes, legal)
    for rows in (slice(0, 1), slice(3, 5), slice(0, 9)):
        for got, want in zip(two(planes[rows], legal[rows]), batch):
            np.testing.assert_array_equal(got, want[rows])
    legal[2] = False
    priors, values = one(planes, legal)
    assert (priors[2] == 0).all() and np.isfinite(priors).all() and values[2] == batch[1][2]


def test_an_ensemble_on_onnx_averages_its_members_as_torch_does():
    game, first = _random_model("triangle", 0.3)
    _, second = _random_model("triangle", 0.2)
    ensemble = EnsembleNet([first, second]).eval()
    states = _states(game)
    a, b = make_evaluator(ensemble, game)(states), make_evaluator(ensemble, game, onnx=True)(states)
    np.testing.assert_allclose(b[0], a[0], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(b[2], a[2], rtol=1e-4, atol=1e-4)


def test_onnx_is_for_float32_on_the_cpu_without_symmetries():
    """bfloat16 (native on some CPUs) and symmetry averaging stay with torch; a player on the
    CPU in float32 through the fast path (a single-player game's) gets ONNX Runtime, a two-player
    game's one-tree player the model itself."""
    from tri.config import recipe_params
    from tri.players import player_evaluator

    game, model = _random_model("triangle", 0.3)
    assert make_evaluator(model, game, fast=True, onnx=True, precision="bfloat16").runtime == "torch"
    assert make_evaluator(model, game, fast=True, onnx=True, symmetrize=True).runtime == "torch"
    search = recipe_params("triangle").mcts.model_copy(update={"precision": "float32"})
    assert player_evaluator(model, game, search, 1).runtime == "onnx"
    game, model = _random_model("connect4", 0.3)
    search = recipe_params("connect4").mcts.model_copy(update={"precision": "float32"})
    assert player_evaluator(model, game, search, 1).runtime == "torch"
    with pytest.raises(ValueError, match="float32 snapshot"):
        OrtEvaluation(InferenceNet(model, dtype=torch.bfloat16), game.obs_shape, game.num_actions)
