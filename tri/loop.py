"""Generations without an orchestrator: self-play, train, arena, promote, in this process.

This is the plain-Python form of one generation (the Prefect flow runs the same stage functions).
Generation ``N`` (``N >= 1``): the best model plays ``data/selfplay/gen-N``; a candidate is trained
on the window ``gen-(N-window+1) .. gen-N``, starting from generation ``N-1``'s candidate (or the
best model, see ``train.continue_from``); it meets the best in the arena; the decision is
applied. Files follow :mod:`tri.layout`. :func:`run_loop` continues after the last recorded
decision, so an interrupted loop picks up where it stopped.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tri import atomic, layout
from tri.config import Params, Runtime


@dataclass(frozen=True)
class GenerationResult:
    generation: int
    selfplay_games: int
    selfplay_positions: int
    selfplay_mean_score: float
    train_steps: int
    train_loss: float
    candidate_mean: float
    best_mean: float
    diff_low: float
    promoted: bool
    seconds: float


def ensure_initial(params: Params, root: Path) -> Path:
    """Create generation 0 (a fresh network) and make it the best model if there is none."""
    from tri.games import make_game
    from tri.net import Checkpoint, build_model, save_checkpoint

    best = layout.best_path(root)
    if best.exists():
        return best
    initial = layout.model_path(root, 0)
    if not initial.exists():
        game = make_game(params.game)
        save_checkpoint(Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"),
                                   net_params=params.net, generation=0, model=build_model(game, params.net),
                                   provenance={"created_by": "tri loop"}), initial)
    atomic.copy(initial, best)
    return best


def next_generation(root: Path) -> int:
    """One past the last generation with a recorded decision (1 for a new project)."""
    log = layout.promotions_log(root)
    if not log.exists():
        return 1
    generations = [json.loads(line)["generation"] for line in log.read_text().splitlines() if line.strip()]
    return max(generations, default=0) + 1


def run_generation(params: Params, root: Path, generation: int, *, runtime: Runtime | None = None,
                   progress: bool = True) -> GenerationResult:
    from tri import arena, promote, selfplay, train

    start = time.perf_counter()
    runtime = runtime or Runtime()
    best = ensure_initial(params, root)
    sp = selfplay.run(params, best, layout.selfplay_dir(root, generation), generation=generation,
                      runtime=runtime, progress=progress)
    candidate = layout.candidate_path(root, generation)
    tdir = layout.train_dir(root, generation)
    start_from = layout.train_start_path(root, generation, params.train.continue_from)
    tr = train.run(params, start_from, layout.window_dirs(root, generation, params.train.window), candidate,
                   generation=generation, metrics=tdir / "metrics.json", losses=tdir / "losses.csv",
                   progress=progress)
    result_path = layout.arena_path(root, generation)
    ar = arena.run(params, str(candidate), str(best), generation=generation, out=result_path, runtime=runtime)
    promote.run(result_path, candidate, best, rejected=layout.rejected_path(root, generation),
                log=layout.promotions_log(root), generation=generation)
    return GenerationResult(generation, sp.games, sp.positions, sp.mean_score, tr.steps, tr.loss,
                            ar.a.mean, ar.b.mean, ar.diff_low, ar.promote, time.perf_counter() - start)


def run_loop(params: Params, root: Path, *, generations: int | None = None, minutes: float | None = None,
             runtime: Runtime | None = None, progress: bool = True, report=print) -> list[GenerationResult]:
    """Run generations until ``generations`` more have run or ``minutes`` have passed (checked
    between generations)."""
    start = time.perf_counter()
    results = []
    while True:
        if generations is not None and len(results) >= generations:
            break
        if minutes is not None and time.perf_counter() - start >= minutes * 60:
            break
        generation = next_generation(root)
        r = run_generation(params, root, generation, runtime=runtime, progress=progress)
        results.append(r)
        report(json.dumps(asdict(r)))
    return results
