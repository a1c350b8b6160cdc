"""Where every stage's files live. No other module builds paths.

::

    models/gen-NNNN.pt                    checkpoints (generation zero-padded)
    data/selfplay/gen-NNNN/               self-play of the model of generation NNNN
        shard-SSS.parquet                 positions (schema: tri.shards)
        shard-SSS.games.parquet           one summary row per game
"""

from __future__ import annotations

from pathlib import Path

SHARD_GLOB = "shard-*[0-9].parquet"


def model_path(root: Path, generation: int) -> Path:
    return Path(root) / "models" / f"gen-{generation:04d}.pt"


def selfplay_dir(root: Path, generation: int) -> Path:
    return Path(root) / "data" / "selfplay" / f"gen-{generation:04d}"


def shard_path(folder: Path, shard: int) -> Path:
    return Path(folder) / f"shard-{shard:03d}.parquet"


def games_path(folder: Path, shard: int) -> Path:
    return Path(folder) / f"shard-{shard:03d}.games.parquet"


def shard_paths(folder: Path) -> list[Path]:
    """The position shards in ``folder``, in shard order."""
    return sorted(Path(folder).glob(SHARD_GLOB))
