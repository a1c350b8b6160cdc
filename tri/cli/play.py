"""``tri play GAME``: play any registered game yourself in the terminal, one command per entry of
:data:`tri.games.REGISTRY` (single-player games: a seed; two-player games: an opponent and a
colour). Moves are read line by line from standard input, so a game can be scripted:
``printf '4\\n4\\n' | tri play connect4 --opponent random``."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import click
import numpy as np

from tri.champions import available
from tri.cli.common import CONTEXT, PARAMS_OPTION, TriGroup
from tri.config import Runtime, params_for_game
from tri.device import resolve_device
from tri.games import REGISTRY, GameEntry, make_game
from tri.player_specs import parse_spec
from tri.players import make_agent
from tri.terminal import play as play_in_terminal

_OPPONENT = click.option(
    "--opponent", default=None,
    help="Who you play: champion (the trained agent tri ships for this game; the default, or greedy for a "
         "game with none yet), random, greedy (wins when it can, else builds its rows and blocks yours), a "
         "checkpoint path (.pt, searched with arena.simulations), mcts:PATH:N, net:PATH or models:/NAME@ALIAS.")
_COLOUR = click.option("--colour", "--color", "colour", type=click.Choice(["first", "second"]),
                       default="first", show_default=True, help="Your colour: first (X) or second (O).")


def _single_player(e: GameEntry) -> click.Command:
    @click.command(e.name, context_settings=CONTEXT)
    @click.option("--seed", type=int, default=None, help="Seed of the game's chance (default: random).")
    @click.option("--watch", is_flag=True, help="Watch --player play the game instead of playing it yourself.")
    @click.option("--player", default="champion", show_default=True,
                  help="Who plays when you --watch: champion, greedy, random, a checkpoint path, mcts:PATH:N, "
                       "net:PATH or models:/NAME@ALIAS.")
    @click.option("--delay", type=click.FloatRange(0), default=0.6, show_default=True,
                  help="Seconds between moves when you --watch in a terminal.")
    @PARAMS_OPTION
    def command(seed: int | None, watch: bool, player: str, delay: float, params_path: Path | None) -> None:
        params = params_for_game(params_path, e.name)  # another game's project: this game's recipe
        game = make_game(params.game)
        seed = random.SystemRandom().randrange(2**31) if seed is None else seed
        agent = None
        if watch:
            agent = make_agent(parse_spec(player, game=e.name), game, params.mcts, params.arena,
                               np.random.default_rng(seed), resolve_device(Runtime().device))
        play_in_terminal(game, sys.stdin.readline, interactive=sys.stdin.isatty(), seed=seed, watch=agent,
                         delay=delay)

    command.help = (f"Play {e.title}: type moves in the game's notation (? in the game shows it), or watch "
                    f"the shipped champion play: tri play {e.name} --watch.\n\n"
                    f"Reads moves line by line from standard input when it is not a terminal, so a game can "
                    f"be scripted: `printf '0 3 4\\n' | tri play {e.name} --seed 1`.")
    return command


def _two_player(e: GameEntry) -> click.Command:
    @click.command(e.name, context_settings=CONTEXT)
    @_OPPONENT
    @_COLOUR
    @click.option("--seed", type=int, default=0, show_default=True,
                  help="Seed of the opponent's random choices (random player, sampled moves).")
    @PARAMS_OPTION
    def command(opponent: str | None, colour: str, seed: int, params_path: Path | None) -> None:
        if opponent is None:
            opponent = "champion" if e.name in available() else "greedy"
        params = params_for_game(params_path, e.name)  # another game's project: this game's recipe
        game = make_game(params.game)
        agent = make_agent(parse_spec(opponent, game=e.name), game, params.mcts, params.arena,
                           np.random.default_rng(seed), resolve_device(Runtime().device))
        play_in_terminal(game, sys.stdin.readline, interactive=sys.stdin.isatty(), agent=agent,
                         person_seat=0 if colour == "first" else 1, opponent_name=opponent)

    command.help = (f"Play {e.title} against the shipped champion, a model or a baseline: type moves in the "
                    f"game's notation "
                    f"(? in the game shows it).\n\nReads moves line by line from standard input when it "
                    f"is not a terminal, so a game can be scripted.")
    return command


class _Games(TriGroup):
    """One subcommand per registered game."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(REGISTRY)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        e = REGISTRY.get(name)
        if e is None:
            return None
        num_players = e.game.num_players
        return _single_player(e) if num_players == 1 else _two_player(e)


@click.group("play", cls=_Games, context_settings=CONTEXT)
def play() -> None:
    """Play a game yourself in the terminal."""
