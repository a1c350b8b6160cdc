"""The stage commands that ``dvc.yaml`` runs, one per stage: ``tri init``, ``tri selfplay``,
``tri train``, ``tri arena``, ``tri promote``. Each parses its options and calls its stage's one
function (the same function the Prefect flow's tasks and the tests call), importing its stage's
module when it runs: a command that stops at a bad option or file says so before torch loads,
and ``tri promote`` never loads it."""

from __future__ import annotations

from pathlib import Path

import click

from tri import layout
from tri.cli.common import PARAMS_OPTION, PROGRESS_OPTION, progress_report
from tri.cli.players import GAME_OPTION, params_for_players
from tri.config import Runtime, load_params
from tri.errors import TriError
from tri.games import GAMES, make_game
from tri.player_specs import check_files, parse_spec


@click.command("init")
@click.option("--game", "game_name", type=click.Choice(GAMES), default=None,
              help="Game (default: params.yaml's game.name).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Checkpoint to write, e.g. models/gen-0000.pt.")
@click.option("--from", "source", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Start from this checkpoint's weights (same game and network shape, except that "
                   "net.channels and net.blocks may be larger: the network grows, computing what it "
                   "did) instead of fresh ones; a project made by tri new --from runs this.")
@PARAMS_OPTION
def init_cmd(game_name: str | None, out: Path, source: Path | None, params_path: Path | None) -> None:
    """Write a generation-0 network: fresh weights from net.seed, or --from a checkpoint's."""

    params = load_params(params_path)
    if game_name is not None and game_name != params.game.name:
        raise TriError(f"--game {game_name} but params.yaml selects game.name: {params.game.name}")
    # loads torch: once the options are checked
    from tri.net import initial_checkpoint, save_checkpoint, started_checkpoint

    game = make_game(params.game)
    ckpt = (initial_checkpoint(game, params.net) if source is None
            else started_checkpoint(game, params.net, source))
    save_checkpoint(ckpt, out)
    click.echo(f"wrote {out}: {game.name} network, generation 0, "
               f"{sum(p.numel() for p in ckpt.model.parameters()):,} parameters, model id {ckpt.model_id}")


@click.command("selfplay")
@click.option("--model", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Checkpoint that plays.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the shards, e.g. data/selfplay/gen-0000.")
@click.option("--generation", type=int, default=None,
              help="Generation the data belongs to (seeds the games; default: the model's).")
@PROGRESS_OPTION
@PARAMS_OPTION
def selfplay_cmd(model: Path, out: Path, generation: int | None, progress: bool, params_path: Path | None) -> None:
    """Play selfplay.games games with search and write Parquet shards."""
    from tri import selfplay  # loads torch: once the options are checked

    result = selfplay.run(load_params(params_path), model, out, generation=generation, runtime=Runtime(),
                          progress=progress_report(progress))
    if result.played == 0:
        click.echo(f"self-play: all {len(result.shards)} shards in {out} were already complete "
                   f"({result.games} games, mean score {result.mean_score:.2f})")
        return
    click.echo(f"self-play: {result.games} games, {result.positions} positions in {result.seconds:.1f} s "
               f"({result.positions_per_second:.1f} positions/s), mean score {result.mean_score:.2f}; "
               f"{len(result.shards)} shards in {out}")


@click.command("train")
@click.option("--model", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The best model, to continue from.")
@click.option("--data", type=click.Path(file_okay=False, path_type=Path), multiple=True,
              help="Self-play folders, oldest first; the last one is the new data. Repeat the option.")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Instead of --data: the project whose last train.window self-play generations up to "
                   "--generation to read.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Candidate checkpoint to write.")
@click.option("--generation", type=int, default=None, help="Generation of the candidate (default: model's + 1).")
@click.option("--metrics", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Summary JSON.")
@click.option("--losses", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Per-step CSV.")
@PROGRESS_OPTION
@PARAMS_OPTION
def train_cmd(model: Path, data: tuple[Path, ...], root: Path | None, out: Path, generation: int | None,
              metrics: Path | None, losses: Path | None, progress: bool, params_path: Path | None) -> None:
    """Train a candidate from a network (the best, or the previous candidate) on a window of self-play."""

    params = load_params(params_path)
    if (root is None) == (not data):
        raise TriError("tri train: give either --data folders or --root with --generation")
    if root is not None:
        if generation is None:
            raise TriError("tri train: --root needs --generation")
        data = tuple(layout.window_dirs(root, generation, params.train.window))
    from tri import train  # loads torch: once the options are checked

    r = train.run(params, model, list(data), out, generation=generation, metrics=metrics,
                  losses=losses, progress=progress_report(progress))
    click.echo(f"train: generation {r.generation}, {r.steps} steps on {r.window_positions} positions "
               f"({r.new_positions} new) in {r.seconds:.1f} s, loss {r.loss:.4f} "
               f"(policy {r.policy_loss:.4f}, value {r.value_loss:.4f}"
               + (f", occupancy {r.occupancy_loss:.4f}" if r.occupancy_loss is not None else "") + ")"
               + (f", {r.reanalysed_positions} value targets reanalysed (mean change {r.reanalysed_change:+.3f})"
                  if r.reanalysed_positions else "")
               + (f", {r.afterstate_positions} afterstates" if r.afterstate_positions else "") + f"; wrote {out}")


@click.command("arena")
@click.argument("a")
@click.argument("b")
@click.option("--games", type=click.IntRange(2), default=None, help="Seeds (default: arena.games).")
@click.option("--seed", type=int, default=None, help="Seed of the arena's seeds (default: arena.seed).")
@click.option("--generation", type=int, default=0, show_default=True,
              help="Generation whose arena seeds to use (the loop gives each generation its own).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the result as JSON.")
@click.option("--names", default=None, metavar="A_NAME,B_NAME",
              help="Names of A and B in the result (default: A and B as given); the loop's arena names "
                   "them by role: candidate,best.")
@click.option("--openings", "opening_moves", type=click.IntRange(0, 60), default=0, show_default=True,
              metavar="MOVES", help="Two-player games: start each seed's pair of games after this many random "
                                    "legal moves, the same for both colours (deterministic players then play "
                                    "different games).")
@GAME_OPTION
@PROGRESS_OPTION
@PARAMS_OPTION
def arena_cmd(a: str, b: str, games: int | None, seed: int | None, generation: int, out: Path | None,
              names: str | None, opening_moves: int, game_name: str | None, progress: bool,
              params_path: Path | None) -> None:
    """Compare players A and B on the same seeds and decide whether A should replace B.

    A and B: a checkpoint path (plays with search), mcts:PATH:N, net:PATH, random, greedy, the
    shipped champion (champion, champion:GAME), or a registered model:
    models:/tri-triangle@champion, models:/tri-triangle/3.
    """

    labels = None
    if names is not None:
        parts = names.split(",")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise click.UsageError(f"--names {names!r}: expected two names separated by a comma, e.g. candidate,best")
        labels = (parts[0].strip(), parts[1].strip())
    params = params_for_players(params_path, game_name, [a, b])
    players = [parse_spec(spec, game=params.game.name) for spec in (a, b)]
    check_files(players)  # a bad player fails here, before torch loads
    from tri import arena  # loads torch: once the options and players are checked

    arena.print_result(arena.run(params, *players, games=games, seed=seed, generation=generation, out=out,
                                 runtime=Runtime(), labels=labels, progress=progress_report(progress),
                                 opening_moves=opening_moves))


@click.command("promote")
@click.option("--arena", "arena_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Arena result JSON (A = the candidate).")
@click.option("--candidate", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--best", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Best model path, replaced atomically on promotion.")
@click.option("--rejected", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Where a rejected candidate is kept.")
@click.option("--log", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Decision log (JSON lines).")
def promote_cmd(arena_path: Path, candidate: Path, best: Path, rejected: Path, log: Path) -> None:
    """Apply an arena decision: the candidate becomes the best model, or is kept aside."""
    from tri import promote  # loads torch only to apply a decision

    r = promote.run(arena_path, candidate, best, rejected=rejected, log=log)
    click.echo(f"{'promoted' if r.promoted else 'rejected'}: {candidate} -> {r.kept}")
