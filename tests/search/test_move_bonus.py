"""``mcts.move_bonus``: a single-player search, its cycle planning and its value targets add the
bonus to every move's reward, exactly as if the game paid it (the score never does); a
two-player search ignores it (``tests/search/test_value_scale.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from tests.search.fakes import hash_evaluator
from tests.search.test_plan import THREE, evaluator, positions
from tri.config import MctsParams
from tri.episodes import value_targets
from tri.games.base import Transition
from tri.games.triangle.game import TriangleGame
from tri.plan import plan_cycle
from tri.reanalyse import afterstate_bootstrapped
from tri.search import search

BONUS = 0.04


class Paying:
    """``game`` whose every step pays ``bonus`` more: what the setting must be equivalent to."""

    def __init__(self, game, bonus: float):
        self._game, self._bonus = game, bonus

    def __getattr__(self, name):
        return getattr(self._game, name)

    def step(self, *args) -> Transition:
        t = self._game.step(*args)
        return Transition(t.states, t.reward + self._bonus, t.terminal, t.stats, t.chance)


@pytest.mark.parametrize("gumbel", [True, False])
@pytest.mark.parametrize("afterstates", [True, False])
def test_the_search_plays_as_if_every_move_paid_the_bonus(game, roots, gumbel, afterstates):
    # Values of the size of one placement's reward, so that the bonus (paid once per level of
    # the tree) reorders moves.
    evaluate = hash_evaluator(game, (0.0, 0.05), key=game.encode)
    base = MctsParams(simulations=40, afterstates=afterstates, gumbel=gumbel, value_scale=1.15)
    run = lambda g, params: search(g, evaluate, roots, params, np.random.default_rng(5), noise=False)  # noqa: E731
    with_bonus = run(game, base.model_copy(update={"move_bonus": BONUS}))
    as_if = run(Paying(game, BONUS), base)
    plain = run(game, base)
    np.testing.assert_array_equal(with_bonus.visits, as_if.visits)
    np.testing.assert_array_equal(with_bonus.policy, as_if.policy)
    np.testing.assert_array_equal(with_bonus.value, as_if.value)  # the root value in the same terms
    if gumbel:
        np.testing.assert_array_equal(with_bonus.action, as_if.action)
    # The bonus acts here (the test can fail): on the root's estimate, and on PUCT's visits where
    # paths run past the refill (some end the game there).
    assert not np.array_equal(plain.value, with_bonus.value)
    if not (afterstates or gumbel):
        assert not np.array_equal(plain.visits, with_bonus.visits)


def test_cycle_planning_values_every_move_with_the_bonus():
    game = TriangleGame(THREE)
    states = positions(game, 2, 4)
    with_bonus = plan_cycle(game, evaluator(game), states, discount=0.9, scale=1.3, limit=200, bonus=0.5)
    as_if = plan_cycle(Paying(game, 0.5), evaluator(game), states, discount=0.9, scale=1.3, limit=200)
    plain = plan_cycle(game, evaluator(game), states, discount=0.9, scale=1.3, limit=200)
    assert with_bonus.planned.sum() >= 10
    np.testing.assert_array_equal(with_bonus.planned, as_if.planned)
    np.testing.assert_allclose(with_bonus.q, as_if.q, rtol=1e-12)
    assert not np.allclose(np.nan_to_num(plain.q, neginf=0), np.nan_to_num(with_bonus.q, neginf=0))


@pytest.mark.parametrize("terminal", [True, False])
@pytest.mark.parametrize("td_steps", [0, 1, 3])
def test_value_targets_add_it_to_every_move(terminal, td_steps):
    rng = np.random.default_rng(td_steps)
    rewards, values = rng.uniform(0, 2, 9), rng.uniform(0, 30, 9)
    got = value_targets(rewards, values, terminal, 0.8, False, td_steps, bonus=1.5)
    np.testing.assert_allclose(got, value_targets(rewards + 1.5, values, terminal, 0.8, False, td_steps), rtol=1e-6)
    # By hand: the first target of a finished game with full returns sums every move's bonus.
    if terminal and td_steps == 0:
        assert got[0] == pytest.approx(sum(0.8 ** k * (r + 1.5) for k, r in enumerate(rewards)), rel=1e-6)
    drew = rng.random(9) < 0.4
    after = rng.uniform(0, 30, 9)
    np.testing.assert_allclose(afterstate_bootstrapped(rewards, drew, after, values, terminal, 0.8, td_steps, 1.5),
                               afterstate_bootstrapped(rewards + 1.5, drew, after, values, terminal, 0.8, td_steps),
                               rtol=1e-6)
    # Two-player targets are outcomes: no bonus.
    np.testing.assert_array_equal(value_targets(rewards, values, terminal, 0.8, True, td_steps, bonus=1.5),
                                  value_targets(rewards, values, terminal, 0.8, True, td_steps))


@pytest.mark.parametrize("bad", [-0.1, 101])
def test_a_bonus_out_of_range_is_refused(bad):
    with pytest.raises(ValidationError, match="move_bonus"):
        MctsParams(move_bonus=bad)


def test_a_shard_s_key_names_a_bonus_that_acts():
    """0 is left out of self-play's shard keys, so shards written before the setting keep theirs
    (``tests/test_behaviour.py``'s recorded hashes)."""
    from tri.config import Params
    from tri.selfplay import ShardTask, _task_key

    def key(**mcts):
        return _task_key(ShardTask(Params(mcts=MctsParams(**mcts)), "m.pt", "out", 1, 0, 0, (1, 2)), "model-id")

    assert key(move_bonus=2.0) != key()
