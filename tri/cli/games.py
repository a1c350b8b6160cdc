"""Click commands for the two-player games, attached to the ``tri`` group by :mod:`tri.cli`::

    play.add_command(play_connect4, "connect4")
    play.add_command(play_tictactoe, "tictactoe")
    main.add_command(eval_group, "eval")

This module does not import :mod:`tri.cli` at import time (``tri.cli`` imports it), so it defines
its own ``--params`` option. User errors are raised as :class:`~tri.errors.TriError`; the ``tri``
group turns them into ``error: ...`` lines. ``python -m tri.cli.games ...`` runs these commands on
their own, with the same error handling.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

_PARAMS_OPTION = click.option(
    "--params", "params_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="params.yaml to read (default: ./params.yaml if present, else the embedded defaults).")
_OPPONENT_OPTION = click.option(
    "--opponent", default="greedy", show_default=True,
    help="Who you play: random, greedy (wins when it can, else builds its rows and blocks yours), "
         "a checkpoint path (.pt, searched with arena.simulations), mcts:PATH:N or net:PATH.")
_COLOUR_OPTION = click.option("--colour", "--color", "colour", type=click.Choice(["first", "second"]),
                              default="first", show_default=True,
                              help="Your colour: first (X) or second (O).")
_SEED_OPTION = click.option("--seed", type=int, default=0, show_default=True,
                            help="Seed of the opponent's random choices (random player, sampled moves).")


def _play(game_name: str, opponent: str, colour: str, seed: int, params_path: Path | None) -> None:
    import numpy as np

    from tri.config import Runtime, load_params
    from tri.games import make_game
    from tri.terminal.boards import play_board_game
    from tri.players import make_agent, parse_spec

    params = load_params(params_path)
    game = make_game(params.game.model_copy(update={"name": game_name}))
    runtime = Runtime()
    device = "cpu" if runtime.device == "auto" else runtime.device
    agent = make_agent(parse_spec(opponent), game, params.mcts, params.arena, np.random.default_rng(seed),
                       device)
    play_board_game(game, agent, sys.stdin.readline, person_first=colour == "first",
                    interactive=sys.stdin.isatty(), opponent_name=opponent)


@click.command("connect4")
@_OPPONENT_OPTION
@_COLOUR_OPTION
@_SEED_OPTION
@_PARAMS_OPTION
def play_connect4(opponent: str, colour: str, seed: int, params_path: Path | None) -> None:
    """Play Connect Four against a model or a baseline: type a column number (1-7).

    Reads moves line by line from standard input when it is not a terminal, so a game can be
    scripted: `printf '4\\n4\\n' | tri play connect4 --opponent random`.
    """
    _play("connect4", opponent, colour, seed, params_path)


@click.command("tictactoe")
@_OPPONENT_OPTION
@_COLOUR_OPTION
@_SEED_OPTION
@_PARAMS_OPTION
def play_tictactoe(opponent: str, colour: str, seed: int, params_path: Path | None) -> None:
    """Play Tic-Tac-Toe (game.tictactoe's m,n,k-game) against a model or a baseline: type a
    cell number (shown in the empty cells) or `row col`."""
    _play("tictactoe", opponent, colour, seed, params_path)


@click.group("eval")
def eval_group() -> None:
    """Measure a player against perfect play."""


_SIMULATIONS_OPTION = click.option(
    "--simulations", type=click.IntRange(1), default=None,
    help="Search budget of a checkpoint path (default: arena.simulations); mcts:PATH:N sets its own.")
_OUT_OPTION = click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
                           help="Write the result as JSON.")


@eval_group.command("connect4")
@click.argument("player")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--testsets", type=click.Path(file_okay=False, path_type=Path),
              default=Path("../shared/connect4-testsets"), show_default=True,
              help="Folder of Pons' Test_* files, used when no FILES are given.")
@click.option("--limit", type=click.IntRange(1), default=None,
              help="Only the first N positions of each file.")
@_SIMULATIONS_OPTION
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the player's random choices.")
@_OUT_OPTION
@_PARAMS_OPTION
def eval_connect4(player: str, files: tuple[Path, ...], testsets: Path, limit: int | None,
                  simulations: int | None, seed: int, out: Path | None, params_path: Path | None) -> None:
    """Wrong-move rate of PLAYER on Pascal Pons' Connect Four test positions.

    PLAYER: a checkpoint path (with search), mcts:PATH:N, net:PATH (the network alone), random or
    greedy. FILES: Test_* files (each with its .moves.tsv beside it); default: all in --testsets.
    A move is wrong when it loses a won or drawn position or draws a won one.
    """
    from tri.config import Runtime, load_params
    from tri.evaluate import format_table, run_connect4

    params = load_params(params_path)
    result = run_connect4(params, player, files, testsets=testsets, limit=limit,
                          simulations=simulations, seed=seed, out=out, runtime=Runtime())
    click.echo(format_table(result))
    if out is not None:
        click.echo(f"wrote {out}")
    _track(params, f"eval-connect4 {player}", result, out)


@eval_group.command("tictactoe")
@click.argument("player")
@_SIMULATIONS_OPTION
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the player's random choices.")
@_OUT_OPTION
@_PARAMS_OPTION
def eval_tictactoe(player: str, simulations: int | None, seed: int, out: Path | None,
                   params_path: Path | None) -> None:
    """PLAYER's move in every reachable Tic-Tac-Toe position (game.tictactoe's m,n,k-game) against
    minimax: the share of non-optimal moves, and whether it ever loses.

    PLAYER: a checkpoint path (with search), mcts:PATH:N, net:PATH, random or greedy.
    """
    from tri.config import Runtime, load_params
    from tri.evaluate import format_table, run_tictactoe

    params = load_params(params_path)
    result = run_tictactoe(params, player, simulations=simulations, seed=seed, out=out, runtime=Runtime())
    click.echo(format_table(result))
    if out is not None:
        click.echo(f"wrote {out}")
    _track(params, f"eval-tictactoe {player}", result, out)


def _track(params, name: str, result, out: Path | None) -> None:
    """Log the evaluation to the project's MLflow store when there is one (tracking on)."""
    from tri.record.tracking import log_evaluation

    run_id = log_evaluation(Path.cwd(), params, name, result.metrics(), artifact=out)
    if run_id is not None:
        click.echo(f"logged to MLflow: run {run_id} in experiment tri-{params.game.name}")


def _standalone() -> click.Group:
    """``tri``'s error handling around these commands alone (``python -m tri.cli.games``)."""
    from tri.cli import _Group

    @click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
    def games() -> None:
        """tri's two-player commands."""

    @games.group(cls=_Group)
    def play() -> None:
        """Play a game yourself in the terminal."""

    play.add_command(play_connect4, "connect4")
    play.add_command(play_tictactoe, "tictactoe")
    games.add_command(eval_group, "eval")
    return games


__all__ = ["play_connect4", "play_tictactoe", "eval_group"]

if __name__ == "__main__":
    _standalone()()
