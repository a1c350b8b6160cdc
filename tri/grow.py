"""Growing a trained network without changing what it computes: a wider trunk (``net.channels``)
and more residual blocks (``net.blocks``) for ``tri new --from`` (:func:`tri.net.started_checkpoint`),
so a project can go on from a network with more capacity than it had instead of starting over.

The grown network's policy and value are the source's exactly (up to float summation order), in
evaluation and in training mode alike, and every new weight can learn:

- **wider** (as Net2Net's function-preserving widening, with zeros where it would copy): each
  new channel of the trunk has the fresh network's weights from the old channels and its own
  BatchNorm, so it computes features of its own, but every weight that *reads* a new channel
  (into any channel or head) is zero. The old channels and the heads see exactly what they saw.
  The weights from new channels into old ones and the heads get gradients from the first step,
  as the new channels' activations are not zero; those between new channels from the second.
- **deeper**: new blocks are appended after the source's, with the fresh network's convolutions
  and their last BatchNorm's scale and shift set to zero, so a new block adds zero to its input
  and, after the trunk's ReLU on a non-negative input, passes it on unchanged. The zero scale
  gets a gradient at once (the block's normalised output times the gradient above), and the
  block's convolutions learn as soon as it moves.

Only ``channels`` and ``blocks`` may grow; the heads' shapes must match (they are small, and
their hidden sizes change what they compute)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from tri.net import PolicyValueNet

GROWABLE = ("channels", "blocks")  # net settings a network may grow in; never shrink


def grow_refusal(source: dict, target: dict) -> str | None:
    """Why the network ``source`` (a :class:`~tri.config.NetParams` dump) cannot grow into
    ``target``'s shape, as ``setting theirs (params.yaml: ours)`` items; None if it can."""
    differ = [k for k in target if target[k] != source[k] and k not in GROWABLE]
    differ += [k for k in GROWABLE if target[k] < source[k]]
    return ", ".join(f"{k} {source[k]} (params.yaml: {target[k]})" for k in target if k in differ) or None


def grown_weights(source: PolicyValueNet, fresh: PolicyValueNet) -> dict[str, torch.Tensor]:
    """``fresh``'s state dict with the source's weights in it: ``fresh`` has at least the
    source's channels and blocks and the same heads (:func:`grow_refusal`). Weights of heads
    only one of them has (the occupancy head) are the fresh network's, or left out."""
    old, new = source.state_dict(), fresh.state_dict()
    out = {}
    for name, tensor in new.items():
        grown = tensor.clone()
        if name not in old:  # a block (or the occupancy head) the source lacks: fresh weights,
            if name.startswith("trunk.") and name.endswith(("bn2.weight", "bn2.bias")):
                grown.zero_()  # and a new block's output zero
            out[name] = grown
            continue
        mine = old[name]
        if mine.shape == grown.shape:
            out[name] = mine.clone()
            continue
        # A tensor of c trunk channels in a wider network: the source's where it had them.
        grown[tuple(slice(0, n) for n in mine.shape)] = mine
        if grown.dim() == 4:  # a convolution: nothing reads a new channel (the stem reads none)
            grown[:, mine.shape[1]:] = 0
        out[name] = grown
    return out
