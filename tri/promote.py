"""Promotion stage: apply the arena's decision.

A promoted candidate becomes the best model; a rejected one is kept aside. Either way one JSON
line is appended to the decision log. The best model is replaced atomically (the candidate is
copied to a temporary file beside it, flushed, then renamed over it), so a crash at any point
leaves either the old best or the new best, never a partial file.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from tri import atomic
from tri.arena_result import load_result
from tri.errors import TriError
from tri.net import load_checkpoint


@dataclass(frozen=True)
class PromoteResult:
    promoted: bool
    candidate: str
    best: str
    kept: str  # where the candidate now lives: the best path, or the rejected path


def run(arena: Path, candidate: Path, best: Path, *, rejected: Path, log: Path,
        generation: int | None = None) -> PromoteResult:
    """Promote ``candidate`` to ``best`` if the arena result ``arena`` says so, else copy it to
    ``rejected``; append the decision to ``log``."""

    result = load_result(arena)
    if not Path(candidate).is_file():
        raise TriError(f"candidate {candidate}: file not found")
    ckpt = load_checkpoint(candidate)  # refuse to promote a damaged file
    kept = best if result.promote else rejected
    atomic.copy(candidate, kept)
    entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "generation": ckpt.generation if generation is None else generation,
             "candidate": str(candidate), "model_id": ckpt.model_id, "promoted": result.promote,
             "rule": result.rule, "diff_mean": result.diff_mean, "diff_low": result.diff_low,
             "diff_high": result.diff_high, "score_rate": result.score_rate,
             "candidate_mean": result.a.mean, "best_mean": result.b.mean, "kept": str(kept)}
    _append_line(Path(log), json.dumps(entry))
    return PromoteResult(result.promote, str(candidate), str(best), str(kept))


def _append_line(path: Path, line: str) -> None:
    """Append a line by rewriting the (small) log atomically."""
    old = path.read_text() if path.exists() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    atomic.write_text(path, old + line + "\n")
