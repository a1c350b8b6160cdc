"""Where every stage's files live. No other module builds paths.

Generation ``N`` is the ``N``-th turn of the loop: the best model plays, a candidate is
trained, the arena decides. Numbers are zero-padded::

    models/best.pt                        the current best model (a copy, replaced atomically)
    models/gen-0000.pt                    the initial network
    models/candidates/gen-NNNN.pt         the candidate trained in generation N
    models/rejected/gen-NNNN.pt           a candidate the arena did not promote
    models/promotions.jsonl               one line per decision
    models/generation.yaml                the generation dvc.yaml describes (written between generations)
    models/.generation.lock               held while a generation runs
    data/selfplay/gen-NNNN/               self-play of generation N (by the best model then)
        shard-SSS.parquet                 positions (schema: tri.shards)
        shard-SSS.games.parquet           one summary row per game
    data/train/gen-NNNN/metrics.json      training summary; losses.csv: loss per step
    data/arena/gen-NNNN.json              the arena's result and decision
    data/learning-curve.png               arena mean score per generation
"""

from __future__ import annotations

from pathlib import Path

SHARD_GLOB = "shard-*[0-9].parquet"


def _gen(generation: int) -> str:
    return f"gen-{generation:04d}"


def model_path(root: Path, generation: int) -> Path:
    return Path(root) / "models" / f"{_gen(generation)}.pt"


def best_path(root: Path) -> Path:
    return Path(root) / "models" / "best.pt"


def candidate_path(root: Path, generation: int) -> Path:
    return Path(root) / "models" / "candidates" / f"{_gen(generation)}.pt"


def rejected_path(root: Path, generation: int) -> Path:
    return Path(root) / "models" / "rejected" / f"{_gen(generation)}.pt"


def promotions_log(root: Path) -> Path:
    return Path(root) / "models" / "promotions.jsonl"


def plan_path(root: Path) -> Path:
    return Path(root) / "models" / "generation.yaml"


def lock_path(root: Path) -> Path:
    return Path(root) / "models" / ".generation.lock"


def generation_outputs(root: Path, generation: int) -> list[Path]:
    """What generation ``generation``'s stages write (dvc.yaml's outs, metrics and plots)."""
    return [selfplay_dir(root, generation), candidate_path(root, generation), train_dir(root, generation),
            arena_path(root, generation)]


def train_dir(root: Path, generation: int) -> Path:
    return Path(root) / "data" / "train" / _gen(generation)


def arena_path(root: Path, generation: int) -> Path:
    return Path(root) / "data" / "arena" / f"{_gen(generation)}.json"


def arena_paths(root: Path) -> list[Path]:
    """Every generation's arena result, in generation order."""
    return sorted((Path(root) / "data" / "arena").glob("gen-[0-9]*.json"))


def learning_curve_path(root: Path) -> Path:
    return Path(root) / "data" / "learning-curve.png"


def selfplay_dir(root: Path, generation: int) -> Path:
    return Path(root) / "data" / "selfplay" / _gen(generation)


def window_dirs(root: Path, generation: int, window: int) -> list[Path]:
    """Self-play folders of the last ``window`` generations up to ``generation``, oldest first,
    that exist."""
    folders = [selfplay_dir(root, g) for g in range(max(0, generation - window + 1), generation + 1)]
    return [f for f in folders if f.exists()]


def shard_path(folder: Path, shard: int) -> Path:
    return Path(folder) / f"shard-{shard:03d}.parquet"


def games_path(folder: Path, shard: int) -> Path:
    return Path(folder) / f"shard-{shard:03d}.games.parquet"


def shard_paths(folder: Path) -> list[Path]:
    """The position shards in ``folder``, in shard order."""
    return sorted(Path(folder).glob(SHARD_GLOB))
