"""Players by name: what ``tri arena`` and the loop accept wherever a model is expected.

========================  ===========================================================
spec                      player
========================  ===========================================================
``random``                a uniformly random legal move
``greedy``                the move with the best immediate reward; ties broken by the
                          game's line-filling heuristic (triangle: the sum over lines of
                          the squared filled fraction after the move), then lowest action
``PATH.pt``               the checkpoint with search (``arena.simulations``)
``mcts:PATH:N``           the checkpoint with ``N`` simulations of search
``mcts:PATH:NxK``         ... in each of ``K`` trees per move, each on its own sampled
                          future (games with chance; ``arena.determinizations``)
``net:PATH``              the checkpoint's policy alone, no search (most probable move)
``models:/NAME@ALIAS``    a registered MLflow version (also ``models:/NAME/VERSION``), e.g.
                          ``models:/tri-triangle@champion``; PATH above may be one too
``champion``              the shipped champion of the game being played, with the search
                          settings and budget on its card (:mod:`tri.champions`)
``champion:GAME``         the shipped champion of GAME; PATH above may be one too
                          (``net:champion``, ``mcts:champion:connect4:800``)
``uct:N``                 plain UCT with ``N`` simulations and random roll-outs, no
                          network (two-player games; :mod:`tri.yardsticks`)
``alphabeta:D``           depth-``D`` alpha-beta over a positional evaluation and
                          mobility (Othello; :mod:`tri.yardsticks`)
========================  ===========================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tri import champions
from tri.agents import Decision, MctsAgent
from tri.config import MAX_SIMULATIONS, ArenaParams, MctsParams
from tri.errors import TriError
from tri.evaluator import make_evaluator
from tri.games.base import Game, sample_legal
from tri.net import load_checkpoint
from tri.record.registry import resolve_model
from tri.resources import check_search
from tri.yardsticks import AlphaBetaAgent, UctAgent


class RandomAgent:
    def __init__(self, game: Game, rng: np.random.Generator):
        self.game, self.rng, self.name = game, rng, "random"

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        return Decision(sample_legal(self.game.legal(states), self.rng))


class GreedyAgent:
    """Best immediate reward, then the game's ``line_fill`` tie-break (if it has one), then the
    lowest action. Deterministic."""

    def __init__(self, game: Game):
        self.game, self.name = game, "greedy"

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        b_idx, actions = np.nonzero(self.game.legal(states))
        after = self.game.step(states[b_idx], actions)
        tie = self.game.line_fill(after.states) if hasattr(self.game, "line_fill") else np.zeros(b_idx.size)
        # Equal sums must compare equal whatever order they were added in.
        reward, tie = np.round(after.reward, 9), np.round(tie, 9)
        order = np.lexsort((actions, -tie, -reward, b_idx))
        first = np.ones(order.size, bool)
        first[1:] = b_idx[order][1:] != b_idx[order][:-1]
        chosen = np.full(states.shape[0], -1, np.int64)
        chosen[b_idx[order][first]] = actions[order][first]
        return Decision(chosen)


class NetAgent:
    """The network's most probable legal move."""

    def __init__(self, game: Game, evaluate, name: str):
        self.game, self.evaluate, self.name = game, evaluate, name

    def act(self, states: np.ndarray, moves: np.ndarray) -> Decision:
        priors, legal, values = self.evaluate(states)
        return Decision(np.argmax(np.where(legal, priors, -1.0), axis=1).astype(np.int64), priors, values)


@dataclass(frozen=True)
class PlayerSpec:
    kind: str  # random | greedy | mcts | net | uct | alphabeta
    path: Path | None = None
    simulations: int | None = None
    text: str = ""
    mcts: MctsParams | None = None  # the search settings it plays with (a champion's own), else the caller's
    determinizations: int | None = None  # trees per move (a champion's own, NxK), else arena.determinizations


def parse_spec(text: str, root: Path | None = None, *, game: str | None = None) -> PlayerSpec:
    """Parse a player spec (see the module docstring); raises :class:`TriError` if malformed.
    ``models:/`` URIs are resolved to a local checkpoint through the MLflow store of the
    project ``root`` (default: the current directory). ``game``: the game being played, which
    ``champion`` names and ``champion:GAME`` must match (None: ``champion`` needs its GAME)."""

    def local(path: str) -> tuple[Path, MctsParams | None, int | None, int | None]:
        """The checkpoint ``path`` names, and a champion's own search settings, budget and trees."""
        if path == "champion" or path.startswith("champion:"):
            name = path.partition(":")[2] or game
            if not name:
                raise TriError(f"player {_clip(text)!r}: which game's champion? use champion:GAME")
            if game is not None and name != game:
                raise TriError(f"player {_clip(text)!r} plays {name}, but this plays {game} (use --game {name})")
            ckpt, card = champions.champion(name)
            return ckpt, card.mcts, card.simulations, card.determinizations
        if not path.startswith("models:/"):
            return Path(path), None, None, None
        try:
            return resolve_model(path, Path.cwd() if root is None else root), None, None, None
        except TriError as exc:  # its message names the URI: name the whole spec only if it differs
            raise (exc if path == text else TriError(f"player {text!r}: {exc}")) from None

    if text in ("random", "greedy"):
        return PlayerSpec(text, text=text)
    if text.startswith("uct:"):
        n = text[4:]
        if not (n.isascii() and n.isdigit()) or not n.lstrip("0") or len(n) > 7:
            raise TriError(f"player {_clip(text)!r}: expected uct:SIMULATIONS, e.g. uct:1000 (1 to 9999999)")
        return PlayerSpec("uct", simulations=int(n), text=text)
    if text.startswith("alphabeta:"):
        d = text[10:]
        if not (d.isascii() and d.isdigit()) or not 1 <= int(d or 0) <= 12 or len(d) > 2:
            raise TriError(f"player {_clip(text)!r}: expected alphabeta:DEPTH, e.g. alphabeta:3 (1 to 12)")
        return PlayerSpec("alphabeta", simulations=int(d), text=text)
    if text == "champion" or text.startswith(("models:/", "champion:")):
        path, mcts, sims, trees = local(text)
        return PlayerSpec("mcts", path, sims, text=text, mcts=mcts, determinizations=trees)
    if text.startswith("net:"):
        return PlayerSpec("net", local(text[4:])[0], text=text)
    if text.startswith("mcts:"):
        path, _, budget = text[5:].rpartition(":")
        sims, times, trees = budget.partition("x")
        digits, tree_digits = sims.lstrip("0"), trees.lstrip("0")
        if (not path or not (sims.isascii() and sims.isdigit()) or not digits
                or times and not (trees.isascii() and trees.isdigit() and tree_digits)):
            raise TriError(f"player {_clip(text)!r}: expected mcts:PATH:SIMULATIONS or "
                           "mcts:PATH:SIMULATIONSxTREES, e.g. mcts:models/gen-0003.pt:128 or mcts:champion:32x4")
        if len(digits) > len(str(MAX_SIMULATIONS)) or int(digits) > MAX_SIMULATIONS:
            raise TriError(f"player {_clip(text)!r}: at most {MAX_SIMULATIONS} simulations "
                           "(tree nodes are numbered in int32)")
        if times and (len(tree_digits) > 4 or int(tree_digits) > 1024):
            raise TriError(f"player {_clip(text)!r}: at most 1024 trees per move")
        resolved, mcts, _, card_trees = local(path)
        return PlayerSpec("mcts", resolved, int(digits), text=text, mcts=mcts,
                          determinizations=int(tree_digits) if times else card_trees)
    if text and (Path(text).suffix == ".pt" or Path(text).is_file()):
        return PlayerSpec("mcts", Path(text), text=text)
    raise TriError(f"unknown player {text!r}: use random, greedy, champion, uct:N, alphabeta:D, a checkpoint path (.pt), "
                   "mcts:PATH:N or net:PATH")


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_player_memory(spec: PlayerSpec, game: Game, mcts: MctsParams, arena: ArenaParams, *,
                        batch: int = 1) -> None:
    """Raise :class:`TriError` if the search of ``spec`` (its ``N``, else ``arena.simulations``)
    for ``batch`` games at once would not fit in memory (the arena passes its batch)."""
    if spec.kind != "mcts":
        return
    at_once = " or arena.concurrent" if batch > 1 else ""
    if spec.simulations is None:
        setting, advice = "arena.simulations", f"lower arena.simulations{at_once}"
    else:
        setting, advice = f"player {_clip(spec.text)!r}", f"lower N in mcts:PATH:N{at_once}"
    trees = player_trees(spec, game, arena)
    if trees > 1:
        setting, advice = f"{setting} in {trees} trees per move", f"{advice} or the trees per move"
    check_search(game, spec.mcts or mcts, simulations=spec.simulations or arena.simulations,
                 batch=batch * trees, setting=setting, advice=advice)


def player_trees(spec: PlayerSpec, game: Game, arena: ArenaParams) -> int:
    """Trees per move of a search player: its own (``NxK``, a champion's card), else
    ``arena.determinizations``; one in a game without chance."""
    return (spec.determinizations or arena.determinizations) if game.stochastic else 1


def make_agent(spec: PlayerSpec, game: Game, mcts: MctsParams, arena: ArenaParams,
               rng: np.random.Generator, device: str = "cpu", *, batch: int = 1):
    """The agent a spec names (checkpoints are checked to be of ``game``). ``batch``: the games
    it will play at once, for the memory check of a search (:func:`check_player_memory`)."""
    check_player_memory(spec, game, mcts, arena, batch=batch)
    if spec.kind == "random":
        return RandomAgent(game, rng)
    if spec.kind == "greedy":
        return GreedyAgent(game)
    if spec.kind == "uct":
        return UctAgent(game, spec.simulations, rng, name=spec.text)
    if spec.kind == "alphabeta":
        return AlphaBetaAgent(game, spec.simulations, name=spec.text)
    ckpt = load_checkpoint(spec.path, game)
    search = spec.mcts or mcts
    if spec.kind == "net":
        return NetAgent(game, player_evaluator(ckpt.model, game, search, 1, device), spec.text)
    trees = player_trees(spec, game, arena)
    return MctsAgent(game, player_evaluator(ckpt.model, game, search, trees, device), search, rng, noise=False,
                     temperature=arena.temperature, temperature_moves=arena.temperature_moves,
                     simulations=spec.simulations or arena.simulations, determinizations=trees, name=spec.text)


def player_evaluator(model, game: Game, search: MctsParams, trees: int, device: str = "cpu"):
    """A player's evaluator, in ``search.precision``. One tree: the model itself, as the arena's
    gate evaluates. Several trees (``trees > 1``, a chance game's costly move): each distinct
    position of a step once (:func:`tri.evaluator.make_evaluator`'s ``distinct``), through
    self-play's folded snapshot (``fast``): the triangle champion's move on an AVX2 CPU, one leaf
    per network call, took 95 ms against 166 through the model itself (README, Benchmarks), and
    its card's 200 games came out the same seed for seed. Either way the figures replay bit for bit on one machine, and a
    model card is measured through the same evaluator as ``tri play`` uses."""
    return make_evaluator(model, game, device, precision=search.precision, symmetrize=search.symmetrize,
                          distinct=trees > 1, fast=trees > 1)
