"""``mcts.value_scale``: a single-player search weighs the network's values ``scale`` times against
the rewards, exactly as if the network had said ``scale * V`` (the root value it reports
included); a two-player search ignores it."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from tests.search.fakes import TicTacToe, hash_evaluator
from tri.config import MctsParams
from tri.search import search

SCALE = 1.6


def scaled(evaluate, scale):
    def inner(states):
        priors, legal, values = evaluate(states)
        return priors, legal, (values * np.float32(scale)).astype(np.float32)
    return inner


@pytest.mark.parametrize("gumbel", [True, False])
def test_the_search_plays_as_if_the_network_said_scale_times_its_value(game, roots, gumbel):
    # Values of the size of one placement's reward (0.015-0.055), so that scaling them reorders moves.
    evaluate = hash_evaluator(game, (0.0, 0.05), key=game.encode)
    base = MctsParams(simulations=40, afterstates=True, gumbel=gumbel)
    run = lambda ev, params: search(game, ev, roots, params, np.random.default_rng(5), noise=False)  # noqa: E731
    with_scale = run(evaluate, base.model_copy(update={"value_scale": SCALE}))
    as_if = run(scaled(evaluate, SCALE), base)
    plain = run(evaluate, base)
    np.testing.assert_array_equal(with_scale.visits, as_if.visits)
    np.testing.assert_array_equal(with_scale.policy, as_if.policy)
    if gumbel:
        np.testing.assert_array_equal(with_scale.action, as_if.action)
    # The reported root value is the search's estimate in the same terms.
    np.testing.assert_array_equal(with_scale.value, as_if.value)
    # The scale matters here (the test could fail): rewards against values decide otherwise.
    assert not np.array_equal(plain.policy, with_scale.policy)


@pytest.mark.parametrize("setting", [{"value_scale": SCALE}, {"move_bonus": 3.0}], ids=["value_scale", "move_bonus"])
def test_a_two_player_search_ignores_it(setting):
    """Neither the value scale nor the move bonus (``test_move_bonus.py``) acts on two players."""
    game = TicTacToe()
    roots = game.initial(np.zeros(3))
    evaluate = hash_evaluator(game, (-1.0, 1.0))
    base = MctsParams(simulations=30, gumbel=False)
    a = search(game, evaluate, roots, base, np.random.default_rng(1), noise=False)
    b = search(game, evaluate, roots, base.model_copy(update=setting), np.random.default_rng(1), noise=False)
    np.testing.assert_array_equal(a.visits, b.visits)
    np.testing.assert_array_equal(a.value, b.value)


@pytest.mark.parametrize("bad", [0, -1.0, 11])
def test_a_scale_out_of_range_is_refused(bad):
    with pytest.raises(ValidationError, match="value_scale"):
        MctsParams(value_scale=bad)


def test_a_shard_s_key_names_a_scale_that_acts():
    """Self-play reuses a kept shard only if its key matches, so a scale other than 1 is part of
    it (1 is left out, so that shards written before the setting existed keep their keys:
    ``tests/test_behaviour.py``'s recorded hashes)."""
    from tri.config import Params
    from tri.selfplay import ShardTask, _task_key

    def key(**mcts):
        params = Params(mcts=MctsParams(**mcts))
        return _task_key(ShardTask(params, "m.pt", "out", 1, 0, 0, (1, 2)), "model-id")

    assert key(value_scale=1.15) != key()
