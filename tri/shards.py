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
policy_target  bool                        only in shards of self-play with playout caps
                                           (``selfplay.full_fraction`` below 1): whether
                                           the move was searched in full, so its policy is
                                           a training target; a shard without the column
                                           reads as all true
=============  ==========================  ===============================================

Games (``shard-SSS.games.parquet``): game, seed, score, steps, terminal, then the game's summed
per-step counts in name order (triangle: cleared, lines), outcome (two-player), generation,
model_id.

The file's key-value metadata records ``tri.schema``, ``tri.game``, ``tri.game_config`` (JSON),
``tri.state_size`` and ``tri.num_actions``, so a reader can refuse a shard of another game.
Files are written under a temporary name and renamed when complete. Training reads them with
``read_positions(validate=True)``, which also refuses values self-play never writes
(:func:`check_positions`).
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
    if p.policy_target is not None:
        positions = positions.with_columns(policy_target=pl.Series(p.policy_target, dtype=pl.Boolean))
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


def count_positions(paths: list[Path], game) -> int:
    """Rows of several shards (checked to be of ``game``), from their Parquet metadata alone."""
    for path in paths:
        check_shard(path, game)
    return sum(pq.read_metadata(path).num_rows for path in paths)


# Columns only some shards have, and what a shard without one reads as.
OPTIONAL_COLUMNS = {"policy_target": pl.lit(True, pl.Boolean)}
# What training trusts: checked by read_positions(validate=True).
CHECKED_COLUMNS = ("value_target", "root_value", "policy", "legal", "action")
POLICY_SUM_TOLERANCE = 1e-3  # self-play writes float32 distributions: sums are 1 within ~1e-7


def check_positions(frame: pl.DataFrame, path: Path, game) -> None:
    """Raise :class:`TriError` (one line: the file, the column, the first bad row, the problem)
    unless ``frame``'s :data:`CHECKED_COLUMNS` hold what self-play writes: finite
    ``value_target`` and ``root_value [P]``; ``policy [P, A]`` a probability distribution over
    the row's ``legal [P, A]`` actions; ``action [P]`` in ``[0, A)`` and legal. Rows are
    0-based."""
    A = game.num_actions

    def bad(column: str, rows: np.ndarray, problem) -> None:
        if rows.size:
            row = int(rows[0])
            raise TriError(f"shard {path}: column {column}, row {row}: {problem(row)}")

    written = {"value_target": pl.Float32, "root_value": pl.Float32, "policy": pl.Array(pl.Float32, A),
               "legal": pl.Array(pl.Boolean, A), "action": pl.Int32}  # as write_shard writes them
    for column, dtype in written.items():
        series = frame[column]
        if series.dtype != dtype:
            raise TriError(f"shard {path}: column {column} holds {series.dtype} values, not {dtype}")
        bad(column, np.flatnonzero(series.is_null().to_numpy()), lambda row: "missing value")
    for column in ("value_target", "root_value"):
        values = frame[column].to_numpy()
        bad(column, np.flatnonzero(~np.isfinite(values)), lambda row, v=values: f"{v[row]} is not a finite number")
    legal = frame["legal"].to_numpy()
    if legal.dtype != bool:  # a null inside a row makes an object array
        bad("legal", np.flatnonzero(np.equal(legal, None).any(axis=1)), lambda row: "missing value")
    policy = frame["policy"].to_numpy()
    # Whole-array reductions first (fast); rows are searched only when something is wrong.
    if not (policy.min(initial=0) >= 0 and policy.max(initial=0) <= 1):  # NaN fails both
        outside = ~((policy >= 0) & (policy <= 1))
        bad("policy", np.flatnonzero(outside.any(axis=1)),
            lambda row: f"{policy[row][outside[row]][0]} at action {np.argmax(outside[row])} is not a probability")
    illegal = policy > 0
    np.greater(illegal, legal, out=illegal)  # positive and not legal
    if illegal.any():
        bad("policy", np.flatnonzero(illegal.any(axis=1)),
            lambda row: f"{policy[row][illegal[row]][0]:.6g} on action {np.argmax(illegal[row])}, which is not legal")
    sums = policy.sum(axis=1)
    bad("policy", np.flatnonzero(np.abs(sums - 1) > POLICY_SUM_TOLERANCE), lambda row: f"sums to {sums[row]:.6g}, not 1")
    if "policy_target" in frame.columns:
        target = frame["policy_target"]
        if target.dtype != pl.Boolean:
            raise TriError(f"shard {path}: column policy_target holds {target.dtype} values, not Boolean")
        bad("policy_target", np.flatnonzero(target.is_null().to_numpy()), lambda row: "missing value")
    action = frame["action"].to_numpy()
    bad("action", np.flatnonzero((action < 0) | (action >= A)), lambda row: f"{action[row]} is not an action (0-{A - 1})")
    bad("action", np.flatnonzero(~legal[np.arange(len(action)), action]),
        lambda row: f"{action[row]} is not legal in the row's position")


def read_positions(paths: list[Path], game, columns: list[str] | None = None, *,
                   validate: bool = False) -> pl.DataFrame:
    """Positions of several shards (checked to be of ``game``) as one DataFrame; a column of
    :data:`OPTIONAL_COLUMNS` a shard lacks reads as its default. ``validate``: check each file's
    training columns too (:func:`check_positions`)."""
    for path in paths:
        check_shard(path, game)
    frames = []
    for path in paths:
        read = columns if not validate or columns is None else list(dict.fromkeys([*columns, *CHECKED_COLUMNS]))
        try:
            present = set(pq.read_schema(path).names)
            frame = pl.read_parquet(path, columns=None if read is None else [c for c in read if c in present])
        except (pl.exceptions.PolarsError, OSError, pa.ArrowException) as exc:
            raise TriError(f"shard {path}: cannot be read ({str(exc).splitlines()[0] if str(exc) else exc!r})") from None
        missing = [] if read is None else [c for c in read if c not in present]
        for column in missing:
            if column not in OPTIONAL_COLUMNS:
                raise TriError(f"shard {path}: no column {column}")
            frame = frame.with_columns(OPTIONAL_COLUMNS[column].alias(column))
        if validate:
            check_positions(frame, path, game)
            frame = frame if columns is None else frame.select(columns)
        frames.append(frame)
    return pl.concat(frames).rechunk() if frames else pl.DataFrame()


def read_games(paths: list[Path]) -> pl.DataFrame:
    frames = [pl.read_parquet(path) for path in paths]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
