"""``tri bench search``: how close self-play comes to the network's own speed, for the recipe in
the params (the shipped one by default) and for its other root selection (PUCT beside Gumbel, or
Gumbel beside PUCT), each measured in the same run, with self-play's own agent (the params'
``selfplay.noise``, ``temperature`` and ``temperature_moves``).

Figures per root selection (medians over ``repeats``; torch on one thread, as in a self-play
worker; the network on the device ``TRI_DEVICE`` resolves to, named in the report):

- self-play: simulations per second and positions per second of the search with the params'
  ``mcts`` and network, ``selfplay.concurrent`` games in flight (the batch of every network call),
  through self-play's :class:`~tri.inference.InferenceNet` snapshot in ``mcts.precision``, and, on the
  same seeds in turns, through the float32 eager model as before it (the old path): their ratio
  is the speed-up;
- network only: forward evaluations per second of the snapshot and of the eager model at the
  same batch size, on positions from those games, in turns: the snapshot's is the limit self-play
  would reach if nothing else took time;
- self-play's share of that limit: the network evaluations self-play made per second (counted:
  every leaf and every root a search evaluates) over the network-only evaluations per second;
  the rest is the share of self-play time spent outside the network. Beside it, the older and
  harsher ``sims/s / evals/s``, which also counts each move's root evaluation (one call in
  ``simulations + 1``) as time outside the network;
- one move at 2,048 simulations for a single game (``--leaves`` leaves per network call, kept
  apart by virtual visits; Gumbel's sequential halving counts the pending ones; torch on
  ``--move-threads``, by default every core, as a player uses the machine), beside
  alphatriangle 1.0.0's 36 s per move measured on this machine;
- a player's move: one game, ``arena.simulations`` in ``--trees`` trees per move (default
  ``arena.determinizations``; games without chance, and searches with afterstates, grow one),
  the median over the moves of games played with it (torch on ``--move-threads``; the evaluator a player gets,
  :func:`tri.players.player_evaluator`), beside issue 22's 100 ms per move.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np

from tri.agents import MctsAgent
from tri.bench.move import time_moves
from tri.config import Params, Runtime
from tri.device import resolve_device, resolve_precision, synchronize, torch_threads
from tri.evaluator import make_evaluator
from tri.games import make_game
from tri.inference import InferenceNet
from tri.net import build_model
from tri.players import player_evaluator, trees_per_move
from tri.search import search

ALPHATRIANGLE_SECONDS = 36.0  # alphatriangle 1.0.0, default search, per move (36-45 s here)
PLAY_MOVE_LIMIT = 0.1  # issue 22: a player's move in at most 100 ms
PLAY_MOVES = 40  # moves timed for the player's move


@dataclass(frozen=True)
class SearchBench:
    root: str  # "gumbel" or "puct"
    shipped: bool  # the params' own root selection (else the other one, for comparison)
    batch: int
    simulations: int
    sims_per_second: float
    positions_per_second: float
    eager_positions_per_second: float
    speedup_vs_eager: float
    net_evals_per_second: float
    eager_net_evals_per_second: float
    evals_per_position: float  # network evaluations self-play made per position (leaves and roots)
    network_speed_share: float  # evaluations self-play made per second / network-only evaluations per second
    outside_network_share: float  # 1 - network_speed_share
    sims_share: float  # simulations per second / network-only evaluations per second (roots count as outside)
    move_2048_seconds: float
    move_2048_leaves: int
    move_2048_threads: int
    alphatriangle_seconds: float
    speedup_vs_alphatriangle: float
    play_move_seconds: float  # a player's move: one game, play_simulations in play_trees trees
    play_simulations: int
    play_trees: int
    device: str
    precision: str  # the snapshot's number format: mcts.precision, auto resolved for the device
    precision_setting: str  # mcts.precision as the params say it (auto, float32 or bfloat16)


def to_json(benches: list[SearchBench]) -> str:
    return json.dumps([asdict(b) for b in benches], indent=2)


def run(params: Params, *, repeats: int = 5, moves: int = 8, leaves: int = 64, move_threads: int = 1,
        trees: int | None = None,
        seed: int = 0, runtime: Runtime | None = None) -> list[SearchBench]:
    """Measure the params' root selection, then the other; ``moves`` self-play moves (for every
    game in the batch) per repeat, on the device ``runtime.device`` resolves to (default:
    ``TRI_DEVICE``); torch on one thread, but ``move_threads`` for the single-game moves;
    ``trees``: the player's trees per move (default ``arena.determinizations``)."""
    device = resolve_device((runtime or Runtime()).device)
    other = params.model_copy(update={"mcts": params.mcts.model_copy(update={"gumbel": not params.mcts.gumbel})})
    with torch_threads():
        return [_measure(p, device, shipped=p is params, repeats=repeats, moves=moves, leaves=leaves,
                         move_threads=move_threads, trees=trees or params.arena.determinizations, seed=seed)
                for p in (params, other)]


def _measure(params: Params, device: str, *, shipped: bool, repeats: int, moves: int, leaves: int,
             move_threads: int, trees: int, seed: int) -> SearchBench:
    import torch

    game = make_game(params.game)
    model = build_model(game, params.net).eval()
    precision = resolve_precision(params.mcts.precision, device)
    evaluators = {"fast": make_evaluator(model, game, device, fast=True, precision=precision),  # moves the model
                  "eager": make_evaluator(model, game, device)}
    nets = {"fast": InferenceNet(model, dtype=getattr(torch, precision)).to(device), "eager": model}
    batch, sims = params.selfplay.concurrent, params.mcts.simulations
    rng = np.random.default_rng(seed)
    evaluated = [0]  # positions the snapshot's evaluator was given: the network's work in self-play

    def counted(states, evaluate=evaluators["fast"]):
        evaluated[0] += len(states)
        return evaluate(states)

    sp = params.selfplay  # the agent self-play makes: its root noise and move sampling
    agents = {k: MctsAgent(game, counted if k == "fast" else e, params.mcts, rng, noise=sp.noise,
                           temperature=sp.temperature, temperature_moves=sp.temperature_moves)
              for k, e in evaluators.items()}
    states = game.initial(np.arange(seed, seed + batch))
    for agent in agents.values():
        agent.act(states, np.zeros(batch, np.int64))  # compile and warm up

    rates = {k: [] for k in agents}
    pos_rates = {k: [] for k in agents}
    evals_per_position = []
    net_rates = {k: [] for k in nets}
    for r in range(repeats):
        for kind, agent in agents.items():  # the same seeds each way, in turns
            states = game.initial(np.arange(seed + r * batch, seed + (r + 1) * batch))
            evaluated[0] = 0
            positions, start = 0, time.perf_counter()
            for m in range(moves):
                live = np.flatnonzero(~game.terminal(states))
                if not live.size:
                    break
                decision = agent.act(states[live], np.full(live.size, m))
                states[live] = game.step(states[live], decision.actions).states
                positions += live.size
            elapsed = time.perf_counter() - start
            rates[kind].append(positions * sims / elapsed)
            pos_rates[kind].append(positions / elapsed)
            if kind == "fast":
                evals_per_position.append(evaluated[0] / positions)
        x = torch.from_numpy(game.encode(states)).to(device)
        with torch.inference_mode():
            for kind, net in nets.items():
                net(x)
                synchronize(device)
                calls, start = 0, time.perf_counter()
                while time.perf_counter() - start < 1.0:
                    net(x)
                    synchronize(device)  # each call waited for, as the search waits for its results
                    calls += 1
                net_rates[kind].append(calls * batch / (time.perf_counter() - start))
    evaluate = evaluators["fast"]

    mcts_one = params.mcts.model_copy(update={"leaves_per_step": leaves})
    root = game.initial(np.array([seed]))
    times = []
    with torch_threads(move_threads):
        search(game, evaluate, root, mcts_one, rng, simulations=2048)  # warm up
        for _ in range(repeats):
            start = time.perf_counter()
            search(game, evaluate, root, mcts_one, rng, simulations=2048)
            times.append(time.perf_counter() - start)
        trees = trees_per_move(game, params.mcts, trees)  # as `tri play` grows them
        player_eval = player_evaluator(model, game, params.mcts, trees, device)  # as `tri play` builds it
        player = MctsAgent(game, player_eval, params.mcts, rng, noise=False, temperature=0.0, temperature_moves=0,
                           simulations=params.arena.simulations, determinizations=trees)
        play_times, _ = time_moves(game, player, PLAY_MOVES, seed)
    med = statistics.median
    sims_rate, net_rate, move = med(rates["fast"]), med(net_rates["fast"]), med(times)
    per_position = med(evals_per_position)
    share = med(pos_rates["fast"]) * per_position / net_rate
    return SearchBench(root="gumbel" if params.mcts.gumbel else "puct", shipped=shipped, batch=batch,
                       simulations=sims, sims_per_second=sims_rate, positions_per_second=med(pos_rates["fast"]),
                       eager_positions_per_second=med(pos_rates["eager"]),
                       speedup_vs_eager=med(pos_rates["fast"]) / med(pos_rates["eager"]),
                       net_evals_per_second=net_rate, eager_net_evals_per_second=med(net_rates["eager"]),
                       evals_per_position=per_position, network_speed_share=share, outside_network_share=1 - share,
                       sims_share=sims_rate / net_rate,
                       move_2048_seconds=move, move_2048_leaves=leaves, move_2048_threads=move_threads, alphatriangle_seconds=ALPHATRIANGLE_SECONDS,
                       speedup_vs_alphatriangle=ALPHATRIANGLE_SECONDS / move, play_move_seconds=med(play_times),
                       play_simulations=params.arena.simulations, play_trees=trees, device=device,
                       precision=precision, precision_setting=params.mcts.precision)


def print_report(benches: list[SearchBench], *, as_json: bool = False) -> None:
    if as_json:
        print(to_json(benches))
        return
    from rich.console import Console
    from rich.table import Table

    first = benches[0]
    table = Table(title=f"tri bench search on {first.device} (medians; batch {first.batch}, "
                        f"{first.simulations} simulations per move, torch on 1 thread, the snapshot in "
                        f"{first.precision}{' (auto)' if first.precision_setting == 'auto' else ''})",
                  title_justify="left")
    table.add_column("figure", justify="left")
    for b in benches:
        table.add_column(f"{b.root}{' (the params)' if b.shipped else ''}", justify="right")
    table.add_column("target", justify="left")
    rows = [
        ("self-play simulations/s", lambda b: f"{b.sims_per_second:,.0f}", ""),
        ("self-play positions/s", lambda b: f"{b.positions_per_second:,.1f}", ""),
        ("  through the eager model (the old path)", lambda b: f"{b.eager_positions_per_second:,.1f}", ""),
        ("  speed-up", lambda b: f"{b.speedup_vs_eager:.2f}x", ">= 1.5x"),
        ("network-only evaluations/s (same batch)", lambda b: f"{b.net_evals_per_second:,.0f}", ""),
        ("  the eager model", lambda b: f"{b.eager_net_evals_per_second:,.0f}", ""),
        ("  network evaluations per self-play position", lambda b: f"{b.evals_per_position:.2f}", ""),
        ("self-play's evaluations/s / network-only", lambda b: f"{b.network_speed_share:.1%}", ">= 90%"),
        ("time outside the network", lambda b: f"{b.outside_network_share:.1%}", "<= 10%"),
        ("  simulations/s / network-only (roots as outside)", lambda b: f"{b.sims_share:.1%}", ""),
        (f"one move, 2,048 simulations ({first.move_2048_leaves} leaves per call, "
         f"{first.move_2048_threads} thread{'s' if first.move_2048_threads > 1 else ''})",
         lambda b: f"{b.move_2048_seconds:.3f} s", ""),
        (f"  vs alphatriangle 1.0.0 ({first.alphatriangle_seconds:.0f} s per move)",
         lambda b: f"{b.speedup_vs_alphatriangle:.0f}x faster", ">= 100x"),
        (f"a player's move, {first.play_simulations} simulations"
         f"{f' x {first.play_trees} trees' if first.play_trees > 1 else ''} (median of {PLAY_MOVES})",
         lambda b: f"{1000 * b.play_move_seconds:.1f} ms", f"<= {1000 * PLAY_MOVE_LIMIT:.0f} ms"),
    ]
    for label, cell, target in rows:
        table.add_row(label, *(cell(b) for b in benches), target)
    console = Console()
    if not console.is_terminal:
        console.width = 120
    console.print(table)
