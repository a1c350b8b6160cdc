"""Ensembles: several trained networks of one shape as one player (``tri ensemble``).

The search evaluates each position with every member and averages their masked priors and their
values (:func:`tri.evaluator.make_evaluator`), a prediction ensemble, not an average of weights
(which would mix networks trained apart into noise). Networks of separate runs err differently,
so their mean can guide a search better than any one of them: on the triangle puzzle five
networks of five runs scored 38 points more than the best of them alone over 400 seeds with the
champion's search (README, Results, lines 44-45). An ensemble is a checkpoint like any other (:func:`tri.net.load_checkpoint` with
``ensemble=True``): it plays wherever a player is accepted, and it is refused where one network
is trained or grown.

The search evaluates all K members in one pass (:class:`tri.inference.StackedInferenceNet`).
"""

from __future__ import annotations

from pathlib import Path

from tri.errors import TriError
from tri.net import Checkpoint, EnsembleNet, load_checkpoint

# NetParams that change no weight a search uses: the seed, and the training-only occupancy head.
_FREE = ("seed", "occupancy_steps")


def make_ensemble(paths: list[str | Path]) -> Checkpoint:
    """One checkpoint of the networks at ``paths`` (:func:`ensemble_of`; each file one network).
    Raises :class:`TriError`."""
    if len(paths) < 2:
        raise TriError("an ensemble takes at least two checkpoints")
    return ensemble_of([load_checkpoint(p) for p in paths], [str(p) for p in paths])


def ensemble_of(ckpts: list[Checkpoint], names: list[str]) -> Checkpoint:
    """One checkpoint of the one-network checkpoints ``ckpts`` (at least two, all for the same
    game and config and of the same shape but for ``_FREE``; ``names``: where each came from, for
    messages and its provenance). Its generation is the latest member's; its provenance names
    each member's model id, generation and source. The members' training-only occupancy heads are
    dropped (in ``ckpts`` too). Raises :class:`TriError`."""
    first = ckpts[0]
    shape = {k: v for k, v in first.net_params.model_dump().items() if k not in _FREE}
    for name, ckpt in zip(names[1:], ckpts[1:]):
        if ckpt.game != first.game:
            raise TriError(f"checkpoint {name}: it is for the game {ckpt.game!r}, {names[0]} for {first.game!r}")
        if ckpt.game_config != first.game_config:
            raise TriError(f"checkpoint {name}: it is for a different {ckpt.game} configuration than {names[0]}")
        theirs = {k: v for k, v in ckpt.net_params.model_dump().items() if k not in _FREE}
        differ = [f"{k} {theirs[k]} against {v}" for k, v in shape.items() if theirs[k] != v]
        if differ:
            raise TriError(f"checkpoint {name}: its network differs from {names[0]}'s ({', '.join(differ)}); an "
                           f"ensemble's networks must share one shape")
    ids = [c.model_id for c in ckpts]
    twice = next((i for i in ids if ids.count(i) > 1), None)
    if twice:
        raise TriError(f"the same network (model id {twice}) is given twice; an ensemble's members differ")
    for ckpt in ckpts:
        ckpt.model.occupancy_head = None  # training's head: the search never reads it
    provenance = {"created_by": "tri ensemble"}
    for k, (name, ckpt) in enumerate(zip(names, ckpts)):  # ids as their files give them (before the head went)
        provenance[f"member_{k}"] = f"model id {ids[k]}, generation {ckpt.generation}, from {name}"
    return Checkpoint(game=first.game, game_config=first.game_config,
                      net_params=first.net_params.model_copy(update={"occupancy_steps": 0}),
                      generation=max(c.generation for c in ckpts),
                      model=EnsembleNet([c.model for c in ckpts]), provenance=provenance)


def members_of(ckpt: Checkpoint, generations: list[int] | None = None) -> list[Checkpoint]:
    """An ensemble's members as one-network checkpoints, of ``generations`` (one each; None: the
    ensemble's, the latest member's, for each); a one-network checkpoint is its own one member."""
    if ckpt.members == 1:
        return [ckpt]
    generations = generations or [ckpt.generation] * ckpt.members
    if len(generations) != ckpt.members:
        raise TriError(f"an ensemble of {ckpt.members} networks, but {len(generations)} generations for them")
    return [Checkpoint(game=ckpt.game, game_config=ckpt.game_config, net_params=ckpt.net_params, generation=g,
                       model=member) for member, g in zip(ckpt.model.members, generations)]
