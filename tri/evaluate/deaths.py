"""``tri eval deaths``: how a triangle-puzzle player's games end, and how much risk its boards carried.

A game of the puzzle ends when no shape in hand fits. PLAYER plays the ``games`` evaluation seeds
of :func:`tri.evaluate.triangle.eval_seeds` (the same games ``tri eval triangle`` scores), and each
game is then read back move by move (:mod:`tri.games.triangle.fatal`):

- **How it died.** From the position where its last cycle began (the last refill, or the start),
  could the three shapes it was dealt be placed at all, in any order? If not, the death was a
  *fatal draw*: no player could have survived that cycle from that board. If they could, it was
  a *misplay* within the cycle. A game the move cap cut was not lost.
- **The risk before it.** At every refill, the exact chance that the draw is fatal, from the
  board it lands on (every possible draw tried). A board is *risky* above ``risky`` (default
  5%). Reported: the share of cycles at exactly 0 and above the threshold, how many risky cycles
  came within three cycles of the death, the chance at the fatal draw itself, and the expected
  number of fatal draws a game met (the chances summed over its cycles, averaged).
- **Could the cycle have ended safer** (``plans``, slower): at each risky cycle, every order and
  placement of its three shapes from where it began, and the least chance any of those ends
  carried. When that is far below what the player reached, a search that plans the whole cycle
  against this risk has something to gain; when it is not, the board was already lost cycles
  before.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from tri import atomic
from tri.arena import counting
from tri.config import MAX_SEED, Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.episodes import run_episodes
from tri.errors import TriError
from tri.evaluate.common import make_player
from tri.evaluate.triangle import EVAL_DOMAIN, eval_seeds
from tri.games.triangle import fatal
from tri.games.triangle.game import TriangleGame
from tri.progress import Report, meter
from tri.resources import arena_batch

NEAR = 3  # "near the death": within this many cycles of the game's end
KINDS = ("fatal draw", "misplay", "move cap")


@dataclass
class GameDeath:
    """One game: ``seed``, ``score``, ``steps``, ``death`` (one of :data:`KINDS`), ``chances`` (the
    fatal chance at each refill, in order), ``least`` (``plans``: per cycle, the least chance any
    of its plans reached; None where not asked: not risky, or no ``plans``)."""

    seed: int
    score: float
    steps: int
    death: str
    chances: list[float]
    least: list[float | None] = field(default_factory=list)


@dataclass
class DeathsReport:
    """What :func:`run_deaths` measured (see the module docstring); ``per_game`` the details."""

    game: str
    player: str
    simulations: int | None
    games: int
    seed: int
    risky: float
    mean: float
    mean_steps: float
    deaths: dict[str, int]
    cycles: int
    zero_share: float
    risky_cycles: int
    risky_near_death: int
    expected_fatal: float
    at_fatal_draw: list[float]  # the chance at each fatal draw (the refill that ended the game)
    plans: bool
    safer_plans: int  # risky cycles whose least plan is below half the chance the player reached
    chosen_mean: float  # over the risky cycles planned: the player's chance, and the least one
    least_mean: float
    seconds: float = 0.0
    per_game: list[GameDeath] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def metrics(self) -> dict[str, float]:
        """Flat ``{name: number}`` for a tracker (MLflow)."""
        out = {"games": self.games, "mean": self.mean, "mean_steps": self.mean_steps, "cycles": self.cycles,
               "zero_share": self.zero_share, "risky_cycles": self.risky_cycles,
               "risky_near_death": self.risky_near_death, "expected_fatal": self.expected_fatal}
        out.update({f"deaths_{k.replace(' ', '_')}": v for k, v in self.deaths.items()})
        if self.at_fatal_draw:
            out["median_at_fatal_draw"] = float(np.median(self.at_fatal_draw))
        return {k: float(v) for k, v in out.items()}


class _Recording:
    """An agent that says nothing of a policy or a value (greedy, random) made recordable: the
    game loop records every move's position and action, which is all this module reads."""

    def __init__(self, agent, num_actions: int):
        self.agent, self.name, self.num_actions = agent, agent.name, num_actions

    def act(self, states, moves):
        d = self.agent.act(states, moves)
        b = states.shape[0]
        policy = d.policy if d.policy is not None else np.zeros((b, self.num_actions), np.float32)
        value = d.value if d.value is not None else np.zeros(b, np.float32)
        return type(d)(d.actions, policy, value, d.policy_target)


def _read_back(game: TriangleGame, summary, first: np.ndarray, drawn: np.ndarray, chances: list[float],
               risky: float, plans: bool, table) -> GameDeath:
    """One game read back: ``first [L]`` its first position, ``drawn [R, L]`` the position after
    each refill (its shapes just drawn), ``chances [R]`` each refill's fatal chance."""
    if not summary.terminal:
        death = "move cap"
    else:  # from where the last cycle began: could its shapes have been placed at all?
        begun = drawn[-1:] if len(drawn) else first[None]
        death = "misplay" if fatal.placeable(game, begun, fatal.hands_of(game, begun))[0] else "fatal draw"
    least: list[float | None] = []
    if plans:  # each risky cycle: the safest end any of its plans reaches (from where it began)
        starts = [first, *drawn]
        for i, c in enumerate(chances):
            ends = fatal.cycle_ends(game, starts[i]) if c > risky else None
            least.append(None if ends is None else fatal.least_fatal_chance(game, ends, table) if len(ends) else c)
    return GameDeath(seed=summary.seed, score=summary.score, steps=summary.steps, death=death, chances=chances,
                     least=least)


def run_deaths(params: Params, player, *, games: int = 50, seed: int = 0, simulations: int | None = None,
               risky: float = 0.05, plans: bool = False, out: Path | None = None,
               runtime: Runtime | None = None, progress: Report | None = None) -> DeathsReport:
    """``player`` (a spec, see :mod:`tri.player_specs`, or an agent) on the ``games`` seeds of
    evaluation ``seed`` in ``params.game.triangle``'s puzzle, its games read back as the module
    docstring says; writes ``out`` (JSON) if given."""

    start = time.perf_counter()
    if games < 1:
        raise TriError(f"deaths: {games} games; play at least 1")
    if not 0 <= seed <= MAX_SEED:
        raise TriError(f"deaths: seed {seed} is out of range (0 to 2**63 - 1)")
    if not 0 <= risky < 1:
        raise TriError(f"deaths: --risky {risky} is not a chance in [0, 1)")
    ap = params.arena
    game = TriangleGame(params.game.triangle)
    runtime = runtime or Runtime()
    agent, _, name, sims = make_player(player, game, params, seed=[seed, EVAL_DOMAIN], simulations=simulations,
                                       device=resolve_device(runtime.device), batch=arena_batch(ap, game, games))
    seeds = eval_seeds(seed, games)

    def figures(v: dict[str, float], done: int, seconds: float) -> str:
        return f"mean {v['sum_0'] / v['games_0']:.2f}" if v.get("games_0") else ""

    with torch_threads(), meter("deaths", games, "games", progress, figures) as m:
        played = run_episodes(game, [_Recording(agent, game.num_actions)], seeds, concurrent=ap.concurrent,
                              max_moves=ap.max_moves, record=True, **counting(m, 0))
    pos = played.positions
    table = fatal.draw_table(game.template_ids, game.num_slots)
    step = game.step(pos.state, pos.action)  # each move again: the draws come from the states' own streams
    drew = np.asarray(step.chance, bool)
    chance = np.zeros(len(pos.game))
    chance[drew] = fatal.fatal_chance(game, game.afterstate(step.states[drew]), table)
    per_game = []
    for summary in played.games:
        rows = np.flatnonzero(pos.game == summary.index)
        rows = rows[np.argsort(pos.move[rows])]
        first = pos.state[rows[0]] if rows.size else game.initial(np.array([summary.seed]))[0]
        refills = rows[drew[rows]]
        per_game.append(_read_back(game, summary, first, step.states[refills], chance[refills].tolist(),
                                   risky, plans, table))
    chances = [c for g in per_game for c in g.chances]
    risky_at = [(g, i) for g in per_game for i, c in enumerate(g.chances) if c > risky]
    planned = [(g.chances[i], g.least[i]) for g, i in risky_at if plans]
    report = DeathsReport(
        game="triangle", player=name, simulations=sims, games=games, seed=seed, risky=risky,
        mean=float(np.mean([g.score for g in per_game])), mean_steps=float(np.mean([g.steps for g in per_game])),
        deaths={k: sum(g.death == k for g in per_game) for k in KINDS}, cycles=len(chances),
        zero_share=float(np.mean(np.array(chances) == 0)) if chances else 1.0,
        risky_cycles=len(risky_at),
        risky_near_death=sum(g.death != "move cap" and len(g.chances) - i <= NEAR for g, i in risky_at),
        expected_fatal=float(np.mean([sum(g.chances) for g in per_game])),
        at_fatal_draw=[g.chances[-1] for g in per_game if g.death == "fatal draw" and g.chances],
        plans=plans, safer_plans=sum(lo < c / 2 for c, lo in planned),
        chosen_mean=float(np.mean([c for c, _ in planned])) if planned else 0.0,
        least_mean=float(np.mean([lo for _, lo in planned])) if planned else 0.0, per_game=per_game)
    report.seconds = time.perf_counter() - start
    if out is not None:
        atomic.write_text(out, report.to_json() + "\n")
    return report


def format_deaths(r: DeathsReport) -> str:
    """A few plain lines: how the games ended, the risk before the end, and (``plans``) the room
    a cycle's planning had."""
    budget = f" ({r.simulations} simulations)" if r.simulations else ""
    lines = [(f"triangle: {r.player}{budget}, {r.games} games (evaluation seed {r.seed}): "
              f"mean score {r.mean:.2f}, mean steps {r.mean_steps:.1f}"),
             "deaths: " + ", ".join(f"{k} {v}" for k, v in r.deaths.items())]
    risky = f"{r.risky:.0%}" if r.risky * 100 == round(r.risky * 100) else f"{r.risky:g}"
    lines.append(f"refills: {r.cycles}; a fatal draw impossible at {r.zero_share:.1%} of them; above {risky} "
                 f"at {r.risky_cycles}, {r.risky_near_death} of those within {NEAR} cycles of the death")
    lines.append(f"fatal draws a game met, expected: {r.expected_fatal:.2f}")
    if r.at_fatal_draw:
        q = np.percentile(r.at_fatal_draw, [25, 50, 75])
        lines.append(f"the chance at the fatal draw: median {q[1]:.1%} (quartiles {q[0]:.1%}, {q[2]:.1%}; "
                     f"{len(r.at_fatal_draw)} deaths after a refill)")
    if r.plans:
        lines.append(f"risky cycles, every plan of the cycle tried: the player's end {r.chosen_mean:.1%} on "
                     f"average, the safest plan's {r.least_mean:.1%}; below half the player's at "
                     f"{r.safer_plans} of {r.risky_cycles}")
    return "\n".join(lines)
