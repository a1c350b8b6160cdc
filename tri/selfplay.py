"""Self-play stage: the model plays ``selfplay.games`` games with search and writes shards.

:func:`run` splits the games into ``selfplay.shards`` shards (fixed by params, so the files do not
depend on how many workers run them), plays each shard in a worker process (torch limited to one
thread per worker, see :func:`tri.device.torch_threads`) on the device ``TRI_DEVICE`` resolves to
(:func:`tri.device.resolve_device`; every shard task carries it), and writes it with
:func:`tri.shards.write_shard`. Everything random comes from ``selfplay.seed`` and the
generation (the loop's turn; by default the model's): the same model, params, seed, generation
and device give the same shards. A complete shard whose inputs match is kept, so an interrupted
stage resumes.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import queue
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tri import layout
from tri.agents import MctsAgent, PlayoutCapAgent
from tri.config import Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.episodes import run_episodes
from tri.evaluator import make_evaluator
from tri.games import make_game
from tri.net import load_checkpoint
from tri.player_specs import PlayerSpec
from tri.players import check_player_memory
from tri.progress import Meter, Report, meter
from tri.resources import arena_batch, check_search, plural
from tri.resources import check_memory as fits
from tri.shards import shard_key, write_shard


@dataclass(frozen=True)
class ShardTask:
    """Everything a worker needs (plain values, so it pickles): shard ``shard`` plays the games
    ``seeds`` whose indices start at ``first_game``, its network on ``device`` (a resolved torch
    device name, see :func:`tri.device.resolve_device`)."""

    params: Params
    model: str
    out: str
    generation: int
    shard: int
    first_game: int
    seeds: tuple[int, ...]
    device: str = "cpu"


@dataclass(frozen=True)
class ShardResult:
    shard: int
    games: int
    positions: int
    seconds: float
    scores: tuple[float, ...]
    skipped: bool = False


@dataclass(frozen=True)
class SelfplayResult:
    """What a self-play run produced: totals and mean score over all its shards (those played
    now and those reused, complete, from an interrupted run), throughput of those played now
    (NaN if none was), and the shard files."""

    games: int
    positions: int
    mean_score: float
    seconds: float
    positions_per_second: float
    shards: tuple[str, ...]
    played: int  # games played now (the rest were reused)


def game_seeds(seed: int, generation: int, games: int) -> np.ndarray:
    """Seeds of a generation's self-play games (distinct across generations)."""
    state = np.random.SeedSequence([seed, generation, 0x5E1F]).generate_state(games, dtype=np.uint64)
    return (state >> np.uint64(2)).astype(np.int64)


def shard_rng(seed: int, generation: int, shard: int) -> np.random.Generator:
    """The search's generator for one shard (noise, move sampling, the trees' chance streams)."""
    return np.random.default_rng([seed, generation, shard, 0x5EA4])


def play_shard(task: ShardTask, count=None, stop=None) -> ShardResult:
    """Play one shard and write it; ``count(games, positions, score)`` hears of every round of
    moves (``games`` 0, ``positions`` the moves made) and every finished game (1, 0, its score);
    ``stop()`` is asked before every move and ends the shard, unwritten, with
    :class:`tri.episodes.Stopped` (see :func:`tri.episodes.run_episodes`)."""

    start = time.perf_counter()
    params = task.params
    out = Path(task.out)
    positions_file, games_file = layout.shard_path(out, task.shard), layout.games_path(out, task.shard)
    game = make_game(params.game)
    ckpt = load_checkpoint(task.model, game, ensemble=True)
    key = _task_key(task, ckpt.model_id)
    if games_file.exists() and shard_key(positions_file) == key:
        return _reused(task, positions_file, games_file)
    for name in (positions_file.name, games_file.name):  # left by a killed attempt at this shard
        for stale in out.glob(f".{name}.*.tmp"):
            stale.unlink(missing_ok=True)
    sp = params.selfplay
    evaluate = make_evaluator(ckpt.model, game, task.device, fast=True, precision=params.mcts.precision,
                              symmetrize=params.mcts.symmetrize)
    rng = shard_rng(sp.seed, task.generation, task.shard)
    agent = MctsAgent(game, evaluate, params.mcts, rng, noise=sp.noise, temperature=sp.temperature,
                      temperature_moves=sp.temperature_moves)
    if sp.full_fraction < 1:  # playout cap randomisation: the other moves fast, without noise
        fast = MctsAgent(game, evaluate, params.mcts, rng, noise=False, temperature=sp.temperature,
                         temperature_moves=sp.temperature_moves, simulations=sp.fast_simulations)
        agent = PlayoutCapAgent(agent, fast, sp.full_fraction, rng)

    def on_game(summary, positions):
        if count is not None:
            count(1, 0, summary.score)

    def on_moves(n):
        if count is not None:
            count(0, n, 0.0)

    episodes = run_episodes(game, [agent], np.array(task.seeds), concurrent=sp.concurrent,
                            max_moves=sp.max_moves, record=True, discount=params.mcts.discount,
                            td_steps=sp.td_steps, bonus=params.mcts.move_bonus, on_game=on_game, on_moves=on_moves, stop=stop)
    for g in episodes.games:
        g.index += task.first_game
    episodes.positions.game += task.first_game
    write_shard(game, episodes, positions_file, games_file, generation=task.generation,
                model_id=ckpt.model_id, key=key)
    return ShardResult(task.shard, len(episodes.games), len(episodes.positions),
                       time.perf_counter() - start, tuple(g.score for g in episodes.games))


def _reused(task: ShardTask, positions_file: Path, games_file: Path) -> ShardResult:
    """The result of a shard already complete with the same inputs, read back from its files."""
    import polars as pl
    import pyarrow.parquet as pq

    scores = pl.read_parquet(games_file, columns=["score"])["score"].to_list()
    return ShardResult(task.shard, len(scores), pq.read_metadata(positions_file).num_rows, 0.0, tuple(scores),
                       skipped=True)


def _task_key(task: ShardTask, model_id: str) -> str:
    """Identifies a shard's inputs: an existing shard is reused only if this matches."""
    p = task.params
    # The game's own section only: registering another game must not change this game's keys.
    game = [p.game.name, getattr(p.game, p.game.name).model_dump(mode="json")]
    # Without playout caps, their settings do not act: keys stay those of shards written before them.
    uncapped = {"full_fraction", "fast_simulations"} if p.selfplay.full_fraction == 1 else set()
    # Nor does a value scale of 1: keys stay those of shards written before the setting existed.
    unscaled = {"value_scale"} if p.mcts.value_scale == 1 else set()
    unscaled |= set() if p.mcts.avoid_dead_ends else {"avoid_dead_ends"}  # off: as before it existed
    unscaled |= set() if p.mcts.plan_cycle else {"plan_cycle"}  # likewise
    unscaled |= set() if p.mcts.move_bonus else {"move_bonus"}  # likewise
    text = json.dumps([game, p.mcts.model_dump(mode="json", exclude=unscaled),
                       p.selfplay.model_dump(mode="json", exclude=uncapped), model_id, task.generation, task.shard,
                       task.first_game, list(task.seeds)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _init_worker() -> None:
    """A worker process: torch on one thread (the workers are the parallelism). For the life of
    the process, so not :func:`tri.device.torch_threads` (a block): the process ends with the pool,
    and nothing else runs in it to restore the count for; interop threads can only be set once."""
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)


def _worker(task: ShardTask, events) -> ShardResult:
    return play_shard(task, lambda *counts: events.put(counts))


# Memory a shard keeps per recorded move until it is written (measured with tracemalloc in
# run_episodes): about 1 KiB of Python objects (a tuple of numpy scalars and row views), and the
# position's arrays twice (the rows the views keep alive, then the stacked copy).
_POSITION_OBJECTS_BYTES = 1024
_GAME_BYTES = 1024  # per game: its seed in the task, its summary, its history list


def recorded_position_bytes(game) -> int:
    """Bytes a shard holds per recorded position before writing it: state ``[L]`` uint64, legal
    ``[A]`` bool, policy ``[A]`` float32 and the scalars, twice, plus the Python objects."""
    arrays = 8 * game.state_size + 5 * game.num_actions + 40
    return _POSITION_OBJECTS_BYTES + 2 * arrays


def _longest_game(game, max_moves: int) -> int:
    """Moves a game can last: ``max_moves``, or fewer where the rules end it sooner
    (``game.move_limit``: a k-in-a-row game fills a cell per move)."""
    return max_moves if game.move_limit is None else min(max_moves, game.move_limit)


def check_memory(params: Params, game, *, parallel: int = 1) -> None:
    """Raise :class:`~tri.errors.TriError` (one line) unless ``parallel`` shards played at once
    fit in the machine's memory: each holds the search trees of ``selfplay.concurrent`` games
    at ``mcts.simulations``, and every position of its games until the shard is written."""

    sp = params.selfplay
    shards = min(sp.shards, sp.games)
    per_shard = -(-sp.games // shards)  # the largest shard's games
    batch = min(sp.concurrent, per_shard)
    workers = f"; {parallel} shards at once" if parallel > 1 else ""
    fewer_workers = ", or TRI_WORKERS" if parallel > 1 else ""
    # The larger search: playout caps' fast one may be set above the full one.
    fast = sp.full_fraction < 1 and sp.fast_simulations > params.mcts.simulations
    setting = "selfplay.fast_simulations" if fast else "mcts.simulations"
    trees = check_search(game, params.mcts, simulations=sp.fast_simulations if fast else params.mcts.simulations,
                         batch=batch, setting=setting, copies=parallel,
                         advice=f"lower {setting} or selfplay.concurrent{fewer_workers}")
    moves = _longest_game(game, sp.max_moves)
    kept = per_shard * (moves * recorded_position_bytes(game) + _GAME_BYTES)
    fits(parallel * (kept + trees) + sp.games * _GAME_BYTES,
         f"selfplay.games: {plural(sp.games, 'game')} in {plural(shards, 'shard')} keep up to "
         f"{per_shard * moves:,} positions in memory per shard ({per_shard:,} games of up to {moves:,} "
         f"moves{workers}), about {{need}} with the search trees",
         f"use more selfplay.shards or fewer selfplay.games (or lower selfplay.max_moves{fewer_workers})")


def shard_tasks(params: Params, model: Path, out: Path, *, generation: int | None = None,
                device: str | None = None) -> list[ShardTask]:
    """The shards of one self-play run (``selfplay.shards`` of them, fixed by params): what
    :func:`run` plays in its worker pool, and what the generation flow submits one task each.
    ``generation`` (default: the model's) labels the data and, with ``selfplay.seed``, seeds it.
    ``device`` (``auto``, ``cpu``, ``cuda``, ...; default: ``TRI_DEVICE``) is resolved here, and
    the tasks carry the result. Raises :class:`~tri.errors.TriError` first if one shard would not
    fit in memory or the device does not exist."""

    device = resolve_device(Runtime().device if device is None else device)
    game = make_game(params.game)
    check_memory(params, game)  # before the seeds, the checkpoint, the folder
    model_generation = load_checkpoint(model, game, ensemble=True).generation  # fails early on a bad checkpoint
    generation = model_generation if generation is None else generation
    sp = params.selfplay
    seeds = game_seeds(sp.seed, generation, sp.games)
    bounds = np.linspace(0, sp.games, min(sp.shards, sp.games) + 1).astype(int)
    Path(out).mkdir(parents=True, exist_ok=True)
    return [ShardTask(params, str(model), str(out), generation, i, int(lo), tuple(int(s) for s in seeds[lo:hi]),
                      device) for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]


def play_shard_alone(task: ShardTask, stop=None, count=None) -> ShardResult:
    """:func:`play_shard` with torch on one thread, as in a pool worker (so a shard's bytes do
    not depend on where it runs: a worker process, a thread of an orchestrator, a Dask worker)."""
    with torch_threads():
        return play_shard(task, count=count, stop=stop)


def progress_meter(games: int, progress: Report | None) -> Meter:
    """Self-play's :class:`~tri.progress.Meter`: games done of ``games``, positions per second
    and the mean score so far; count into it with :func:`counter`."""

    def figures(values: dict[str, float], done: int, seconds: float) -> str:
        rate = f"{values.get('positions', 0.0) / seconds:,.0f} positions/s" if seconds > 0 else ""
        return rate + (f"  mean score {values['score'] / done:.2f}" if done and "score" in values else "")

    return meter("self-play", games, "games", progress, figures)


def counter(m: Meter):
    """The ``count(games, positions, score)`` of :func:`play_shard` that adds to ``m``."""

    def count(games: int, positions: int, score: float) -> None:
        m.advance(games, positions=positions, **({"score": score} if games else {}))

    return count


def summarize(tasks: list[ShardTask], results: list[ShardResult], seconds: float) -> SelfplayResult:
    """Totals of a run's shard results (see :class:`SelfplayResult`)."""
    played = [r for r in results if not r.skipped]
    scores = [s for r in results for s in r.scores]
    new_positions = sum(r.positions for r in played)
    return SelfplayResult(games=sum(r.games for r in results), positions=sum(r.positions for r in results),
                          mean_score=float(np.mean(scores)) if scores else float("nan"), seconds=seconds,
                          positions_per_second=new_positions / seconds if played and seconds > 0 else float("nan"),
                          shards=tuple(str(layout.shard_path(Path(t.out), t.shard)) for t in tasks),
                          played=sum(r.games for r in played))


def run(params: Params, model: Path, out: Path, *, generation: int | None = None,
        runtime: Runtime | None = None, progress: Report | None = None) -> SelfplayResult:
    """Play ``params.selfplay.games`` games with the checkpoint ``model`` into the folder ``out``,
    the shards of :func:`shard_tasks` in ``runtime.workers`` processes, on the device
    ``runtime.device`` resolves to; ``progress`` hears how far it is (:mod:`tri.progress`)."""

    runtime = runtime or Runtime()
    device = resolve_device(runtime.device)
    sp = params.selfplay
    check_memory(params, make_game(params.game), parallel=min(runtime.workers, sp.shards, sp.games))
    tasks = shard_tasks(params, model, out, generation=generation, device=device)
    start = time.perf_counter()
    with progress_meter(params.selfplay.games, progress) as m:
        count = counter(m)
        workers = min(runtime.workers, len(tasks))
        if workers <= 1:
            with torch_threads():  # as in a worker, so results do not depend on the worker count
                results = [play_shard(t, count) for t in tasks]
        else:
            ctx = mp.get_context("spawn")
            with ctx.Manager() as manager, ProcessPoolExecutor(
                    workers, mp_context=ctx, initializer=_init_worker) as pool:
                events = manager.Queue()
                futures = [pool.submit(_worker, t, events) for t in tasks]
                while not all(f.done() for f in futures):
                    try:
                        count(*events.get(timeout=0.2))
                    except queue.Empty:
                        pass
                while not events.empty():
                    count(*events.get())
                results = [f.result() for f in futures]
        for r in results:
            if r.skipped:
                m.advance(r.games)
    return summarize(tasks, results, time.perf_counter() - start)


def check_params(params, *, workers: int = 1) -> None:
    """Every memory check that needs only ``params``: self-play (``workers`` shards at once) and
    the arena's search at ``arena.simulations``. Raises :class:`TriError` (one line) for the
    first that does not fit. Training is checked when it starts (it depends on the data)."""
    game = make_game(params.game)
    check_memory(params, game, parallel=min(workers, params.selfplay.shards, params.selfplay.games))
    check_player_memory(PlayerSpec("mcts"), game, params.mcts, params.arena,
                        batch=arena_batch(params.arena, game))
