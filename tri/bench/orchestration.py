"""``tri bench orchestration``: what Prefect, DVC, git and MLflow add to a generation's time.

Two fresh projects in a scratch folder run the same generations on the same params:

- **anchor (plain)**: the stage functions called one after another on the flow's paths
  (:func:`tri.layout.generation_paths`): self-play shards in a thread pool, as the flow's
  default task runner runs them, or in ``tri selfplay``'s worker processes for the other
  runners; train, arena, promote, the picture of the candidate's game; no orchestrator, no
  versioning, no tracking;
- **orchestrated**: the generation flow inside the loop flow (Prefect task runner, project lock,
  plan file, ``dvc commit``/``dvc add``, a git commit and tag, MLflow run, artifacts and registry),
  in a git + DVC project laid out like this repository.

Both write the same bytes (the generations are reproducible), so the time difference is the
orchestration's. The overhead is ``1 - plain / orchestrated`` on the median generation. Because
two runs of the same generation differ by a few seconds anyway (the machine is not quiet), the
report also gives the **bookkeeping** share measured inside the flow: the wall time of a
generation minus the time inside its stage functions (plan, ``dvc commit``, git, MLflow, and
Prefect's task and flow-run calls), over the generation's wall time. The
first flow of a process starts Prefect's temporary server; the loop flow starts it before the
first generation, so, as with a running ``tri serve``, generation times do not include it.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from tri import arena, atomic, layout, promote, selfplay, train
from tri.config import Params, Runtime
from tri.device import resolve_device
from tri.games import make_game
from tri.net import initial_checkpoint, save_checkpoint
from tri.record import render, stores, versioning
from tri.record.project import new_project



@dataclass(frozen=True)
class OrchestrationBench:
    generations: int
    plain_seconds: list[float]
    orchestrated_seconds: list[float]
    plain_median: float
    orchestrated_median: float
    overhead_share: float
    task_runner: str
    phases: list[dict[str, float]]  # per orchestrated generation: seconds per phase
    bookkeeping_share: float  # median over generations of 1 - stage time / flow wall time

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def plain_generation(params: Params, root: Path, generation: int, runtime: Runtime) -> float:
    """One generation by the stage functions alone (the anchor), on the paths and plan the flow
    uses; returns its seconds."""
    start = time.perf_counter()
    best, initial = layout.best_path(root), layout.model_path(root, 0)
    if not best.exists():
        save_checkpoint(initial_checkpoint(make_game(params.game), params.net), initial)
        atomic.copy(initial, best)
    plan = versioning.make_plan(params, root, generation)
    paths = layout.generation_paths(root, generation, player=plan.player, start=plan.start,
                                    window=params.train.window, selfplayer=plan.teacher)
    device = resolve_device(runtime.device)
    if runtime.task_runner == "threads":  # the flow's default parallelism, without Prefect
        tasks = selfplay.shard_tasks(params, paths.selfplay_model, paths.selfplay, generation=generation,
                                     device=device)
        with ThreadPoolExecutor(runtime.workers) as pool:
            list(pool.map(selfplay.play_shard_alone, tasks))
    else:  # tri selfplay's worker processes
        selfplay.run(params, paths.selfplay_model, paths.selfplay, generation=generation, runtime=runtime)
    train.run(params, paths.start, list(paths.window), paths.candidate, generation=generation,
              metrics=paths.train_metrics, losses=paths.train_losses, runtime=runtime)
    arena.run(params, str(paths.candidate), str(paths.player), generation=generation, out=paths.arena,
              runtime=runtime, labels=("candidate", "best"))
    promote.run(paths.arena, paths.candidate, paths.best, rejected=paths.rejected, log=paths.promotions,
                generation=generation)
    render.render_game(params, paths.candidate, paths.picture, generation=generation, device=device)
    return time.perf_counter() - start


def run(params: Params, scratch: Path, repo: Path, *, generations: int = 2) -> OrchestrationBench:
    """Measure ``generations`` generations each way in ``scratch`` (emptied first); ``repo`` is
    where ``dvc.yaml`` and the DVC config come from (this repository)."""
    scratch = Path(scratch).resolve()
    if scratch.exists():
        shutil.rmtree(scratch)
    plain_root, flow_root = scratch / "plain", scratch / "orchestrated"
    plain_root.mkdir(parents=True)
    runtime = Runtime()
    plain = [plain_generation(params, plain_root, g, runtime) for g in range(1, generations + 1)]

    new_project(flow_root, params, checkout=Path(repo), message="bench project")
    stores.configure(flow_root)
    from pipelines.loop import loop_flow  # imports prefect: only once its state is in the project

    results = loop_flow(root=str(flow_root), generations=generations)
    orchestrated = [r["flow_seconds"] for r in results]
    p, o = statistics.median(plain), statistics.median(orchestrated)
    bookkeeping = statistics.median(1 - r["stage_seconds"] / r["flow_seconds"] for r in results)
    return OrchestrationBench(generations, plain, orchestrated, p, o, 1 - p / o, runtime.task_runner,
                              [r["phases"] for r in results], bookkeeping)


def print_report(r: OrchestrationBench, *, as_json: bool = False) -> None:
    if as_json:
        print(r.to_json())
        return
    print(f"orchestration overhead, {r.generations} generation(s) each way, task runner {r.task_runner}")
    print(f"  plain stages (anchor):  median {r.plain_median:7.1f} s   "
          f"({', '.join(f'{s:.1f}' for s in r.plain_seconds)})")
    print(f"  Prefect + DVC + MLflow: median {r.orchestrated_median:7.1f} s   "
          f"({', '.join(f'{s:.1f}' for s in r.orchestrated_seconds)})")
    for g, phases in enumerate(r.phases, 1):
        print(f"  generation {g} phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()))
    print(f"  overhead against the anchor: {100 * r.overhead_share:.1f}% of a generation (target < 5%)")
    print(f"  bookkeeping outside the stages, inside the flow: {100 * r.bookkeeping_share:.1f}% (median)")
