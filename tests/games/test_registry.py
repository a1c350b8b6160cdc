"""Every registered game has every part the rest of tri uses: both protocols, a rules section in
the params schema and in the shipped params.yaml, a checkpoint round trip, and a `tri play`
command. A new game that lacks one fails here, by name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from tri.cli import main
from tri.config import GameParams, Params, load_params
from tri.errors import TriError
from tri.games import GAMES, REGISTRY, Game, PlayableGame, entry, game_from_meta, make_game
from tri.games.base import Game as BaseGame

REPO = Path(__file__).resolve().parents[2]


def test_the_registry_lists_the_games():
    assert GAMES == tuple(REGISTRY) and {"triangle", "connect4", "tictactoe"} <= set(GAMES)
    assert Game is BaseGame


@pytest.mark.parametrize("name", GAMES)
def test_a_registered_game_implements_both_protocols(name):
    e = entry(name)
    game = e.game(e.config())
    assert isinstance(game, Game), f"{name}: missing a member of tri.games.base.Game"
    assert isinstance(game, PlayableGame), f"{name}: missing a member of tri.games.base.PlayableGame"
    missing = [m for m in ("initial", "legal", "step", "terminal", "encode", "reseed", "symmetries", "line_fill",
                           "parse_move", "action_name", "move_help", "to_move", "board", "render")
               if not callable(getattr(game, m, None))]
    assert not missing, f"{name}: {missing}"
    assert game.name == name and game.num_players in (1, 2) and game.config == e.config()
    assert game.move_limit is None or game.move_limit > 0


@pytest.mark.parametrize("name", GAMES)
def test_a_registered_game_plays_through_the_protocol(name):
    game = make_game(GameParams(name=name))
    states = game.initial(np.arange(3, dtype=np.int64))
    assert states.shape == (3, game.state_size) and states.dtype == np.uint64
    legal = game.legal(states)
    assert legal.shape == (3, game.num_actions) and legal.any(axis=1).all()
    assert game.encode(states).shape == (3, *game.obs_shape)
    t = game.step(states, np.argmax(legal, axis=1))
    assert t.states.shape == states.shape and t.reward.shape == (3,) and t.terminal.shape == (3,)
    assert game.line_fill(t.states).shape == (3,)
    state = states[0]
    assert game.to_move(state) == 0
    assert game.board(state).ndim == 2 and isinstance(game.render(state), str) and game.move_help(state)


@pytest.mark.parametrize("name", GAMES)
def test_a_registered_game_has_its_params_section(name):
    assert name in GameParams.model_fields, f"GameParams has no section {name}"
    shipped = yaml.safe_load((REPO / "params.yaml").read_text())
    assert name in shipped["game"], f"params.yaml has no game.{name} section"
    params = load_params(REPO / "params.yaml")
    assert getattr(params.game, name) == entry(name).config(**shipped["game"][name])
    assert Params(game=GameParams(name=name)).game.name == name


@pytest.mark.parametrize("name", GAMES)
def test_a_registered_game_survives_a_checkpoint(name):
    game = make_game(GameParams(name=name))
    again = game_from_meta(name, game.config.model_dump(mode="json"))
    assert type(again) is type(game) and again.config == game.config


@pytest.mark.parametrize("name", GAMES)
def test_a_registered_game_has_a_play_command(name):
    result = CliRunner().invoke(main, ["play", name, "--help"])
    assert result.exit_code == 0, result.output
    assert entry(name).title.split(" (")[0] in result.output.replace("\n", " ")


def test_an_unknown_game_is_one_line():
    with pytest.raises(TriError, match=r"unknown game 'chess' \(tri knows: triangle, connect4, tictactoe"):
        entry("chess")
    with pytest.raises(TriError, match="unknown game"):
        game_from_meta("chess", {})
    proc = subprocess.run([sys.executable, "-m", "tri.cli", "play", "chess"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "chess" in proc.stderr
