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
        made = f"{champions.made_of(card)}, {card.simulations} simulations{trees}"
        if not card.members:
            made += f", {t.wall_minutes:.0f} minutes of training ({t.tag})"
        click.echo(f"  {game:<10} {made}; card: {folder / (game + '.md')}")


@champions_group.command("publish")
@click.argument("game", type=click.Choice(GAMES))
@click.option("--project", "projects", multiple=True, required=True,
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="The tri new project that trained it (git + DVC, trained with tri loop). Repeat it for an "
                   "ensemble of several projects' networks (tri ensemble), with --loop and --tri-commit "
                   "(and --generation, if given) once per --project, in the same order.")
@click.option("--loop", "loop_commands", multiple=True, required=True,
              help="The tri loop command(s) that trained it, for the card.")
@click.option("--tri-commit", "tri_commits", multiple=True, required=True,
              help="The tri commit(s) it was trained with, for the card.")
@click.option("--generation", "generations", type=click.IntRange(1), multiple=True,
              help="A promoted generation (default: the last promoted).")
@click.option("--join", is_flag=True,
              help="Add the project's network to the shipped champion's, as an ensemble whose search averages "
                   "them (tri ensemble), instead of replacing it; it plays with the shipped card's search.")
@click.option("--simulations", type=click.IntRange(1), default=None,
              help="Its search budget (default: the project's arena.simulations; with --join the card's).")
@click.option("--determinizations", type=click.IntRange(1, 1024), default=None,
              help="Its trees per move, each on its own sampled future (games with chance; default: the "
                   "project's arena.determinizations; with --join the card's).")
@click.option("--search", "search", multiple=True, metavar="KEY=VALUE",
              help="An mcts setting it plays with over the project's (repeatable), e.g. solver=true; "
                   "written on the card. Without precision=..., it plays in float32 (bfloat16 gives other "
                   "bits where a CPU emulates it than where it computes it natively).")
@click.option("--note", "notes", multiple=True, help="A line for the card's notes (repeatable).")
def publish_cmd(game: str, projects: tuple[Path, ...], loop_commands: tuple[str, ...], tri_commits: tuple[str, ...],
                generations: tuple[int, ...], join: bool, simulations: int | None, determinizations: int | None,
                search: tuple[str, ...], notes: tuple[str, ...]) -> None:
    """Make PROJECT's best network the champion of GAME: the checkpoint, and a model card whose
    figures come from the evaluation commands written on it (run here, from this checkout). Several
    --project, or --join, publish an ensemble of their networks."""
    counts = {"--loop": len(loop_commands), "--tri-commit": len(tri_commits)}
    if generations:
        counts["--generation"] = len(generations)
    wrong = [f"{name} {n} times" for name, n in counts.items() if n != len(projects)]
    if wrong:
        raise TriError(f"tri champions publish: {len(projects)} --project but {', '.join(wrong)}; give each once "
                       f"per --project, in the same order")
    from tri.record.publish import Source, publish, publish_ensemble  # imports torch and MLflow: only here

    sources = [Source(p, loop, commit, generations[k] if generations else None)
               for k, (p, loop, commit) in enumerate(zip(projects, loop_commands, tri_commits))]
    try:
        with stop_on_signals():  # Ctrl-C or SIGTERM: the staging folder goes, nothing is published
            if len(sources) == 1 and not join:
                s = sources[0]
                card = publish(game, s.project, loop=s.loop, tri_commit=s.tri_commit, generation=s.generation,
                               simulations=simulations, determinizations=determinizations,
                               search=_settings(search), notes=notes, echo=click.echo)
            else:
                card = publish_ensemble(game, sources, join=join, simulations=simulations,
                                        determinizations=determinizations,
                                        search=_settings(search) if search else None, notes=notes,
                                        echo=click.echo)
    except KeyboardInterrupt:
        click.echo("tri champions publish: stopped; nothing was published", err=True)
        raise click.exceptions.Exit(130) from None
    folder = champions.champions_dir()
    what = f"an ensemble of {len(card.members)} networks" if card.members else f"generation {card.generation}"
    click.echo(f"published {folder / card.checkpoint} ({what}); card {folder / (game + '.md')}")


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
    click.echo(f"remeasured {folder / card.checkpoint} ({champions.made_of(card)}); card {folder / (game + '.md')}")


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
