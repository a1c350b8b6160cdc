"""``tri ladder``: rank any set of players on the same seeds.

**Two-player games**: every pairing (a round robin, or each player against one ``gauntlet``
player) plays ``games`` seeds twice, each player opening once, through the arena's loop
(:func:`tri.episodes.run_episodes` with ``first_seat``). The results are fitted to Bradley-Terry
ratings on the Elo scale with 95% intervals (:mod:`tri.ratings`), 0 at ``anchor`` (default
``greedy`` if it plays, else the first player). One virtual draw is added to every pairing
before the fit, so a player who wins or loses every game keeps a finite rating; the table's
games, score rates and wins/draws/losses count the real games only.

**Single-player game** (the triangle puzzle): every player plays the same ``games`` seeds, so
all see the same shape draws (they come from the seed alone): each player's mean score with a
95% interval, and its paired difference (per seed) to the reference, ``anchor`` or the best mean.

Players search with generators seeded as in the arena (``[seed, 0, 0xA2E4A]``, the same for all:
common random numbers), fresh for every pairing, so a result depends on its players and the
settings alone, not on who else plays. So results are reused: each pairing (two-player) or
player (single-player) is kept in ``OUT/cache/KEY.json``, KEY a sha256 over the game and its
config, the seeds, the arena's move cap and batch (``concurrent`` orders the random draws), and
each player's identity (:func:`_identity`: a checkpoint's content hash, not its path, with its
search settings). A ladder run again, or with one more player, plays only what is new.

Files in ``out``: ``ladder.json`` (everything, per pairing and per seed), ``ladder.csv`` (the
table), ``ladder.png`` (each player's rating or mean with its interval, best on top).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from tri import atomic, layout
from tri.arena import arena_seeds, mean_ci, openings
from tri.config import Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.episodes import run_episodes
from tri.errors import TriError
from tri.games import make_game
from tri.net import load_checkpoint
from tri.player_specs import PlayerSpec, parse_spec
from tri.players import check_player_memory, make_agent, player_trees
from tri.ratings import ELO_PER_LOGIT, Match, bradley_terry
from tri.record.ladder_files import write_files
from tri.resources import arena_batch
from tri.yardsticks import MOBILITY, UCT_C, WIN

CACHE_FORMAT, CACHE_VERSION = "tri-ladder-result", 1  # a new version: every cached result is played again
RNG_DOMAIN = 0xA2E4A  # the arena's: players search with the generators they have there
VIRTUAL_DRAWS = 1.0
DEFAULT_OUT = Path("data/ladder")


@dataclass(frozen=True)
class Entrant:
    """A player: ``name`` in the table, ``text`` its spec, ``spec`` parsed, ``identity`` what its
    results depend on (canonical JSON, see :func:`_identity`)."""

    name: str
    text: str
    spec: PlayerSpec
    identity: str


@dataclass(frozen=True)
class Standing:
    """A row of the table. Two-player: ``value``, the rating (Elo, anchor 0), in its 95% interval
    ``low``..``high``; ``score_rate`` (win 1, draw 1/2) and wins/draws/losses over its ``games``.
    Single-player: ``value``, the mean score, in its interval; ``diff`` (``diff_low``..
    ``diff_high``): the paired difference to the reference; wins/draws/losses: seeds where it
    scored more, as much, less than it; ``scores [games]``: per seed."""

    name: str
    spec: str
    value: float
    low: float
    high: float
    games: int
    wins: int
    draws: int
    losses: int
    score_rate: float | None = None
    mean_steps: float | None = None
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    scores: tuple[float, ...] = ()


@dataclass(frozen=True)
class Pairing:
    """Two players' games (two-player): ``a``'s ``wins``, ``draws``, ``losses`` against ``b``;
    ``outcomes`` ``[2 * seeds]``: ``a``'s result per game (+1/0/-1), the seeds with ``a``
    opening, then with ``b`` opening; ``reused``: read from the cache, not played."""

    a: str
    b: str
    games: int
    wins: int
    draws: int
    losses: int
    reused: bool
    outcomes: tuple[float, ...]


@dataclass(frozen=True)
class Ladder:
    """A ladder. ``kind``: ``ratings`` (two-player) or ``means``; ``games``: seeds per pairing
    (each played twice) or player; ``anchor``: the player rated 0, or the reference of the paired
    differences; ``method``: how the numbers were made, for people; ``reused``/``played``: results
    read from the cache, played; ``skipped``: ``--run`` generations whose checkpoint is missing."""

    game: str
    kind: str
    games: int
    seed: int
    anchor: str
    method: str
    standings: tuple[Standing, ...]
    pairings: tuple[Pairing, ...]
    seeds: tuple[int, ...]
    reused: int
    played: int
    skipped: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


@dataclass(frozen=True)
class _Setting:
    """What every result of one ladder shares."""

    params: Params
    game: object
    seed: int
    seeds: np.ndarray  # [games] int64
    batch: int
    device: str
    cache: Path | None
    opening_moves: int = 0  # two-player: sampled opening moves before each seed's pair of games

    def common(self) -> dict:
        common = {"format": CACHE_FORMAT, "version": CACHE_VERSION, "game": self.game.name,
                  "config": self.game.config.model_dump(mode="json"), "seed": self.seed,
                  "seeds": self.seeds.tolist(), "max_moves": self.params.arena.max_moves, "batch": self.batch}
        if self.opening_moves:  # absent when 0: the results cached before openings existed stay valid
            common["openings"] = self.opening_moves
        return common

    def agent(self, entrant: Entrant):
        rng = np.random.default_rng([self.seed, 0, RNG_DOMAIN])  # the same for all: common random numbers
        return make_agent(entrant.spec, self.game, self.params.mcts, self.params.arena, rng, self.device,
                          batch=self.batch)


def run_checkpoints(root: Path) -> tuple[list[tuple[int, Path]], list[int]]:
    """The generation checkpoints of the tri project ``root``, in generation order: generation 0
    (``models/gen-0000.pt``) and every candidate (``models/candidates/gen-NNNN.pt``); and the
    generations it knows of (a candidate or an arena result) whose file is missing, as in a DVC
    project whose older models are not checked out. Raises :class:`TriError` if it has none."""
    root = Path(root)
    if not root.is_dir():
        raise TriError(f"--run {root}: no such folder")
    known = {0}
    for path in [*layout.candidate_path(root, 0).parent.glob("gen-[0-9]*.pt"), *layout.arena_paths(root)]:
        if path.stem[4:].isdigit():
            known.add(int(path.stem[4:]))
    paths = {g: layout.candidate_path(root, g) if g else layout.model_path(root, 0) for g in sorted(known)}
    found = [(g, p) for g, p in paths.items() if p.is_file()]
    missing = [g for g, p in paths.items() if not p.is_file()]
    if not found:
        raise TriError(f"--run {root}: no generation checkpoints (models/gen-0000.pt, "
                       "models/candidates/gen-NNNN.pt)")
    return found, missing


def _identity(spec: PlayerSpec, s: _Setting) -> str:
    """What a player's results depend on, as canonical JSON: its kind; a checkpoint's content
    hash (``model_id``: the same weights under any path are the same player) and the device it
    runs on; a search's settings, budget, trees per move and move temperature."""
    if spec.kind in ("random", "greedy"):
        return json.dumps({"kind": spec.kind})
    if spec.kind == "uct":  # no network: its budget and the code's constant are the player
        return json.dumps({"kind": "uct", "simulations": spec.simulations, "c": UCT_C})
    if spec.kind == "alphabeta":  # its depth and the code's evaluation are the player
        return json.dumps({"kind": "alphabeta", "depth": spec.simulations, "mobility": MOBILITY, "win": WIN})
    ap = s.params.arena
    search = (spec.mcts or s.params.mcts).model_dump(mode="json")
    if not search.pop("symmetrize"):  # off: the identity it had before the setting existed
        data = {}
    else:
        data = {"symmetrize": True}  # the network alone averages its images too
    data |= {"kind": spec.kind, "model": load_checkpoint(spec.path, s.game, ensemble=True).model_id, "device": s.device}
    if spec.kind == "mcts":
        # One tree: the identity it had before trees existed, so kept results stay valid.
        if (trees := player_trees(spec, s.game, s.params.mcts, ap)) > 1:
            data["determinizations"] = trees
        data |= {"simulations": spec.simulations or ap.simulations, "mcts": search,
                 "temperature": ap.temperature, "temperature_moves": ap.temperature_moves}
    return json.dumps(data, sort_keys=True)


def _entrants(named: list[tuple[str, str]], s: _Setting) -> list[Entrant]:
    names = [name for name, _ in named]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise TriError(f"player {twice[0]!r} is given twice")
    specs = [parse_spec(text, game=s.game.name) for _, text in named]
    for spec in specs:  # every search, before any checkpoint is loaded
        check_player_memory(spec, s.game, s.params.mcts, s.params.arena, batch=s.batch)
    out: list[Entrant] = []
    for (name, text), spec in zip(named, specs):
        entrant = Entrant(name, text, spec, _identity(spec, s))
        same = next((e for e in out if e.identity == entrant.identity), None)
        if same is not None:
            raise TriError(f"players {same.name!r} and {name!r} are the same player (same weights and "
                           "search settings): give it once")
        out.append(entrant)
    return out


def _find(entrants: list[Entrant], text: str, s: _Setting) -> Entrant | None:
    """The player ``text`` names (its name, its spec, or a spec of the same player), or None."""
    for e in entrants:
        if text in (e.name, e.text):
            return e
    identity = _identity(parse_spec(text, game=s.game.name), s)
    return next((e for e in entrants if e.identity == identity), None)


def _result(s: _Setting, players: list[Entrant], play: Callable[[], dict]) -> tuple[dict, bool]:
    """The cached result of ``players`` (in this order) if there is one, else ``play()``'s, cached
    (atomically); and whether it was reused."""
    key = hashlib.sha256(json.dumps({"common": s.common(), "players": [e.identity for e in players]},
                                    sort_keys=True).encode()).hexdigest()
    path = None if s.cache is None else s.cache / f"{key}.json"
    try:
        data = json.loads(path.read_text()) if path is not None and path.is_file() else None
    except (OSError, ValueError):  # damaged: play it again
        data = None
    if isinstance(data, dict) and data.get("key") == key:
        return data, True
    data = {"key": key, "players": [e.identity for e in players], **play()}
    if path is not None:
        atomic.write_text(path, json.dumps(data) + "\n")
    return data, False


def run(params: Params, specs: Sequence[str] = (), *, runs: Sequence[Path] = (), games: int | None = None,
        seed: int | None = None, gauntlet: str | None = None, anchor: str | None = None,
        out: Path | None = DEFAULT_OUT, runtime: Runtime | None = None,
        progress: Callable[[str], None] | None = None, opening_moves: int = 0) -> Ladder:
    """Rank the players ``specs`` (see :mod:`tri.player_specs`) and every generation checkpoint of the
    projects ``runs`` (named ``gen-NNNN``, or ``FOLDER/gen-NNNN`` with several) on ``games``
    seeds (default ``arena.games``) of ``seed`` (default ``arena.seed``); see the module
    docstring. ``out``: the folder of the result files and the cache (None: neither).
    ``progress(line)`` hears of each result as it is played or reused. ``opening_moves``
    (two-player): each seed's pair of games starts after that many random moves
    (:func:`tri.arena.openings`)."""
    runtime, ap = runtime or Runtime(), params.arena
    game = make_game(params.game)
    n = ap.games if games is None else games
    if n < 2:
        raise TriError(f"--games {n}: at least 2 (an interval needs two games)")
    two = game.num_players == 2
    if opening_moves and not two:
        raise TriError("--openings: a single-player game's seeds already differ (its draws)")
    if gauntlet is not None and not two:
        raise TriError(f"--gauntlet: {game.name} is a single-player game, where every player plays the "
                       "same seeds alone (no pairings)")
    seed = ap.seed if seed is None else seed
    named = [(text, text) for text in specs]
    skipped = []
    for root in runs:
        found, missing = run_checkpoints(root)
        prefix = f"{Path(root).name}/" if len(runs) > 1 else ""
        named += [(f"{prefix}gen-{g:04d}", str(path)) for g, path in found]
        skipped += [f"{prefix}gen-{g:04d}" for g in missing]
    s = _Setting(params, game, seed, arena_seeds(seed, n), arena_batch(ap, game, n),
                 resolve_device(runtime.device), None if out is None else Path(out) / "cache", opening_moves)
    entrants = _entrants(named, s)
    target = None if gauntlet is None else _find(entrants, gauntlet, s)
    if gauntlet is not None and target is None:
        target = _entrants([(gauntlet, gauntlet)], s)[0]
        entrants.append(target)
    if len(entrants) < 2:
        raise TriError(f"{len(entrants)} player{'' if entrants else 's'}: a ladder needs at least 2 (player "
                       "specs, --run folders, --gauntlet)")
    ref = None
    if anchor is not None and (ref := _find(entrants, anchor, s)) is None:
        names = ", ".join(e.name for e in entrants)
        raise TriError(f"--anchor {anchor!r} is not one of the players ({names})")
    tell = progress or (lambda line: None)
    if two:
        ref = ref or next((e for e in entrants if e.spec.kind == "greedy"), entrants[0])
        ladder = _two_player(s, entrants, target, ref, tell)
    else:
        ladder = _one_player(s, entrants, ref, tell)
    ladder = replace(ladder, standings=tuple(sorted(ladder.standings, key=lambda r: -r.value)),
                     skipped=tuple(skipped))
    if out is not None:
        write_files(ladder, Path(out))
    return ladder


def _two_player(s: _Setting, entrants: list[Entrant], gauntlet: Entrant | None, anchor: Entrant,
                tell: Callable[[str], None]) -> Ladder:
    if gauntlet is None:
        pairs = [(a, b) for i, a in enumerate(entrants) for b in entrants[i + 1:]]
    else:
        pairs = [(e, gauntlet) for e in entrants if e is not gauntlet]
    n, pairings, reused = s.seeds.size, [], 0
    for pair in pairs:
        a, b = sorted(pair, key=lambda e: e.identity)  # canonical: the same entry whoever is listed first

        def play(a=a, b=b) -> dict:
            first = np.repeat(np.array([0, 1], np.int64), n)  # a opens every seed, then b does
            starts = openings(s.game, s.seeds, s.opening_moves)
            with torch_threads():  # results must not depend on the machine (float summation order)
                e = run_episodes(s.game, [s.agent(a), s.agent(b)], np.concatenate([s.seeds, s.seeds]),
                                 concurrent=s.batch, max_moves=s.params.arena.max_moves, first_seat=first,
                                 starts=None if starts is None else np.concatenate([starts, starts]))
            return {"outcomes": [g.outcome for g in e.games], "steps": [g.steps for g in e.games]}

        data, reuse = _result(s, [a, b], play)
        reused += reuse
        o = np.asarray(data["outcomes"], np.float64)  # [2n], seat 0 = a
        pairings.append(Pairing(a.name, b.name, int(o.size), int((o > 0).sum()), int((o == 0).sum()),
                                int((o < 0).sum()), reuse, tuple(o.tolist())))
        tell(f"{pair[0].name} vs {pair[1].name}: {'reused' if reuse else 'played'} {o.size} games")
    index = {e.name: i for i, e in enumerate(entrants)}
    matches = [Match(index[p.a], index[p.b], p.wins, p.draws, p.losses) for p in pairings]
    fit = bradley_terry(len(entrants), matches, index[anchor.name], virtual_draws=VIRTUAL_DRAWS)
    rows = []
    for e, r in zip(entrants, fit):
        mine = [(p.wins, p.draws, p.losses) if p.a == e.name else (p.losses, p.draws, p.wins)
                for p in pairings if e.name in (p.a, p.b)]
        w, d, l = (int(sum(x)) for x in zip(*mine)) if mine else (0, 0, 0)
        played = w + d + l
        rows.append(Standing(e.name, e.text, r.rating, r.low, r.high, played, w, d, l,
                             score_rate=(w + d / 2) / played if played else None))
    method = (f"Bradley-Terry ratings on the Elo scale ({ELO_PER_LOGIT:.1f} points per logit), {anchor.name} "
              f"= 0, 95% intervals from the fit's standard errors; each pairing played {n} seeds with each "
              "player opening once; draws count half a win; one virtual draw added to every pairing (keeps "
              "a player who wins or loses every game finite)")
    return Ladder(s.game.name, "ratings", n, s.seed, anchor.name, method, tuple(rows), tuple(pairings),
                  tuple(s.seeds.tolist()), reused, len(pairings) - reused)


def _one_player(s: _Setting, entrants: list[Entrant], anchor: Entrant | None,
                tell: Callable[[str], None]) -> Ladder:
    results, reused = [], 0
    for entrant in entrants:

        def play(entrant=entrant) -> dict:
            with torch_threads():  # results must not depend on the machine (float summation order)
                e = run_episodes(s.game, [s.agent(entrant)], s.seeds, concurrent=s.batch,
                                 max_moves=s.params.arena.max_moves)
            return {"scores": [g.score for g in e.games], "steps": [g.steps for g in e.games]}

        data, reuse = _result(s, [entrant], play)
        reused += reuse
        tell(f"{entrant.name}: {'reused' if reuse else 'played'} {s.seeds.size} games")
        results.append((np.asarray(data["scores"], np.float64), float(np.mean(data["steps"]))))
    means = [float(scores.mean()) for scores, _ in results]
    ref = entrants.index(anchor) if anchor is not None else int(np.argmax(means))
    base, rows = results[ref][0], []
    for e, (scores, steps) in zip(entrants, results):
        mean, low, high = mean_ci(scores)
        diff = scores - base
        d_mean, d_low, d_high = mean_ci(diff)
        rows.append(Standing(e.name, e.text, mean, low, high, int(scores.size), int((diff > 1e-9).sum()),
                             int((np.abs(diff) <= 1e-9).sum()), int((diff < -1e-9).sum()), mean_steps=steps,
                             diff=d_mean, diff_low=d_low, diff_high=d_high, scores=tuple(scores.tolist())))
    name = entrants[ref].name
    method = (f"mean score over {s.seeds.size} paired seeds (every player sees the same shape draws), 95% "
              f"t intervals; paired difference to {name}{'' if anchor is not None else ' (the best mean)'}: "
              f"per seed, score minus {name}'s, with its interval")
    return Ladder(s.game.name, "means", int(s.seeds.size), s.seed, name, method, tuple(rows), (),
                  tuple(s.seeds.tolist()), reused, len(entrants) - reused)
