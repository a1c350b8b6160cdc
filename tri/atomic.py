"""Crash-safe files: everything tri writes goes to a temporary file in the destination's folder
and is renamed over the destination when complete, so a crash mid-write leaves the last good
file (and at worst a hidden ``.NAME.*.tmp`` file, never a partial ``NAME``); and lock files that
a crashed holder never leaves held (:func:`exclusive`); and :func:`sha256`, a file's content hash.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tri.errors import TriError


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """``with replacing(path) as tmp:`` write ``tmp``; on success it is renamed over ``path``
    (readable by all, like a normal file); on error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | Path, data: bytes) -> None:
    with replacing(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    with replacing(path) as tmp:
        tmp.write_text(text)


def write_with(path: str | Path, writer: Callable[[Path], None]) -> None:
    """Atomically create ``path`` with ``writer(tmp_path)``."""
    with replacing(path) as tmp:
        writer(tmp)


def copy(src: str | Path, dst: str | Path) -> None:
    """Copy ``src`` over ``dst``; ``dst`` is always either the old or the new file."""
    with replacing(dst) as tmp:
        shutil.copyfile(src, tmp)


@contextmanager
def exclusive(path: str | Path, busy: str) -> Iterator[None]:
    """Hold an OS lock on ``path`` (which notes the holder's pid) while inside, or raise
    :class:`TriError` with ``busy``, its ``{holder}`` replaced by the holder (``pid 123``), if
    another holds it. The OS releases it when its holder dies, however it dies."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TriError(busy.replace("{holder}", path.read_text().strip() or "another process")) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}".encode())
        yield
    finally:
        os.close(fd)  # closing releases the lock


def sha256(path: str | Path) -> str:
    """The sha256 of a file, read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
