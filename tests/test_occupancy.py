"""The occupancy head (``net.occupancy_steps``, :mod:`tri.occupancy`): its targets are the board k
moves on (the game's last board where it ended sooner), checked against the scalar API replaying
each game one move at a time; an afterstate's target looks k moves on from the board after its
move; a game with a gap in its moves is refused; the head's checkpoints, its initialisation
(the other weights unchanged), the search's outputs (unchanged), and training with it: the
loss, its files, and that the head learns.

Games are random play on the small board."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from tri import layout, train
from tri.afterstates import afterstate_rows
from tri.errors import TriError
from tri.games.kinrow.connect4 import Connect4Game
from tri.inference import InferenceNet
from tri.net import (build_model, initial_checkpoint, load_checkpoint, save_checkpoint,
                     started_checkpoint)
from tri.occupancy import future_occupancy

from tests.pipeline_fixtures import PARAMS, game_of, save_model, synthetic_episodes, with_section, \
    write_synthetic_folder

STEPS = 4
HEAD = with_section(PARAMS, "net", occupancy_steps=STEPS)


@pytest.fixture(scope="module")
def played():
    game = game_of()
    episodes = synthetic_episodes(game, 30, seed=5, max_moves=10)  # 7 of the 30 games cut at 10 moves
    return game, episodes


def boards_by_replay(game, episodes) -> dict[tuple[int, int], np.ndarray]:
    """``{(game, move): occupied cells [rows * cols]}`` for every move of every game and the board
    after its last, stepping each game's recorded moves through the scalar API."""
    p, out = episodes.positions, {}
    for g in np.unique(p.game):
        rows = np.flatnonzero(p.game == g)
        rows = rows[np.argsort(p.move[rows])]
        state = game.scalar(p.state[rows[0]]).copy()
        for i in rows:
            assert state == game.scalar(p.state[i])  # the recorded game is the replayed one
            out[(int(g), int(p.move[i]))] = state.grid.reshape(-1).copy()
            state, _ = game.place(state, game.action_tuple(int(p.action[i])))
        out[(int(g), int(p.move[rows[-1]]) + 1)] = state.grid.reshape(-1).copy()
    return out


def expected(boards, g: int, move: int) -> np.ndarray:
    last = max(m for (gg, m) in boards if gg == g)
    return boards[(g, min(move, last))]


def test_the_targets_are_the_board_k_moves_on(played):
    game, episodes = played
    p = episodes.positions
    boards = boards_by_replay(game, episodes)
    assert any(not g.terminal for g in episodes.games) and any(g.terminal for g in episodes.games)
    got = future_occupancy(game, p.state, p.action, p.game, p.move, STEPS, where="the folder")
    assert got.shape == (len(p), game.config.rows * game.config.cols) and got.dtype == bool
    for i in range(len(p)):
        np.testing.assert_array_equal(got[i], expected(boards, int(p.game[i]), int(p.move[i]) + STEPS))
    # Some targets reach past their game's end, some do not; some boards lose cells to clears.
    ends = {g: max(m for (gg, m) in boards if gg == g) for g in np.unique(p.game).tolist()}
    assert any(int(m) + STEPS >= ends[int(g)] for g, m in zip(p.game, p.move))
    assert any(int(m) + STEPS < ends[int(g)] for g, m in zip(p.game, p.move))
    # Any row order: the same target for each row.
    order = np.random.default_rng(0).permutation(len(p))
    shuffled = future_occupancy(game, p.state[order], p.action[order], p.game[order], p.move[order], STEPS,
                                where="the folder")
    np.testing.assert_array_equal(shuffled, got[order])


def test_an_afterstate_looks_on_from_the_board_after_its_move(played):
    game, episodes = played
    p = episodes.positions
    boards = boards_by_replay(game, episodes)
    after, _, followed = afterstate_rows(game, p.state, p.action, p.game, p.move, p.value_target,
                                         where="the folder", with_moves=True)
    assert len(followed) == len(after) > 0
    # The afterstate's own board is the one after its move.
    np.testing.assert_array_equal(game.occupied(after), game.occupied(game.step(p.state[followed],
                                                                                 p.action[followed]).states))
    got = future_occupancy(game, p.state, p.action, p.game, p.move, STEPS, rows=followed, offset=1,
                           where="the folder")
    for k, i in enumerate(followed):
        np.testing.assert_array_equal(got[k], expected(boards, int(p.game[i]), int(p.move[i]) + 1 + STEPS))


def test_a_gap_in_a_games_moves_is_refused(played):
    game, episodes = played
    p = episodes.positions
    keep = np.ones(len(p), bool)
    keep[np.flatnonzero((p.game == p.game[0]) & (p.move == 2))] = False
    with pytest.raises(TriError, match="shard X: a game's moves are not recorded one after another"):
        future_occupancy(game, p.state[keep], p.action[keep], p.game[keep], p.move[keep], STEPS, where="shard X")


def test_the_head_is_the_triangles_and_adds_to_the_network_only(tmp_path):
    game = game_of()
    plain, head = build_model(game, PARAMS.net), build_model(game, HEAD.net)
    assert plain.occupancy_head is None and head.occupancy_head is not None
    shared = plain.state_dict()
    for name, tensor in head.state_dict().items():  # the other weights draw what they drew before
        if not name.startswith("occupancy_head"):
            torch.testing.assert_close(tensor, shared[name], rtol=0, atol=0)
    x = torch.from_numpy(game.encode(game.initial(np.arange(5))))
    head.eval(), plain.eval()
    policy, value, occupancy = head.forward_all(x)
    assert occupancy.shape == (5, game.config.rows * game.config.cols)
    for a, b in zip(head(x), plain(x)):  # the search's outputs are the model's without the head
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(InferenceNet(head)(x)[1], value)
    # The checkpoint carries the setting (and leaves it out when off: older checkpoints' bytes).
    path, off = tmp_path / "head.pt", tmp_path / "plain.pt"
    save_checkpoint(initial_checkpoint(game, HEAD.net), path)
    save_checkpoint(initial_checkpoint(game, PARAMS.net), off)
    loaded = load_checkpoint(path, game)
    assert loaded.net_params.occupancy_steps == STEPS and loaded.model.occupancy_head is not None
    assert loaded.meta()["net_params"]["occupancy_steps"] == STEPS
    assert "occupancy_steps" not in load_checkpoint(off, game).meta()["net_params"]
    with pytest.raises(TriError, match="the game connect4 has no occupancy target"):
        build_model(Connect4Game(), HEAD.net)


def test_the_window_holds_each_rows_own_target(tmp_path):
    """Positions first, then afterstates: every row of the loaded window with its own target."""
    game = game_of()
    folder = layout.selfplay_dir(tmp_path, 1)
    episodes = write_synthetic_folder(folder, game, seed=2)
    boards = boards_by_replay(game, episodes)
    p = episodes.positions
    want = {p.state[i].tobytes(): expected(boards, int(p.game[i]), int(p.move[i]) + STEPS) for i in range(len(p))}
    after, _, followed = afterstate_rows(game, p.state, p.action, p.game, p.move, p.value_target,
                                         where="the folder", with_moves=True)
    want |= {a.tobytes(): expected(boards, int(p.game[i]), int(p.move[i]) + 1 + STEPS)
             for a, i in zip(after, followed)}
    window, *_, added = train.load_window(game, [folder], afterstates=True, occupancy_steps=STEPS)
    assert added == len(after) > 0 and len(window["occupancy"]) == len(window["state"]) == len(want)
    for state, target in zip(window["state"], window["occupancy"]):
        np.testing.assert_array_equal(target, want[state.tobytes()])
    assert "occupancy" not in train.load_window(game, [folder], afterstates=True)[0]


def test_a_project_from_a_checkpoint_may_add_or_drop_the_head(tmp_path):
    """``tri new --from``: every weight the two networks share is the source's; a head the source
    lacks is the fresh network's, one params.yaml lacks is left out."""
    game = game_of()
    plain, head = tmp_path / "plain.pt", tmp_path / "head.pt"
    source = save_model(plain, seed=11)
    trained_head = save_model(head, HEAD, seed=12)
    added = started_checkpoint(game, HEAD.net, plain)
    fresh = build_model(game, HEAD.net)
    for name, tensor in added.model.state_dict().items():
        want = (fresh if name.startswith("occupancy_head.") else source.model).state_dict()[name]
        torch.testing.assert_close(tensor, want, rtol=0, atol=0)
    assert added.net_params.occupancy_steps == STEPS
    dropped = started_checkpoint(game, PARAMS.net, head)
    assert dropped.model.occupancy_head is None
    for name, tensor in dropped.model.state_dict().items():
        torch.testing.assert_close(tensor, trained_head.model.state_dict()[name], rtol=0, atol=0)
    with pytest.raises(TriError, match="its network differs from params.yaml's net: channels"):
        started_checkpoint(game, with_section(HEAD, "net", channels=4).net, plain)


def read_losses(path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_training_learns_the_occupancy_and_reports_it(tmp_path):
    game = game_of()
    model = tmp_path / "best.pt"
    save_model(model, HEAD)
    folders = [layout.selfplay_dir(tmp_path, g) for g in (1, 2)]
    for g, folder in enumerate(folders):
        write_synthetic_folder(folder, game, seed=g, generation=g)
    params = with_section(with_section(HEAD, "mcts", afterstates=True), "train", max_steps=60,
                          samples_per_position=50.0, occupancy_weight=2.0)
    metrics, losses = tmp_path / "metrics.json", tmp_path / "losses.csv"
    r = train.run(params, model, folders, tmp_path / "c.pt", metrics=metrics, losses=losses)
    rows = read_losses(losses)
    assert list(rows[0]) == ["step", "lr", "loss", "policy_loss", "value_loss", "occupancy_loss"]
    for row in rows:  # the total holds the head's loss, weighted
        total = float(row["policy_loss"]) + float(row["value_loss"]) + 2.0 * float(row["occupancy_loss"])
        assert float(row["loss"]) == pytest.approx(total, abs=2e-5)
    first = np.mean([float(row["occupancy_loss"]) for row in rows[:5]])
    assert r.occupancy_loss < 0.85 * first  # it learns (0.71 to 0.54 when written)
    assert json.loads(metrics.read_text())["occupancy_loss"] == pytest.approx(r.occupancy_loss)
    assert load_checkpoint(tmp_path / "c.pt", game).net_params.occupancy_steps == STEPS
    # A network without the head: no column, no key, whatever train.occupancy_weight says.
    plain = tmp_path / "plain.pt"
    save_model(plain)
    r0 = train.run(with_section(params, "net", occupancy_steps=0), plain, folders, tmp_path / "d.pt",
                   metrics=metrics, losses=losses)
    assert r0.occupancy_loss is None and "occupancy_loss" not in json.loads(metrics.read_text())
    assert "occupancy_loss" not in read_losses(losses)[0]
