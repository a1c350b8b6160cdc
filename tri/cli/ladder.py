"""``tri ladder``: rank any set of players (:mod:`tri.ladder`), print the table, and log it to the
project's MLflow store when it has one."""

from __future__ import annotations

from pathlib import Path

import click

from tri import ladder as ladders
from tri.champions import spec_game
from tri.cli.common import PARAMS_OPTION
from tri.cli.players import GAME_OPTION, params_for_players
from tri.config import Runtime
from tri.record.runs import log_evaluation


@click.command("ladder")
@click.argument("players", nargs=-1)
@click.option("--run", "runs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="A tri project: adds every generation checkpoint it has (models/gen-0000.pt, "
                   "models/candidates/gen-NNNN.pt), named gen-NNNN. Repeatable.")
@click.option("--games", type=int, default=None,
              help="Seeds per pairing, each played with both colours (two-player), or per player "
                   "(single-player); at least 2 (default: arena.games).")
@click.option("--seed", type=click.IntRange(0), default=None,
              help="Seed of the games and searches (default: arena.seed).")
@click.option("--gauntlet", metavar="SPEC", default=None,
              help="Two-player: every player plays SPEC only (added if not among PLAYERS), instead of a "
                   "round robin.")
@click.option("--anchor", metavar="SPEC", default=None,
              help="Two-player: the player rated 0 (default: greedy if it plays, else the first). "
                   "Single-player: the reference of the paired differences (default: the best mean).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=ladders.DEFAULT_OUT,
              show_default=True, help="Folder of ladder.json, ladder.csv, ladder.png and the results' cache.")
@click.option("--openings", "opening_moves", type=click.IntRange(0, 60), default=0, show_default=True,
              metavar="MOVES", help="Two-player: start each seed's pair of games after this many random legal "
                                    "moves, the same for both colours (deterministic players then differ).")
@GAME_OPTION
@PARAMS_OPTION
def ladder_cmd(players: tuple[str, ...], runs: tuple[Path, ...], games: int | None, seed: int | None,
               gauntlet: str | None, anchor: str | None, out: Path, opening_moves: int, game_name: str | None,
               params_path: Path | None) -> None:
    """Rank PLAYERS on the same seeds: Bradley-Terry ratings (Elo scale) with 95% intervals in
    two-player games, mean scores with paired differences in the triangle puzzle.

    PLAYERS: random, greedy, uct:N, alphabeta:D (Othello), a checkpoint path (with search),
    mcts:PATH:N, net:PATH, champion, champion:GAME, models:/NAME@ALIAS. Results already played with the same players and settings
    (OUT/cache) are reused. With one --run folder and no --params, its params.yaml is used.
    """

    named = [*players, *(s for s in (gauntlet, anchor) if s is not None)]
    if params_path is None and game_name is None and not any(map(spec_game, named)) and len(runs) == 1 \
            and (runs[0] / "params.yaml").is_file():
        params_path = runs[0] / "params.yaml"  # the run's own game config: its checkpoints were made for it
    params = params_for_players(params_path, game_name, named)
    result = ladders.run(params, players, runs=runs, games=games, seed=seed, gauntlet=gauntlet, anchor=anchor,
                         out=out, runtime=Runtime(), progress=lambda line: click.echo(line, err=True),
                         opening_moves=opening_moves)
    print_ladder(result)
    click.echo(f"reused {result.reused} result{'s' if result.reused != 1 else ''}, played {result.played}; "
               f"wrote {out / 'ladder.json'}, ladder.csv, ladder.png")
    if result.skipped:
        click.echo(f"skipped (checkpoint missing): {', '.join(result.skipped)}")
    _track(params, result, out / "ladder.png", runs[0] if len(runs) == 1 else Path.cwd())


def print_ladder(ladder: ladders.Ladder) -> None:
    """The table (rich), best first, and how its numbers were made."""
    # rich renders only here (the other commands need not import it).
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = 120
    ratings = ladder.kind == "ratings"
    title = (f"ladder: {ladder.game}, {ladder.games} seeds per pairing x 2 colours" if ratings
             else f"ladder: {ladder.game}, {ladder.games} paired seeds")
    table = Table(title=title, title_justify="left")
    if ratings:
        head = ("#", "player", "rating", "95% interval", "games", "score rate", "W/D/L")
    else:
        head = ("#", "player", "mean score", "95% interval", "mean steps", f"vs {ladder.anchor}",
                "95% interval", "W/T/L")
    for col in head:
        table.add_column(col, justify="left" if col == "player" else "right")
    for i, r in enumerate(ladder.standings, 1):
        record = f"{r.wins}/{r.draws}/{r.losses}"
        if ratings:
            rate = "" if r.score_rate is None else f"{r.score_rate:.3f}"
            interval = "(anchor)" if r.name == ladder.anchor else f"[{r.low:+.0f}, {r.high:+.0f}]"
            table.add_row(str(i), r.name, f"{r.value:+.0f}", interval, str(r.games), rate, record)
        else:
            table.add_row(str(i), r.name, f"{r.value:.2f}", f"[{r.low:.2f}, {r.high:.2f}]",
                          f"{r.mean_steps:.1f}", *(("", "(reference)") if r.name == ladder.anchor else
                            (f"{r.diff:+.2f}", f"[{r.diff_low:+.2f}, {r.diff_high:+.2f}]")), record)
    console.print(table)
    console.print(ladder.method, soft_wrap=False)


def _track(params, ladder: ladders.Ladder, plot: Path, root: Path) -> None:
    """Log the table (one metric per player and column) and the plot to the project's MLflow
    store, when it has one (tracking on)."""
    metrics: dict[str, float] = {"players": len(ladder.standings), "games": ladder.games}
    value = "rating" if ladder.kind == "ratings" else "mean"
    for r in ladder.standings:
        columns = {value: r.value, f"{value}_low": r.low, f"{value}_high": r.high, "score_rate": r.score_rate,
                   "diff": r.diff, "diff_low": r.diff_low, "diff_high": r.diff_high}
        metrics |= {f"{k}.{r.name}": v for k, v in columns.items() if v is not None}
    name = f"ladder {ladder.game}: " + ", ".join(r.name for r in ladder.standings)
    run_id = log_evaluation(root, params, name[:250], metrics, artifact=plot,
                            tags={"tri.ladder.anchor": ladder.anchor[:250], "tri.ladder.kind": ladder.kind})
    if run_id is not None:
        click.echo(f"logged to MLflow: run {run_id} in experiment tri-{params.game.name}")
