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
and are kept per kind of CPU (``CANDIDATES_BY_CPU``); record a change's hashes on every kind.
On 2026-11-27 the shards' hashes were recorded again when ``mcts.afterstates`` (off) joined the
params the shards carry (on this AVX2 CPU; shards hash alike on both kinds); with that field left
out of the shards' key, every file was checked to hash as before.
On 2026-11-27 (later) afterstates became the default: the older cases keep them off (``OLD``), and
the case ``triangle-afterstates`` was added, recorded on an AVX2 CPU; its candidate on an
AVX512 one was recorded later the same day, when tri ran on such a CPU again (the older cases'
candidates there matched ``HASHES``).
On 2026-12-01 tri ran on an Intel Xeon with AVX512: every case's candidate hashed otherwise than on
the AMD EPYC with AVX512 (the shards and arena results the same), so the kind of CPU is now torch's
capability and the CPU's maker (``cpu_kind``).
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
                    seed=5, precision="float32", luck_samples=0)  # the default until 2026-11-29
# The embedded defaults these cases were recorded with, where the defaults have changed since
# (the triangle recipe became the default): the cases stay what they were.
OLD = {"gumbel": False, "discount": 0.99, "gumbel_c_scale": 0.1, "precision": "float32", "afterstates": False}

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
    "triangle-afterstates": Params(  # the recipe's search since 2026-11-27: afterstates, in the tree and in training
        game=GameParams(name="triangle", triangle=SMALL_BOARD), net=NET,
        mcts=MctsParams(simulations=8, discount=0.9, gumbel=True, gumbel_actions=4, precision="float32",
                        afterstates=True),
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
            '991dd571890d4a93176d0a13631d76e6a165cd73502a19d4926f58655ef9c79b',
        'data/selfplay/gen-0001/shard-000.parquet':
            '88d7fd516c9ca6e7ac038585fe0014dee8391d8f6e3ee442ab76993533fccd4c',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '6ca75670e7315461c540952b00170b44b5663f91df78f7c62ccdcffdcd5953a1',
        'data/selfplay/gen-0001/shard-001.parquet':
            '8d636f8a03836c5b118460b22a75f7cefd80f32b82e59db8964238e4e5b79ddb',
        'models/candidates/gen-0001.pt':
            '18eb35305cd5efaa8cd03627c3a2a5a71d347eb3888e21ee231c50a38155dd4d',
        'data/arena/gen-0001.json':
            'f27cdba68d6b8c2ea819449b37183997eb0d347578ef88f41126715d32a5d57b',
    },
    'tictactoe': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '2347cf2f8c53b4fb0b11f3c730992b4e1dc144b1ce32df70a8c736f56df4dd92',
        'data/selfplay/gen-0001/shard-000.parquet':
            '740d287ef2de8400f36adc1966872becf54c593b2076002af5ed69af092f1ca4',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            '06964566d05df3bc6e669deaf6a6caa78884ac40c7446d38b7971cb5052790a2',
        'data/selfplay/gen-0001/shard-001.parquet':
            '693e5844a2351dc452b1594c4d267cbc11c4cb484047dcac8ce9eb36a3028c85',
        'models/candidates/gen-0001.pt':
            '10cdb0f9c5000fabbcd2cd2d5854236734603e2ca26857148960ea1d934b580a',
        'data/arena/gen-0001.json':
            'd58e8b3fe10e76af5bd5320af94036044340e365e80ff5118545b5f40a60afad',
    },
    'triangle-afterstates': {  # its candidate: CANDIDATES_BY_CPU (recorded on AVX2 and AVX512 CPUs)
        'data/selfplay/gen-0001/shard-000.games.parquet':
            'aefcae179edb001a8eff5f1aa7b0428a4552826b090cf3b647601160c4bf6687',
        'data/selfplay/gen-0001/shard-000.parquet':
            '19ce0fb72164896255797d387e8ad160a1ae95745d4f8245bb735e5f80b769f1',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            'b1cb81c9ab1c94dab65ad40eaf7ae1c157b2d72d85bfc0c3efeafe7464baf171',
        'data/selfplay/gen-0001/shard-001.parquet':
            '8d7231e6f1100b6f888ad626687175892966285385a2cc57600f2ebc164429c3',
        'data/arena/gen-0001.json':
            '741fc0263c769cbe27744216fc0b3c309f5ad3d492cf536ae50a7c5edb3e7387',
    },
    'triangle-gumbel': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '59d58fa947b44b42aa972b7d4c8248549cb9d12846b31fe9d4e9cbaf36e29585',
        'data/selfplay/gen-0001/shard-000.parquet':
            'f37f4a1288df0d21ffacef1612ff0a28577a52463f235be214fb03ab29084b5c',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            'c50eae468e3ceb9f71a5d79e740312c7ccb9d9b414b79b75ef588ae5cc407062',
        'data/selfplay/gen-0001/shard-001.parquet':
            '838607f71f90f5aad1e9b66216be41907c29f184004486a6c7d4289adf5bd21b',
        'models/candidates/gen-0001.pt':
            '1704f25602a9db472650cf0fac111bfbdf4c56f5b38e6cc80568590ff8e290d0',
        'data/arena/gen-0001.json':
            '0fb8941f7fb389ceef32c305383a18e527cd03b77eeac5c938b2267e927ca4ed',
    },
    'triangle-puct': {
        'data/selfplay/gen-0001/shard-000.games.parquet':
            '1c3de5d11d907497a3a8738104430455076ee00e3b9f634d4af6670258f83185',
        'data/selfplay/gen-0001/shard-000.parquet':
            '7b6cb31ec2ab503a96c5849b5f776ae802fc9439c255b4acb1af5ef2df4ebbe5',
        'data/selfplay/gen-0001/shard-001.games.parquet':
            'fd45d40ecefdc8a92751489c76895fc15d2bbe2bb46e4de5e9e8fc96115e6d54',
        'data/selfplay/gen-0001/shard-001.parquet':
            'd6b42da054b91e11068f4a90935de2f3e0be93dc96e9428586f7a99245ac4e29',
        'models/candidates/gen-0001.pt':
            'ed67d03452d25934917d3904356fd492c78241d9208f40e97fc50d1064f75538',
        'data/arena/gen-0001.json':
            'bbcbd04e651438d013334eb28ff9186f4f310fdd61e573175a547cdb7a2b4eb6',
    },
}


# Training's float32 kernels sum in another order on a CPU that torch dispatches to other vector
# instructions (``torch.backends.cpu.get_cpu_capability()``), or whose maker's math library takes
# other paths, so the candidates trained there have other bytes; the self-play shards and the arena
# results do not change. ``HASHES`` were recorded on an AMD EPYC with AVX512 (2026-11-23 to 26);
# these candidates, where they differ, on the kind of CPU each key names: an AMD EPYC with AVX2
# (2026-11-26, at the commit before the one that added them) and an Intel Xeon with AVX512
# (2026-12-01, every case's candidate, at ff77034; nothing else differed).
CANDIDATES_BY_CPU: dict[str, dict[str, str]] = {
    'AVX512 AuthenticAMD': {  # the case added on the AVX2 CPU, recorded on this kind on 2026-11-27
        'triangle-afterstates': 'aefec65b6b416eca3e6bae63f3700792c8e2e6ee4c5e45664c733262e75d1c2a',
    },
    'AVX2 AuthenticAMD': {
        'tictactoe': '2263fe1231eb41e84a77bc8ad089d7be90f4360acb0cdf0f666a4acdf16c8b92',
        'triangle-afterstates': 'a5861d20fa299515bcb55cf79cb578a9a090a976125ff8a3837cae7a28fa26f4',
        'triangle-gumbel': '24ad4bc877aab0df932b19acccb45dabedd1dd70f25d852956c5a2d20f8b8ade',
        'triangle-puct': '82764b4be0ed903ddc0351dd872eff1bde24d010ce4d7a0040163806b4686839',
    },
    'AVX512 GenuineIntel': {
        'connect4': 'f5453b9074a8bb43f69bd20582b0af7ca2210f70e914dab1c3899e4bccdf7ccf',
        'tictactoe': '733033c1586ca404cccd3fa295aa29ff8697a380c1e7bb0c3147946769554d23',
        'triangle-afterstates': '851eddf084e9c55f3f4fee457e12c862722ea34110da6b828013fd91ad806355',
        'triangle-gumbel': 'f836957dce4d509ecc0d61b6b860864ffba94fc8facf5357bcf1d843085c33ff',
        'triangle-puct': 'f620cef6a1d7cf38b54a2d7ef29c2ce1cc3ec71890f81d9469856f8da8cbf873',
    },
}


def cpu_kind() -> str:
    """torch's vector capability and the CPU's maker, as ``CANDIDATES_BY_CPU`` keys them:
    ``'AVX512 GenuineIntel'`` (the maker is empty where ``/proc/cpuinfo`` does not say)."""
    import torch

    vendor = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("vendor_id"):
                vendor = line.split(":", 1)[1].strip()
                break
    return f"{torch.backends.cpu.get_cpu_capability()} {vendor}".strip()


def expected_hashes(case: str) -> dict[str, str]:
    """``HASHES[case]``, with the candidate's hash of this machine's kind of CPU where it differs."""
    want = dict(HASHES[case])
    candidate = CANDIDATES_BY_CPU.get(cpu_kind(), {}).get(case)
    if candidate:
        want["models/candidates/gen-0001.pt"] = candidate
    return want  # without the candidate for a case recorded on another kind of CPU only


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
    want = expected_hashes(case)
    assert {k: got[k] for k in want} == want, f"{case}: the generation's files changed: {got!r}"
    assert len(want) >= 5


def test_the_cases_play_real_games(tmp_path):
    """The recorded generation is not empty: its arena has scores, its shards positions."""
    import polars as pl

    params = CASES["connect4"]
    tiny_generation(params, tmp_path)
    rows = sum(pl.read_parquet(p).height for p in layout.shard_paths(layout.selfplay_dir(tmp_path, 1)))
    assert rows >= 4 * 7  # four games of Connect Four, each at least seven moves
    result = load_result(layout.arena_path(tmp_path, 1))
    assert result.games == 4 and np.isfinite(result.score_rate)
