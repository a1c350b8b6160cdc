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
from tri.games.base import Game, sample_legal
from tri.net import load_checkpoint, make_evaluator
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


def parse_spec(text: str, root: Path | None = None, *, game: str | None = None) -> PlayerSpec:
    """Parse a player spec (see the module docstring); raises :class:`TriError` if malformed.
    ``models:/`` URIs are resolved to a local checkpoint through the MLflow store of the
    project ``root`` (default: the current directory). ``game``: the game being played, which
    ``champion`` names and ``champion:GAME`` must match (None: ``champion`` needs its GAME)."""

    def local(path: str) -> tuple[Path, MctsParams | None, int | None]:
        """The checkpoint ``path`` names, and a champion's own search settings and budget."""
        if path == "champion" or path.startswith("champion:"):
            name = path.partition(":")[2] or game
            if not name:
                raise TriError(f"player {_clip(text)!r}: which game's champion? use champion:GAME")
            if game is not None and name != game:
                raise TriError(f"player {_clip(text)!r} plays {name}, but this plays {game} (use --game {name})")
            ckpt, card = champions.champion(name)
            return ckpt, card.mcts, card.simulations
        if not path.startswith("models:/"):
            return Path(path), None, None
        try:
            return resolve_model(path, Path.cwd() if root is None else root), None, None
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
        path, mcts, sims = local(text)
        return PlayerSpec("mcts", path, sims, text=text, mcts=mcts)
    if text.startswith("net:"):
        return PlayerSpec("net", local(text[4:])[0], text=text)
    if text.startswith("mcts:"):
        path, _, sims = text[5:].rpartition(":")
        digits = sims.lstrip("0")
        if not path or not (sims.isascii() and sims.isdigit()) or not digits:
            raise TriError(f"player {_clip(text)!r}: expected mcts:PATH:SIMULATIONS, e.g. mcts:models/gen-0003.pt:128")
        if len(digits) > len(str(MAX_SIMULATIONS)) or int(digits) > MAX_SIMULATIONS:
            raise TriError(f"player {_clip(text)!r}: at most {MAX_SIMULATIONS} simulations "
                           "(tree nodes are numbered in int32)")
        resolved, mcts, _ = local(path)
        return PlayerSpec("mcts", resolved, int(digits), text=text, mcts=mcts)
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
    check_search(game, spec.mcts or mcts, simulations=spec.simulations or arena.simulations, batch=batch,
                 setting=setting, advice=advice)


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
    evaluate = make_evaluator(ckpt.model, game, device, precision=(spec.mcts or mcts).precision)
    if spec.kind == "net":
        return NetAgent(game, evaluate, spec.text)
    return MctsAgent(game, evaluate, spec.mcts or mcts, rng, noise=False, temperature=arena.temperature,
                     temperature_moves=arena.temperature_moves,
                     simulations=spec.simulations or arena.simulations, name=spec.text)
