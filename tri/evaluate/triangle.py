"""``tri eval triangle``: a triangle-puzzle player against a baseline, on evaluation seeds.

The puzzle has no perfect play to grade a move against (its shapes are drawn at random), so a
player is measured by its score. PLAYER and a baseline (default ``greedy``) play the same
``games`` seeds, **paired** as in the arena (:mod:`tri.arena`): a game's shape draws come from
its seed alone, so both meet the same draws and the per-seed difference PLAYER - baseline
leaves out most of the luck. Reported (:class:`TriangleEval`): each player's mean score with a
95% interval (:func:`tri.arena.mean_ci`) and mean steps, the paired difference with its
interval, and per seed wins, ties and losses. Both play in the one game loop
(:func:`tri.episodes.run_episodes`) with the arena's ``concurrent`` and ``max_moves``, each on a
generator seeded alike for both (common random numbers, as in the arena: identical players tie
on every seed), at the same time on two threads when there are two workers
(:func:`tri.arena.play_paired`; the same result).

**The seeds are disjoint by construction from training's.** :func:`eval_seeds` draws them from
``SeedSequence([seed, 0xE7A1])``; self-play draws from ``[seed, generation, 0x5E1F]``
(:func:`tri.selfplay.game_seeds`) and the arena, which selects the networks, from ``[seed,
generation, 0xA2E4A]`` (:func:`tri.arena.arena_seeds`). A SeedSequence hashes its entropy as
32-bit words, the domain's tag last (trailing zero words change nothing); the tags differ, so
no ``seed`` and ``generation`` give an evaluation the entropy of a training stream, and a network
is never measured on the games it learned from or was promoted on (two different streams could
repeat a 62-bit seed only by chance: for n seeds, odds of about n^2 / 2^63).

**A saved result as the baseline.** The baseline may be a JSON file this module wrote
(``--out``): its player's per-seed scores (``FILE.json``, or ``FILE.json:baseline`` for its
baseline's) are paired with PLAYER's, not played again (:func:`load_recorded`), so a new network
is compared with a champion's published figure seed for seed without repeating its search.
PLAYER may be a saved result too: with both, nothing plays, and the paired difference of two
players measured in different runs (each against its own baseline) is one command and a
second. The file must hold at least ``games`` games of the same evaluation ``seed`` (its
first ``games`` seeds are this evaluation's, checked), and, when it records them (files since
2026-11-28), the same rules and ``arena.max_moves`` (:func:`conditions`).

**Pooling** (:func:`pool`, ``tri eval pool``): saved results of the same two players on
different evaluation seeds join into one comparison over all their seeds (200 + 200 seeds give
the interval of 400), nothing played.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from tri import atomic
from tri.arena import mean_ci, play_one, play_paired, progress_meter
from tri.config import MAX_SEED, Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.errors import TriError
from tri.evaluate.common import make_player
from tri.games.triangle.game import TriangleGame
from tri.progress import Report
from tri.resources import arena_batch

EVAL_DOMAIN = 0xE7A1  # the evaluation seeds' tag (self-play: 0x5E1F, arena: 0xA2E4A)
TIE = 1e-9  # score differences this small are ties (as in the arena)
METRICS = ("games", "mean", "low", "high", "mean_steps", "baseline_mean", "baseline_low", "baseline_high",
           "baseline_mean_steps", "diff_mean", "diff_low", "diff_high", "wins", "ties", "losses")


def eval_seeds(seed: int, games: int) -> np.ndarray:
    """``[games]`` int64 game seeds of evaluation ``seed``: never self-play's or the arena's
    (see the module docstring). More games extend the same seeds: the first 50 of 200 are the
    seeds of 50."""
    state = np.random.SeedSequence([seed, EVAL_DOMAIN]).generate_state(games, dtype=np.uint64)
    return (state >> np.uint64(2)).astype(np.int64)


def conditions(params: Params) -> str:
    """A fingerprint (16 hex digits) of what decides a seed's game besides the player: the
    puzzle's rules (``game.triangle``) and the cut ``arena.max_moves``. Two results pair only
    under the same conditions."""
    blob = json.dumps({"rules": params.game.triangle.model_dump(mode="json"),
                       "max_moves": params.arena.max_moves}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class _Saved(BaseModel):
    """The fields of a saved result (``TriangleEval.to_json``) that a recorded baseline reads."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    game: str
    player: str
    simulations: int | None = None
    trees: int = 1
    baseline: str
    baseline_simulations: int | None = None
    baseline_trees: int = 1
    games: int
    seed: int
    seeds: list[int]
    scores: list[float]
    steps: list[int]
    baseline_scores: list[float]
    baseline_steps: list[int]
    conditions: str = ""
    pooled: list[int] = []


def read_saved(path: str | Path, role: str) -> _Saved:
    """The saved result (``tri eval triangle --out``) at ``path``, checked whole: a
    :class:`~tri.errors.TriError` (one line, naming its ``role``) when it is missing, unreadable,
    malformed, another game's, or its per-seed lists do not hold ``games`` games each."""
    try:
        saved = _Saved.model_validate_json(Path(path).read_bytes())
    except FileNotFoundError:
        raise TriError(f"{role} {path}: file not found") from None
    except OSError as exc:
        raise TriError(f"{role} {path}: cannot read it ({exc.strerror or exc})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise TriError(f"{role} {path}: not a saved tri eval triangle result ({where}: {first['msg']})") from None
    if saved.game != "triangle":
        raise TriError(f"{role} {path}: a result of the game {saved.game!r}, not 'triangle'")
    per_seed = (saved.seeds, saved.scores, saved.steps, saved.baseline_scores, saved.baseline_steps)
    if any(len(values) != saved.games for values in per_seed):
        raise TriError(f"{role} {path}: its seeds, scores and steps do not hold {saved.games} games each")
    return saved


@dataclass(frozen=True)
class Recorded:
    """A saved result's player, replayed as a baseline: ``name``, ``simulations`` and ``trees``
    as it played, and its first ``games`` ``scores [games]`` and ``steps [games]``."""

    path: str
    name: str
    simulations: int | None
    trees: int
    scores: list[float]
    steps: list[int]


SIDES = ("player", "baseline")  # FILE.json[:SIDE]: which of a saved result's two players


def is_recorded(spec) -> bool:
    """Whether a baseline spec names a saved result (``FILE.json`` or ``FILE.json:SIDE``) rather
    than a player."""
    text = str(spec).lower() if isinstance(spec, (str, Path)) else ""
    return text.endswith(".json") or any(text.endswith(f".json:{side}") for side in SIDES)


def load_recorded(spec: str | Path, params: Params, seed: int, games: int, role: str = "baseline") -> Recorded:
    """The player of the saved result ``spec`` (``FILE.json``, or ``FILE.json:baseline`` for the
    file's baseline) on the first ``games`` seeds of evaluation ``seed``; a
    :class:`~tri.errors.TriError` (one line, naming the ``role`` it was given for: ``player`` or
    ``baseline``) when the file is missing or malformed, is another game's, was played on other
    seeds or has fewer games, or records other :func:`conditions`."""
    path, side = str(spec), "player"
    for name in SIDES:
        if path.lower().endswith(f".json:{name}"):
            path, side = path[: -len(name) - 1], name
    saved = read_saved(path, role)
    if saved.pooled:
        raise TriError(f"{role} {path}: pooled from evaluation seeds {', '.join(map(str, saved.pooled))}; "
                       f"pair with one of the results it was pooled from")
    if saved.seed != seed:
        raise TriError(f"{role} {path} was played on evaluation seed {saved.seed}, not {seed} "
                       f"(use --seed {saved.seed})")
    if saved.games < games:
        raise TriError(f"{role} {path} holds {saved.games} games; this evaluation plays {games} "
                       f"(use --games {saved.games} or fewer)")
    if saved.seeds[:games] != eval_seeds(seed, games).tolist():
        raise TriError(f"{role} {path}: its seeds are not those of evaluation seed {seed}")
    if saved.conditions and saved.conditions != conditions(params):
        raise TriError(f"{role} {path} was played under other rules (game.triangle) or arena.max_moves "
                       f"than these params")
    if side == "baseline":
        return Recorded(str(spec), saved.baseline, saved.baseline_simulations, saved.baseline_trees,
                        saved.baseline_scores[:games], saved.baseline_steps[:games])
    return Recorded(str(spec), saved.player, saved.simulations, saved.trees, saved.scores[:games],
                    saved.steps[:games])


@dataclass
class TriangleEval:
    """PLAYER against a baseline on ``games`` paired seeds. ``mean``, ``low``, ``high``: PLAYER's
    mean score and its 95% interval; ``mean_steps``; the same for the baseline (``baseline_*``);
    ``diff_*``: the paired difference PLAYER - baseline; ``wins``/``ties``/``losses``: seeds where
    PLAYER scores more, as much (within 1e-9), less. Per seed, in the order of ``seeds [N]``:
    ``scores [N]``, ``baseline_scores [N]``, ``steps [N]``, ``baseline_steps [N]``.
    ``simulations``: a player's search budget (None without search), in each of ``trees`` trees
    per move (``baseline_trees``). ``player_file``, ``baseline_file``: the saved result a
    player's games were read from (:func:`load_recorded`), or None when it played.
    ``conditions``: the rules and move cap the games were played under (:func:`conditions`).
    ``pooled``: the evaluation seeds of the saved results :func:`pool` joined (``seed`` is then
    the first; empty for one evaluation)."""

    game: str
    player: str
    simulations: int | None
    baseline: str
    baseline_simulations: int | None
    games: int
    seed: int
    mean: float
    low: float
    high: float
    mean_steps: float
    baseline_mean: float
    baseline_low: float
    baseline_high: float
    baseline_mean_steps: float
    diff_mean: float
    diff_low: float
    diff_high: float
    wins: int
    ties: int
    losses: int
    trees: int = 1
    baseline_trees: int = 1
    seconds: float = 0.0
    baseline_file: str | None = None
    conditions: str = ""
    player_file: str | None = None
    seeds: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    baseline_scores: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    baseline_steps: list[int] = field(default_factory=list)
    pooled: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def metrics(self) -> dict[str, float]:
        """Flat ``{name: number}`` for a tracker (MLflow): the means, intervals, steps and counts."""
        return {key: float(getattr(self, key)) for key in METRICS}


def paired(names, sims, trees, seed: int, seeds: list[int], scores, steps, fingerprint: str, *,
           files=(None, None), pooled: list[int] | None = None) -> TriangleEval:
    """The :class:`TriangleEval` of two players' per-seed ``scores`` and ``steps`` (a pair each, in
    the order of ``seeds [N]``): means, intervals, the paired difference, wins, ties and losses.
    ``names``, ``sims``, ``trees``, ``files``: the player's and the baseline's."""
    scores = [np.asarray(side, dtype=np.float64) for side in scores]
    diff = scores[0] - scores[1]
    mean, low, high = mean_ci(scores[0])
    b_mean, b_low, b_high = mean_ci(scores[1])
    d_mean, d_low, d_high = mean_ci(diff)
    return TriangleEval(
        game="triangle", player=names[0], simulations=sims[0], baseline=names[1], baseline_simulations=sims[1],
        games=len(seeds), seed=seed, mean=mean, low=low, high=high, mean_steps=float(np.mean(steps[0])),
        baseline_mean=b_mean, baseline_low=b_low, baseline_high=b_high,
        baseline_mean_steps=float(np.mean(steps[1])), diff_mean=d_mean, diff_low=d_low, diff_high=d_high,
        wins=int((diff > TIE).sum()), ties=int((np.abs(diff) <= TIE).sum()), losses=int((diff < -TIE).sum()),
        seeds=list(seeds), scores=scores[0].tolist(), baseline_scores=scores[1].tolist(), steps=list(steps[0]),
        baseline_steps=list(steps[1]), trees=trees[0], baseline_trees=trees[1], baseline_file=files[1],
        conditions=fingerprint, player_file=files[0], pooled=list(pooled or []))


def run_triangle(params: Params, player, *, baseline="greedy", games: int = 200, seed: int = 0,
                 simulations: int | None = None, out: Path | None = None,
                 runtime: Runtime | None = None, progress: Report | None = None) -> TriangleEval:
    """``player`` against ``baseline`` (each a spec, see :mod:`tri.player_specs`, or an agent) on the
    ``games`` seeds of :func:`eval_seeds` ``(seed, games)``, in ``params.game.triangle``'s puzzle;
    ``simulations`` sets the search budget of ``player`` if it is a bare checkpoint path (a
    baseline checkpoint plays ``arena.simulations``, or its own ``mcts:PATH:N``); either of them
    as ``FILE.json`` or ``FILE.json:baseline`` is a saved result, not played again
    (:func:`load_recorded`). Writes ``out`` (JSON) if given; ``progress`` hears of every game
    (:mod:`tri.progress`)."""

    start = time.perf_counter()
    if games < 2:
        raise TriError(f"triangle evaluation: {games} games give no interval; play at least 2")
    if not 0 <= seed <= MAX_SEED:
        raise TriError(f"triangle evaluation: seed {seed} is out of range (0 to 2**63 - 1)")
    ap = params.arena
    game = TriangleGame(params.game.triangle)
    runtime = runtime or Runtime()
    device = resolve_device(runtime.device)
    batch = arena_batch(ap, game, games)
    # The same generator seed for both players: common random numbers, as in the arena.
    rng_seed = [seed, EVAL_DOMAIN]
    specs = (player, baseline)
    recorded = [load_recorded(spec, params, seed, games, role) if is_recorded(spec) else None
                for spec, role in zip(specs, SIDES)]
    if recorded[0] is not None and simulations is not None:
        raise TriError("--simulations sets the budget of a PLAYER that plays, not of a saved result's")
    agents, names, sims, trees = [None, None], ["", ""], [None, None], [1, 1]
    for k, spec in enumerate(specs):
        if recorded[k] is None:
            agents[k], _, names[k], sims[k] = make_player(spec, game, params, seed=rng_seed, device=device,
                                                          simulations=simulations if k == 0 else None, batch=batch)
            trees[k] = getattr(agents[k], "determinizations", 1)
        else:
            names[k], sims[k], trees[k] = recorded[k].name, recorded[k].simulations, recorded[k].trees
    seeds = eval_seeds(seed, games)
    scores, steps = [None, None], [None, None]
    # torch_threads: as in the arena, results must not depend on the machine
    with torch_threads(), progress_meter(game, (names[0], names[1]), games, progress) as m:
        for k, saved in enumerate(recorded):  # a saved side's games are in its file: counted as done
            if saved is not None:
                scores[k], steps[k] = np.array(saved.scores), list(saved.steps)
                m.advance(games, **{f"sum_{k}": float(scores[k].sum()), f"games_{k}": games})
        live = [k for k in (0, 1) if recorded[k] is None]
        if len(live) == 2:
            episodes = dict(enumerate(e.games for e in play_paired(game, ap, agents[0], agents[1], seeds, m,
                                                                   runtime.workers > 1)))
        else:  # one side plays alone, or none
            episodes = {k: play_one(game, ap, agents[k], seeds, m, k).games for k in live}
    for k, played in episodes.items():
        scores[k], steps[k] = np.array([g.score for g in played]), [g.steps for g in played]
    result = paired(names, sims, trees, seed, seeds.tolist(), scores, steps, conditions(params),
                    files=[None if saved is None else saved.path for saved in recorded])
    result.seconds = time.perf_counter() - start
    if out is not None:
        atomic.write_text(out, result.to_json() + "\n")
    return result


def pool(paths: list[str | Path], out: Path | None = None) -> TriangleEval:
    """One paired comparison from saved results (``tri eval triangle --out``) of the same two
    players on different evaluation seeds: their seeds, scores and steps joined in the order of
    ``paths``, the means, intervals and counts computed again over all of them (so 200 + 200
    seeds give the interval of 400). A :class:`~tri.errors.TriError` (one line) unless there are
    at least two files, each one evaluation (not itself pooled) whose seeds are its evaluation
    seed's, all of the same player and baseline (name, simulations and trees), on distinct
    evaluation seeds, under the same rules and move cap (:func:`conditions`, where recorded).
    Writes ``out`` (JSON) if given."""
    if len(paths) < 2:
        raise TriError("tri eval pool: give at least two saved results (tri eval triangle --out) to pool")
    saved = [read_saved(path, "result") for path in paths]
    first, where = saved[0], paths[0]
    for path, one in zip(paths, saved):
        if one.pooled:
            raise TriError(f"result {path}: already pooled (evaluation seeds {', '.join(map(str, one.pooled))}); "
                           f"pool the results it was made from")
        if one.seeds != eval_seeds(one.seed, one.games).tolist():
            raise TriError(f"result {path}: its seeds are not those of evaluation seed {one.seed}")
        sides = (one.player, one.simulations, one.trees, one.baseline, one.baseline_simulations, one.baseline_trees)
        if sides != (first.player, first.simulations, first.trees, first.baseline, first.baseline_simulations,
                     first.baseline_trees):
            raise TriError(f"result {path} compares {_who(one.player, one.simulations, one.trees)} with "
                           f"{_who(one.baseline, one.baseline_simulations, one.baseline_trees)}, {where} "
                           f"{_who(first.player, first.simulations, first.trees)} with "
                           f"{_who(first.baseline, first.baseline_simulations, first.baseline_trees)}: "
                           f"pool results of the same two players")
        if one.conditions and first.conditions and one.conditions != first.conditions:
            raise TriError(f"result {path} was played under other rules (game.triangle) or arena.max_moves "
                           f"than {where}")
    seeds = [one.seed for one in saved]
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise TriError(f"tri eval pool: evaluation seed {twice[0]} comes twice; pool results of different "
                       f"evaluation seeds (tri eval triangle --seed)")
    fingerprint = next((one.conditions for one in saved if one.conditions), "")
    result = paired((first.player, first.baseline), (first.simulations, first.baseline_simulations),
                    (first.trees, first.baseline_trees), first.seed, [s for one in saved for s in one.seeds],
                    ([x for one in saved for x in one.scores], [x for one in saved for x in one.baseline_scores]),
                    ([x for one in saved for x in one.steps], [x for one in saved for x in one.baseline_steps]),
                    fingerprint, pooled=seeds)
    if out is not None:
        atomic.write_text(out, result.to_json() + "\n")
    return result


def _who(name: str, sims: int | None, trees: int) -> str:
    """A player as results name it: ``name (N simulations x K trees)``."""
    return f"{name} ({sims} simulations{f' x {trees} trees' if trees > 1 else ''})" if sims else name


def format_triangle(result: TriangleEval) -> str:
    """A plain-text table: each player's mean score, 95% interval and mean steps; then the paired
    difference with its interval, and the per-seed wins, ties and losses."""

    def label(name: str, sims: int | None, trees: int, role: str) -> str:
        return f"{_who(name, sims, trees)}{role}"

    rows = [(label(result.player, result.simulations, result.trees,
                   f" (from {result.player_file})" if result.player_file else ""), result.mean, result.low,
             result.high, result.mean_steps),
            (label(result.baseline, result.baseline_simulations, result.baseline_trees,
                   f" (baseline, from {result.baseline_file})" if result.baseline_file else " (baseline)"),
             result.baseline_mean,
             result.baseline_low, result.baseline_high, result.baseline_mean_steps)]
    width = max(len("player"), *(len(r[0]) for r in rows))
    intervals = [f"[{low:.2f}, {high:.2f}]" for _, _, low, high, _ in rows]
    iw = max(len("95% interval"), *map(len, intervals))
    which = (f"evaluation seeds {', '.join(map(str, result.pooled))}, pooled" if result.pooled
             else f"evaluation seed {result.seed}")
    lines = [f"triangle: {result.games} paired seeds ({which})",
             f"{'player':<{width}}  {'mean score':>10}  {'95% interval':>{iw}}  {'mean steps':>10}"]
    for (name, mean, _, _, steps), interval in zip(rows, intervals):
        lines.append(f"{name:<{width}}  {mean:>10.2f}  {interval:>{iw}}  {steps:>10.1f}")
    lines.append(f"paired difference player - baseline: {result.diff_mean:+.2f}, 95% interval "
                 f"[{result.diff_low:+.2f}, {result.diff_high:+.2f}]")
    lines.append(f"per seed: player wins {result.wins}, ties {result.ties}, loses {result.losses}")
    return "\n".join(lines)
