"""The ``tri`` command. Every command is registered in one table, :data:`COMMANDS`, and lives in
the module it names; a command's module is imported only when that command runs, so ``tri
--help`` does not load torch, MLflow or Prefect. Each command parses its options, calls one
library function, and the group turns :class:`~tri.errors.TriError` into a one-line message and
an exit status (:class:`tri.cli.common.TriGroup`)."""

from __future__ import annotations

import importlib

import click

from tri.cli.common import CONTEXT, TriGroup

# name -> "module:attribute", in the order `tri --help` lists them.
COMMANDS = {
    "new": ("tri.cli.project:new_cmd", "Create a ready project (git, DVC, the game's measured recipe)."),
    "params": ("tri.cli.project:params_cmd", "Validate params.yaml and print the effective parameters."),
    "loop": ("tri.cli.project:loop_cmd", "Run generations as Prefect flows, after the last recorded one."),
    "serve": ("tri.cli.serve:serve", "The Prefect and MLflow UIs of a project, and its deployments."),
    "play": ("tri.cli.play:play", "Play a game yourself in the terminal."),
    "web": ("tri.cli.web:web", "Play, watch and compare agents in a browser."),
    "arena": ("tri.cli.stages:arena_cmd", "Compare two players on the same seeds."),
    "eval": ("tri.cli.evaluate:eval_group", "Measure a player: against perfect play, or greedy (triangle)."),
    "ladder": ("tri.cli.ladder:ladder_cmd", "Rank players: ratings with intervals (two-player), paired means (triangle)."),
    "champions": ("tri.cli.champions:champions_group", "The trained agents tri ships, and publishing one."),
    "ensemble": ("tri.cli.ensemble:ensemble_cmd", "Combine trained networks into one player that averages them."),
    "curve": ("tri.cli.project:curve_cmd", "Plot the arena mean score per generation."),
    "init": ("tri.cli.stages:init_cmd", "Stage: write a fresh generation-0 network."),
    "selfplay": ("tri.cli.stages:selfplay_cmd", "Stage: play games with search into Parquet shards."),
    "train": ("tri.cli.stages:train_cmd", "Stage: train a candidate on a window of self-play."),
    "promote": ("tri.cli.stages:promote_cmd", "Stage: apply an arena decision."),
    "bench": ("tri.cli.bench:bench", "Measure speed against the named anchors."),
}


class _Commands(TriGroup):
    """The ``tri`` group: commands from :data:`COMMANDS`, imported when used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, _, attribute = COMMANDS[name][0].partition(":")
        command = getattr(importlib.import_module(module), attribute)  # on demand: see the docstring
        command.short_help = command.short_help or COMMANDS[name][1]
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list from the table, without importing every command's module."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in COMMANDS.items()])


@click.group(cls=_Commands, context_settings=CONTEXT)
@click.version_option(package_name="tri")
def main() -> None:
    """tri: AlphaZero training for the triangle puzzle and classic board games."""


if __name__ == "__main__":
    main()
