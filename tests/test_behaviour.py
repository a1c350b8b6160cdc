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
If a change is meant to change results, say so in its commit and record the new hashes with
``pytest tests/test_behaviour.py --record-hashes`` (the failure message prints them too).
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
            'fec38326ebf9e7f9a03337292c49c91a06bded44632987250e8c1277f5c45ce6',
        'data/selfplay/gen-0001/shard-000.parquet':
            '830588c4ee5bfaed896b3e4fdfc8820ae9fa3d2f70a328fbc20eabf5d3f4b66f',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '421cefa14981318ef8860fcab4b9b1d9ea91199edf71700e09f93cf9a6d8d7d6',
        'data/selfplay/gen-0001/shard-001.parquet':
            '006d97aec7a7fe745768d9bb83265c3079515bf80a869430f4a0dbe8d388f4af',
        'models/candidates/gen-0001.pt':
            '18eb35305cd5efaa8cd03627c3a2a5a71d347eb3888e21ee231c50a38155dd4d',
        'data/arena/gen-0001.json':
            'f27cdba68d6b8c2ea819449b37183997eb0d347578ef88f41126715d32a5d57b',
    },
    'tictactoe': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '07f191de479f8f3b4bc3a7c70ace5d26dc5739f3125926838b3ecd6fe95e2908',
        'data/selfplay/gen-0001/shard-000.parquet':
            'f6b8f55545eb7bdedf1c8105253370997ebdb06f355d8ca5b4ae58d160264bcd',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '68a0aafd5af287c26c55b08dc11eaf1520ce1195d7caffafcc457724fd07ec82',
        'data/selfplay/gen-0001/shard-001.parquet':
            '8693d1f680cbc64f030e9f41615072ed7fad9d8ed67b592553a88bb943252622',
        'models/candidates/gen-0001.pt':
            '10cdb0f9c5000fabbcd2cd2d5854236734603e2ca26857148960ea1d934b580a',
        'data/arena/gen-0001.json':
            'd58e8b3fe10e76af5bd5320af94036044340e365e80ff5118545b5f40a60afad',
    },
    'triangle-gumbel': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '94bd360c1130b21999fc98987c68f8cc51b847a1af0db5ed03902675d2fac69a',
        'data/selfplay/gen-0001/shard-000.parquet':
            '8d545784f3bf51b3ef7b24503566ff9d8b27779cf4f7d6911aac68dca165864d',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            'deebe4d3dca40b2d12144f8fb79012a088202861939921697540f1aa7f1b6aa6',
        'data/selfplay/gen-0001/shard-001.parquet':
            '4cb2f272e59fce0911f70032ac44287edcb7339f7ffb916bb8030dbeb76567a7',
        'models/candidates/gen-0001.pt':
            '1704f25602a9db472650cf0fac111bfbdf4c56f5b38e6cc80568590ff8e290d0',
        'data/arena/gen-0001.json':
            '0fb8941f7fb389ceef32c305383a18e527cd03b77eeac5c938b2267e927ca4ed',
    },
    'triangle-puct': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '7dd6180beaee933db4004d8be8f4230417239ea570809cd7da9ff7484b84e9f0',
        'data/selfplay/gen-0001/shard-000.parquet':
            '5aa8ce8ac1d884ad27923c6d6be0b94053992d454ef53889e9142b12d85c2cf2',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            'cb586af005ba4ecff7e5433e16634133b85be2f6b0f1cbed3138284a9678355c',
        'data/selfplay/gen-0001/shard-001.parquet':
            'd93c981b7841992c8cd5a1a01e981d61e781c1a2eadbae13b56898fa64376aa0',
        'models/candidates/gen-0001.pt':
            'ed67d03452d25934917d3904356fd492c78241d9208f40e97fc50d1064f75538',
        'data/arena/gen-0001.json':
            'bbcbd04e651438d013334eb28ff9186f4f310fdd61e573175a547cdb7a2b4eb6',
    },
}


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
    assert got == HASHES[case], f"{case}: the generation's files changed: {got!r}"


def test_the_cases_play_real_games(tmp_path):
    """The recorded generation is not empty: its arena has scores, its shards positions."""
    import polars as pl

    params = CASES["connect4"]
    tiny_generation(params, tmp_path)
    rows = sum(pl.read_parquet(p).height for p in layout.shard_paths(layout.selfplay_dir(tmp_path, 1)))
    assert rows >= 4 * 7  # four games of Connect Four, each at least seven moves
    result = load_result(layout.arena_path(tmp_path, 1))
    assert result.games == 4 and np.isfinite(result.score_rate)
