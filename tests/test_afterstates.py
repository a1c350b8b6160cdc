"""Afterstate training rows (``mcts.afterstates``, :mod:`tri.afterstates`): one per recorded move
that drew, holding the position before the draw and the next position's value target (0 where
the draw ended the game); none past a game cut short; the policy loss skips them; training adds
them to its window and says how many.

Games are random play on the small board, checked against the scalar API (``game.place`` says
whether a placement refilled), an independent reading of the same rules."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tri import layout, train
from tri.afterstates import afterstate_rows
from tri.errors import TriError
from tri.net import build_model

from tests.pipeline_fixtures import PARAMS, game_of, save_model, synthetic_episodes, with_section, \
    write_synthetic_folder


@pytest.fixture(scope="module")
def played():
    game = game_of()
    # Cut at 12 moves: a cut game's last move is a cycle's third, a drawing move with no next.
    episodes = synthetic_episodes(game, 40, seed=3, max_moves=12)
    p = episodes.positions
    targets = (1000 * p.game + p.move).astype(np.float32)  # every position's its own
    return game, episodes, targets


def expected_rows(game, episodes, targets):
    """``{(game, move): (board, target)}`` by the scalar API, one game at a time."""
    p, out, skipped = episodes.positions, {}, []
    cut = {g.index for g in episodes.games if not g.terminal}
    index = {(int(g), int(m)): i for i, (g, m) in enumerate(zip(p.game, p.move))}
    for i in range(len(p)):
        state = game.scalar(p.state[i])
        after, step = game.place(state, game.action_tuple(int(p.action[i])))
        if not step.refilled:
            continue
        nxt = index.get((int(p.game[i]), int(p.move[i]) + 1))
        if nxt is None and not step.game_over:
            assert int(p.game[i]) in cut
            skipped.append(i)
            continue
        out[(int(p.game[i]), int(p.move[i]))] = (after.grid, 0.0 if step.game_over else float(targets[nxt]))
    assert skipped  # the case is covered
    return out


def rows_of(game, episodes, targets, order=None):
    p = episodes.positions
    order = np.arange(len(p)) if order is None else order
    return afterstate_rows(game, p.state[order], p.action[order], p.game[order], p.move[order], targets[order],
                           where="the folder")


def test_one_row_per_drawing_move(played):
    game, episodes, targets = played
    expected = expected_rows(game, episodes, targets)
    states, values = rows_of(game, episodes, targets)
    assert len(values) == len(expected) > 0
    ended = [k for k, (_, t) in expected.items() if t == 0.0]
    assert ended and len(ended) < len(expected)  # draws that ended games, and draws that did not
    assert not all(g.terminal for g in episodes.games)  # and games cut short
    # Rows come in position order: match them to the expected ones by board and target.
    got = sorted((game.scalar(s).grid.tobytes(), float(v)) for s, v in zip(states, values))
    want = sorted((grid.tobytes(), t) for grid, t in expected.values())
    assert got == want
    assert (states[:, game.geometry.num_words + 2:] == 0).all()  # no shapes in hand
    assert not game.terminal(states).any()
    assert not game.legal(states).any()


def test_rows_do_not_depend_on_the_row_order(played):
    game, episodes, targets = played
    states, values = rows_of(game, episodes, targets)
    order = np.random.default_rng(0).permutation(len(episodes.positions))
    shuffled_states, shuffled_values = rows_of(game, episodes, targets, order)
    key = lambda s, v: sorted(zip(map(bytes, s), v.tolist()))  # noqa: E731
    assert key(shuffled_states, shuffled_values) == key(states, values)


def test_a_position_its_move_does_not_lead_to_is_refused(played):
    game, episodes, targets = played
    p = episodes.positions
    state = p.state.copy()
    state[1:, 0] ^= np.uint64(1)  # every board but the first changed
    with pytest.raises(TriError, match="the folder: a recorded position is not the one"):
        afterstate_rows(game, state, p.action, p.game, p.move, targets, where="the folder")


def test_the_policy_loss_skips_afterstate_rows(played):
    """A batch of positions plus afterstates has the policy loss of its positions alone."""
    game, episodes, targets = played
    torch.manual_seed(0)
    net = build_model(game, PARAMS.net)
    p = episodes.positions
    states, values = rows_of(game, episodes, targets)
    batch = {"x": game.encode(p.state[:8]), "policy": p.policy[:8], "legal": p.legal[:8],
             "value_target": np.full(8, 3.0, np.float32)}
    mixed = {"x": np.concatenate([batch["x"], game.encode(states[:8])]),
             "policy": np.concatenate([batch["policy"], np.zeros_like(batch["policy"])]),
             "legal": np.concatenate([batch["legal"], np.zeros_like(batch["legal"])]),
             "value_target": np.concatenate([batch["value_target"], values[:8]])}
    alone = train._losses(net, game, PARAMS.train, batch, "cpu")[1]
    with_after = train._losses(net, game, PARAMS.train, mixed, "cpu")[1]
    torch.testing.assert_close(with_after, alone)


def test_training_adds_them_to_its_window(tmp_path):
    game = game_of()
    model = tmp_path / "best.pt"
    save_model(model)
    folders = [layout.selfplay_dir(tmp_path, g) for g in (1, 2)]
    for g, folder in enumerate(folders):
        write_synthetic_folder(folder, game, seed=g, generation=g)
    params = with_section(with_section(PARAMS, "mcts", afterstates=True), "train", max_steps=3)
    metrics = tmp_path / "metrics.json"
    r = train.run(params, model, folders, tmp_path / "c.pt", metrics=metrics)
    off = train.run(with_section(params, "mcts", afterstates=False), model, folders, tmp_path / "d.pt")
    assert off.afterstate_positions == 0 and r.window_positions == off.window_positions
    episodes = [synthetic_episodes(game, 24, seed=g) for g in (0, 1)]
    assert r.afterstate_positions == sum(
        len(rows_of(game, e, e.positions.value_target)[1]) for e in episodes) > 0
    assert json.loads(metrics.read_text())["afterstate_positions"] == r.afterstate_positions
