"""Arena stage: player A (the candidate) against player B (the best, or a baseline).

Single-player games are compared **paired**: both players play the same ``arena.games`` seeds,
so both see the same shape draws (a game's draws come from its seed alone: the k-th refill is
the same whoever plays). Reported: each player's mean score with a 95% confidence interval, the
mean paired difference A - B with its interval, and per-seed wins/ties/losses. The decision
follows ``arena.rule``: ``ci_lower`` promotes A when the lower end of the paired difference's
95% interval is above ``arena.threshold`` (a difference that is unlikely to be noise), ``mean``
when the mean difference is, ``always`` (for any game) every time: no gate, the arena only
measures the candidate against the model it replaces.

Two-player games: every seed is played twice, A opening once and B once; wins, draws and
losses, A's score rate (win 1, draw 1/2) with a 95% interval, and promotion when the score
rate reaches ``arena.win_rate``.

Both use the one game loop of self-play (:func:`tri.episodes.run_episodes`), without noise, on
the device ``TRI_DEVICE`` resolves to (:func:`tri.device.resolve_device`), torch on one thread
(:func:`tri.device.torch_threads`: the same results on any machine).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tri import atomic
from tri.arena_result import ArenaResult, PlayerReport
from tri.config import Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.episodes import Stopped, run_episodes
from tri.errors import TriError
from tri.games import make_game
from tri.games.base import sample_legal
from tri.player_specs import PlayerSpec, parse_spec
from tri.players import check_player_memory, make_agent
from tri.progress import Meter, Report, meter
from tri.resources import arena_batch


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (Cornish-Fisher expansion around the normal; within 0.1% for
    ``df >= 5``, close enough for confidence intervals)."""
    z = _normal_quantile(p)
    if df <= 0:
        return float("inf")
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def _normal_quantile(p: float) -> float:
    """Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9)."""
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    if p > 1 - 0.02425:
        return -_normal_quantile(1 - p)
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)


def mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean with a t-based confidence interval."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    mean = float(values.mean()) if n else float("nan")
    if n < 2:
        return mean, float("-inf"), float("inf")
    half = t_quantile(0.5 + level / 2, n - 1) * float(values.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def arena_seeds(seed: int, games: int, generation: int = 0) -> np.ndarray:
    """The arena's game seeds (a domain of their own: never the self-play seeds). The loop gives
    every generation fresh seeds, so a best model that was lucky on one set of seeds does not
    carry its luck into every later comparison."""
    state = np.random.SeedSequence([seed, generation, 0xA2E4A]).generate_state(games, dtype=np.uint64)
    return (state >> np.uint64(2)).astype(np.int64)


def _report(name: str, episodes) -> PlayerReport:
    scores = np.array([g.score for g in episodes.games])
    mean, low, high = mean_ci(scores)
    names = sorted({k for g in episodes.games for k in g.stats})
    stats = {k: float(np.mean([g.stats.get(k, 0) for g in episodes.games])) for k in names}
    return PlayerReport(name, mean, low, high, float(np.mean([g.steps for g in episodes.games])), stats)


OPENING_DOMAIN = 0x0E7  # the sampled openings' stream: no other draw uses it


def openings(game, seeds: np.ndarray, moves: int) -> np.ndarray | None:
    """``[S, L]`` start positions of a two-player arena: from each seed's start, ``moves`` uniformly
    random legal moves drawn from the seed stream ``[seed, OPENING_DOMAIN]`` (the same opening
    for both colours of a seed, so a pairing of deterministic players still plays different
    games). A sampled opening that would end the game stops before its last move. None for
    ``moves == 0``."""
    if moves <= 0:
        return None
    out = game.initial(seeds)
    for i, seed in enumerate(np.asarray(seeds, dtype=np.int64)):
        rng = np.random.default_rng([int(seed), OPENING_DOMAIN])
        for _ in range(moves):
            action = sample_legal(game.legal(out[i : i + 1]), rng)
            t = game.step(out[i : i + 1], action)
            if t.terminal[0]:
                break
            out[i] = t.states[0]
    return out


def run(params: Params, a: str | PlayerSpec, b: str | PlayerSpec, *, games: int | None = None,
        seed: int | None = None, generation: int = 0, out: Path | None = None, runtime: Runtime | None = None,
        labels: tuple[str, str] | None = None, progress: Report | None = None, opening_moves: int = 0,
        ) -> ArenaResult:
    """Compare the players named by specs ``a`` and ``b`` (see :mod:`tri.player_specs`: text, or
    a spec already parsed for this game) on the seeds of ``seed`` (default ``arena.seed``) and
    ``generation``. ``labels`` name them in the result (default: the specs' text), so a caller
    passing absolute paths can write the same bytes as the command line run from the project
    folder. ``progress`` hears how far it is: games played,
    and each player's running mean (single-player) or A's wins, draws and losses.
    ``opening_moves`` (two-player): each seed's game starts after that many random moves
    (:func:`openings`), played once with each player moving first from there."""

    runtime = runtime or Runtime()
    ap = params.arena
    game = make_game(params.game)
    spec_a, spec_b = (s if isinstance(s, PlayerSpec) else parse_spec(s, game=game.name) for s in (a, b))
    n = games or ap.games
    batch = arena_batch(ap, game, n)
    for spec in (spec_a, spec_b):  # both, before any checkpoint is loaded
        check_player_memory(spec, game, params.mcts, ap, batch=batch)
    seeds = arena_seeds(ap.seed if seed is None else seed, n, generation)
    device = resolve_device(runtime.device)

    def agent(spec):
        # The same generator seed for both players: their searches sample the same chance
        # streams (common random numbers), so identical players tie on every seed.
        rng = np.random.default_rng([ap.seed if seed is None else seed, generation, 0xA2E4A])
        return make_agent(spec, game, params.mcts, ap, rng, device, batch=batch)

    agent_a, agent_b = agent(spec_a), agent(spec_b)
    names = labels or (spec_a.text, spec_b.text)
    # torch_threads: results must not depend on the machine (float summation order)
    with torch_threads(), progress_meter(game, names, n, progress) as m:
        if opening_moves and game.num_players != 2:
            raise TriError("--openings: a single-player game's seeds already differ (its draws)")
        result = _play(game, ap, *names, agent_a, agent_b, seeds, n, m, openings(game, seeds, opening_moves),
                       parallel=runtime.workers > 1)
    if out is not None:
        atomic.write_text(out, result.to_json() + "\n")
    return result


def progress_meter(game, names: tuple[str, str], n: int, progress: Report | None) -> Meter:
    """The arena's :class:`~tri.progress.Meter`: ``2 n`` games (single-player: A's ``n``, then
    B's on the same seeds; two-player: ``n`` per colour)."""

    def figures(v: dict[str, float], done: int, seconds: float) -> str:
        if game.num_players == 2:
            return f"{names[0]}: {v.get('win', 0):.0f} wins, {v.get('draw', 0):.0f} draws, {v.get('loss', 0):.0f} losses"
        means = [f"{name} {v[f'sum_{k}'] / v[f'games_{k}']:.2f}" for k, name in enumerate(names)
                 if v.get(f"games_{k}")]
        return "mean " + ", ".join(means) if means else ""

    return meter("arena", 2 * n, "games", progress, figures)


def counting(m: Meter, player: int | None) -> dict:
    """``run_episodes``' ``on_game`` and ``on_moves`` adding to ``m``: the games of ``player`` (0: A,
    1: B; single-player), or of both players (two-player: A's results)."""

    def on_game(summary, positions) -> None:
        if player is not None:
            m.advance(1, **{f"sum_{player}": summary.score, f"games_{player}": 1})
        else:
            outcome = summary.outcome  # seat 0's: A's, whoever opened
            m.advance(1, **{("win" if outcome > 0 else "draw" if outcome == 0 else "loss"): 1})

    return {"on_game": on_game, "on_moves": lambda k: m.advance(0)}


def play_one(game, ap, agent, seeds: np.ndarray, m: Meter, k: int = 0, stop=None):
    """A single-player game's ``agent`` plays every seed (``arena.concurrent`` games in flight, cut
    at ``arena.max_moves``), counted into ``m`` as player ``k``; torch on one thread, so the games
    are the same alone, paired, or on either of :func:`play_paired`'s threads. ``stop``: polled
    before every move (:func:`tri.episodes.run_episodes`)."""
    with torch_threads():  # in each thread: OpenMP's thread count is a per-thread setting
        return run_episodes(game, [agent], seeds, concurrent=ap.concurrent, max_moves=ap.max_moves,
                            stop=stop, **counting(m, k))


def play_paired(game, ap, agent_a, agent_b, seeds: np.ndarray, m: Meter, parallel: bool):
    """A single-player game's two agents each play every seed (``arena.concurrent`` games in
    flight, cut at ``arena.max_moves``), counted into ``m`` as players 0 and 1: ``(episodes_a,
    episodes_b)``. ``parallel``: on two threads at once; the two share nothing (each its own
    agent and generator, torch on one thread each), so the result is the same either way.

    An interruption of the calling thread (Ctrl-C, SIGTERM) while the two threads play, or an
    error in one of them, stops both at their next move (Python cannot interrupt a thread, and
    the pool waits for its threads before the interruption can go on: ``tri loop`` stopped in
    an arena used to play it to the end, about two minutes in a real generation)."""
    stop = threading.Event()

    def play(k: int, agent):
        return play_one(game, ap, agent, seeds, m, k, stop=stop.is_set)

    if not parallel:
        return play(0, agent_a), play(1, agent_b)
    with ThreadPoolExecutor(2, thread_name_prefix="paired") as pool:
        futures = [pool.submit(play, 0, agent_a), pool.submit(play, 1, agent_b)]
        try:
            # Polled in short sleeps: a signal's handler runs in this thread once it wakes, and a
            # sleep is where it raises cleanly (see pipelines.generation._play_shards).
            while not all(f.done() for f in futures):
                if any(f.done() and f.exception() is not None for f in futures):
                    stop.set()  # one player failed: the other stops at its next move
                time.sleep(0.05)
            errors = [f.exception() for f in futures if f.exception() is not None]
            if errors:  # the failure, not the other player's Stopped
                raise next((e for e in errors if not isinstance(e, Stopped)), errors[0])
            ea, eb = futures[0].result(), futures[1].result()
        except BaseException:
            stop.set()
            raise
    return ea, eb


def _play(game, ap, a: str, b: str, agent_a, agent_b, seeds: np.ndarray, n: int, m: Meter,
          starts: np.ndarray | None = None, parallel: bool = False) -> ArenaResult:
    if game.num_players == 1:
        ea, eb = play_paired(game, ap, agent_a, agent_b, seeds, m, parallel)
        sa = np.array([g.score for g in ea.games])
        sb = np.array([g.score for g in eb.games])
        diff = sa - sb
        d_mean, d_low, d_high = mean_ci(diff)
        bound = d_low if ap.rule == "ci_lower" else d_mean
        result = ArenaResult(
            game=game.name, a=_report(a, ea), b=_report(b, eb), games=n,
            rule=f"{ap.rule} > {ap.threshold:g}", promote=bool(bound > ap.threshold),
            diff_mean=d_mean, diff_low=d_low, diff_high=d_high,
            wins=int((diff > 1e-9).sum()), ties=int((np.abs(diff) <= 1e-9).sum()),
            losses=int((diff < -1e-9).sum()), seeds=seeds.tolist(), scores_a=sa.tolist(), scores_b=sb.tolist())
    else:
        both = np.concatenate([seeds, seeds])
        first = np.concatenate([np.zeros(n, np.int64), np.ones(n, np.int64)])
        e = run_episodes(game, [agent_a, agent_b], both, concurrent=ap.concurrent, max_moves=ap.max_moves,
                         first_seat=first, starts=None if starts is None else np.concatenate([starts, starts]),
                         **counting(m, None))
        outcome = np.array([g.outcome for g in e.games])  # seat 0 = A
        points = (outcome + 1) / 2
        rate, low, high = mean_ci(points)
        result = ArenaResult(
            game=game.name, a=PlayerReport(a, rate, low, high, float(np.mean([g.steps for g in e.games]))),
            b=PlayerReport(b, 1 - rate, 1 - high, 1 - low, float(np.mean([g.steps for g in e.games]))),
            games=2 * n, rule=f"score rate >= {ap.win_rate:g}", promote=bool(rate >= ap.win_rate), paired=False,
            wins=int((outcome > 0).sum()), ties=int((outcome == 0).sum()), losses=int((outcome < 0).sum()),
            score_rate=rate, seeds=both.tolist(), scores_a=points.tolist(), scores_b=(1 - points).tolist())
    if ap.rule == "always":  # no gate: the games only measure
        result = dataclasses.replace(result, rule="always", promote=True)
    return result


def print_result(result: ArenaResult) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = 110
    single = result.paired
    table = Table(title=f"arena: {result.game}, {result.games} games" + (" (paired seeds)" if single else ""),
                  title_justify="left")
    for col in ("player", "mean score" if single else "score rate", "95% interval", "mean steps"):
        table.add_column(col, justify="left" if col == "player" else "right")
    for side in (result.a, result.b):
        table.add_row(side.name, f"{side.mean:.3f}", f"[{side.low:.3f}, {side.high:.3f}]", f"{side.mean_steps:.1f}")
    console.print(table)
    if single:
        console.print(f"paired difference A - B: {result.diff_mean:+.3f}  95% interval "
                      f"[{result.diff_low:+.3f}, {result.diff_high:+.3f}];  per seed A wins {result.wins}, "
                      f"ties {result.ties}, loses {result.losses}")
    else:
        console.print(f"A: {result.wins} wins, {result.ties} draws, {result.losses} losses")
    verdict = "promote A" if result.promote else "keep B"
    console.print(f"decision ({result.rule}): {verdict}")
