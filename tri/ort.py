"""A player's evaluation on ONNX Runtime: a float32 search snapshot
(:class:`~tri.inference.InferenceNet`, or :class:`~tri.inference.StackedInferenceNet` for an
ensemble) with the evaluator's masked softmax, value decoding and ensemble mean, exported to ONNX
in memory as one graph and run by ONNX Runtime's CPU provider: the players' path on a CPU
(:func:`tri.players.player_evaluator`, through :func:`tri.evaluator.make_evaluator`'s ``onnx``).

Why: a player evaluates one to a few positions per network call, where torch's CPU convolutions
spend more time dispatching than computing. For the triangle champion (64 channels, 4 blocks) on
a 2-core Intel Xeon (AVX512), a call of 1 / 2 / 4 positions takes 0.33 / 0.56 / 1.05 ms
against torch's 0.79 / 1.31 / 1.78. A move also runs no torch operation at all, so torch's
OpenMP threads, which spin after each parallel region, never take a core from ONNX Runtime's
(with both libraries on two threads, that contention made moves slower than torch alone). ONNX
Runtime's kernels give a position the same figures whatever the batch and the thread count
(torch's may pick another kernel for another batch size, and round differently); against torch
they differ by float rounding (about 1e-5 on the logits).

The export traces the graph once with torch's TorchScript-based exporter (which needs the
``onnx`` package); nothing is written to disk.

ONNX Runtime 1.32 writes a device id and a telemetry database under ``~/.cache/Microsoft`` as it
is imported, unless ``ORT_DISABLE_TELEMETRY`` is set before: this module sets it before its
import (tri sends no telemetry and keeps no state outside the project).
"""

from __future__ import annotations

import io
import os
import warnings

import numpy as np
import torch
from torch import nn

from tri.inference import InferenceNet, StackedInferenceNet
from tri.net import PolicyValueNet, masked_policy

os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # read as onnxruntime loads: nothing in ~/.cache/Microsoft
import onnxruntime  # noqa: E402  (after the variable above)

OPSET = 17  # ONNX operator set of the export (supported by ONNX Runtime >= 1.14)


class _Evaluation(nn.Module):
    """``forward(planes [B, C, H, W], legal [B, A] bool) -> (priors [B, A], values [B])``: the
    snapshot's logits masked to the legal actions and softmaxed (zeros for a row with none, as
    :func:`tri.net.masked_policy` gives), its values decoded (:meth:`PolicyValueNet.value`), and
    for a stacked ensemble ``[K, B, ...]`` both averaged over the K members."""

    def __init__(self, snapshot: InferenceNet | StackedInferenceNet):
        super().__init__()
        self.snapshot, self.stacked = snapshot, isinstance(snapshot, StackedInferenceNet)

    def forward(self, planes: torch.Tensor, legal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value_out = self.snapshot(planes)
        values = PolicyValueNet.value(self.snapshot, value_out).float()
        priors = masked_policy(logits, legal.expand_as(logits))
        if self.stacked:
            priors, values = priors.mean(dim=0), values.mean(dim=0)
        return priors, values


class OrtEvaluation:
    """``snapshot``'s evaluation (:class:`_Evaluation`) for positions of ``obs_shape`` ``(C, H,
    W)`` with ``num_actions`` actions, run by an ONNX Runtime session on ``threads`` CPU threads
    (default: torch's intra-op threads at construction, so ``OMP_NUM_THREADS`` and ``tri bench
    move --threads`` govern both). The snapshot must be float32: bfloat16 convolutions stay with
    torch, whose CPU kernels compute them natively."""

    def __init__(self, snapshot: InferenceNet | StackedInferenceNet, obs_shape: tuple[int, int, int],
                 num_actions: int, threads: int | None = None):
        if snapshot.dtype != torch.float32:
            raise ValueError(f"ONNX Runtime runs a float32 snapshot, not {snapshot.dtype}")
        buffer = io.BytesIO()
        example = (torch.zeros(2, *obs_shape), torch.ones(2, num_actions, dtype=torch.bool))
        batch = {"planes": {0: "batch"}, "legal": {0: "batch"}, "priors": {0: "batch"}, "values": {0: "batch"}}
        with warnings.catch_warnings():  # the tracer's notes (the snapshot's chunking) and the exporter's deprecation
            warnings.simplefilter("ignore")
            torch.onnx.export(_Evaluation(snapshot.cpu().eval()), example, buffer, input_names=["planes", "legal"],
                              output_names=["priors", "values"], opset_version=OPSET, dynamic_axes=batch,
                              dynamo=False)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: no notes on the console of tri play
        self.session = onnxruntime.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])

    def __call__(self, planes: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``planes [M, C, H, W]``, ``legal [M, A]`` -> ``(priors [M, A], values [M])``, float32."""
        priors, values = self.session.run(None, {"planes": np.ascontiguousarray(planes, np.float32),
                                                 "legal": np.ascontiguousarray(legal, bool)})
        return priors, values
