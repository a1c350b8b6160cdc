"""``tri champions``: the trained agents tri ships (``models/champions``); ``tri champions
publish``, which makes a project's best network its game's champion with a model card; and ``tri
champions remeasure``, which measures a shipped champion again under a new search."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from tri import champions
from tri.cli.common import CONTEXT, TriGroup, stop_on_signals
from tri.errors import TriError
from tri.games import GAMES


@click.group("champions", cls=TriGroup, context_settings=CONTEXT, invoke_without_command=True)
@click.pass_context
def champions_group(ctx: click.Context) -> None:
    """The shipped champions: one trained agent per game, each with a model card (GAME.md).

    Play one with `tri play GAME`, compare with `tri arena champion:GAME greedy`; its card says how
    it was trained and measured, with every command."""
    if ctx.invoked_subcommand is not None:
        return
    folder = champions.champions_dir()
    names = champions.available(folder)
    if not names:
        click.echo(f"no champions in {folder}")
        return
    click.echo(f"champions in {folder}:")
    for game in names:
        card = champions.load_card(game, folder)
        t = card.training
        trees = f" x {card.determinizations} trees" if card.determinizations > 1 else ""
        click.echo(f"  {game:<10} generation {card.generation}, {card.simulations} simulations{trees}, "
                   f"{t.wall_minutes:.0f} minutes of training ({t.tag}); card: {folder / (game + '.md')}")


@champions_group.command("publish")
@click.argument("game", type=click.Choice(GAMES))
@click.option("--project", type=click.Path(file_okay=False, exists=True, path_type=Path), required=True,
              help="The tri new project that trained it (git + DVC, trained with tri loop).")
@click.option("--loop", "loop_command", required=True,
              help="The tri loop command(s) that trained it, for the card.")
@click.option("--tri-commit", required=True, help="The tri commit(s) it was trained with, for the card.")
@click.option("--generation", type=click.IntRange(1), default=None,
              help="A promoted generation (default: the last promoted).")
@click.option("--simulations", type=click.IntRange(1), default=None,
              help="Its search budget (default: the project's arena.simulations).")
@click.option("--determinizations", type=click.IntRange(1, 1024), default=None,
              help="Its trees per move, each on its own sampled future (games with chance; default: the "
                   "project's arena.determinizations).")
@click.option("--search", "search", multiple=True, metavar="KEY=VALUE",
              help="An mcts setting it plays with over the project's (repeatable), e.g. solver=true; "
                   "written on the card. Without precision=..., it plays in float32 (bfloat16 gives other "
                   "bits where a CPU emulates it than where it computes it natively).")
@click.option("--note", "notes", multiple=True, help="A line for the card's notes (repeatable).")
def publish_cmd(game: str, project: Path, loop_command: str, tri_commit: str, generation: int | None,
                simulations: int | None, determinizations: int | None, search: tuple[str, ...],
                notes: tuple[str, ...]) -> None:
    """Make PROJECT's best network the champion of GAME: the checkpoint, and a model card whose
    figures come from the evaluation commands written on it (run here, from this checkout)."""
    from tri.record.publish import publish  # imports torch and MLflow: only for this command

    try:
        with stop_on_signals():  # Ctrl-C or SIGTERM: the staging folder goes, nothing is published
            card = publish(game, project, loop=loop_command, tri_commit=tri_commit, generation=generation,
                           simulations=simulations, determinizations=determinizations,
                           search=_settings(search), notes=notes, echo=click.echo)
    except KeyboardInterrupt:
        click.echo("tri champions publish: stopped; nothing was published", err=True)
        raise click.exceptions.Exit(130) from None
    folder = champions.champions_dir()
    click.echo(f"published {folder / card.checkpoint} (generation {card.generation}); card {folder / (game + '.md')}")


@champions_group.command("remeasure")
@click.argument("game", type=click.Choice(GAMES))
@click.option("--simulations", type=click.IntRange(1), default=None,
              help="Its new search budget (default: the card's).")
@click.option("--determinizations", type=click.IntRange(1, 1024), default=None,
              help="Its new trees per move (games with chance; default: the card's).")
@click.option("--search", "search", multiple=True, metavar="KEY=VALUE",
              help="An mcts setting it plays with over its params (repeatable); given, these replace the "
                   "card's search settings, e.g. solver=true gumbel=true (without precision=..., it plays in "
                   "float32).")
@click.option("--note", "notes", multiple=True, help="A line for the card's notes (repeatable; given, they "
                                                      "replace the card's).")
def remeasure_cmd(game: str, simulations: int | None, determinizations: int | None, search: tuple[str, ...],
                  notes: tuple[str, ...]) -> None:
    """Measure GAME's shipped champion again with a new search: every evaluation command on its
    card is run again from this checkout, and the card is rewritten with the results (the
    checkpoint, its training record and params unchanged). For a champion whose project is gone."""
    from tri.record.publish import remeasure  # imports torch and MLflow: only for this command

    try:
        with stop_on_signals():  # Ctrl-C or SIGTERM: the staging folder goes, the card stays as it was
            card = remeasure(game, simulations=simulations, determinizations=determinizations,
                             search=_settings(search) if search else None, notes=notes, echo=click.echo)
    except KeyboardInterrupt:
        click.echo("tri champions remeasure: stopped; the card is unchanged", err=True)
        raise click.exceptions.Exit(130) from None
    folder = champions.champions_dir()
    click.echo(f"remeasured {folder / card.checkpoint} (generation {card.generation}); card {folder / (game + '.md')}")


def _settings(pairs: tuple[str, ...]) -> dict:
    """``KEY=VALUE`` pairs as a dict, each value read as a YAML scalar (``true``, ``3.0``)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise TriError(f"--search {pair!r}: expected KEY=VALUE, e.g. solver=true")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise TriError(f"--search {pair!r}: {value!r} is not a value") from None
    return out
