"""``tri ensemble OUT A B [C ...]``: several trained networks of one shape as one player
(:mod:`tri.ensemble`)."""

from __future__ import annotations

from pathlib import Path

import click

from tri.errors import TriError


@click.command("ensemble")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("members", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
def ensemble_cmd(out: Path, members: tuple[Path, ...]) -> None:
    """Write OUT, one player of the checkpoints MEMBERS (two or more, of one game and network
    shape): its search averages their priors and values at every position. Use OUT wherever a
    player is accepted (mcts:OUT:N in tri eval, tri arena, tri play); training takes one network."""
    if out.resolve() in {m.resolve() for m in members}:
        raise TriError(f"tri ensemble: OUT {out} is one of the members; write the ensemble to a new file")
    from tri.ensemble import make_ensemble  # loads torch: once the options are checked
    from tri.net import save_checkpoint  # (torch too)

    ckpt = make_ensemble(list(members))
    save_checkpoint(ckpt, out)
    click.echo(f"wrote {out}: {ckpt.game} ensemble of {ckpt.members} networks, "
               f"{sum(p.numel() for p in ckpt.model.parameters()):,} parameters, model id {ckpt.model_id}")
