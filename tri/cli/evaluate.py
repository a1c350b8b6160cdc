"""``tri eval``: a player against perfect play (Pascal Pons' Connect Four test positions,
minimax on every Tic-Tac-Toe position), or a triangle-puzzle player against a baseline on
evaluation seeds, and how its games end; logged to the project's MLflow store when it has one."""

from __future__ import annotations

from pathlib import Path

import click

from tri import atomic
from tri.cli.common import PARAMS_OPTION, PROGRESS_OPTION, TriGroup, progress_report
from tri.config import MAX_SEED, Runtime, load_params, params_for_game
from tri.evaluate import format_table, format_triangle, run_connect4, run_tictactoe, run_triangle
from tri.evaluate.deaths import format_deaths, run_deaths
from tri.evaluate.loss import format_loss
from tri.evaluate.loss import run as run_loss
from tri.evaluate.triangle import pool
from tri.player_specs import parse_spec
from tri.record.runs import log_evaluation


@click.group("eval", cls=TriGroup)
def eval_group() -> None:
    """Measure a player: against perfect play (connect4, tictactoe), or against a baseline on
    seeds of its own (triangle; pool joins such results on other seeds), or how its triangle games
    end (deaths); or a network's loss on held-out self-play (loss)."""


_SIMULATIONS_OPTION = click.option(
    "--simulations", type=click.IntRange(1), default=None,
    help="Search budget of a checkpoint path (default: arena.simulations); mcts:PATH:N sets its own.")
_SEED_OPTION = click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True,
                            help="Seed of the player's random choices.")
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
@_SEED_OPTION
@_OUT_OPTION
@PROGRESS_OPTION
@PARAMS_OPTION
def eval_connect4(player: str, files: tuple[Path, ...], testsets: Path, limit: int | None,
                  simulations: int | None, seed: int, out: Path | None, progress: bool,
                  params_path: Path | None) -> None:
    """Wrong-move rate of PLAYER on Pascal Pons' Connect Four test positions.

    PLAYER: a checkpoint path (with search), mcts:PATH:N, net:PATH (the network alone), random or
    greedy. FILES: Test_* files (each with its .moves.tsv beside it); default: all in --testsets.
    A move is wrong when it loses a won or drawn position or draws a won one.
    """

    params = params_for_game(params_path, "connect4")  # another game's project: its recipe
    result = run_connect4(params, player, files, testsets=testsets, limit=limit,
                          simulations=simulations, seed=seed, out=out, runtime=Runtime(),
                          progress=progress_report(progress))
    click.echo(format_table(result))
    if out is not None:
        click.echo(f"wrote {out}")
    _track(params, f"eval-connect4 {player}", result, out)


@eval_group.command("tictactoe")
@click.argument("player")
@_SIMULATIONS_OPTION
@_SEED_OPTION
@_OUT_OPTION
@PROGRESS_OPTION
@PARAMS_OPTION
def eval_tictactoe(player: str, simulations: int | None, seed: int, out: Path | None, progress: bool,
                   params_path: Path | None) -> None:
    """PLAYER's move in every reachable Tic-Tac-Toe position (game.tictactoe's m,n,k-game) against
    minimax: the share of non-optimal moves, and whether it ever loses.

    PLAYER: a checkpoint path (with search), mcts:PATH:N, net:PATH, random or greedy.
    """

    params = params_for_game(params_path, "tictactoe")  # another game's project: its recipe
    result = run_tictactoe(params, player, simulations=simulations, seed=seed, out=out, runtime=Runtime(),
                           progress=progress_report(progress))
    click.echo(format_table(result))
    if out is not None:
        click.echo(f"wrote {out}")
    _track(params, f"eval-tictactoe {player}", result, out)


@eval_group.command("triangle")
@click.argument("player")
@click.option("--baseline", default="greedy", show_default=True,
              help="The player PLAYER is compared with, on the same seeds (any player spec), or a "
                   "saved result (FILE.json, from --out; FILE.json:baseline for its baseline): its "
                   "player's scores on those seeds, not played again.")
@click.option("--games", type=click.IntRange(2), default=200, show_default=True,
              help="Paired seeds, both players playing each (at least 2, for an interval).")
@_SIMULATIONS_OPTION
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True,
              help="Seed of the evaluation seeds (never self-play's or the arena's) and of the searches.")
@_OUT_OPTION
@PROGRESS_OPTION
@PARAMS_OPTION
def eval_triangle(player: str, baseline: str, games: int, simulations: int | None, seed: int,
                  out: Path | None, progress: bool, params_path: Path | None) -> None:
    """PLAYER's mean score in the triangle puzzle (params.yaml's game.triangle) against a baseline,
    both playing the same --games seeds: each mean with its 95% interval, the paired difference
    PLAYER - baseline with its interval, and per seed wins, ties and losses.

    PLAYER and --baseline: a checkpoint path (with search), mcts:PATH:N, mcts:PATH:NxK (K trees of
    N simulations per move, each on its own sampled future), net:PATH, random, greedy, champion,
    or a registered model (models:/tri-triangle@champion). The seeds are drawn for evaluation
    alone, never self-play's or the arena's; the games use arena.concurrent and arena.max_moves.
    --simulations sets PLAYER's budget; a baseline checkpoint path searches with
    arena.simulations in arena.determinizations trees (mcts:PATH:N sets its own).

    --baseline FILE.json pairs PLAYER with the player of a saved result (this command's --out) on
    its first --games seeds, FILE.json:baseline with its baseline: the same --seed, and the same
    rules and arena.max_moves. PLAYER may be a saved result too: with both, nothing plays (two
    players measured in different runs, paired in a second).
    """

    params = params_for_game(params_path, "triangle")  # another game's project: its recipe
    result = run_triangle(params, player, baseline=baseline, games=games, seed=seed,
                          simulations=simulations, out=out, runtime=Runtime(), progress=progress_report(progress))
    click.echo(format_triangle(result))
    if out is not None:
        click.echo(f"wrote {out}")
    _track(params, f"eval-triangle {player} vs {baseline}", result, out)


@eval_group.command("pool")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@_OUT_OPTION
def eval_pool(results: tuple[Path, ...], out: Path | None) -> None:
    """Pool saved tri eval triangle results (--out) of the same two players on different
    evaluation seeds into one paired comparison: the table of tri eval triangle over all their
    seeds (two results of 200 seeds give the interval of 400). Nothing plays.
    """

    result = pool(list(results), out=out)
    click.echo(format_triangle(result))
    if out is not None:
        click.echo(f"wrote {out}")


@eval_group.command("deaths")
@click.argument("player")
@click.option("--games", type=click.IntRange(1), default=50, show_default=True,
              help="Games, on the first seeds tri eval triangle plays with the same --seed.")
@_SIMULATIONS_OPTION
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True,
              help="Seed of the evaluation seeds (never self-play's or the arena's) and of the search.")
@click.option("--risky", type=click.FloatRange(0, 1, max_open=True), default=0.05, show_default=True,
              help="A board whose next draw is fatal with a chance above this is risky.")
@click.option("--plans/--no-plans", default=False, show_default=True,
              help="At each risky cycle, try every order and placement of its shapes for the safest end "
                   "(slower: 45 s more for the champion's 50 games, 204 risky cycles).")
@_OUT_OPTION
@PROGRESS_OPTION
@PARAMS_OPTION
def eval_deaths(player: str, games: int, simulations: int | None, seed: int, risky: float, plans: bool,
                out: Path | None, progress: bool, params_path: Path | None) -> None:
    """How PLAYER's triangle games end: deaths by a fatal draw (no order and placement of the
    cycle's shapes fits, from where the cycle began) or by a misplay; at every refill the exact
    chance that the draw is fatal; with --plans, whether a cycle could have ended on a safer board.

    PLAYER: any player spec, as tri eval triangle takes (champion, a checkpoint path,
    mcts:PATH:N, greedy, ...); the games are tri eval triangle's seeds, with arena.concurrent and
    arena.max_moves.
    """

    params = params_for_game(params_path, "triangle")
    result = run_deaths(params, player, games=games, seed=seed, simulations=simulations, risky=risky,
                        plans=plans, out=out, runtime=Runtime(), progress=progress_report(progress))
    click.echo(format_deaths(result))
    if out is not None:
        click.echo(f"wrote {out}")
    _track(params, f"eval-deaths {player}", result, out)


@eval_group.command("loss")
@click.argument("network")
@click.option("--data", "data", multiple=True, required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A self-play folder the networks never trained on (data/selfplay/gen-NNNN of a later "
                   "generation, or another project's). Repeat the option for several.")
@click.option("--baseline", default=None, metavar="CHECKPOINT",
              help="A second network on the same positions: the paired difference NETWORK - baseline, "
                   "with a 95% interval over games.")
@_OUT_OPTION
@PARAMS_OPTION
def eval_loss(network: str, data: tuple[Path, ...], baseline: str | None, out: Path | None,
              params_path: Path | None) -> None:
    """NETWORK's policy and value loss on self-play positions it never trained on, as training
    computes them (the recorded targets, the afterstate rows with mcts.afterstates), and against
    a --baseline network the paired difference: which of two networks learnt the value or the
    policy better, long before games can tell. NETWORK and --baseline: a checkpoint path,
    champion (the game's shipped one) or an MLflow models:/NAME@ALIAS. The game is params.yaml's."""

    params = load_params(params_path)

    def checkpoint(spec: str) -> Path:  # a path, champion[:GAME] or models:/NAME@ALIAS, as players name it
        return parse_spec(f"net:{spec}", game=params.game.name).path

    result = run_loss(params, checkpoint(network), list(data), None if baseline is None else checkpoint(baseline),
                      runtime=Runtime())
    click.echo(format_loss(result))
    if out is not None:
        atomic.write_text(out, result.to_json() + "\n")
        click.echo(f"wrote {out}")


def _track(params, name: str, result, out: Path | None) -> None:
    """Log the evaluation to the project's MLflow store when there is one (tracking on)."""

    run_id = log_evaluation(Path.cwd(), params, name, result.metrics(), artifact=out)
    if run_id is not None:
        click.echo(f"logged to MLflow: run {run_id} in experiment tri-{params.game.name}")
