"""The ``tri`` command. Each command parses options, calls one library function, and turns
:class:`~tri.errors.TriError` into a one-line message and an exit status."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from tri.errors import TriError

PARAMS_OPTION = click.option(
    "--params", "params_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="params.yaml to read (default: ./params.yaml if present, else the embedded defaults).")


class _Group(click.Group):
    """A group that reports user errors as ``error: ...`` lines instead of tracebacks, and a
    subcommand's bad option (click's usage errors) as one such line too."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except TriError as exc:
            for line in str(exc).splitlines():
                click.echo(f"error: {line}", err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            message = " ".join(exc.format_message().split())
            click.echo(f"error: {where}: {message} (see {where} --help)", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tri")
def main() -> None:
    """tri: AlphaZero training for the triangle puzzle and classic board games."""


@main.command("params")
@PARAMS_OPTION
def params_cmd(params_path: Path | None) -> None:
    """Validate params.yaml and print the effective parameters as YAML."""
    from tri.config import dump_params, load_params

    click.echo(dump_params(load_params(params_path)), nl=False)


@main.group(cls=_Group)
def play() -> None:
    """Play a game yourself in the terminal."""


@play.command("triangle")
@click.option("--seed", type=int, default=None, help="Seed of the shape draws (default: random).")
@PARAMS_OPTION
def play_triangle(seed: int | None, params_path: Path | None) -> None:
    """Play the triangle puzzle: type moves as `slot row col`.

    Reads moves line by line from standard input when it is not a terminal, so a game can be
    scripted: `printf '0 3 4\\n1 4 6\\n' | tri play triangle --seed 1`.
    """
    import random

    from tri.config import load_params
    from tri.games.triangle.game import TriangleGame
    from tri.terminal.triangle import play_triangle as run

    params = load_params(params_path)
    game = TriangleGame(params.game.triangle)
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    run(game, seed, sys.stdin.readline, interactive=sys.stdin.isatty())


@main.command("init")
@click.option("--game", "game_name", default=None, help="Game (default: params.yaml's game.name).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Checkpoint to write, e.g. models/gen-0000.pt.")
@PARAMS_OPTION
def init_cmd(game_name: str | None, out: Path, params_path: Path | None) -> None:
    """Write a fresh generation-0 network (weights from net.seed)."""
    from tri.config import load_params
    from tri.games import make_game
    from tri.net import initial_checkpoint, save_checkpoint

    params = load_params(params_path)
    if game_name is not None and game_name != params.game.name:
        raise TriError(f"--game {game_name} but params.yaml selects game.name: {params.game.name}")
    game = make_game(params.game)
    ckpt = initial_checkpoint(game, params.net)
    save_checkpoint(ckpt, out)
    click.echo(f"wrote {out}: {game.name} network, generation 0, "
               f"{sum(p.numel() for p in ckpt.model.parameters()):,} parameters, model id {ckpt.model_id}")


@main.command("selfplay")
@click.option("--model", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Checkpoint that plays.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the shards, e.g. data/selfplay/gen-0000.")
@click.option("--generation", type=int, default=None,
              help="Generation the data belongs to (seeds the games; default: the model's).")
@click.option("--progress/--no-progress", default=True, show_default=True)
@PARAMS_OPTION
def selfplay_cmd(model: Path, out: Path, generation: int | None, progress: bool, params_path: Path | None) -> None:
    """Play selfplay.games games with search and write Parquet shards."""
    from tri.config import Runtime, load_params
    from tri.selfplay import run

    result = run(load_params(params_path), model, out, generation=generation, runtime=Runtime(),
                 progress=progress)
    if result.played == 0:
        click.echo(f"self-play: all {len(result.shards)} shards in {out} were already complete "
                   f"({result.games} games, mean score {result.mean_score:.2f})")
        return
    click.echo(f"self-play: {result.games} games, {result.positions} positions in {result.seconds:.1f} s "
               f"({result.positions_per_second:.1f} positions/s), mean score {result.mean_score:.2f}; "
               f"{len(result.shards)} shards in {out}")


@main.command("train")
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
@click.option("--progress/--no-progress", default=True, show_default=True)
@PARAMS_OPTION
def train_cmd(model: Path, data: tuple[Path, ...], root: Path | None, out: Path, generation: int | None,
              metrics: Path | None, losses: Path | None, progress: bool, params_path: Path | None) -> None:
    """Train a candidate from a network (the best, or the previous candidate) on a window of self-play."""
    from tri import layout
    from tri.config import load_params
    from tri.train import run

    params = load_params(params_path)
    if (root is None) == (not data):
        raise TriError("tri train: give either --data folders or --root with --generation")
    if root is not None:
        if generation is None:
            raise TriError("tri train: --root needs --generation")
        data = tuple(layout.window_dirs(root, generation, params.train.window))
    r = run(params, model, list(data), out, generation=generation, metrics=metrics,
            losses=losses, progress=progress)
    click.echo(f"train: generation {r.generation}, {r.steps} steps on {r.window_positions} positions "
               f"({r.new_positions} new) in {r.seconds:.1f} s, loss {r.loss:.4f} "
               f"(policy {r.policy_loss:.4f}, value {r.value_loss:.4f}); wrote {out}")


@main.command("arena")
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
@PARAMS_OPTION
def arena_cmd(a: str, b: str, games: int | None, seed: int | None, generation: int, out: Path | None,
              names: str | None, params_path: Path | None) -> None:
    """Compare players A and B on the same seeds and decide whether A should replace B.

    A and B: a checkpoint path (plays with search), mcts:PATH:N, net:PATH, random, greedy, or a
    registered model: models:/tri-triangle@champion, models:/tri-triangle/3.
    """
    from tri.arena import print_result, run
    from tri.config import Runtime, load_params

    labels = None
    if names is not None:
        parts = names.split(",")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise click.UsageError(f"--names {names!r}: expected two names separated by a comma, e.g. candidate,best")
        labels = (parts[0].strip(), parts[1].strip())
    print_result(run(load_params(params_path), a, b, games=games, seed=seed, generation=generation, out=out,
                     runtime=Runtime(), labels=labels))


@main.command("promote")
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
    from tri.promote import run

    r = run(arena_path, candidate, best, rejected=rejected, log=log)
    click.echo(f"{'promoted' if r.promoted else 'rejected'}: {candidate} -> {r.kept}")


@main.command("loop")
@click.option("--root", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."),
              show_default=True, help="Project folder holding params.yaml, models/ and data/ (must exist).")
@click.option("--generations", type=click.IntRange(1), default=None, help="Stop after this many generations.")
@click.option("--minutes", type=click.FloatRange(0), default=None, help="Stop starting generations after this long.")
@click.option("--plateau", type=click.IntRange(1), default=None,
              help="Stop after this many generations in a row without a promotion.")
@click.option("--params", "params_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Params file (default: ROOT/params.yaml, else the embedded defaults). A DVC project "
                   "runs on its params.yaml only.")
def loop_cmd(root: Path, generations: int | None, minutes: float | None, plateau: int | None,
             params_path: Path | None) -> None:
    """Run generations as Prefect flows (self-play, train, arena, promote, record), continuing
    after the last recorded one. Ctrl-C (or SIGTERM) stops it cleanly; run it again to go on."""
    from tri.record import stores, versioning
    from tri.config import Runtime, project_params
    from tri.resources import check_params

    if generations is None and minutes is None and plateau is None:
        raise TriError("tri loop: give --generations, --minutes or --plateau")
    params_file = str(params_path.resolve()) if params_path is not None else None
    # Fail fast, before a Prefect server starts or anything is written (the flow checks them again).
    check_params(project_params(root, params_file), workers=Runtime().workers)
    versioning.check_params_file(root, params_file)
    with versioning.project_lock(root):
        pass
    stores.configure(root)
    from prefect.exceptions import TerminationSignal

    from pipelines import loop

    try:
        with _stop_on_signals():
            loop.run(root, params_file, generations=generations, minutes=minutes, plateau=plateau,
                     echo=click.echo)
    except (KeyboardInterrupt, TerminationSignal):
        click.echo("tri loop: stopped; the generation in flight was not recorded (run tri loop again to "
                   "redo it)", err=True)
        raise click.exceptions.Exit(130) from None


@contextlib.contextmanager
def _stop_on_signals():
    """SIGINT (Ctrl-C, which a terminal sends to its whole foreground process group) and SIGTERM
    (``kill``, a scheduler) both stop the loop: the first raises KeyboardInterrupt, so Python
    unwinds (the shards in flight stop, the flow runs are marked crashed on the Prefect server,
    still up in its own session, the MLflow run KILLED, the lock released, the server stopped
    last); later ones are ignored, so the shutdown finishes. While a flow runs, Prefect's own
    SIGTERM handler raises ``TerminationSignal`` instead, which unwinds the same way."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = threading.Event()

    def interrupt(signum, frame):
        if not stopping.is_set():
            stopping.set()
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@main.command("curve")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="PNG to write (default: data/learning-curve.png under --root).")
@click.option("--baseline", "baselines", multiple=True, metavar="NAME=SCORE",
              help="A horizontal reference line, e.g. greedy=32.6 (repeatable).")
def curve_cmd(root: Path, out: Path | None, baselines: tuple[str, ...]) -> None:
    """Plot the arena mean score per generation and print it as a table."""
    from tri import layout
    from tri.record.report import learning_curve, plot

    points = learning_curve(root)
    if not points:
        raise TriError(f"no arena results under {root / 'data' / 'arena'}")
    lines = {}
    for item in baselines:
        name, _, value = item.partition("=")
        try:
            lines[name] = float(value)
        except ValueError:
            raise TriError(f"--baseline {item!r}: expected NAME=SCORE, e.g. greedy=32.6") from None
    out = out or layout.learning_curve_path(root)
    plot(points, out, baselines=lines)
    click.echo("generation  candidate  best  promoted")
    for p in points:
        click.echo(f"{p.generation:>10}  {p.candidate:9.2f}  {p.best:5.2f}  {'yes' if p.promoted else 'no'}")
    click.echo(f"wrote {out}")


@main.group(cls=_Group)
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
    from tri.bench.engine import print_report, run
    from tri.config import load_params

    params = load_params(params_path)
    report = run(params.game.triangle, repeats=repeats, seconds=seconds, seed=seed)
    print_report(report, as_json=as_json)


@bench.command("search")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--repeats", type=click.IntRange(1), default=5, show_default=True)
@click.option("--moves", type=click.IntRange(1), default=8, show_default=True,
              help="Self-play moves per game per repeat.")
@click.option("--leaves", type=click.IntRange(1), default=16, show_default=True,
              help="Leaves per network call for the single-game 2,048-simulation move.")
@click.option("--seed", type=int, default=0, show_default=True)
@PARAMS_OPTION
def bench_search(as_json: bool, repeats: int, moves: int, leaves: int, seed: int,
                 params_path: Path | None) -> None:
    """Self-play simulations/s against network-only evaluations/s at the same batch, and one
    2,048-simulation move."""
    from tri.bench.search import print_report, run
    from tri.config import load_params

    print_report(run(load_params(params_path), repeats=repeats, moves=moves, leaves=leaves, seed=seed),
                 as_json=as_json)


@bench.command("orchestration")
@click.option("--generations", type=click.IntRange(1), default=2, show_default=True,
              help="Generations each way (plain stages, then the flow).")
@click.option("--scratch", type=click.Path(file_okay=False, path_type=Path), default=Path(".bench/orchestration"),
              show_default=True, help="Scratch folder for the two projects (emptied first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@PARAMS_OPTION
def bench_orchestration(generations: int, scratch: Path, as_json: bool, params_path: Path | None) -> None:
    """The time Prefect + DVC + git + MLflow add to a generation, against the stages alone."""
    from tri.bench.orchestration import print_report, run
    from tri.config import load_params

    repo = Path(__file__).resolve().parents[1]
    if not (repo / "dvc.yaml").is_file():
        raise TriError(f"tri bench orchestration runs from a tri checkout (no dvc.yaml in {repo})")
    print_report(run(load_params(params_path), scratch, repo, generations=generations), as_json=as_json)


def _attach_commands() -> None:
    """Commands that live in their own modules (the two-player games, ``tri serve``)."""
    from tri.cli.games import eval_group, play_connect4, play_tictactoe
    from tri.cli.serve import serve

    play.add_command(play_connect4, "connect4")
    play.add_command(play_tictactoe, "tictactoe")
    main.add_command(eval_group, "eval")
    main.add_command(serve, "serve")


_attach_commands()


if __name__ == "__main__":
    main()
