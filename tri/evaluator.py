"""The search's evaluator: a network as ``evaluate(states) -> (priors, legal, values)``
(:data:`tri.search.Evaluator`), on any device and in the number format ``mcts.precision``
resolves to, optionally averaged over the game's symmetries (``mcts.symmetrize``)."""

from __future__ import annotations

import numpy as np
import torch

from tri.device import resolve_precision
from tri.errors import TriError
from tri.games.base import Symmetry
from tri.inference import InferenceNet, StackedInferenceNet
from tri.net import EnsembleNet, PolicyValueNet, masked_policy


def make_evaluator(model: PolicyValueNet | EnsembleNet, game, device: str | torch.device = "cpu", *,
                   fast: bool = False, precision: str = "float32", symmetrize: bool = False, distinct: bool = False):
    """The search's ``evaluate(states [M, L]) -> (priors [M, A], legal [M, A], values [M])``:
    encode, one forward pass in inference mode on ``device`` (the model is moved there), masked
    softmax, decoded values. Whatever the device, the arrays come back as numpy on the CPU
    (float32 priors and values), where the search runs. ``fast``: through an
    :class:`InferenceNet` snapshot of the model (self-play), not the model itself;
    ``precision`` (``mcts.precision``; ``auto`` resolved for ``device`` by
    :func:`tri.device.resolve_precision`) ``"bfloat16"``: through a bfloat16 snapshot (fast or not).
    ``symmetrize`` (``mcts.symmetrize``): the forward pass takes the positions and their images
    under each of the game's S symmetries (``[(1 + S) * M, C, H, W]``, planes mapped as training's
    augmentation maps them); each image's priors are mapped back to the position's actions, and
    the priors (renormalised over the legal actions) and the values are averaged. Raises
    :class:`TriError` for a game whose symmetries map actions by position (Santorini).
    ``distinct``: positions of one call with the same input planes and legal actions go through
    the network once (:func:`distinct_rows`). A player's several trees (``determinizations``)
    differ only after their first refill, so about 40% of the triangle champion's evaluations
    repeat another tree's; the results are the same up to float rounding (a convolution's
    kernel, and so its rounding, may change with the batch's size).

    An ensemble (:class:`~tri.net.EnsembleNet`, ``tri ensemble``) goes through a
    :class:`~tri.inference.StackedInferenceNet` (whatever ``fast`` says): each member's priors and
    values as above, then their mean over the members."""
    model = model.to(device).eval()
    precision = resolve_precision(precision, str(device))
    members = len(model.members) if isinstance(model, EnsembleNet) else 1
    if members > 1:
        model = StackedInferenceNet(model, dtype=getattr(torch, precision)).to(device)
    elif fast or precision != "float32":
        model = InferenceNet(model, dtype=getattr(torch, precision)).to(device)
    symmetries = _averaged_symmetries(game) if symmetrize else ()

    def evaluate(states):
        legal = game.legal(states)
        planes = game.encode(states)
        if distinct:
            rows, back = distinct_rows(planes, legal)
            if rows.size < len(states):
                priors, _, values = forward(planes[rows], legal[rows])
                return priors[back], legal, values[back]
        return forward(planes, legal)

    def forward(planes, legal):
        if symmetries:
            planes = np.concatenate([planes, *(s.apply_planes(planes) for s in symmetries)])
        with torch.inference_mode():
            logits, value_out = model(torch.from_numpy(planes).to(device))
            values = model.value(value_out)
            legal_t = torch.from_numpy(legal).to(device)
            if members == 1:
                priors, values = _priors_values(logits, values, legal_t, symmetries)
            else:  # [K, ...]: each member's, then their mean
                each = [_priors_values(lg, v, legal_t, symmetries) for lg, v in zip(logits, values)]
                priors = torch.stack([p for p, _ in each]).mean(dim=0)
                values = torch.stack([v.float() for _, v in each]).mean(dim=0)
        return priors.cpu().numpy(), legal, values.float().cpu().numpy()

    return evaluate


def _priors_values(logits: torch.Tensor, values: torch.Tensor, legal: torch.Tensor,
                   symmetries: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    """One network's ``logits [N, A]`` and ``values [N]`` for M positions (N = M, or (1 + S) M
    with their images under the S ``symmetries``) and ``legal [M, A]`` -> ``priors [M, A]``
    (masked softmax) and ``values [M]``, each averaged over the images."""
    if symmetries:  # [(1 + S) * M, A]: each image's logits back on the position's actions
        logits, values = _back_on_positions(logits, values, symmetries)
    priors = masked_policy(logits, legal.expand_as(logits))
    if symmetries:
        priors, values = priors.mean(dim=0), values.mean(dim=0)
    return priors, values


def distinct_rows(planes: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``planes [M, C, H, W]`` and ``legal [M, A]`` -> ``rows [U]``, the first row of each
    distinct (planes, legal) pair in order of appearance, and ``back [M]``, the index in ``rows``
    of each row's pair (so ``x[rows][back]`` repeats ``x``'s rows)."""
    m = len(planes)
    key = np.concatenate([np.ascontiguousarray(planes).reshape(m, -1).view(np.uint8),
                          np.ascontiguousarray(legal).reshape(m, -1).view(np.uint8)], axis=1)
    index: dict[bytes, int] = {}  # a row's bytes -> its pair's index in rows (np.unique on rows is far slower)
    first: list[int] = []
    back = np.empty(m, np.int64)
    for i, row in enumerate(key):
        back[i] = j = index.setdefault(row.tobytes(), len(index))
        if j == len(first):  # a pair not seen before
            first.append(i)
    return np.array(first, np.int64), back


def _averaged_symmetries(game) -> tuple:
    """The game's symmetries, for ``mcts.symmetrize``: each must map actions the same way in every
    position (its ``apply_targets`` is :class:`~tri.games.base.Symmetry`'s)."""
    symmetries = tuple(game.symmetries())
    if any(type(s).apply_targets is not Symmetry.apply_targets for s in symmetries):
        raise TriError(f"mcts.symmetrize: {game.name}'s symmetries map actions differently in each position; "
                       f"set it to false")
    return symmetries


def _back_on_positions(logits: torch.Tensor, values: torch.Tensor, symmetries) -> tuple[torch.Tensor, torch.Tensor]:
    """``logits [(1 + S) * M, A]`` and ``values [(1 + S) * M]`` of M positions followed by their
    images under each of the S symmetries -> ``logits [1 + S, M, A]`` on the positions' actions
    (image k's action ``i`` is the position's ``symmetries[k - 1].actions[i]``) and ``values
    [1 + S, M]``."""
    images = logits.reshape(1 + len(symmetries), -1, logits.shape[-1])
    back = images.clone()
    for k, s in enumerate(symmetries, start=1):
        back[k][:, torch.from_numpy(s.actions).to(logits.device)] = images[k]
    return back, values.reshape(1 + len(symmetries), -1)
