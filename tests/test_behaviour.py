"""Refactors do not change results: one tiny generation per game, with params fixed here (not
the shipped defaults), must write the same bytes as when the hashes below were recorded.

Recorded on 2026-11-23 at the commit that added this file, before the architecture work of
issue 15 (the arena names its players by role, ``candidate`` and ``best``, since that commit).
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
                    seed=5)
# The embedded defaults these cases were recorded with, where the defaults have changed since
# (the triangle recipe became the default): the cases stay what they were.
OLD = {"gumbel": False, "discount": 0.99, "gumbel_c_scale": 0.1}

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
            '74b94910d87a52bc562bc8bf0a5990d100fed7535a5738f414dc677371d6583e',
        'data/selfplay/gen-0001/shard-000.parquet':
            '26342e705485b9eae4ff3af0e1d41436fcbabb18b6a926ec6573c5be662d7b6d',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '9359c38798957cf5d46925fcdcb7f814db868be92a8564f35661fa3a7763bc9b',
        'data/selfplay/gen-0001/shard-001.parquet':
            'e7483ff654680de07277d36cf074d3cc099024020a0eea9c5f9f346ae4afec5d',
        'models/candidates/gen-0001.pt':
            '18eb35305cd5efaa8cd03627c3a2a5a71d347eb3888e21ee231c50a38155dd4d',
        'data/arena/gen-0001.json':
            'f27cdba68d6b8c2ea819449b37183997eb0d347578ef88f41126715d32a5d57b',
    },
    'tictactoe': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            'f66995386924013bf192068502c7f3850aa06aab3f4f1bc9004dba58460af8c4',
        'data/selfplay/gen-0001/shard-000.parquet':
            'f46b00e4bc4ee3d7055533f354622e1dfc80b09e353cc9d3436b02a6fae6ec79',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '09dee32a7fe738a0dfd956165f1facb5d8f348073b329a62b510bf2810b4bd59',
        'data/selfplay/gen-0001/shard-001.parquet':
            '87796fb9b36e12f22e144be2a9f914d070201d969e69823f3a0fdfce57ccd99e',
        'models/candidates/gen-0001.pt':
            '10cdb0f9c5000fabbcd2cd2d5854236734603e2ca26857148960ea1d934b580a',
        'data/arena/gen-0001.json':
            'd58e8b3fe10e76af5bd5320af94036044340e365e80ff5118545b5f40a60afad',
    },
    'triangle-gumbel': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '8199e6e2df41dea56af573aba67342a6ec80f50d01edefd71e658df9830dcc04',
        'data/selfplay/gen-0001/shard-000.parquet':
            '0de1f6f949647dc74a95e2c2449a22b5d079d857de344c357b863b55cac8dd53',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '1bdf1f1a38b4a8b5c560493d4d02255f212e8425216e35e31a165aa15a777bb9',
        'data/selfplay/gen-0001/shard-001.parquet':
            '5f991301fa198a211657180c8d8900949affefab42ce118792f1b0f1cb91c9d9',
        'models/candidates/gen-0001.pt':
            '1704f25602a9db472650cf0fac111bfbdf4c56f5b38e6cc80568590ff8e290d0',
        'data/arena/gen-0001.json':
            '0fb8941f7fb389ceef32c305383a18e527cd03b77eeac5c938b2267e927ca4ed',
    },
    'triangle-puct': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '4c72b57754387648a0aa5287f1332c91987c032d7198da41c6260db66f84e46e',
        'data/selfplay/gen-0001/shard-000.parquet':
            'fa2c2156f00eb1f73317c0cf252b8b4451ddaa210d902cccee90686e91167b11',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '1d4fc8bc3b334f764ad7cfe4608ca37c036c3190a82fed24c9a844315f0ef3ac',
        'data/selfplay/gen-0001/shard-001.parquet':
            '4eb7d87adc54ddf7dc4fc711be76edf1fa9f393ef03237370abf85b4eeb43430',
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
