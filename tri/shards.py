"""Self-play shards: Parquet files (zstd) of positions, and a sidecar of per-game summaries.

Positions (``shard-SSS.parquet``), one row per move:

=============  ==========================  ===============================================
column         type                        meaning
=============  ==========================  ===============================================
game           int64                       game index within the generation's self-play
move           int32                       moves played before this position
state          fixed_size_list<uint64>[L]  the packed state; ``game.encode`` re-creates the
                                           network input and ``game.legal`` the mask
legal          fixed_size_list<bool>[A]    legal actions
policy         fixed_size_list<float>[A]   search policy target (root visit distribution,
                                           or Gumbel's improved policy with ``mcts.gumbel``)
value_target   float                       n-step return bootstrapped from the search
                                           value (single-player, ``selfplay.td_steps``) or
                                           outcome (two-player) from the side to move
root_value     float                       the search's value estimate of the position
action         int32                       the action played
reward         float                       its reward
score          double                      score before the move
generation     int32                       generation of the model that played
model_id       large_string                content hash of that model's weights
=============  ==========================  ===============================================

Games (``shard-SSS.games.parquet``): game, seed, score, steps, terminal, then the game's summed
per-step counts in name order (triangle: cleared, lines), outcome (two-player), generation,
model_id.

The file's key-value metadata records ``tri.schema``, ``tri.game``, ``tri.game_config`` (JSON),
``tri.state_size`` and ``tri.num_actions``, so a reader can refuse a shard of another game.
Files are written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tri import atomic
from tri.episodes import Episodes
from tri.errors import TriError

SCHEMA_VERSION = "1"


def _metadata(game) -> dict[bytes, bytes]:
    meta = {"tri.schema": SCHEMA_VERSION, "tri.game": game.name,
            "tri.game_config": json.dumps(game.config.model_dump(mode="json"), sort_keys=True),
            "tri.state_size": str(game.state_size), "tri.num_actions": str(game.num_actions)}
    return {k.encode(): v.encode() for k, v in meta.items()}


def write_shard(game, episodes: Episodes, positions_path: Path, games_path: Path, *,
                generation: int, model_id: str, key: str = "") -> None:
    """Write ``episodes`` (recorded) as a positions shard and its games sidecar. The sidecar is
    written first: a shard whose positions file exists is complete. ``key`` identifies what
    produced the shard (see :func:`shard_key`)."""
    p = episodes.positions
    n = len(p)
    stat_names = sorted({k for g in episodes.games for k in g.stats})
    games = pl.DataFrame({
        "game": [g.index for g in episodes.games], "seed": [g.seed for g in episodes.games],
        "score": [g.score for g in episodes.games], "steps": [g.steps for g in episodes.games],
        "terminal": [g.terminal for g in episodes.games],
        **{k: [g.stats.get(k, 0) for g in episodes.games] for k in stat_names},
        "outcome": [g.outcome for g in episodes.games],
    }, schema_overrides={"game": pl.Int64, "seed": pl.Int64, "steps": pl.Int32}).with_columns(
        generation=pl.lit(generation, pl.Int32), model_id=pl.lit(model_id))
    positions = pl.DataFrame({
        "game": p.game, "move": p.move,
        "state": pl.Series(p.state.reshape(n, game.state_size), dtype=pl.Array(pl.UInt64, game.state_size)),
        "legal": pl.Series(p.legal.reshape(n, game.num_actions), dtype=pl.Array(pl.Boolean, game.num_actions)),
        "policy": pl.Series(p.policy.reshape(n, game.num_actions).astype(np.float32),
                            dtype=pl.Array(pl.Float32, game.num_actions)),
        "value_target": p.value_target, "root_value": p.root_value, "action": p.action,
        "reward": p.reward, "score": p.score,
    }).with_columns(generation=pl.lit(generation, pl.Int32), model_id=pl.lit(model_id))
    meta = _metadata(game) | {b"tri.key": key.encode()}
    for frame, path in ((games, games_path), (positions, positions_path)):
        table = frame.to_arrow()
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
        atomic.write_with(path, lambda tmp, table=table: pq.write_table(table, tmp, compression="zstd"))


def shard_key(path: Path) -> str | None:
    """The ``key`` a complete shard was written with, or None if it is missing or unreadable."""
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid):
        return None
    return meta.get(b"tri.key", b"").decode()


def check_shard(path: Path, game) -> None:
    """Raise :class:`TriError` unless ``path`` is a readable shard of ``game``."""
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid) as exc:
        raise TriError(f"shard {path}: not a readable Parquet file ({exc})") from None
    meta = {k.decode(): v.decode() for k, v in meta.items()}
    if "tri.game" not in meta:
        raise TriError(f"shard {path}: not a tri self-play shard")
    if meta.get("tri.schema") != SCHEMA_VERSION:
        raise TriError(f"shard {path}: schema {meta.get('tri.schema')} is not {SCHEMA_VERSION}")
    if meta["tri.game"] != game.name:
        raise TriError(f"shard {path}: it holds {meta['tri.game']} positions, not {game.name}")
    if json.loads(meta["tri.game_config"]) != game.config.model_dump(mode="json"):
        raise TriError(f"shard {path}: it was played with a different {game.name} configuration")


def read_positions(paths: list[Path], game, columns: list[str] | None = None) -> pl.DataFrame:
    """Positions of several shards (checked to be of ``game``) as one DataFrame."""
    for path in paths:
        check_shard(path, game)
    frames = [pl.read_parquet(path, columns=columns) for path in paths]
    return pl.concat(frames).rechunk() if frames else pl.DataFrame()


def read_games(paths: list[Path]) -> pl.DataFrame:
    frames = [pl.read_parquet(path) for path in paths]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
