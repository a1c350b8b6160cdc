"""Every registered game is playable by people (:class:`tri.games.base.PlayableGame`): a move
read back from its own name is the same action, anything else (unreadable, empty, a 100,000-digit
number, off the board, a finished game) is one short line, and the board is ``[H, W] int8`` with
the protocol's values. A new game is checked here as soon as it is registered."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tri.games import GAMES, game_from_meta
from tri.games.base import PlayableGame

HUGE = "1" * 100_000  # past Python's 4300-digit limit for int()


def positions(game, seeds=range(4), max_moves: int = 12) -> list[np.ndarray]:
    """Non-terminal states reached by random legal play: the start and a few later positions."""
    rng = np.random.default_rng(0)
    out = []
    for seed in seeds:
        state = game.initial(np.array([seed], dtype=np.int64))
        for _ in range(int(rng.integers(max_moves + 1))):
            legal = np.flatnonzero(game.legal(state)[0])
            t = game.step(state, legal[rng.integers(len(legal))][None])
            if t.terminal[0]:
                break
            state = t.states
        out.append(state[0])
    return out


def finished(game, seed: int = 0) -> np.ndarray:
    """A state the rules ended, reached by random legal play."""
    rng = np.random.default_rng(seed)
    state = game.initial(np.array([seed], dtype=np.int64))
    while not game.terminal(state)[0]:
        legal = np.flatnonzero(game.legal(state)[0])
        state = game.step(state, legal[rng.integers(len(legal))][None]).states
    return state[0]


def refusal(game, text: str, state: np.ndarray) -> str:
    with pytest.raises(ValueError) as info:
        game.parse_move(text, state)
    message = str(info.value)
    assert message and "\n" not in message and len(message) < 200, (text[:40], message[:300])
    return message


@pytest.fixture(scope="module", params=GAMES)
def game(request):
    return game_from_meta(request.param, {})


def test_the_game_is_playable(game):
    assert isinstance(game, PlayableGame)
    state = game.initial(np.array([0], dtype=np.int64))[0]
    assert game.to_move(state) == 0
    help_line = game.move_help(state)
    assert help_line and "\n" not in help_line
    assert isinstance(game.render(state), str) and game.render(state).strip()


def test_every_legal_move_reads_back_from_its_name(game):
    for state in positions(game):
        legal = np.flatnonzero(game.legal(state[None])[0])
        assert len(legal)
        names = [game.action_name(int(a)) for a in legal]
        assert len(set(names)) == len(names), "two actions share a name"
        for a, name in zip(legal, names):
            assert game.parse_move(name, state) == a, name
            assert game.parse_move(f"  {name}  ", state) == a, name


def test_anything_else_is_one_short_line(game):
    for state in positions(game, seeds=range(2)):
        name = game.action_name(int(np.flatnonzero(game.legal(state[None])[0])[0]))
        for text in (HUGE, f"-{HUGE}", f"{HUGE} {HUGE} {HUGE}", f"{name} {HUGE}", "", "   ", "foo bar?!",
                     "1_0", "½", "\x00", name + " " + name):
            refusal(game, text, state)
        off_board = re.sub(r"\d+", "99999", name)  # every coordinate far off any board
        assert off_board != name
        refusal(game, off_board, state)
    over = finished(game)
    refusal(game, game.action_name(0), over)


def test_the_board(game):
    allowed = {0, 1} if game.num_players == 1 else {0, 1, 2}
    shapes = set()
    for state in positions(game) + [finished(game)]:
        board = game.board(state)
        assert isinstance(board, np.ndarray) and board.dtype == np.int8 and board.ndim == 2
        assert set(np.unique(board).tolist()) <= allowed
        shapes.add(board.shape)
        assert game.to_move(state) in range(game.num_players)
    assert len(shapes) == 1, shapes


def test_a_move_changes_the_board_as_it_says(game):
    """After a legal move the board differs, and a two-player game passes the turn."""
    state = positions(game, seeds=[1])[0]
    legal = np.flatnonzero(game.legal(state[None])[0])
    after = game.step(state[None], legal[:1]).states[0]
    assert not np.array_equal(game.board(state), game.board(after)) or game.num_players == 1
    if game.num_players == 2 and not game.terminal(after[None])[0]:
        assert game.to_move(after) == 1 - game.to_move(state)
