"""Ensembles (``tri ensemble``, :mod:`tri.ensemble`): the checkpoint, the stacked evaluation
against each member's own, where an ensemble plays and where it is refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.pipeline_fixtures import PARAMS, TINY_NET, assert_clean_error, save_model, tri_cli, with_section
from tri.config import GameParams, Params
from tri.ensemble import make_ensemble
from tri.inference import StackedInferenceNet
from tri.errors import TriError
from tri.evaluator import make_evaluator
from tri.games import make_game
from tri.games.base import sample_legal
from tri.net import EnsembleNet, build_model, load_checkpoint, save_checkpoint

TICTACTOE = Params(game=GameParams(name="tictactoe"), net=TINY_NET)


def trained_looking(path, params: Params = PARAMS, *, seed: int):
    """A network saved at ``path`` whose every weight and BatchNorm statistic is drawn from
    ``seed`` (a fresh network's heads are zero: all members would agree)."""
    ckpt = save_model(path, params, seed=seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in ckpt.model.state_dict().items():
            if tensor.is_floating_point():
                noise = torch.rand(tensor.shape, generator=g) if "running_var" in name else \
                    torch.randn(tensor.shape, generator=g) * 0.3
                tensor.copy_(noise + (0.5 if "running_var" in name else 0.0))
    save_checkpoint(ckpt, path)
    return ckpt


def positions(game, n: int = 24, moves: int = 3, seed: int = 0) -> np.ndarray:
    """``[n, L]`` states a few random moves into games of ``game``."""
    rng = np.random.default_rng(seed)
    states = game.initial(np.arange(n))
    for _ in range(moves):
        live = ~game.terminal(states)
        actions = np.where(live, sample_legal(game.legal(states), rng), 0)
        if not live.all():
            break
        states = game.step(states, actions).states
    return states


@pytest.mark.parametrize("params,symmetrize", [(PARAMS, False), (PARAMS, True), (TICTACTOE, False),
                                               (TICTACTOE, True)])
def test_the_ensemble_averages_its_members(tmp_path, params, symmetrize):
    game = make_game(params.game)
    paths = [tmp_path / f"m{k}.pt" for k in range(3)]
    for k, path in enumerate(paths):
        trained_looking(path, params, seed=k + 1)
    ckpt = make_ensemble(paths)
    save_checkpoint(ckpt, tmp_path / "ens.pt")
    loaded = load_checkpoint(tmp_path / "ens.pt", game, ensemble=True)
    assert loaded.members == 3 and loaded.model_id == ckpt.model_id
    states = positions(game)
    ens = make_evaluator(loaded.model, game, symmetrize=symmetrize)(states)
    alone = [make_evaluator(load_checkpoint(p).model, game, symmetrize=symmetrize)(states) for p in paths]
    priors = np.mean([a[0] for a in alone], axis=0)
    values = np.mean([a[2] for a in alone], axis=0)
    np.testing.assert_allclose(ens[0], priors, atol=2e-6)
    np.testing.assert_allclose(ens[2], values, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ens[1], alone[0][1])
    # the members disagree, so the test could see a member's priors standing in for the mean
    assert np.abs(alone[0][0] - alone[1][0]).max() > 1e-2
    assert np.abs(alone[0][2] - alone[1][2]).max() > 1e-3


def test_stacked_pass_is_each_members_own_in_pieces_too(tmp_path):
    game = make_game(PARAMS.game)
    paths = [tmp_path / f"m{k}.pt" for k in range(2)]
    for k, path in enumerate(paths):
        trained_looking(path, seed=k + 7)
    ensemble = make_ensemble(paths).model
    x = torch.from_numpy(game.encode(positions(game, n=20)))
    stacked = StackedInferenceNet(ensemble, chunk=8)
    with torch.inference_mode():
        logits, value_out = stacked(x)
        assert logits.shape == (2, 20, game.num_actions) and stacked.value(value_out).shape == (2, 20)
        for k, member in enumerate(ensemble.members):
            own_logits, own_value = member(x)
            torch.testing.assert_close(logits[k], own_logits, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(stacked.value(value_out)[k], member.value(own_value), atol=1e-4, rtol=1e-5)


def test_an_ensemble_searches_as_a_player(tmp_path):
    from tri.player_specs import parse_spec
    from tri.players import make_agent

    game = make_game(PARAMS.game)
    for k in range(2):
        trained_looking(tmp_path / f"m{k}.pt", seed=k + 1)
    save_checkpoint(make_ensemble([tmp_path / "m0.pt", tmp_path / "m1.pt"]), tmp_path / "ens.pt")
    agent = make_agent(parse_spec(f"mcts:{tmp_path / 'ens.pt'}:8", game=game.name), game, PARAMS.mcts,
                       PARAMS.arena, np.random.default_rng(0))
    states = positions(game, n=4, moves=1)
    decision = agent.act(states, np.ones(4, np.int64))
    assert game.legal(states)[np.arange(4), decision.actions].all()


def test_the_cli_writes_one_and_the_arena_plays_it(tmp_path):
    params_file = tmp_path / "params.yaml"
    from tests.pipeline_fixtures import write_params

    write_params(params_file, with_section(PARAMS, "arena", games=2, concurrent=2))
    for k in range(2):
        trained_looking(tmp_path / f"m{k}.pt", seed=k + 1)
    made = tri_cli("ensemble", tmp_path / "ens.pt", tmp_path / "m0.pt", tmp_path / "m1.pt")
    assert made.returncode == 0, made.stderr
    assert "ensemble of 2 networks" in made.stdout
    played = tri_cli("arena", f"mcts:{tmp_path / 'ens.pt'}:4", f"mcts:{tmp_path / 'm0.pt'}:4",
                     "--params", params_file, cwd=tmp_path)
    assert played.returncode == 0, played.stderr


def test_bad_members_are_refused_in_one_line(tmp_path):
    trained_looking(tmp_path / "a.pt", seed=1)
    trained_looking(tmp_path / "b.pt", with_section(PARAMS, "net", channels=4), seed=2)
    trained_looking(tmp_path / "c.pt", TICTACTOE, seed=3)
    (tmp_path / "broken.pt").write_bytes(b"not a checkpoint")
    cases = [
        (["a.pt"], "at least two"),
        (["a.pt", "a.pt"], "given twice"),
        (["a.pt", "b.pt"], "channels 4 against 8"),
        (["a.pt", "c.pt"], "for the game 'tictactoe'"),
        (["a.pt", "broken.pt"], "not a readable tri checkpoint"),
        (["a.pt", "missing.pt"], "file not found"),
    ]
    for members, needle in cases:
        proc = tri_cli("ensemble", tmp_path / "out.pt", *(tmp_path / m for m in members))
        assert_clean_error(proc, 1, needle)
        assert not (tmp_path / "out.pt").exists()
    assert_clean_error(tri_cli("ensemble", tmp_path / "a.pt", tmp_path / "a.pt", tmp_path / "c.pt"), 1,
                       "is one of the members")


def test_training_and_growing_refuse_an_ensemble(tmp_path):
    for k in range(2):
        trained_looking(tmp_path / f"m{k}.pt", seed=k + 1)
    save_checkpoint(make_ensemble([tmp_path / "m0.pt", tmp_path / "m1.pt"]), tmp_path / "ens.pt")
    with pytest.raises(TriError, match="an ensemble of 2 networks"):
        load_checkpoint(tmp_path / "ens.pt")
    from tests.pipeline_fixtures import write_params

    write_params(tmp_path / "params.yaml")
    proc = tri_cli("init", "--out", tmp_path / "g0.pt", "--from", tmp_path / "ens.pt", cwd=tmp_path)
    assert_clean_error(proc, 1, "an ensemble of 2 networks")
    assert not (tmp_path / "g0.pt").exists()


def test_members_lose_training_only_heads_and_keep_their_ids(tmp_path):
    with_head = with_section(PARAMS, "net", occupancy_steps=2)
    a = trained_looking(tmp_path / "a.pt", with_head, seed=1)
    b = trained_looking(tmp_path / "b.pt", seed=2)
    ckpt = make_ensemble([tmp_path / "a.pt", tmp_path / "b.pt"])
    assert ckpt.net_params.occupancy_steps == 0 and ckpt.generation == 0
    assert all(m.occupancy_head is None for m in ckpt.model.members)
    assert a.model_id in ckpt.provenance["member_0"] and b.model_id in ckpt.provenance["member_1"]
    save_checkpoint(ckpt, tmp_path / "ens.pt")
    assert isinstance(load_checkpoint(tmp_path / "ens.pt", ensemble=True).model, EnsembleNet)


def test_one_networks_checkpoint_bytes_do_not_change(tmp_path):
    game = make_game(PARAMS.game)
    ckpt = save_model(tmp_path / "one.pt")
    assert "members" not in ckpt.meta() and ckpt.members == 1
    assert load_checkpoint(tmp_path / "one.pt", game).model_id == ckpt.model_id
    assert build_model(game, PARAMS.net).state_dict().keys() == ckpt.model.state_dict().keys()


def test_a_project_goes_on_from_an_ensembles_first_network(tmp_path):
    for k in range(2):
        trained_looking(tmp_path / f"m{k}.pt", TICTACTOE, seed=k + 1)
    save_checkpoint(make_ensemble([tmp_path / "m0.pt", tmp_path / "m1.pt"]), tmp_path / "ens.pt")
    proc = tri_cli("new", tmp_path / "p", "--game", "tictactoe", "--from", tmp_path / "ens.pt", timeout=300)
    assert proc.returncode == 0, proc.stderr
    first = load_checkpoint(tmp_path / "m0.pt").model_id
    assert f"its first network (model id {first})" in proc.stdout
    start = load_checkpoint(tmp_path / "p" / "models" / "start.pt")  # one network: no ensemble=True
    assert start.model_id == first


def test_an_ensembles_self_play_trains_one_network(tmp_path):
    """Distillation: ``tri selfplay --model ENSEMBLE`` writes the shards an ensemble's search
    plays (its own moves and policy targets, the same bytes twice), and ``tri train`` fits one
    network to them."""
    from tests.pipeline_fixtures import write_params

    write_params(tmp_path / "params.yaml")
    for k in range(2):
        trained_looking(tmp_path / f"m{k}.pt", seed=k + 1)
    save_checkpoint(make_ensemble([tmp_path / "m0.pt", tmp_path / "m1.pt"]), tmp_path / "ens.pt")
    for model, out in [("ens.pt", "d"), ("ens.pt", "again"), ("m0.pt", "alone")]:
        proc = tri_cli("selfplay", "--model", tmp_path / model, "--out", tmp_path / out, "--generation", 1,
                       cwd=tmp_path, timeout=300)
        assert proc.returncode == 0, proc.stderr
    shards = sorted(p.name for p in (tmp_path / "d").glob("*.parquet"))
    assert shards and shards == sorted(p.name for p in (tmp_path / "again").glob("*.parquet"))
    assert all((tmp_path / "d" / s).read_bytes() == (tmp_path / "again" / s).read_bytes() for s in shards)
    assert any((tmp_path / "d" / s).read_bytes() != (tmp_path / "alone" / s).read_bytes() for s in shards)
    proc = tri_cli("train", "--model", tmp_path / "m0.pt", "--data", tmp_path / "d", "--out", tmp_path / "student.pt",
                   cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    student = load_checkpoint(tmp_path / "student.pt")  # one network: no ensemble=True
    assert student.members == 1 and student.generation == 1
