"""Promotion stage: apply the arena's decision.

A promoted candidate becomes the best model; a rejected one is kept aside. Either way one JSON
line is appended to the decision log. The best model is replaced atomically (the candidate is
copied to a temporary file beside it, flushed, then renamed over it), so a crash at any point
leaves either the old best or the new best, never a partial file.

**The log is portable**: its paths are relative to the project (:func:`tri.layout.log_root`)
and it holds no wall time (the generation's time is in its git commit and MLflow run), so a
project can move and ``dvc repro`` of a tag needs nothing from the machine that ran it. Logs
written before held absolute paths and a ``time``; read a path back with ``root / entry[key]``,
which gives the same file for both.

**The best model's pooled mean.** Each arena plays the candidate and the best model on fresh
seeds, so the best model's mean moves between generations although the model does not. The
decision also records the pool of every arena game the best model after it has played as the
best (single-player games): a promoted candidate's pool starts with its own games of that arena;
a defender that stays best adds its games of each arena to its pool (``best_pooled_mean`` over
``best_pooled_games`` games; a model is named by its ``model_id``). Two-player arenas score the
best against a different candidate each time, so no pool is kept for them (None, 0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tri import atomic, layout
from tri.arena_result import ArenaResult, load_result
from tri.errors import TriError


@dataclass(frozen=True)
class PromoteResult:
    promoted: bool
    candidate: str
    best: str
    kept: str  # where the candidate now lives: the best path, or the rejected path
    best_model_id: str | None = None  # the best model after the decision
    best_pooled_mean: float | None = None  # its mean over every arena game it played as the best
    best_pooled_games: int = 0  # ... and how many (None, 0: two-player games)


@dataclass(frozen=True)
class Pool:
    """The arena games a best model has played as the best: its ``model_id`` (None when not
    known, e.g. the initial network in an old log), their ``mean`` score (None: none known)
    and how many ``games``."""

    model_id: str | None
    mean: float | None = None
    games: int = 0


def _side(result: ArenaResult, side: str) -> tuple[float, int]:
    """Sum and number of a side's scores in ``result`` (its mean times ``games`` if the file
    has no per-game scores)."""
    scores = result.scores_a if side == "a" else result.scores_b
    if scores:
        return float(sum(scores)), len(scores)
    report = result.a if side == "a" else result.b
    return report.mean * result.games, result.games


def next_pool(pool: Pool | None, result: ArenaResult, promoted: bool, candidate_id: str | None,
              defender_id: str | None) -> Pool:
    """The best model's pool after an arena ``result`` and its decision, from ``pool``, the best
    model's pool before it (None: not known). ``defender_id``: the model that played as the
    best (None: the model of ``pool``)."""
    defender_id = defender_id or (pool.model_id if pool else None)
    if not result.paired:  # two-player: no pool (see the module docstring)
        return Pool(candidate_id if promoted else defender_id)
    if promoted:
        total, games = _side(result, "a")
        return Pool(candidate_id, total / games if games else None, games)
    same = pool is not None and pool.mean is not None and (
        pool.model_id is None or defender_id is None or pool.model_id == defender_id)
    total, games = _side(result, "b")
    if same:
        total, games = total + pool.mean * pool.games, games + pool.games
    return Pool(defender_id, total / games if games else None, games)


def logged_pool(entry: dict) -> Pool | None:
    """The pool a decision log line recorded (None: a line written before pools were)."""
    if "best_pooled_games" not in entry:
        return None
    mean = entry.get("best_pooled_mean")
    return Pool(entry.get("best_model_id"), None if mean is None else float(mean), int(entry["best_pooled_games"]))


def read_log(log: Path) -> list[dict]:
    """The decision log's lines, oldest first (none if there is no log yet)."""
    log = Path(log)
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def best_pools(root: Path, entries: list[dict]) -> dict[int, Pool]:
    """The best model's pool after each decision of the log ``entries`` (by generation): as
    logged, or, for lines written before pools were, replayed from the project's arena results
    (a generation whose result cannot be read adds nothing)."""
    pools: dict[int, Pool] = {}
    pool: Pool | None = None
    for entry in entries:
        generation, promoted = int(entry["generation"]), bool(entry.get("promoted"))
        logged = logged_pool(entry)
        if logged is None:
            try:
                result = load_result(layout.arena_path(root, generation))
            except TriError:
                result = None
            if result is not None:
                logged = next_pool(pool, result, promoted, entry.get("model_id"), None)
            elif promoted:
                logged = Pool(entry.get("model_id"))
        pool = logged or pool
        if pool is not None:
            pools[generation] = pool
    return pools


def _model_id(path: Path) -> str | None:
    # tri.net imports torch (~2 s): only when a decision is applied, not when pools are read.
    from tri.net import load_checkpoint

    try:
        return load_checkpoint(path, ensemble=True).model_id if Path(path).is_file() else None
    except TriError:  # the pool restarts; the decision does not depend on it
        return None


def run(arena: Path, candidate: Path, best: Path, *, rejected: Path, log: Path,
        generation: int | None = None) -> PromoteResult:
    """Promote ``candidate`` to ``best`` if the arena result ``arena`` says so, else copy it to
    ``rejected``; append the decision to ``log`` (paths relative to its project)."""
    result = load_result(arena)
    if not Path(candidate).is_file():
        raise TriError(f"candidate {candidate}: file not found")
    # tri.net imports torch (~2 s): only when a decision is applied, not when pools are read or
    # the inputs are missing.
    from tri.net import load_checkpoint

    ckpt = load_checkpoint(candidate)  # refuse to promote a damaged file
    root = layout.log_root(log)
    entries = read_log(log)
    before = best_pools(root, entries).get(int(entries[-1]["generation"])) if entries else None
    pool = next_pool(before, result, result.promote, ckpt.model_id, _model_id(best))
    kept = best if result.promote else rejected
    atomic.copy(candidate, kept)
    entry = {"generation": ckpt.generation if generation is None else generation,
             "candidate": layout.relative(root, candidate), "model_id": ckpt.model_id, "promoted": result.promote,
             "rule": result.rule, "diff_mean": result.diff_mean, "diff_low": result.diff_low,
             "diff_high": result.diff_high, "score_rate": result.score_rate,
             "candidate_mean": result.a.mean, "best_mean": result.b.mean, "best_model_id": pool.model_id,
             "best_pooled_mean": pool.mean, "best_pooled_games": pool.games, "kept": layout.relative(root, kept)}
    _append_line(Path(log), json.dumps(entry))
    return PromoteResult(result.promote, str(candidate), str(best), str(kept), pool.model_id, pool.mean, pool.games)


def _append_line(path: Path, line: str) -> None:
    """Append a line by rewriting the (small) log atomically."""
    old = path.read_text() if path.exists() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    atomic.write_text(path, old + line + "\n")
