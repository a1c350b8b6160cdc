"""The players the web page may name: an allow-list per game, never a path from the browser.

=================  ============================================================================
name               player
=================  ============================================================================
``champion``       the game's shipped champion with the search on its card (``tri champions``)
``champion-net``   the champion's network alone: its most probable move, no search
``greedy``         the game's ``greedy`` baseline (:mod:`tri.players`)
``random``         a uniformly random legal move
``best``           the project's ``models/best.pt`` (its own game only), searched with the
                   project's ``arena.simulations``
``gen-NNNN``       a generation of the project: ``models/gen-0000.pt`` or the candidate
                   ``models/candidates/gen-NNNN.pt`` (its own game only)
=================  ============================================================================

Agents are made once per (game, name, checkpoint file state) and shared by the page's sessions;
each session draws its random choices from its own generator (:meth:`Roster.agent`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tri import champions, layout
from tri.config import Params, Runtime, project_params, recipe_params
from tri.device import resolve_device
from tri.errors import TriError
from tri.games import REGISTRY, PlayableGame, make_game
from tri.player_specs import PlayerSpec, parse_spec
from tri.players import GreedyAgent, NetAgent, RandomAgent, make_agent

_GENERATION = re.compile(r"gen-(\d{4,9})")


@dataclass(frozen=True)
class Allowed:
    """One entry of the allow-list: ``name`` (what the page sends), ``label`` (what it shows) and
    ``spec`` (the player spec it stands for, :mod:`tri.player_specs`)."""

    name: str
    label: str
    spec: str


class Roster:
    """The allow-list of the project at ``root`` and the agents it names.

    ``params(game)``: the project's params for its own game, else the game's recipe."""

    def __init__(self, root: Path, runtime: Runtime | None = None):
        self.root = Path(root).resolve()
        self.runtime = runtime or Runtime()
        try:
            self.project = project_params(self.root)
        except TriError:
            self.project = Params()  # a broken params.yaml: the page still plays the champions
        self._games: dict[str, PlayableGame] = {}
        self._agents: dict[tuple, object] = {}
        self._lock = threading.Lock()

    @property
    def project_game(self) -> str:
        return self.project.game.name

    def params(self, game: str) -> Params:
        return self.project if game == self.project_game else recipe_params(game)

    def game(self, name: str) -> PlayableGame:
        """The game ``name`` with the rules the page plays it by; :class:`TriError` if unknown."""
        if name not in REGISTRY:
            raise TriError(f"unknown game {_clip(name)!r} (tri knows: {', '.join(REGISTRY)})")
        with self._lock:
            if name not in self._games:
                self._games[name] = make_game(self.params(name).game)
            return self._games[name]

    def allowed(self, game: str) -> list[Allowed]:
        """Every player the page may name for ``game``, in the order the page lists them."""
        self.game(game)  # checks the name
        out = []
        if game in champions.available(self.runtime.champions):
            try:
                card = champions.load_card(game, self.runtime.champions)
                if not self._same_rules(game, card):
                    raise TriError("the champion plays other rules than this project")
                trees = f" x {card.determinizations} trees" if card.determinizations > 1 else ""
                budget = f"{card.simulations} simulations{trees}" if card.simulations else "its search"
                out.append(Allowed("champion", f"champion (generation {card.generation}, {budget})", "champion"))
                out.append(Allowed("champion-net", "champion's network alone (no search)", f"net:champion:{game}"))
            except (TriError, ValueError):
                pass  # a damaged card, or other rules: the champion is not offered (tri champions says why)
        out += [Allowed("greedy", "greedy (best immediate move)", "greedy"),
                Allowed("random", "random", "random")]
        if game == self.project_game:
            out += self._checkpoints()
        return out

    def default_player(self, game: str) -> str:
        """``champion`` where the game has one for these rules, else ``greedy``."""
        return "champion" if any(a.name == "champion" for a in self.allowed(game)) else "greedy"

    def _same_rules(self, game: str, card: champions.ChampionCard) -> bool:
        """The champion was trained on the rules the page plays ``game`` by."""
        theirs = Params(**card.params).game
        return getattr(theirs, game) == getattr(self.params(game).game, game)

    def _checkpoints(self) -> list[Allowed]:
        sims = self.project.arena.simulations
        out = []
        if layout.best_path(self.root).is_file():
            out.append(Allowed("best", f"this project's best model ({sims} simulations)",
                               str(layout.best_path(self.root))))
        candidates = layout.candidate_path(self.root, 0).parent
        found = {0: layout.model_path(self.root, 0)} if layout.model_path(self.root, 0).is_file() else {}
        for path in candidates.glob("gen-[0-9]*.pt") if candidates.is_dir() else ():
            match = _GENERATION.fullmatch(path.stem)
            if match and path.is_file():
                found[int(match.group(1))] = path
        for generation in sorted(found, reverse=True):
            out.append(Allowed(f"gen-{generation:04d}", f"generation {generation} ({sims} simulations)",
                               str(found[generation])))
        return out

    def resolve(self, game: str, name: object) -> Allowed:
        """The allow-list entry ``name`` of ``game``; :class:`TriError` for anything else."""
        if not isinstance(name, str):
            raise TriError("a player is named by a string (see /api/info)")
        for allowed in self.allowed(game):
            if allowed.name == name:
                return allowed
        names = ", ".join(a.name for a in self.allowed(game)[:8])
        raise TriError(f"unknown player {_clip(name)!r} for {game} (choose one of: {names}, ...)")

    def agent(self, game: str, name: str, rng: np.random.Generator):
        """An agent for the allowed player ``name`` of ``game``. Checkpoint players are cached
        (by the file's size and modification time, so a new best model is picked up); their
        search draws from ``rng``, the session's own generator."""
        allowed = self.resolve(game, name)
        g = self.game(game)
        if allowed.spec == "random":
            return RandomAgent(g, rng)
        if allowed.spec == "greedy":
            return GreedyAgent(g)
        spec = parse_spec(allowed.spec, self.root, game=game)
        key = (game, name, _stamp(spec))
        with self._lock:
            shared = self._agents.get(key)
        if shared is None:
            params = self.params(game)
            agent = make_agent(spec, g, params.mcts, params.arena, rng, resolve_device(self.runtime.device))
            with self._lock:
                shared = self._agents.setdefault(key, (agent, threading.Lock()))
        return _Seeded(*shared, rng)


class _Seeded:
    """A shared agent that draws from a session's own generator: its ``rng`` is set for each
    call, under the agent's lock (sessions' requests run in parallel threads)."""

    def __init__(self, agent, lock: threading.Lock, rng: np.random.Generator):
        self.agent, self.lock, self.rng = agent, lock, rng
        self.name = getattr(agent, "name", "agent")
        self.analysis_kind = "network" if isinstance(agent, NetAgent) else "search"

    def act(self, states: np.ndarray, moves: np.ndarray):
        with self.lock:
            if hasattr(self.agent, "rng"):
                self.agent.rng = self.rng
            return self.agent.act(states, moves)


def _stamp(spec: PlayerSpec) -> tuple:
    """What a checkpoint player's agent depends on: its file, size and modification time."""
    if spec.path is None:
        return ()
    try:
        stat = Path(spec.path).stat()
    except OSError:
        raise TriError(f"the checkpoint of {spec.text} is gone ({spec.path})") from None
    return str(spec.path), stat.st_size, stat.st_mtime_ns


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
