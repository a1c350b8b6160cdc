"""The search's evaluator: a network as ``evaluate(states) -> (priors, legal, values)``
(:data:`tri.search.Evaluator`), on any device and in the number format ``mcts.precision``
resolves to, optionally averaged over the game's symmetries (``mcts.symmetrize``)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np
import torch

from tri.device import resolve_precision
from tri.errors import TriError
from tri.games.base import Symmetry
from tri.inference import InferenceNet, StackedInferenceNet
from tri.net import EnsembleNet, PolicyValueNet, masked_policy
from tri.ort import OrtEvaluation


def make_evaluator(model: PolicyValueNet | EnsembleNet, game, device: str | torch.device = "cpu", *,
                   fast: bool = False, precision: str = "float32", symmetrize: bool = False, distinct: bool = False,
                   cache: int = 0, onnx: bool = False):
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
    ``cache > 0``: remember the priors and values of that many positions, the most recently used
    (:class:`EvaluationCache`), across calls: a position the network has seen (a transposition in
    one tree, or a node of the last move's tree) is not evaluated again. Implies ``distinct``.
    The cache is the evaluator's ``cache`` attribute (None without one).
    ``onnx``: on the CPU in float32 and without ``symmetrize``, the snapshot with the masked
    softmax and the value decoding runs on ONNX Runtime (:class:`~tri.ort.OrtEvaluation`: about
    2.4x torch's speed at a player's one or two positions a call, and the same figures for a
    position whatever the batch); ignored otherwise. The evaluator's ``runtime`` attribute says
    which ran: ``"onnx"`` or ``"torch"``.

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
    ort = None
    if onnx and precision == "float32" and torch.device(device).type == "cpu" and not symmetrize:
        snapshot = model if isinstance(model, (InferenceNet, StackedInferenceNet)) else InferenceNet(model)
        ort = OrtEvaluation(snapshot, game.obs_shape, game.num_actions)
    symmetries = _averaged_symmetries(game) if symmetrize else ()
    remembered = EvaluationCache(cache) if cache else None

    def evaluate(states):
        legal = game.legal(states)
        planes = game.encode(states)
        if remembered is not None:
            return remembered.evaluate(planes, legal, forward)
        if distinct:
            rows, back = distinct_rows(planes, legal)
            if rows.size < len(states):
                priors, _, values = forward(planes[rows], legal[rows])
                return priors[back], legal, values[back]
        return forward(planes, legal)

    def forward(planes, legal):
        if ort is not None:
            priors, values = ort(planes, legal)
            return priors, legal, values
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

    evaluate.cache = remembered  # its hits and misses, for a caller that counts them
    evaluate.runtime = "onnx" if ort is not None else "torch"  # what runs the network, for reports
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
    key = _row_bytes(planes, legal)
    index: dict[bytes, int] = {}  # a row's bytes -> its pair's index in rows (np.unique on rows is far slower)
    first: list[int] = []
    back = np.empty(m, np.int64)
    for i, row in enumerate(key):
        back[i] = j = index.setdefault(row.tobytes(), len(index))
        if j == len(first):  # a pair not seen before
            first.append(i)
    return np.array(first, np.int64), back


def _row_bytes(planes: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``[M, bytes]``: each position's input planes and legal actions, the bytes that key it."""
    m = len(planes)
    return np.concatenate([np.ascontiguousarray(planes).reshape(m, -1).view(np.uint8),
                           np.ascontiguousarray(legal).reshape(m, -1).view(np.uint8)], axis=1)


class EvaluationCache:
    """The network's priors and values of the ``capacity`` positions used most recently, keyed by
    a 128-bit hash of their input planes and legal actions (lc0's NNCache, KataGo's NN cache). In a
    triangle search about a quarter of the positions a move evaluates are transpositions (two
    placements in either order), and the next two moves of a cycle of three search mostly
    positions the last move's tree evaluated. A cached position's figures are those the network
    gave it in an earlier call, the same up to float rounding (a convolution's kernel may change
    with the batch's size). About 1.5 kB a position for the triangle (its 360 priors)."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"an evaluation cache holds at least one position, not {capacity}")
        self.capacity = capacity
        self.entries: OrderedDict[bytes, tuple[np.ndarray, np.float32]] = OrderedDict()
        self.hits = self.misses = 0

    def evaluate(self, planes: np.ndarray, legal: np.ndarray, forward) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``planes [M, C, H, W]``, ``legal [M, A]`` -> ``(priors [M, A], legal, values [M])``,
        calling ``forward(planes [U, ...], legal [U, A])`` once on the U distinct positions not
        cached (not at all when every one is)."""
        m = len(planes)
        keys = [hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in _row_bytes(planes, legal)]
        new: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in self.entries:
                new.setdefault(key, i)
        self.misses += len(new)
        self.hits += m - len(new)
        found: dict[bytes, tuple[np.ndarray, np.float32]] = {}
        if new:
            first = np.fromiter(new.values(), np.int64, len(new))
            priors, _, values = forward(planes[first], legal[first])
            found = {key: (priors[j].copy(), values[j]) for j, key in enumerate(new)}
        entries = self.entries
        for key in keys:
            if key in entries:
                entries.move_to_end(key)
        found.update((key, entries[key]) for key in keys if key not in found)
        entries.update(found)
        out_priors = np.stack([found[key][0] for key in keys]).astype(np.float32, copy=False)
        out_values = np.array([found[key][1] for key in keys], np.float32)
        while len(entries) > self.capacity:
            entries.popitem(last=False)
        return out_priors, legal, out_values


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
