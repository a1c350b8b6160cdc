"""Where the network runs (:mod:`tri.device`): ``TRI_DEVICE`` resolved in one place, the thread
rule in one context manager, and every stage on the resolved device. Tests run on the CPU; the
tiny generation of ``tests/test_behaviour.py`` also runs on CUDA where torch sees a GPU.

The generations here are ``test_behaviour``'s own :func:`~tests.test_behaviour.tiny_generation`,
with the device taken from ``TRI_DEVICE`` instead of the ``cpu`` it names: with ``auto`` on a
machine without a GPU, they must write exactly its recorded bytes.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
import torch

from tests import test_behaviour as behaviour
from tri import arena, device, layout, selfplay, train
from tri.arena_result import load_result
from tri.config import Runtime
from tri.device import resolve_device, synchronize, torch_threads, training_autocast
from tri.errors import TriError
from tri.games import make_game
from tri.evaluator import make_evaluator
from tri.net import build_model, initial_checkpoint, load_checkpoint, save_checkpoint
from tri.train import on_cpu

HAS_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="torch sees no CUDA device here (tests run on the CPU)")


def _no_gpu(monkeypatch, *, cuda: bool = False, mps: bool = False, count: int = 0) -> None:
    """Pretend torch sees (or does not see) CUDA with ``count`` devices, and MPS."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)


# ---- resolve_device ------------------------------------------------------------------------------


def test_auto_prefers_cuda_then_mps_then_the_cpu(monkeypatch):
    _no_gpu(monkeypatch, cuda=True, mps=True, count=1)
    assert resolve_device("auto") == "cuda"
    _no_gpu(monkeypatch, mps=True)
    assert resolve_device("auto") == "mps"
    _no_gpu(monkeypatch)
    assert resolve_device("auto") == "cpu"
    assert resolve_device("") == "cpu"  # unset reads as auto
    assert resolve_device(" AUTO ") == "cpu"


def test_named_devices_are_returned_once_they_exist(monkeypatch):
    assert resolve_device("cpu") == "cpu"
    assert resolve_device(" CPU") == "cpu"
    _no_gpu(monkeypatch, cuda=True, count=2)
    assert resolve_device("cuda") == "cuda"
    assert resolve_device("cuda:1") == "cuda:1"
    _no_gpu(monkeypatch, mps=True)
    assert resolve_device("mps") == "mps"


def _one_line_error(name: str) -> str:
    with pytest.raises(TriError) as info:
        resolve_device(name)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"TRI_DEVICE={name!r}: "), message
    return message


@pytest.mark.parametrize("name", ["gpu", "cuda0", "cuda:x", "cuda:-1", "cpu:0", "mps:1", "tpu", "cuda:"])
def test_unknown_names_are_a_one_line_error(name):
    assert "expected auto, cpu, cuda, cuda:N or mps" in _one_line_error(name)


def test_an_absent_device_is_a_one_line_error(monkeypatch):
    _no_gpu(monkeypatch)
    assert "torch sees no CUDA device (use auto or cpu)" in _one_line_error("cuda")
    assert "torch sees no CUDA device" in _one_line_error("cuda:0")
    assert "torch sees no MPS device (use auto or cpu)" in _one_line_error("mps")
    _no_gpu(monkeypatch, cuda=True, count=2)
    assert "torch sees 2 CUDA device(s), numbered from 0" in _one_line_error("cuda:2")


def test_an_absent_cuda_device_on_this_machine():
    """No monkeypatching: whatever this machine has, asking for a device it lacks is refused."""
    if HAS_CUDA:
        _one_line_error(f"cuda:{torch.cuda.device_count()}")
    else:
        _one_line_error("cuda")


def test_stages_refuse_a_bad_device_before_any_work(tmp_path):
    params = behaviour.CASES["tictactoe"]
    model = tmp_path / "model.pt"
    save_checkpoint(initial_checkpoint(make_game(params.game), params.net), model)
    with pytest.raises(TriError, match="TRI_DEVICE='gpu'"):
        selfplay.run(params, model, tmp_path / "sp", runtime=Runtime(workers=1, device="gpu"))
    with pytest.raises(TriError, match="TRI_DEVICE='gpu'"):
        arena.run(params, str(model), "random", runtime=Runtime(device="gpu"))
    with pytest.raises(TriError, match="TRI_DEVICE='gpu'"):
        train.run(params, model, [tmp_path / "sp"], tmp_path / "c.pt", runtime=Runtime(device="gpu"))
    assert not (tmp_path / "sp").exists() and not (tmp_path / "c.pt").exists()


def test_shard_tasks_carry_the_resolved_device(tmp_path, monkeypatch):
    params = behaviour.CASES["tictactoe"]
    model = tmp_path / "model.pt"
    save_checkpoint(initial_checkpoint(make_game(params.game), params.net), model)
    monkeypatch.setenv("TRI_DEVICE", "auto")
    tasks = selfplay.shard_tasks(params, model, tmp_path / "sp")
    assert {t.device for t in tasks} == {resolve_device("auto")}
    assert {t.device for t in selfplay.shard_tasks(params, model, tmp_path / "sp", device="CPU")} == {"cpu"}


# ---- the thread rule, autocast, synchronize ------------------------------------------------------


def test_torch_threads_sets_and_restores_the_count():
    before = torch.get_num_threads()
    with torch_threads():
        assert torch.get_num_threads() == 1
        with torch_threads(2):
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_torch_threads_restores_the_count_after_an_exception():
    with torch_threads(3):  # a count that the blocks below change
        with pytest.raises(KeyboardInterrupt), torch_threads(1):
            raise KeyboardInterrupt
        assert torch.get_num_threads() == 3
        with pytest.raises(TriError), torch_threads(2):
            raise TriError("boom")
        assert torch.get_num_threads() == 3


def test_training_restores_the_thread_count_after_a_failure(tmp_path):
    """Training fails inside its ``train.threads`` block (no model to load) and leaves torch's
    count as it found it."""
    params = behaviour.CASES["tictactoe"]
    with torch_threads(2):
        with pytest.raises(TriError, match="file not found"):
            train.run(params, tmp_path / "missing.pt", [tmp_path / "sp"], tmp_path / "c.pt",
                      runtime=Runtime(device="cpu"))
        assert torch.get_num_threads() == 2


def test_training_in_float32_autocasts_nothing():
    """``train.precision: float32`` (and MPS whatever it says): the forward pass in float32."""
    for name, precision in (("cpu", "float32"), ("cuda:0", "float32"), ("mps", "float32"), ("mps", "bfloat16")):
        assert isinstance(training_autocast(name, precision), contextlib.nullcontext)
    game = make_game(behaviour.CASES["connect4"].game)
    model = build_model(game, behaviour.NET)
    with training_autocast("cpu", "float32"):
        assert not torch.is_autocast_enabled("cpu")
        logits, value = model(torch.from_numpy(game.encode(game.initial(np.arange(2)))))
    assert logits.dtype == torch.float32 and value.dtype == torch.float32
    synchronize("cpu")  # nothing to wait for


def test_training_in_bfloat16_autocasts_on_cuda_and_the_cpu():
    with warnings.catch_warnings():  # without CUDA, torch warns that it disables this autocast
        warnings.simplefilter("ignore", UserWarning)
        context = training_autocast("cuda:0", "bfloat16")
    assert isinstance(context, torch.autocast)
    assert context.device == "cuda" and context.fast_dtype == torch.bfloat16
    context = training_autocast("cpu", "bfloat16")
    assert isinstance(context, torch.autocast) and context.device == "cpu"
    assert context.fast_dtype == torch.bfloat16


def test_on_cpu_keeps_the_structure():
    state = {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.ones(2)}},
             "param_groups": [{"params": [0], "betas": (0.9, 0.999), "lr": 0.1, "foreach": None}]}
    copied = on_cpu(state)
    assert copied["param_groups"] == state["param_groups"]
    assert isinstance(copied["param_groups"][0]["betas"], tuple)
    assert torch.equal(copied["state"][0]["exp_avg"], torch.ones(2))
    assert copied["state"][0]["exp_avg"].device.type == "cpu"


def test_the_gpu_path_of_training_rehearsed_on_the_cpu(tmp_path, monkeypatch):
    """What training does off the CPU, run here: bf16 autocast (``train.precision: bfloat16``, the
    CPU's autocast standing in for CUDA's) with the losses in float32, and the optimizer state copied to the CPU before
    saving (a device named ``cpu:0`` takes that branch). The candidate is float32, finite, and
    loads with ``weights_only=True``; the next generation continues its optimizer."""
    params = behaviour.CASES["triangle-puct"]
    params = params.model_copy(update={"train": params.train.model_copy(update={"precision": "bfloat16"})})
    game = make_game(params.game)
    initial, folder = tmp_path / "gen-0000.pt", tmp_path / "sp"
    save_checkpoint(initial_checkpoint(game, params.net), initial)
    selfplay.run(params, initial, folder, runtime=Runtime(workers=1, device="cpu"))
    monkeypatch.setattr(train, "resolve_device", lambda name: "cpu:0")
    first = train.run(params, initial, [folder], tmp_path / "c1.pt", runtime=Runtime(device="cuda"))
    second = train.run(params, tmp_path / "c1.pt", [folder], tmp_path / "c2.pt")
    for result in (first, second):
        assert np.isfinite([result.loss, result.policy_loss, result.value_loss]).all()
    for path in (tmp_path / "c1.pt", tmp_path / "c2.pt"):
        _assert_loads_anywhere(path)
        model = load_checkpoint(path, game).model
        assert all(p.dtype == torch.float32 and p.isfinite().all() for p in model.parameters())
    assert load_checkpoint(tmp_path / "c2.pt", game).optimizer["state"][0]["step"].item() == first.steps + second.steps


# ---- the stages on the resolved device -----------------------------------------------------------


@pytest.fixture
def resolved(monkeypatch):
    """``{stage: [(asked, resolved), ...]}``: every device the stages resolved."""
    calls: dict[str, list[tuple[str, str]]] = {}
    for module in (selfplay, train, arena):
        stage = module.__name__.removeprefix("tri.")

        def spy(name="auto", _stage=stage):
            got = device.resolve_device(name)
            calls.setdefault(_stage, []).append((name, got))
            return got

        monkeypatch.setattr(module, "resolve_device", spy)
    return calls


def generation_on(device_name: str, params, root, monkeypatch) -> dict[str, str]:
    """``test_behaviour``'s tiny generation with every stage's device from ``TRI_DEVICE``
    (``device_name``): its ``Runtime(...)`` calls lose their ``device="cpu"``, and training,
    which it runs without a runtime, reads ``TRI_DEVICE`` by default."""
    monkeypatch.setenv("TRI_DEVICE", device_name)
    monkeypatch.setattr(behaviour, "Runtime", lambda device=None, **settings: Runtime(**settings))
    return behaviour.tiny_generation(params, root)


def _assert_resolved(resolved: dict, asked: str, device_name: str) -> None:
    """Each stage resolved ``TRI_DEVICE`` (``asked``) first, and every device it resolved, the
    shard tasks' included, is ``device_name``."""
    assert sorted(resolved) == ["arena", "selfplay", "train"]
    for stage, calls in resolved.items():
        assert calls[0][0] == asked and {got for _, got in calls} == {device_name}, (stage, calls)


def _assert_loads_anywhere(path) -> None:
    """Every tensor of the checkpoint was saved from the CPU (no ``map_location`` needed), and it
    loads with ``weights_only=True``."""
    payload = torch.load(path, weights_only=True)
    tensors = list(payload["model"].values()) + [t for s in payload["optimizer"].get("state", {}).values()
                                                 for t in s.values() if isinstance(t, torch.Tensor)]
    assert tensors and {t.device.type for t in tensors} == {"cpu"}


@pytest.mark.skipif(resolve_device("auto") != "cpu", reason="this machine has a GPU: auto is not the CPU")
@pytest.mark.parametrize("case", sorted(behaviour.CASES))
def test_auto_without_a_gpu_runs_on_the_cpu_and_writes_the_recorded_bytes(case, tmp_path, monkeypatch, resolved):
    got = generation_on("auto", behaviour.CASES[case], tmp_path, monkeypatch)
    _assert_resolved(resolved, "auto", "cpu")
    assert got == behaviour.expected_hashes(case)
    _assert_loads_anywhere(layout.candidate_path(tmp_path, 1))


@needs_cuda
@pytest.mark.parametrize("case", sorted(behaviour.CASES))
def test_a_tiny_generation_on_cuda(case, tmp_path, monkeypatch, resolved):
    """Self-play, training (bf16 autocast) and the arena on the GPU: the same files, a candidate
    that loads on a machine without one, an arena with scores. (Not the CPU's bytes: float sums
    differ by device.)"""
    params = behaviour.CASES[case]
    got = generation_on("cuda", params, tmp_path, monkeypatch)
    _assert_resolved(resolved, "cuda", "cuda")
    assert sorted(got) == sorted(behaviour.HASHES[case])
    candidate = layout.candidate_path(tmp_path, 1)
    _assert_loads_anywhere(candidate)
    ckpt = load_checkpoint(candidate, make_game(params.game))
    assert ckpt.generation == 1 and all(p.isfinite().all() for p in ckpt.model.parameters())
    result = load_result(layout.arena_path(tmp_path, 1))
    assert len(result.scores_a) == result.games and np.isfinite(result.a.mean)


@needs_cuda
def test_evaluation_on_cuda_returns_numpy_on_the_cpu():
    params = behaviour.CASES["triangle-puct"]
    game = make_game(params.game)
    states = game.initial(np.arange(3))
    on_gpu = make_evaluator(build_model(game, params.net), game, "cuda")(states)
    on_host = make_evaluator(build_model(game, params.net), game, "cpu")(states)
    for gpu, cpu in zip(on_gpu, on_host):
        assert isinstance(gpu, np.ndarray) and gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    np.testing.assert_allclose(on_gpu[0], on_host[0], atol=1e-4)
    np.testing.assert_allclose(on_gpu[2], on_host[2], rtol=1e-3, atol=1e-3)


def test_evaluation_returns_numpy():
    params = behaviour.CASES["connect4"]
    game = make_game(params.game)
    priors, legal, values = make_evaluator(build_model(game, params.net), game, resolve_device("cpu"))(
        game.initial(np.arange(2)))
    assert priors.dtype == np.float32 and values.dtype == np.float32 and legal.dtype == bool
    assert priors.shape == (2, game.num_actions) and values.shape == (2,)


def test_precision_auto_is_bfloat16_only_where_the_cpu_computes_it_faster(tmp_path, monkeypatch):
    cpu = "processor\t: 0\nvendor_id\t: {}\nflags\t\t: fpu sse2 avx2 avx512f {}\n\n"
    cases = {"amd-avx512-bf16": ("AuthenticAMD", "avx512_bf16", True),  # measured 1.6-2.2x faster
             "intel-amx": ("GenuineIntel", "avx512_bf16 amx_bf16 amx_tile", True),
             "intel-avx512-bf16": ("GenuineIntel", "avx512_bf16", False),  # measured 0.66x (slower)
             "amd-emulated": ("AuthenticAMD", "avx512bw", False),
             "no-vendor": ("", "avx512_bf16", False)}
    for name, (vendor, flags, faster) in cases.items():
        (tmp_path / name).write_text(cpu.format(vendor, flags) * 2)
        assert device.cpu_prefers_bfloat16(str(tmp_path / name)) is faster, name
    assert not device.cpu_prefers_bfloat16(str(tmp_path / "absent"))
    for given in ("float32", "bfloat16"):  # named formats are taken as they are
        assert device.resolve_precision(given, "cpu") == given
    monkeypatch.setattr(device, "cpu_prefers_bfloat16", lambda: True)
    assert device.resolve_precision("auto", "cpu") == "bfloat16"
    assert device.resolve_precision("auto", "mps") == "float32"
    monkeypatch.setattr(device, "cpu_prefers_bfloat16", lambda: False)
    assert device.resolve_precision("auto", "cpu") == "float32"
