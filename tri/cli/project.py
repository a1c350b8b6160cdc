"""Project commands: ``tri new`` (a ready git + DVC project), ``tri params`` (the effective
settings), ``tri loop`` (generations as
Prefect flows, stopped cleanly by Ctrl-C or SIGTERM) and ``tri curve`` (the learning curve)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from tri import layout
from tri.champions import champion
from tri.cli.common import PARAMS_OPTION, stop_on_signals
from tri.config import Runtime, load_params, project_params, recipe_params
from tri.errors import TriError
from tri.games import DEFAULT_GAME, GAMES, make_game
from tri.ensemble import members_of
from tri.net import load_checkpoint, save_checkpoint
from tri.params_yaml import changed_defaults, describe_params, dump_params
from tri.record import stores, versioning
from tri.record.project import new_project
from tri.record.report import learning_curve, plot
from tri.resources import plural
from tri.selfplay import check_params


@click.command("params")
@click.option("--describe", is_flag=True, help="Each setting's description beside its value, as YAML comments.")
@PARAMS_OPTION
def params_cmd(describe: bool, params_path: Path | None) -> None:
    """Validate params.yaml and print the effective parameters as YAML."""
    params = load_params(params_path)
    click.echo(describe_params(params) if describe else dump_params(params), nl=False)
    _note_changed_defaults(params_path or Path("params.yaml"), params)


def _note_changed_defaults(path: Path, params) -> None:
    """One line on stderr per setting ``path`` leaves out whose default changed since
    (:func:`tri.params_yaml.changed_defaults`; none when there is no such file)."""
    for note in changed_defaults(path, params):
        click.echo(note, err=True)


@click.command("new")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--game", "game_name", type=click.Choice(GAMES), default=DEFAULT_GAME, show_default=True,
              help="The game the project trains.")
@click.option("--from", "source", default=None, metavar="CHECKPOINT",
              help="Go on training this network instead of fresh weights: a checkpoint path, or champion "
                   "(the game's shipped champion). It is copied into the project as models/start.pt; "
                   "params.yaml takes its network shape (before the first tri loop, net.channels and "
                   "net.blocks may be raised: the network grows, computing what it did).")
@click.option("--member", type=click.IntRange(1), default=None,
              help="With --from an ensemble (tri ensemble, or an ensemble champion): which of its networks "
                   "to start from, 1 for the first (the default); training takes one network.")
@click.option("--teacher", default=None, metavar="CHECKPOINT",
              help="Distillation: this network (a checkpoint path, or champion; an ensemble and another "
                   "shape are fine) plays every generation's self-play instead of the best model, so the "
                   "candidates learn from its games while the arena still gates them against the best. "
                   "Copied into the project as models/teacher.pt; it plays with params.yaml's mcts.")
@click.option("--games", "games", multiple=True, metavar="FOLDER",
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="A self-play folder of another run of this game (repeatable, oldest first): its games are "
                   "copied into the project as data/selfplay/start-01, start-02, ... (DVC-tracked), "
                   "generation 0's self-play, so the replay windows of generations 1 to train.window - 1 "
                   "hold them (raise train.window to keep them all).")
def new_cmd(folder: Path, game_name: str, source: str | None, member: int | None, teacher: str | None,
            games: tuple[Path, ...]) -> None:
    """Create a ready project in FOLDER (missing or empty): params.yaml with the game's measured
    recipe written out in full (each setting described), dvc.yaml, git and DVC initialised and
    a first commit. Then: tri loop --root FOLDER --generations N."""
    params, start, game = recipe_params(game_name), None, None
    if member is not None and source is None:
        raise TriError("tri new: --member picks a network of the ensemble --from names; give --from")
    if source is not None:
        start = _checkpoint(source, game_name)
        game = make_game(params.game)
        ckpt = load_checkpoint(start, game, ensemble=True)
        params = params.model_copy(update={"net": ckpt.net_params.model_copy(update={"seed": params.net.seed})})
    teacher_file = None
    if teacher is not None:
        teacher_file = _checkpoint(teacher, game_name)
        taught = load_checkpoint(teacher_file, game or make_game(params.game), ensemble=True)
    with tempfile.TemporaryDirectory() as tmp:
        picked, k = "", member or 1
        if start is not None and (ckpt.members > 1 or k > 1):  # training takes one network
            if k > ckpt.members:
                raise TriError(f"tri new: --member {k}: {source} has {ckpt.members} "
                               f"network{'s' if ckpt.members > 1 else ''}")
            ckpt = members_of(ckpt)[k - 1]
            start = Path(tmp) / "start.pt"
            save_checkpoint(ckpt, start)
            picked = ", its first network" if k == 1 else f", its network {k}"
        root = new_project(folder, params, start=start, teacher=teacher_file, games=games)
    began = f", generation 0 from {source}{picked} (model id {ckpt.model_id})" if source is not None else ""
    taught_by = (f"; self-play by the teacher {teacher} (model id {taught.model_id})"
                 if teacher is not None else "")
    given = f"; generation 0's self-play: {plural(len(games), 'folder')} of games (--games)" if games else ""
    click.echo(f"created {root}: a project for {game_name} (params.yaml: its measured recipe{began}{taught_by}{given}); "
               f"next: tri loop --root {folder} --generations 1")


def _checkpoint(source: str, game_name: str) -> Path:
    """The file ``--from`` or ``--teacher`` names: the game's champion, or a path."""
    return champion(game_name)[0] if source in ("champion", f"champion:{game_name}") else Path(source)


@click.command("loop")
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
    if generations is None and minutes is None and plateau is None:
        raise TriError("tri loop: give --generations, --minutes or --plateau")
    params_file = str(params_path.resolve()) if params_path is not None else None
    # Fail fast, before a Prefect server starts or anything is written (the flow checks them again).
    params = project_params(root, params_file)
    check_params(params, workers=Runtime().workers)
    versioning.check_params_file(root, params_file)
    _note_changed_defaults(Path(params_file) if params_file is not None else root / "params.yaml", params)
    try:
        with stop_on_signals(), versioning.project_lock(root):
            stores.configure(root)
            from pipelines.loop_server import loop_server  # light: no prefect, no torch

            with loop_server(root) as server:
                # Prefect reads its settings when it is imported: import it (and the flows) only now
                # that they point into the project, while the loop's server boots.
                from prefect.exceptions import TerminationSignal  # noqa: I001 (after stores.configure)
                from pipelines import loop  # after stores.configure, as above

                try:
                    loop.run(root, params_file, generations=generations, minutes=minutes, plateau=plateau,
                             echo=click.echo, terminal=sys.stdout.isatty(), server=server)
                except TerminationSignal:  # Prefect's SIGTERM while a flow runs: stopped alike
                    raise KeyboardInterrupt from None
    except KeyboardInterrupt:
        click.echo("tri loop: stopped; the generation in flight was not recorded (run tri loop again to "
                   "redo it)", err=True)
        _explain_uncommitted(root)
        raise click.exceptions.Exit(130) from None


def _explain_uncommitted(root: Path) -> None:
    """After a stop, say why ``git status`` is not clean: what the stopped generation began."""
    try:
        paths = versioning.uncommitted(root)
    except TriError:  # git missing or broken: the stop message stands alone
        return
    if paths:
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        click.echo(f"tri loop: git status shows {shown}: what the stopped generation began (its plan, and "
                   "the earlier generations' outputs it archived with DVC); its commit takes them when tri "
                   "loop runs it again", err=True)


@click.command("curve")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="PNG to write (default: data/learning-curve.png under --root).")
@click.option("--baseline", "baselines", multiple=True, metavar="NAME=SCORE",
              help="A horizontal reference line, e.g. greedy=32.6 (repeatable).")
def curve_cmd(root: Path, out: Path | None, baselines: tuple[str, ...]) -> None:
    """Plot the arena mean score per generation and print it as a table."""
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
    # "best model": the mean of the model that is best after the decision over every arena game
    # it has played as the best (single-player); "best" alone is this arena's fresh seeds.
    click.echo("generation  candidate    best  promoted  best model (games)")
    for p in points:
        pooled = f"{p.best_pooled:10.2f} ({p.best_pooled_games})" if p.best_pooled is not None else "         -"
        click.echo(f"{p.generation:>10}  {p.candidate:9.2f}  {p.best:6.2f}  {'yes' if p.promoted else 'no':>8}  {pooled}")
    click.echo(f"wrote {out}")
