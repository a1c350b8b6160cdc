"""What every evaluation shares: the player under test from its spec (:func:`make_player`,
through :func:`tri.player_specs.parse_spec` and :func:`tri.players.make_agent`), and the grading of
its moves against exact scores (:func:`score_positions`, for the games solved exactly)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from tri.config import Params
from tri.errors import TriError
from tri.evaluate.result import EvalRow
from tri.player_specs import parse_spec
from tri.players import make_agent
from tri.progress import Report, meter

BATCH = 256  # positions per agent call (the search batch)


def score_positions(name: str, states: np.ndarray, score: np.ndarray, move_scores: np.ndarray,
                    agent, evaluate=None, batch: int = BATCH, progress: Report | None = None) -> EvalRow:
    """Ask ``agent`` for a move in each of ``states [P, L]`` and grade it against ``score [P]``
    (the position's exact score from the side to move; its sign is the outcome) and
    ``move_scores [P, A]`` (each action's exact score from the same side; NaN = illegal).
    ``evaluate``: the network's evaluator, for the value accuracies (None: not measured);
    ``progress`` hears of every batch of positions (:mod:`tri.progress`)."""
    actions = np.empty(len(states), np.int64)
    values = np.empty(len(states), np.float64) if evaluate is not None else None
    moves = np.bitwise_count(states[:, 0] | states[:, 1]).astype(np.int64)  # stones = moves played
    with meter(name, len(states), "positions", progress) as m:
        for start in range(0, len(states), batch):
            part = slice(start, start + batch)
            actions[part] = agent.act(states[part], moves[part]).actions
            if evaluate is not None:
                values[part] = evaluate(states[part])[2]
            m.advance(len(actions[part]))
    legal = (actions >= 0) & (actions < move_scores.shape[1])
    chosen = np.full(len(states), np.nan)
    chosen[legal] = move_scores[np.flatnonzero(legal), actions[legal]]
    illegal = np.isnan(chosen)
    outcome = np.sign(score)
    wrong = illegal | (np.sign(np.nan_to_num(chosen)) < outcome)
    losing = (outcome >= 0) & (illegal | (np.nan_to_num(chosen) < 0))
    row = EvalRow(name, len(states), int(wrong.sum()), int(losing.sum()), int((chosen == score).sum()))
    if values is not None:
        decided = outcome != 0
        nearest = np.where(values > 0.5, 1, np.where(values < -0.5, -1, 0))
        row.value_decided = int(decided.sum())
        row.value_sign_correct = int((np.sign(values[decided]) == outcome[decided]).sum())
        row.value_outcome_correct = int((nearest == outcome).sum())
    return row


def make_player(player, game, params: Params, *, simulations: int | None, seed: int | Sequence[int],
                device: str, batch: int = BATCH):
    """``(agent, evaluate or None, name, simulations or None)`` for a player spec (see
    :mod:`tri.player_specs`) or an agent object (anything with ``act`` and ``name``, e.g. a test
    oracle). ``simulations`` sets the search budget of a bare checkpoint path. ``seed`` (an int
    or a list of ints, as :func:`numpy.random.default_rng` takes) seeds the player's generator;
    ``batch``: the positions or games it is asked about at once (for the search's memory check).
    Moves are never sampled: the arena's ``temperature_moves`` is ignored."""

    if not isinstance(player, str):
        return player, getattr(player, "evaluate", None), getattr(player, "name", type(player).__name__), None
    spec = parse_spec(player, game=game.name)
    if simulations is not None:
        if spec.kind != "mcts":
            raise TriError(f"--simulations applies to a checkpoint played with search "
                           f"(PATH or mcts:PATH:N), not to {player!r}")
        written = player.startswith("mcts:")  # a budget typed in the spec (a champion's card budget is a default)
        if written and spec.simulations != simulations:
            raise TriError(f"player {player!r} already sets {spec.simulations} simulations; "
                           f"--simulations {simulations} disagrees")
        spec = replace(spec, simulations=simulations)
    rng = np.random.default_rng(seed)
    # The player's own move in every position: never sampled (the arena's opening temperature
    # varies games between two players; it is not part of a player's strength).
    arena = params.arena.model_copy(update={"temperature_moves": 0})
    agent = make_agent(spec, game, params.mcts, arena, rng, device, batch=batch)
    sims = (spec.simulations or params.arena.simulations) if spec.kind == "mcts" else None
    return agent, getattr(agent, "evaluate", None), player, sims
