"""``tri bench``: speed, every figure a median over repeats, beside its anchor in the same run."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import click

from tri.bench import engine, move, orchestration, search
from tri.cli.common import PARAMS_OPTION, TriGroup
from tri.cli.players import GAME_OPTION, params_for_players
from tri.config import load_params
from tri.errors import TriError


@click.group(cls=TriGroup)
def bench() -> None:
    """Measure speed; every figure is a median over repeats."""


@bench.command("engine")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--repeats", type=click.IntRange(1), default=5, show_default=True,
              help="Timed repeats per figure (the median is reported).")
@click.option("--seconds", type=click.FloatRange(0.01), default=0.5, show_default=True,
              help="Length of one timed repeat.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of games and moves.")
@PARAMS_OPTION
def bench_engine(as_json: bool, repeats: int, seconds: float, seed: int, params_path: Path | None) -> None:
    """Random-play speed of the triangle engine (scalar and batched), legal-mask and copy costs,
    beside trianglengin 2.0.7 when it is importable."""

    params = load_params(params_path)
    report = engine.run(params.game.triangle, repeats=repeats, seconds=seconds, seed=seed)
    engine.print_report(report, as_json=as_json)


@bench.command("search")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--repeats", type=click.IntRange(1), default=5, show_default=True)
@click.option("--moves", type=click.IntRange(1), default=8, show_default=True,
              help="Self-play moves per game per repeat.")
@click.option("--leaves", type=click.IntRange(1), default=64, show_default=True,
              help="Leaves per network call for the single-game 2,048-simulation move.")
@click.option("--move-threads", type=click.IntRange(1), default=None,
              help="Torch threads for the single-game move, as a player uses the machine (default: its "
                   "cores); self-play is measured on one, as a self-play worker runs.")
@click.option("--trees", type=click.IntRange(1, 1024), default=None,
              help="Trees per move of the player's move (default: arena.determinizations), e.g. 8 as the "
                   "triangle champion plays.")
@click.option("--seed", type=int, default=0, show_default=True)
@PARAMS_OPTION
def bench_search(as_json: bool, repeats: int, moves: int, leaves: int, move_threads: int | None,
                 trees: int | None, seed: int, params_path: Path | None) -> None:
    """Self-play simulations/s against network-only evaluations/s at the same batch, and one
    2,048-simulation move, and a player's move (arena.simulations in --trees trees), for the
    params' root selection and the other (Gumbel and PUCT)."""

    search.print_report(search.run(load_params(params_path), repeats=repeats, moves=moves, leaves=leaves,
                                   move_threads=move_threads or os.cpu_count() or 1, trees=trees, seed=seed),
                        as_json=as_json)


@bench.command("move")
@click.argument("player", default="champion")
@click.option("--moves", type=click.IntRange(1), default=40, show_default=True, help="Moves timed (the median is reported).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first game (then seed + 1, ...).")
@click.option("--threads", type=click.IntRange(1), default=None,
              help="Torch threads, as a player uses the machine (default: its cores).")
@click.option("--compare", is_flag=True,
              help="Time the same moves with the network on torch first, then as the player runs it "
                   "(ONNX Runtime on a CPU in float32), and print the ratios.")
@GAME_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@PARAMS_OPTION
def bench_move(player: str, moves: int, seed: int, threads: int | None, compare: bool, game_name: str | None,
               as_json: bool, params_path: Path | None) -> None:
    """How long PLAYER takes to choose a move, built as tri play builds it (champion: its card's
    search): the median, 90th percentile and slowest of --moves moves, beside issue 22's 100 ms.

    PLAYER: champion (default), champion:GAME, a checkpoint path, mcts:PATH:N, mcts:PATH:NxK,
    net:PATH, greedy, random, uct:N.
    """

    params = params_for_players(params_path, game_name, [player])
    baseline = None
    if compare:
        baseline = move.run(params, player, moves=moves, seed=seed, threads=threads, onnx=False)
    result = move.run(params, player, moves=moves, seed=seed, threads=threads)
    if as_json:
        both = {"torch": asdict(baseline), "player": asdict(result)} if baseline else None
        click.echo(json.dumps(both, indent=2) if both else result.to_json())
    else:
        click.echo(move.format_comparison(baseline, result) if baseline else move.format_report(result))


@bench.command("orchestration")
@click.option("--generations", type=click.IntRange(1), default=2, show_default=True,
              help="Generations each way (plain stages, then the flow).")
@click.option("--scratch", type=click.Path(file_okay=False, path_type=Path), default=Path(".bench/orchestration"),
              show_default=True, help="Scratch folder for the two projects (emptied first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@PARAMS_OPTION
def bench_orchestration(generations: int, scratch: Path, as_json: bool, params_path: Path | None) -> None:
    """The time Prefect + DVC + git + MLflow add to a generation, against the stages alone."""

    repo = Path(__file__).resolve().parents[2]  # tri/cli/bench.py -> the checkout
    if not (repo / "dvc.yaml").is_file():
        raise TriError(f"tri bench orchestration runs from a tri checkout (no dvc.yaml in {repo})")
    orchestration.print_report(orchestration.run(load_params(params_path), scratch, repo, generations=generations), as_json=as_json)
