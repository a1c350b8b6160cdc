"""Refactors do not change results: one tiny generation per game, with params fixed here (not
the shipped defaults), must write the same bytes as when the hashes below were recorded.

Recorded on 2026-11-23 at the commit that added this file, before the architecture work of
issue 15 (the arena names its players by role, ``candidate`` and ``best``, since that commit).
On 2026-11-24 the shards' hashes were recorded again: a shard's key (in its metadata) now covers
only the played game's own rules section, so registering Othello no longer changes every other
game's keys; the candidates and the arena results kept their bytes.
On 2026-11-25 every hash was recorded again when ``mcts.solver`` (off) joined the params that
shards, checkpoints and arena results carry: their data, weights and games were compared and
are unchanged, only the recorded params differ.
On 2026-11-25 (later) they were recorded again when ``mcts.precision`` (float32) joined those
params; with that field left out of the files, all 24 files were checked to hash as before
(the Gumbel root's per-step scoring moved into numba the same day: the same bits).
On 2026-11-26 the shards' hashes were recorded again when ``mcts.chance_outcomes`` (1: no
chance nodes) joined the params the shards carry; with that field left out of the dumps, all
24 files were checked to hash as before (the candidates and arena results did not change at all).
If a change is meant to change results, say so in its commit and record the new hashes with
``pytest tests/test_behaviour.py --record-hashes`` (the failure message prints them too).
On 2026-11-26 (evening) the project moved to a CPU without AVX-512: its candidates hash otherwise,
and are kept per kind of CPU (``CANDIDATES_BY_CPU``); record a change's hashes on both kinds.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from tests.pipeline_fixtures import SMALL_BOARD
from tri import arena, layout, selfplay, train
from tri.arena_result import load_result
from tri.config import (ArenaParams, GameParams, MctsParams, NetParams, Params, Runtime, SelfplayParams,
                        TrainParams)
from tri.games import make_game
from tri.games.kinrow.rules import Connect4Config, MnkConfig
from tri.net import initial_checkpoint, save_checkpoint

NET = NetParams(channels=8, blocks=1, value_hidden=16, support_max=10, seed=3)
TRAIN = TrainParams(window=4, batch_size=16, warmup_steps=2, samples_per_position=2.0, max_steps=12, threads=1,
                    seed=5, precision="float32")
# The embedded defaults these cases were recorded with, where the defaults have changed since
# (the triangle recipe became the default): the cases stay what they were.
OLD = {"gumbel": False, "discount": 0.99, "gumbel_c_scale": 0.1, "precision": "float32"}

CASES = {
    "triangle-puct": Params(
        game=GameParams(name="triangle", triangle=SMALL_BOARD), net=NET,
        mcts=MctsParams(**{**OLD, "simulations": 6, "discount": 0.9, "leaves_per_step": 2}),
        selfplay=SelfplayParams(games=4, shards=2, concurrent=2, max_moves=10, temperature_moves=3, noise=True,
                                seed=7),
        train=TRAIN, arena=ArenaParams(games=4, simulations=4, max_moves=12, concurrent=4, seed=11)),
    "triangle-gumbel": Params(
        game=GameParams(name="triangle", triangle=SMALL_BOARD), net=NET,
        mcts=MctsParams(**{**OLD, "simulations": 8, "discount": 0.9, "gumbel": True, "gumbel_actions": 4}),
        selfplay=SelfplayParams(games=4, shards=2, concurrent=2, max_moves=10, temperature_moves=3, noise=True,
                                seed=7),
        train=TRAIN, arena=ArenaParams(games=4, simulations=4, max_moves=12, concurrent=4, seed=11)),
    "connect4": Params(
        game=GameParams(name="connect4", connect4=Connect4Config()), net=NET,
        mcts=MctsParams(**{**OLD, "simulations": 6, "dirichlet_alpha": 1.0}),
        selfplay=SelfplayParams(games=4, shards=2, concurrent=2, max_moves=42, temperature_moves=6, noise=True,
                                seed=7),
        train=TRAIN, arena=ArenaParams(games=2, simulations=4, concurrent=4, win_rate=0.55, seed=11)),
    "tictactoe": Params(
        game=GameParams(name="tictactoe", tictactoe=MnkConfig()), net=NET,
        mcts=MctsParams(**{**OLD, "simulations": 6, "dirichlet_alpha": 1.0}),
        selfplay=SelfplayParams(games=4, shards=2, concurrent=2, max_moves=9, temperature_moves=4, noise=True,
                                seed=7),
        train=TRAIN, arena=ArenaParams(games=2, simulations=4, concurrent=4, win_rate=0.55, seed=11)),
}

# sha256 of each file a generation writes, per case (shards and game summaries, candidate, arena).
HASHES: dict[str, dict[str, str]] = {
    'connect4': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '593ed32c9d7988cc77f3bdb842ef46bb77f1858cc92a8742620064478e441525',
        'data/selfplay/gen-0001/shard-000.parquet':
            '48279aa1ec7153f51e518f3c57694e244448020ee641623e9680d6307efeac42',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '29969d670d918ae5dd8047b9557219fd6843a9d506f530772f56ad8b9aa92468',
        'data/selfplay/gen-0001/shard-001.parquet':
            '69e36c95a36aecaf9c5eeaf2e32a2499a9e78710916a57479fd3a0f4b7787c64',
        'models/candidates/gen-0001.pt':
            '18eb35305cd5efaa8cd03627c3a2a5a71d347eb3888e21ee231c50a38155dd4d',
        'data/arena/gen-0001.json':
            'f27cdba68d6b8c2ea819449b37183997eb0d347578ef88f41126715d32a5d57b',
    },
    'tictactoe': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            'c1097e84b2134caa6c9a5cd7378d387435a0e95b7a66c377741db1bd980366c4',
        'data/selfplay/gen-0001/shard-000.parquet':
            '42ef2ae1f68d00029886454090f831f0beaa6a854ef429cff959abb43d1fe6d6',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            'fe69d5916f99fc4a04c2600b0fe91d0f4967ad390900390b973d82f5ab6ff4fd',
        'data/selfplay/gen-0001/shard-001.parquet':
            '8005ac7a6d4d1d347102e7ce99aaf33716607a32e24596cd210fb8f50c7ca3c9',
        'models/candidates/gen-0001.pt':
            '10cdb0f9c5000fabbcd2cd2d5854236734603e2ca26857148960ea1d934b580a',
        'data/arena/gen-0001.json':
            'd58e8b3fe10e76af5bd5320af94036044340e365e80ff5118545b5f40a60afad',
    },
    'triangle-gumbel': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '7fdb3f227f027e444ca6f9bd4d8e1e929a9fb4f392a620653cf18b885390f803',
        'data/selfplay/gen-0001/shard-000.parquet':
            'f1d9446c3682e8f8bb9562be3d60d2eca6a10b96a8f6241a3676976bafafc625',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            'f6963f52d09f372fd4b3860c35a031c6673e073a1ce923fbb00eebb2b09859a9',
        'data/selfplay/gen-0001/shard-001.parquet':
            'c0d0713ceba34e3ab10e0687c6319bb5d4a4f8beaff7fa67c0cd62bf77c2de8d',
        'models/candidates/gen-0001.pt':
            '1704f25602a9db472650cf0fac111bfbdf4c56f5b38e6cc80568590ff8e290d0',
        'data/arena/gen-0001.json':
            '0fb8941f7fb389ceef32c305383a18e527cd03b77eeac5c938b2267e927ca4ed',
    },
    'triangle-puct': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '7fddc8d3c873b810583deeeacca3c185bfd3eb51a3dc4550c06db498e6fb712c',
        'data/selfplay/gen-0001/shard-000.parquet':
            'bfd377c60b2eaa68e4b5d4072831fec97d299606687a85cf36d2347978333e78',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '968895d12469cb627d616c2b01201a44e2139be5566f134fb340cce2688d9cc2',
        'data/selfplay/gen-0001/shard-001.parquet':
            'e5518ba5c6d2c27169b17274fe01f0e8314f143830e30d7d12ceebc1ce9e3e46',
        'models/candidates/gen-0001.pt':
            'ed67d03452d25934917d3904356fd492c78241d9208f40e97fc50d1064f75538',
        'data/arena/gen-0001.json':
            'bbcbd04e651438d013334eb28ff9186f4f310fdd61e573175a547cdb7a2b4eb6',
    },
}


# Training's float32 kernels sum in another order on a CPU that torch dispatches to other vector
# instructions (``torch.backends.cpu.get_cpu_capability()``), so the candidates trained there have
# other bytes; the self-play shards and the arena results do not change. ``HASHES`` were recorded
# on an AVX512 CPU (2026-11-23 to 26); these candidates, where they differ, on an AVX2 one (an AMD
# EPYC without AVX-512, 2026-11-26, at the commit before the one that added them).
CANDIDATES_BY_CPU: dict[str, dict[str, str]] = {
    'AVX2': {
        'tictactoe': '2263fe1231eb41e84a77bc8ad089d7be90f4360acb0cdf0f666a4acdf16c8b92',
        'triangle-gumbel': '24ad4bc877aab0df932b19acccb45dabedd1dd70f25d852956c5a2d20f8b8ade',
        'triangle-puct': '82764b4be0ed903ddc0351dd872eff1bde24d010ce4d7a0040163806b4686839',
    },
}


def expected_hashes(case: str) -> dict[str, str]:
    """``HASHES[case]``, with the candidate's hash of this machine's kind of CPU where it differs."""
    import torch

    want = dict(HASHES[case])
    candidate = CANDIDATES_BY_CPU.get(torch.backends.cpu.get_cpu_capability(), {}).get(case)
    if candidate:
        want["models/candidates/gen-0001.pt"] = candidate
    return want


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tiny_generation(params: Params, root: Path) -> dict[str, str]:
    """Generation 1 of a fresh project by the stage functions, on the paths the flow uses; the
    sha256 of what it wrote."""
    game = make_game(params.game)
    initial = layout.model_path(root, 0)
    save_checkpoint(initial_checkpoint(game, params.net), initial)
    paths = layout.generation_paths(root, 1, player=initial, start=initial, window=params.train.window)
    selfplay.run(params, paths.player, paths.selfplay, generation=1, runtime=Runtime(workers=1, device="cpu"))
    train.run(params, paths.start, list(paths.window), paths.candidate, generation=1,
              metrics=paths.train_metrics, losses=paths.train_losses)
    arena.run(params, str(paths.candidate), str(paths.player), generation=1, out=paths.arena,
              runtime=Runtime(device="cpu"), labels=("candidate", "best"))
    files = sorted(paths.selfplay.iterdir()) + [paths.candidate, paths.arena]
    return {p.relative_to(root).as_posix(): _sha(p) for p in files}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tiny_generation_writes_the_recorded_bytes(case, tmp_path, request):
    got = tiny_generation(CASES[case], tmp_path)
    assert len(got) == 6  # two shards with their game summaries, the candidate, the arena result
    if request.config.getoption("--record-hashes"):
        print(f"\n{case!r}: {got!r},")
        return
    assert case in HASHES, f"no hashes recorded for {case}: {got!r}"
    assert got == expected_hashes(case), f"{case}: the generation's files changed: {got!r}"


def test_the_cases_play_real_games(tmp_path):
    """The recorded generation is not empty: its arena has scores, its shards positions."""
    import polars as pl

    params = CASES["connect4"]
    tiny_generation(params, tmp_path)
    rows = sum(pl.read_parquet(p).height for p in layout.shard_paths(layout.selfplay_dir(tmp_path, 1)))
    assert rows >= 4 * 7  # four games of Connect Four, each at least seven moves
    result = load_result(layout.arena_path(tmp_path, 1))
    assert result.games == 4 and np.isfinite(result.score_rate)
