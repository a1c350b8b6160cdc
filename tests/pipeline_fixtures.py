"""Shared helpers for the pipeline tests (train, arena, players, promote, loop).

Everything runs on a small triangle board (5 x 9, the board of ``test_selfplay``) with a tiny
network and a few simulations, so a whole generation takes seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tri import layout
from tri.config import ArenaParams, GameParams, MctsParams, NetParams, Params, SelfplayParams, TrainParams
from tri.params_yaml import dump_params
from tri.episodes import Episodes, GameSummary
from tri.games import make_game
from tri.games.base import sample_legal
from tri.games.triangle.rules import TriangleConfig
from tri.net import Checkpoint, build_model, save_checkpoint
from tri.shards import write_shard

SMALL_BOARD = TriangleConfig(rows=5, cols=9, playable=[(1, 8), (0, 9), (0, 9), (0, 9), (1, 8)])
# The same board with other rewards: "another game configuration".
OTHER_BOARD = SMALL_BOARD.model_copy(update={"rewards": SMALL_BOARD.rewards.model_copy(update={"cleared": 1.0})})

TINY_NET = NetParams(channels=8, blocks=1, value_hidden=16, support_max=10)

PARAMS = Params(
    game=GameParams(triangle=SMALL_BOARD),
    net=TINY_NET,
    mcts=MctsParams(simulations=4, discount=0.9),
    selfplay=SelfplayParams(games=6, shards=2, concurrent=3, max_moves=8, temperature_moves=4),
    train=TrainParams(batch_size=32, warmup_steps=5, samples_per_position=4.0, max_steps=40, threads=1),
    arena=ArenaParams(games=6, simulations=4, max_moves=12, concurrent=6, rule="ci_lower"),
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def with_section(params: Params, section: str, **updates) -> Params:
    """``params`` with some settings of one section changed."""
    return params.model_copy(update={section: getattr(params, section).model_copy(update=updates)})


def game_of(params: Params = PARAMS):
    return make_game(params.game)


def save_model(path: Path, params: Params = PARAMS, *, generation: int = 0, seed: int | None = None,
               provenance: dict[str, str] | None = None) -> Checkpoint:
    """A fresh network for ``params``' game saved at ``path``; ``seed`` overrides ``net.seed``."""
    game = make_game(params.game)
    net = params.net if seed is None else params.net.model_copy(update={"seed": seed})
    ckpt = Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"), net_params=net,
                      generation=generation, model=build_model(game, net), provenance=provenance or {})
    save_checkpoint(ckpt, path)
    return ckpt


class FixedTargetAgent:
    """Plays uniformly random legal moves (so positions vary) but reports a fixed, learnable
    policy target: the highest legal action, one-hot (an untrained network's uniform prior
    would pick the lowest)."""

    name = "fixed-target"

    def __init__(self, game, rng: np.random.Generator):
        self.game, self.rng = game, rng

    def act(self, states, moves):
        from tri.agents import Decision

        legal = self.game.legal(states)
        policy = np.zeros(legal.shape, np.float32)
        policy[np.arange(legal.shape[0]), legal.shape[1] - 1 - np.argmax(legal[:, ::-1], axis=1)] = 1.0
        return Decision(sample_legal(legal, self.rng), policy, np.zeros(legal.shape[0], np.float32))


def synthetic_episodes(game, games: int = 24, *, seed: int = 0, value: float = 3.0,
                       max_moves: int = 30) -> Episodes:
    """Random-play positions whose targets are fixed and learnable: policy one-hot on the highest
    legal action, value target the constant ``value``."""
    from tri.episodes import run_episodes

    seeds = np.arange(1000 + seed * games, 1000 + (seed + 1) * games, dtype=np.int64)
    episodes = run_episodes(game, [FixedTargetAgent(game, np.random.default_rng(seed))], seeds,
                            concurrent=8, max_moves=max_moves, record=True)
    episodes.positions.value_target[:] = value
    return episodes


def write_synthetic_folder(folder: Path, game, *, games: int = 24, seed: int = 0, value: float = 3.0,
                           generation: int = 0) -> Episodes:
    """A self-play folder with one shard of :func:`synthetic_episodes`."""
    episodes = synthetic_episodes(game, games, seed=seed, value=value)
    write_shard(game, episodes, layout.shard_path(folder, 0), layout.games_path(folder, 0),
                generation=generation, model_id="synthetic")
    return episodes


def fake_episodes(scores: list[float]) -> Episodes:
    """Episodes with the given scores (for the arena's decision rule)."""
    games = [GameSummary(index=i, seed=i, score=float(s), steps=10, terminal=True) for i, s in enumerate(scores)]
    return Episodes(games, None)


def write_params(path: Path, params: Params = PARAMS) -> Path:
    path.write_text(dump_params(params))
    return path


def tri_cli(*args, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``python -m tri.cli ARGS`` and capture its output."""
    return subprocess.run([sys.executable, "-m", "tri.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def run_generations(root: Path, params: Params, generations: int, *, runner: str = "threads",
                    tracking: bool = False, plateau: int | None = None) -> list[dict]:
    """Run the loop flow on the project ``root`` with ``params`` written to ``root/params.yaml``
    (needs the ``prefect_server`` fixture). One worker; ``runner``: ``TRI_TASK_RUNNER``."""
    from pipelines.loop import loop_flow

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(dump_params(params))
    saved = {k: os.environ.get(k) for k in ("TRI_WORKERS", "TRI_TASK_RUNNER", "TRI_TRACKING", "TRI_DEVICE")}
    os.environ.update(TRI_WORKERS="2" if runner != "threads" else "1", TRI_TASK_RUNNER=runner,
                      TRI_TRACKING=str(tracking).lower(), TRI_DEVICE="cpu")
    try:
        return loop_flow(root=str(root), generations=generations, plateau=plateau)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def assert_clean_error(proc: subprocess.CompletedProcess, code: int = 1, *needles: str) -> None:
    """A user error: exit ``code``, ``error:`` lines on stderr naming ``needles``, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("error: ") for line in lines), proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


__all__ = ["SMALL_BOARD", "OTHER_BOARD", "TINY_NET", "PARAMS", "PNG_SIGNATURE", "with_section", "game_of",
           "save_model", "synthetic_episodes", "write_synthetic_folder", "fake_episodes", "write_params",
           "tri_cli", "assert_clean_error", "run_generations"]
