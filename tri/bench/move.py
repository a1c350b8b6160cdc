"""``tri bench move``: how long a player takes to choose a move, as a person meets it in ``tri
play`` or ``tri web``: the agent built as they build it (:func:`tri.players.make_agent`: a
champion with its card's search), one game at a time, its network (on ONNX Runtime or torch, as
the player runs it) on the machine's cores. Every move of ``moves`` is timed after one move to
warm up; a game that ends gives way to the next seed's. The figures are the median, the 90th
percentile and the slowest move; for the triangle puzzle, beside issue 22's anchor (a player's
move in at most 100 ms on the machine that trained it) with their ratio to it.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np

from tri.config import Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.games import make_game
from tri.player_specs import parse_spec
from tri.players import make_agent

MOVE_LIMIT = 0.1  # issue 22: a triangle player's move in at most 100 ms


@dataclass(frozen=True)
class MoveBench:
    """Seconds per move of ``player`` (``moves`` timed, in ``games`` games from ``seed``) on
    ``threads`` torch threads: ``median``, ``p90``, ``slowest``; ``limit``: the anchor (the
    triangle's), or None."""

    game: str
    player: str
    device: str
    threads: int
    moves: int
    games: int
    seed: int
    median: float
    p90: float
    slowest: float
    limit: float | None = None  # the triangle's MOVE_LIMIT; no anchor for another game
    runtime: str | None = None  # what ran the network: "onnx" (ONNX Runtime) or "torch"; None: no network

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def run(params: Params, player: str = "champion", *, moves: int = 40, seed: int = 0,
        threads: int | None = None, runtime: Runtime | None = None, onnx: bool = True) -> MoveBench:
    """Time ``moves`` moves of ``player`` (a player spec) in ``params.game``'s game, a single
    player's own games (two-player: it plays both sides). ``onnx=False``: its network on torch
    even where the player runs it on ONNX Runtime (the comparison of ``--compare``)."""
    game = make_game(params.game)
    device = resolve_device((runtime or Runtime()).device)
    threads = threads or os.cpu_count() or 1
    with torch_threads(threads):  # built inside: an ONNX Runtime session takes torch's thread count
        agent = make_agent(parse_spec(player, game=game.name), game, params.mcts, params.arena,
                           np.random.default_rng(seed), device, onnx=onnx)
        times, games = time_moves(game, agent, moves, seed)
    ran_on = getattr(getattr(agent, "evaluate", None), "runtime", None)
    return MoveBench(game=game.name, player=player, device=device, threads=threads, moves=moves, games=games,
                     seed=seed, median=statistics.median(times), p90=float(np.percentile(times, 90)),
                     slowest=max(times), limit=MOVE_LIMIT if game.name == "triangle" else None,
                     runtime=ran_on)


def time_moves(game, agent, moves: int, seed: int) -> tuple[list[float], int]:
    """``(seconds of each of moves moves, games)``: ``agent`` plays games of its own from ``seed``
    (a game that ends gives way to seed + 1's), one move at a time, after one move to warm up
    (the first call builds and loads what it needs)."""
    state, game_seed, games, played, times = game.initial(np.array([seed])), seed, 1, 0, []
    agent.act(state, np.zeros(1, np.int64))
    while len(times) < moves:
        start = time.perf_counter()
        decision = agent.act(state, np.array([played]))
        times.append(time.perf_counter() - start)
        state, played = game.step(state, decision.actions).states, played + 1
        if game.terminal(state)[0]:
            game_seed, games, played = game_seed + 1, games + 1, 0
            state = game.initial(np.array([game_seed]))
    return times, games


def format_report(b: MoveBench) -> str:
    """Plain lines: the player and conditions, then each figure in ms and against the anchor."""
    runtime = {"onnx": " through ONNX Runtime", "torch": " through torch"}.get(b.runtime, "")
    lines = [f"tri bench move: {b.player} ({b.game}) on {b.device}{runtime}, {b.threads} "
             f"thread{'s' if b.threads > 1 else ''}, {b.moves} moves in {b.games} game{'s' if b.games > 1 else ''} "
             f"from seed {b.seed}"]
    for label, seconds in (("median", b.median), ("90th percentile", b.p90), ("slowest", b.slowest)):
        anchor = f"   {seconds / b.limit:5.2f}x the limit ({1000 * b.limit:.0f} ms, issue 22)" if b.limit else ""
        lines.append(f"{label:<16} {1000 * seconds:8.1f} ms{anchor}")
    return "\n".join(lines)


def format_comparison(torch_run: MoveBench, onnx_run: MoveBench) -> str:
    """Both runs' reports, then each figure of the ONNX Runtime run as a ratio of torch's."""
    figures = (("median", "median"), ("90th percentile", "p90"), ("slowest", "slowest"))
    ratios = "   ".join(f"{label} {getattr(onnx_run, key) / getattr(torch_run, key):.2f}x" for label, key in figures)
    return "\n".join([format_report(torch_run), format_report(onnx_run), f"ONNX Runtime / torch: {ratios}"])
