"""``tri eval``: a player against perfect play (Pascal Pons' Connect Four test positions,
minimax on every Tic-Tac-Toe position), logged to the project's MLflow store when it has one."""

from __future__ import annotations

from pathlib import Path

import click

from tri.cli.common import PARAMS_OPTION, TriGroup
from tri.config import Runtime, load_params
from tri.evaluate import format_table, run_connect4, run_tictactoe
from tri.record.runs import log_evaluation


@click.group("eval", cls=TriGroup)
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
@PARAMS_OPTION
def eval_connect4(player: str, files: tuple[Path, ...], testsets: Path, limit: int | None,
                  simulations: int | None, seed: int, out: Path | None, params_path: Path | None) -> None:
    """Wrong-move rate of PLAYER on Pascal Pons' Connect Four test positions.

    PLAYER: a checkpoint path (with search), mcts:PATH:N, net:PATH (the network alone), random or
    greedy. FILES: Test_* files (each with its .moves.tsv beside it); default: all in --testsets.
    A move is wrong when it loses a won or drawn position or draws a won one.
    """

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
@PARAMS_OPTION
def eval_tictactoe(player: str, simulations: int | None, seed: int, out: Path | None,
                   params_path: Path | None) -> None:
    """PLAYER's move in every reachable Tic-Tac-Toe position (game.tictactoe's m,n,k-game) against
    minimax: the share of non-optimal moves, and whether it ever loses.

    PLAYER: a checkpoint path (with search), mcts:PATH:N, net:PATH, random or greedy.
    """

    params = load_params(params_path)
    result = run_tictactoe(params, player, simulations=simulations, seed=seed, out=out, runtime=Runtime())
    click.echo(format_table(result))
    if out is not None:
        click.echo(f"wrote {out}")
    _track(params, f"eval-tictactoe {player}", result, out)


def _track(params, name: str, result, out: Path | None) -> None:
    """Log the evaluation to the project's MLflow store when there is one (tracking on)."""

    run_id = log_evaluation(Path.cwd(), params, name, result.metrics(), artifact=out)
    if run_id is not None:
        click.echo(f"logged to MLflow: run {run_id} in experiment tri-{params.game.name}")
