"""Players by name: the agent behind each spec of :mod:`tri.player_specs` (its table lists them).
"""

from __future__ import annotations

import numpy as np

from tri.agents import Decision, MctsAgent
from tri.config import ArenaParams, MctsParams
from tri.evaluator import make_evaluator
from tri.games.base import Game, sample_legal
from tri.net import load_checkpoint
from tri.player_specs import PlayerSpec, clip
from tri.resources import check_search
from tri.yardsticks import AlphaBetaAgent, UctAgent


PLAYER_CACHE = 1 << 15  # positions a fast-path player's evaluator remembers (about 50 MB for the triangle)


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
        setting, advice = f"player {clip(spec.text)!r}", f"lower N in mcts:PATH:N{at_once}"
    trees = player_trees(spec, game, mcts, arena)
    if trees > 1:
        setting, advice = f"{setting} in {trees} trees per move", f"{advice} or the trees per move"
    check_search(game, spec.mcts or mcts, simulations=spec.simulations or arena.simulations,
                 batch=batch * trees, setting=setting, advice=advice)


def player_trees(spec: PlayerSpec, game: Game, mcts: MctsParams, arena: ArenaParams) -> int:
    """Trees per move of a search player: its own (``NxK``, a champion's card), else
    ``arena.determinizations``; one in a game without chance, and one when its search
    (``spec.mcts`` or ``mcts``) uses afterstates: no path then reaches a draw, so without root
    noise (a player has none) every tree would be the same search but for the step reward of a
    drawing move (the triangle's ``alive``, at most 0.005). On 191 positions of the triangle
    champion's games, one tree and eight chose the same move on all 191, at a thirteenth of the
    time."""
    return trees_per_move(game, spec.mcts or mcts, spec.determinizations or arena.determinizations)


def trees_per_move(game: Game, search: MctsParams, asked: int) -> int:
    """The trees a player searching with ``search`` grows when ``asked`` for some: one in a game
    without chance, or with ``search.afterstates`` alone, where no path reaches a draw and more
    trees would repeat the search (with chance nodes too, each tree samples its own draws)
    (:func:`player_trees`)."""
    sampled = not search.afterstates or search.chance_outcomes > 1
    return asked if game.stochastic and sampled else 1


def make_agent(spec: PlayerSpec, game: Game, mcts: MctsParams, arena: ArenaParams,
               rng: np.random.Generator, device: str = "cpu", *, batch: int = 1, onnx: bool = True):
    """The agent a spec names (checkpoints are checked to be of ``game``). ``batch``: the games
    it will play at once, for the memory check of a search (:func:`check_player_memory`).
    ``onnx=False``: its network on torch even where ONNX Runtime would run it (``tri bench move
    --compare``)."""
    check_player_memory(spec, game, mcts, arena, batch=batch)
    if spec.kind == "random":
        return RandomAgent(game, rng)
    if spec.kind == "greedy":
        return GreedyAgent(game)
    if spec.kind == "uct":
        return UctAgent(game, spec.simulations, rng, name=spec.text)
    if spec.kind == "alphabeta":
        return AlphaBetaAgent(game, spec.simulations, name=spec.text)
    ckpt = load_checkpoint(spec.path, game, ensemble=True)
    search = spec.mcts or mcts
    if spec.kind == "net":
        return NetAgent(game, player_evaluator(ckpt.model, game, search, 1, device, onnx=onnx), spec.text)
    trees = player_trees(spec, game, mcts, arena)
    return MctsAgent(game, player_evaluator(ckpt.model, game, search, trees, device, onnx=onnx), search, rng,
                     noise=False,
                     temperature=arena.temperature, temperature_moves=arena.temperature_moves,
                     simulations=spec.simulations or arena.simulations, determinizations=trees, name=spec.text)


def player_evaluator(model, game: Game, search: MctsParams, trees: int, device: str = "cpu", *,
                     onnx: bool = True):
    """A player's evaluator, in ``search.precision``. A single-player game's player, and any
    player with several trees, searches through self-play's folded snapshot
    (:class:`~tri.inference.InferenceNet`; ``fast``): the same priors and values as the model itself
    up to float rounding, and about 1.7x as fast a call at a player's small batches (the
    triangle champion's median move on an AVX2 CPU: 67-71 ms against 106-138; its card's 200
    games replay seed for seed: README, Benchmarks). A two-player game's one-tree player (and
    so its arena) keeps the model itself, which those champions' cards were measured through.
    Several trees (``trees > 1``, a chance game's costly move) evaluate each distinct position
    of a step once (:func:`tri.evaluator.make_evaluator`'s ``distinct``). Both remember the
    last :data:`PLAYER_CACHE` positions they evaluated (its ``cache``): a transposition, or a
    node of the last move's tree, is not evaluated again. On the CPU in float32 the fast path runs
    the network on ONNX Runtime (:mod:`tri.ort`; unless ``onnx=False``): about 2.4x torch's
    speed a call at a player's batches, the same figures up to float rounding. Either way the figures
    replay bit for bit on one machine, and a model card is measured through the same evaluator
    as ``tri play`` uses."""
    fast = trees > 1 or game.num_players == 1
    return make_evaluator(model, game, device, precision=search.precision, symmetrize=search.symmetrize,
                          distinct=trees > 1, fast=fast, cache=PLAYER_CACHE if fast else 0,
                          onnx=fast and onnx)
