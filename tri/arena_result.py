"""The arena's result file (``data/arena/gen-NNNN.json``): its schema and its reader, apart from
the playing code in :mod:`tri.arena`, so that what reads results (promotion, tracking, reports)
imports no search or network."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tri.errors import TriError


@dataclass
class PlayerReport:
    name: str
    mean: float
    low: float
    high: float
    mean_steps: float
    stats: dict[str, float] = field(default_factory=dict)


@dataclass
class ArenaResult:
    """The comparison and its decision (``promote``: whether A should replace B)."""

    game: str
    a: PlayerReport
    b: PlayerReport
    games: int
    rule: str
    promote: bool
    paired: bool = True
    diff_mean: float = 0.0
    diff_low: float = 0.0
    diff_high: float = 0.0
    wins: int = 0
    ties: int = 0
    losses: int = 0
    score_rate: float = 0.0
    seeds: list[int] = field(default_factory=list)
    scores_a: list[float] = field(default_factory=list)
    scores_b: list[float] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def load_result(path: Path) -> ArenaResult:
    """Read an arena JSON written by :func:`run`."""
    try:
        data = json.loads(Path(path).read_text())
        data["a"], data["b"] = PlayerReport(**data["a"]), PlayerReport(**data["b"])
        return ArenaResult(**data)
    except FileNotFoundError:
        raise TriError(f"arena result {path}: file not found") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise TriError(f"arena result {path}: not an arena result ({exc})") from None
