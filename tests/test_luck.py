"""``train.luck_samples`` (:mod:`tri.luck`): each refill's luck taken out of the value targets.

The luck of a real draw has mean zero whatever the value function (the other draws come from the
engine's own distribution), and what is left of the draw in a target is the mean over the other
draws, whose spread shrinks with their number; moves that do not draw have none; a target loses
exactly the discounted luck of the moves it sums, as a plain loop computes it; training wires it
into every folder's targets and afterstate rows, reproducibly, and a game without draws is
untouched."""

from __future__ import annotations

import numpy as np
import pytest

from tri import layout, train
from tri.afterstates import afterstate_rows
from tri.episodes import value_targets
from tri.errors import TriError
from tri.luck import draw_luck, luck_remover, without_luck
from tri.net import load_checkpoint
from tri.shards import read_positions

from tests.pipeline_fixtures import PARAMS, game_of, save_model, with_section, write_synthetic_folder

GAMMA = 0.9


def hand_value(game):
    """A value that depends strongly on which shapes are in hand (and how many cells they cover)."""
    w = game.geometry.num_words

    def value_of(states: np.ndarray) -> np.ndarray:
        return (states[:, w + 2:].astype(np.float64) ** 2).sum(axis=1)
    return value_of


def before_a_draw(game, seed: int = 5):
    """A position with one shape in hand and a move that places it (so the step draws)."""
    rng = np.random.default_rng(seed)
    state = game.initial(np.array([seed]))
    w = game.geometry.num_words
    while (state[0, w + 2:] != 0).sum() > 1:
        legal = np.flatnonzero(game.legal(state)[0])
        state = game.step(state, np.array([rng.choice(legal)])).states
    action = np.flatnonzero(game.legal(state)[0])[0]
    assert game.step(state, np.array([action])).chance[0]
    return state, action


def test_luck_has_mean_zero_and_the_mean_over_draws_less_spread():
    """The same move met with 3,000 different real draws (the state's own stream reseeded)."""
    game, n, k = game_of(), 3000, 8
    state, action = before_a_draw(game)
    states = game.reseed(np.repeat(state, n, axis=0), np.arange(n))
    actions = np.full(n, action)
    value_of = hand_value(game)
    luck, value_luck = draw_luck(game, states, actions, value_of, samples=k, discount=GAMMA,
                                 rng=np.random.default_rng(0))
    real = game.step(states, actions)
    v = np.where(real.terminal, 0.0, value_of(real.states))
    worth = real.reward + GAMMA * v
    assert worth.std() > 10  # the draw matters a lot to this value
    assert abs(luck.mean()) < 4 * luck.std() / np.sqrt(n)
    assert abs(value_luck.mean()) < 4 * value_luck.std() / np.sqrt(n)
    left = worth - luck  # the mean over the k other draws
    assert left.std() < worth.std() / np.sqrt(k) * 1.25
    # The two lucks differ by the rewards alone: the other draws' mean reward, the placement's plus
    # the reward for surviving the refill where the draw did not end the game.
    rewards = left - GAMMA * (v - value_luck)
    assert real.reward.min() - 1e-9 <= rewards.min() and rewards.max() <= real.reward.max() + 1e-9


def test_moves_that_do_not_draw_have_no_luck():
    game = game_of()
    state = game.initial(np.array([3]))
    actions = np.flatnonzero(game.legal(state)[0])[:20]
    states = np.repeat(state, actions.size, axis=0)
    assert not game.step(states, actions).chance.any()
    calls = []
    luck, value_luck = draw_luck(game, states, actions, lambda s: calls.append(s) or np.ones(len(s)), samples=4,
                                 discount=GAMMA, rng=np.random.default_rng(0))
    assert not luck.any() and not value_luck.any() and not calls


@pytest.mark.parametrize("terminal", [True, False])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_target_loses_the_discounted_luck_it_sums(terminal, n):
    rng = np.random.default_rng(n + 10 * terminal)
    T = 9
    rewards, values, luck = rng.normal(size=T), rng.normal(size=T), rng.normal(size=T)
    z = value_targets(rewards, values, terminal, GAMMA, False, n)
    got = without_luck(z, luck, terminal, GAMMA, n)
    end = T if terminal else T - 1
    for t in range(T):
        stop = min(t + (n or end), end)
        expected = z[t] - sum(GAMMA ** j * luck[t + j] for j in range(max(stop - t, 0)))
        assert got[t] == pytest.approx(expected, abs=1e-5)
    # Luck-adjusted rewards give the same targets: the luck is where the reward was.
    np.testing.assert_allclose(got, value_targets(rewards - luck, values, terminal, GAMMA, False, n), atol=1e-5)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("luck")
    game = game_of()
    out = [layout.selfplay_dir(root, g) for g in (1, 2)]
    for g, folder in enumerate(out):
        write_synthetic_folder(folder, game, games=12, seed=g, generation=g + 1)
    save_model(root / "m.pt")
    return root, out


def test_training_takes_the_luck_out_of_every_folder(folders, tmp_path):
    """The window's targets and afterstate rows are the folders' own less their luck
    (:func:`luck_free_targets` with the same network and draws); the run is reproducible and
    differs from one without."""
    root, window = folders
    game, params = game_of(), with_section(PARAMS, "train", luck_samples=3, reanalyse=False)
    model = load_checkpoint(root / "m.pt", game).model
    luck = luck_remover(params, game, model, "cpu", generation=1)
    data, *_, added = train.load_window(game, window, afterstates=True, luck=luck)
    plain, *_ = train.load_window(game, window, afterstates=True)
    assert added and not np.array_equal(data["value_target"], plain["value_target"])
    positions, after = [], []
    for k, folder in enumerate(window):
        frame = read_positions(layout.shard_paths(folder), game, ["state", "game", "move", "action", "value_target"])
        states = frame["state"].to_numpy().astype(np.uint64)
        again = luck_remover(params, game, model, "cpu", generation=1)
        targets, value_luck = again(k, folder, frame, states)
        positions.append(targets)
        rows, target, followed = afterstate_rows(game, states, frame["action"].to_numpy(), frame["game"].to_numpy(),
                                                 frame["move"].to_numpy(), targets, where="x", with_moves=True)
        after.append(target - value_luck[followed])
    np.testing.assert_allclose(data["value_target"], np.concatenate(positions + after), rtol=1e-6)
    a = train.run(params, root / "m.pt", window, tmp_path / "a.pt", generation=1)
    b = train.run(params, root / "m.pt", window, tmp_path / "b.pt", generation=1)
    off = train.run(with_section(params, "train", luck_samples=0), root / "m.pt", window, tmp_path / "c.pt",
                    generation=1)
    assert a.model_id == b.model_id != off.model_id


def test_a_game_without_draws_is_untouched(tmp_path):
    from tri.config import GameParams

    params = with_section(PARAMS.model_copy(update={"game": GameParams(name="tictactoe")}), "train", luck_samples=4)
    game = game_of(params)
    assert luck_remover(params, game, None, "cpu", generation=1) is None
    assert luck_remover(with_section(PARAMS, "train", luck_samples=0), game_of(), None, "cpu", 1) is None


def test_a_game_that_cannot_sample_its_draws_is_refused():
    class NoSampling:
        name, num_players, stochastic = "dice", 1, True

    with pytest.raises(TriError, match="cannot sample"):
        luck_remover(with_section(PARAMS, "train", luck_samples=2), NoSampling(), None, "cpu", 1)


def test_a_folder_without_its_games_files_is_refused(folders, tmp_path):
    root, window = folders
    game = game_of()
    broken = tmp_path / "gen-0001"
    broken.mkdir()
    shard = layout.shard_paths(window[0])[0]
    (broken / shard.name).write_bytes(shard.read_bytes())
    frame = read_positions([broken / shard.name], game, ["state", "game", "move", "action", "value_target"])
    luck = luck_remover(with_section(PARAMS, "train", luck_samples=2), game,
                        load_checkpoint(root / "m.pt", game).model, "cpu", 1)
    with pytest.raises(TriError, match="no games files"):
        luck(0, broken, frame, frame["state"].to_numpy().astype(np.uint64))
