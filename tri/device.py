"""Where the network runs, and the thread rule that keeps CPU results machine-independent.

- :func:`resolve_device`: ``TRI_DEVICE`` (``Runtime.device``) to a torch device name. ``auto``
  picks CUDA when torch sees a GPU, then Apple's MPS, else the CPU; a named device must exist.
  Every stage resolves its device here and nowhere else.
- :func:`torch_threads`: run a block with torch on ``n`` threads (1 by default) and restore the
  previous count after. On the CPU, a network's float sums depend on how many threads split
  them, so every stage whose results are recorded (self-play, arena, evaluation, the rendered
  game) plays on one thread, and training on ``train.threads``, a param: the same bytes on any
  machine. (A GPU gives other bytes than the CPU: results are reproducible per device.)
- :func:`training_autocast`: the forward pass's precision in training (``train.precision``):
  bf16 autocast on CUDA or the CPU, or nothing.
- :func:`resolve_precision`: ``mcts.precision`` or ``train.precision`` to the number format used
  on a device: ``auto`` is bfloat16 where the hardware computes it natively, else float32.
- :func:`synchronize`: wait for the device's queued work (for timing; nothing on the CPU).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path

import torch

from tri.errors import TriError

_NAMED = ("cpu", "cuda", "mps")


def resolve_device(name: str = "auto") -> str:
    """``auto`` -> ``cuda`` if available, else ``mps`` if available, else ``cpu``; ``cpu``,
    ``cuda``, ``cuda:N`` and ``mps`` are returned as given once checked to exist. Raises
    :class:`TriError` (one line) for an unknown or absent device."""
    text = (name or "auto").strip().lower()
    if text == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"
    kind, colon, index = text.partition(":")
    if kind not in _NAMED or (colon and (kind != "cuda" or not index.isdigit())):
        raise TriError(f"TRI_DEVICE={name!r}: expected auto, cpu, cuda, cuda:N or mps")
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise TriError(f"TRI_DEVICE={name!r}: torch sees no CUDA device (use auto or cpu)")
        if index and int(index) >= count:
            raise TriError(f"TRI_DEVICE={name!r}: torch sees {count} CUDA device(s), numbered from 0")
    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise TriError(f"TRI_DEVICE={name!r}: torch sees no MPS device (use auto or cpu)")
    return text


@contextlib.contextmanager
def torch_threads(n: int = 1) -> Iterator[None]:
    """Torch on ``n`` threads inside the block, the previous count restored after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def training_autocast(device: str, precision: str) -> contextlib.AbstractContextManager:
    """The forward pass's number format in training: ``torch.autocast(..., dtype=torch.bfloat16)``
    on a CUDA device or the CPU when ``precision`` (``train.precision``, resolved by
    :func:`resolve_precision`) is ``bfloat16``, else a block that changes nothing (MPS trains in
    float32)."""
    kind = torch.device(device).type
    if precision == "bfloat16" and kind in ("cuda", "cpu"):
        return torch.autocast(kind, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def synchronize(device: str) -> None:
    """Wait until ``device`` has finished its queued work (CUDA and MPS run asynchronously), so
    a clock read after it measures the work; nothing to wait for on the CPU."""
    kind = torch.device(device).type
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps":
        torch.mps.synchronize()


@functools.lru_cache(maxsize=4)
def cpu_prefers_bfloat16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether bfloat16 convolutions run faster than float32 ones on this CPU, by the ``flags``
    and ``vendor_id`` of ``cpuinfo`` (False where that file is absent): AMX-BF16 (Intel's matrix
    tiles, built for it; not measured here), or AVX512-BF16 on an AMD CPU. Measured with ``tri
    bench search`` (float32 -> bfloat16): an AMD EPYC with AVX512-BF16 1.6-2.2x the evaluations per
    second; an Intel Xeon whose flags show AVX512-BF16 but no AMX (model 207 in a VM, 2026-12-02)
    0.66x the self-play positions per second, 303 -> 200 (oneDNN's AVX512-BF16 convolutions 1.6x
    slower than its float32 ones there), and training 0.9x; a CPU without either emulates
    bfloat16, several times slower."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return False
    flags, vendor = set(), ""
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
        elif line.startswith("vendor_id") and not vendor:
            vendor = line.partition(":")[2].strip()
    return "amx_bf16" in flags or ("avx512_bf16" in flags and vendor == "AuthenticAMD")


def resolve_precision(precision: str, device: str) -> str:
    """``mcts.precision`` or ``train.precision`` on ``device`` (a resolved torch device name):
    ``float32`` and ``bfloat16`` as given; ``auto`` -> ``bfloat16`` on a CUDA GPU that supports it
    or a CPU where it is faster than float32 (:func:`cpu_prefers_bfloat16`), else ``float32`` (MPS
    included)."""
    if precision != "auto":
        return precision
    kind = torch.device(device).type
    if kind == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    if kind == "cpu":
        return "bfloat16" if cpu_prefers_bfloat16() else "float32"
    return "float32"
