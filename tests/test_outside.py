"""``tri loop`` writes nothing outside the project.

The real command runs one tiny generation of a fresh git + DVC project (its own temporary
Prefect server, MLflow on) from another, empty folder, with ``HOME`` and ``TMPDIR`` pointing at
empty folders and no tool's settings in the environment. Every call that creates or writes a
file is traced (``strace -f --seccomp-bpf``: only the traced calls stop the process, so the
command runs near its own speed, 58 s against 226 s alone with every call stopped); the only
paths allowed outside the project are the few listed in :func:`allowed`, each with its reason.
Without strace, a scan for files changed after the start (under ``HOME``, ``TMPDIR``,
``/var/tmp`` and ``/tmp``) stands in.
"""

from __future__ import annotations

import codecs
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.test_flow import new_project

STRACE = shutil.which("strace")
CALLS = "openat,open,creat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlink,symlinkat,truncate"
# Also traced, to know each process's working folder (relative paths of mkdir, rename, ...).
CWD_CALLS = "chdir,fchdir,clone,clone3,fork,vfork"
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_TMPFILE"}


# --- reading strace's log ------------------------------------------------------------------------

def _split_args(text: str) -> list[str]:
    """A call's arguments, split at top-level commas (not inside strings, structs, ``<...>``)."""
    args, depth, quoted, escaped, start = [], 0, False, False, 0
    for i, ch in enumerate(text):
        if quoted:  # inside "...": only an unescaped quote matters
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "({[<":
            depth += 1
        elif ch in ")}]>":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    args.append(text[start:].strip())
    return args


def _string(arg: str) -> str:
    """A C string argument (``"..."``) decoded (anything else as it is: reported, not lost)."""
    if not arg.startswith('"'):
        return arg
    body = arg[1:arg.rindex('"')]
    return codecs.escape_decode(body.encode("utf-8", "surrogateescape"))[0].decode("utf-8", "surrogateescape")


def _fd_path(arg: str) -> str | None:
    """The path strace's ``-y`` prints after a descriptor (``3</a/b>``, ``AT_FDCWD</a>``)."""
    m = re.fullmatch(r"[^<]*<(.*)>", arg.strip())
    return m.group(1) if m else None


def _records(log: str) -> list[tuple[int, str, list[str], str]]:
    """(pid, call, arguments, result) of every call in an ``strace -f`` log, in the order they
    finished; a call interrupted by another process's (``<unfinished ...>``) is joined with its
    ``<... resumed>`` rest."""
    pending, records = {}, []
    for line in log.splitlines():
        pid_text, _, text = line.partition(" ")
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if text.endswith("<unfinished ...>"):
            pending[pid] = text[: -len("<unfinished ...>")].rstrip()
            continue
        resumed = re.match(r"<\.\.\. \w+ resumed>(.*)", text)
        if resumed:
            text = pending.pop(pid, "") + resumed.group(1)
        m = re.fullmatch(r"(\w+)\((.*)\)\s+= (.*)", text)
        if m:
            records.append((pid, m.group(1), _split_args(m.group(2)), m.group(3)))
    return records


def writes(log: str, start_cwd: Path) -> dict[str, str]:
    """Every path a successful call created or wrote (absolute, normalised) -> the call."""
    records = _records(log)
    # Working folders: a child shares its parent's (CLONE_FS: a thread) or starts with a copy.
    parent = {}
    for pid, call, args, result in records:
        if call in ("clone", "clone3", "fork", "vfork") and result.split()[0].isdigit():
            parent[int(result.split()[0])] = (pid, "CLONE_FS" in " ".join(args))
    fs_of, cwd = {}, {}

    def fs(pid: int) -> int:
        if pid not in fs_of:
            if pid in parent:
                ppid, shared = parent[pid]
                if shared:
                    fs_of[pid] = fs(ppid)
                else:
                    fs_of[pid] = pid
                    cwd[pid] = cwd[fs(ppid)]
            else:  # the traced command itself
                fs_of[pid] = pid
                cwd[pid] = str(start_cwd)
        return fs_of[pid]

    def at(pid: int, dirfd: str | None, path: str) -> str:
        base = _fd_path(dirfd) if dirfd is not None else None
        return os.path.normpath(os.path.join(base or cwd[fs(pid)], path))

    found = {}
    for pid, call, args, result in records:
        if result.startswith("-1") or result.startswith("?"):  # failed, or never returned
            continue
        fs(pid)
        path = None
        if call == "chdir":
            cwd[fs(pid)] = at(pid, None, _string(args[0]))
        elif call == "fchdir":
            cwd[fs(pid)] = _fd_path(args[0])
        elif call in ("open", "openat", "creat"):
            flags = "O_CREAT|O_WRONLY|O_TRUNC" if call == "creat" else args[1 if call == "open" else 2]
            if WRITE_FLAGS & set(flags.split("|")):
                path = _fd_path(result) or at(pid, args[0] if call == "openat" else None,
                                              _string(args[1 if call == "openat" else 0]))
        elif call in ("mkdir", "truncate"):
            path = at(pid, None, _string(args[0]))
        elif call == "mkdirat":
            path = at(pid, args[0], _string(args[1]))
        elif call in ("rename", "link", "symlink"):
            path = at(pid, None, _string(args[1]))  # the target; a symlink's contents are not a write
        elif call in ("renameat", "renameat2", "linkat"):
            path = at(pid, args[2], _string(args[3]))
        elif call == "symlinkat":
            path = at(pid, args[1], _string(args[2]))
        if path:
            found.setdefault(path.removesuffix(" (deleted)"), call)
    return found


# --- what may be written outside the project -----------------------------------------------------

def _under(path: str, folder: str | Path) -> bool:
    return path == str(folder) or path.startswith(str(folder).rstrip("/") + "/")


def allowed(path: str, project: Path, tmpdir: Path) -> bool:
    parts = Path(path).parts
    return (
        any(_under(path, p) for p in {str(project), os.path.realpath(project)})
        # The null device, and shared memory and terminals (semaphores of multiprocessing, ptys):
        # not files on a disk.
        or path == "/dev/null" or _under(path, "/dev/shm") or _under(path, "/dev/pts")
        # The kernel's interfaces (a process's own settings), not files.
        or _under(path, "/proc")
        # The package's own caches next to its sources: Python's bytecode and numba's compiled
        # kernels (.nbi/.nbc), in __pycache__ folders (with their temporary files, renamed in).
        or parts[-1] == "__pycache__" or "__pycache__" in parts[:-1]
        # Transient files in TMPDIR (SQLite's etilqs_* journals, tempfile's), gone by the end.
        or (any(_under(path, t) for t in {str(tmpdir), os.path.realpath(tmpdir)}) and not os.path.lexists(path))
        # fontconfig's system cache: matplotlib runs fc-list once per font cache, and as root
        # fontconfig writes its cache here (as any other user, under XDG_CACHE_HOME).
        or _under(path, "/var/cache/fontconfig")
    )


# --- without strace: what changed after a marker -------------------------------------------------

def changed_since(marker: Path, roots: list[Path], exclude: list[Path]) -> list[str]:
    """Files and folders under ``roots`` (not the roots themselves, nothing under ``exclude``)
    modified at or after ``marker``'s time."""
    since = marker.stat().st_mtime_ns
    skip = {os.path.realpath(p) for p in exclude}
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if os.path.realpath(os.path.join(folder, d)) not in skip]
            for name in dirs + files:
                path = os.path.join(folder, name)
                try:
                    if os.lstat(path).st_mtime_ns >= since:
                        found.append(path)
                except FileNotFoundError:  # gone meanwhile
                    pass
    return sorted(found)


def test_changed_since_lists_what_was_written_after_the_marker(tmp_path):
    old, new, skipped = tmp_path / "old.txt", tmp_path / "sub" / "new.txt", tmp_path / "skipped"
    old.write_text("before")
    os.utime(old, ns=(time.time_ns() - 10**10,) * 2)
    skipped.mkdir()
    os.utime(skipped, ns=(time.time_ns() - 10**10,) * 2)
    marker = tmp_path.parent / f"{tmp_path.name}.marker"
    marker.touch()
    new.parent.mkdir()
    new.write_text("after")
    (skipped / "inside.txt").write_text("after, but excluded")
    assert changed_since(marker, [tmp_path], [skipped]) == [str(new.parent), str(new)]


# --- the command ---------------------------------------------------------------------------------

def test_the_command_writes_nothing_outside_the_project(tmp_path):
    home, tmpdir, elsewhere = tmp_path / "home", tmp_path / "tmp", tmp_path / "elsewhere"
    for d in (home, tmpdir, elsewhere):
        d.mkdir()
    project = new_project(tmp_path / "project")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "MLFLOW_", "TRI_", "DVC_", "XDG_"))
           and k not in ("MPLCONFIGDIR", "TORCHINDUCTOR_CACHE_DIR")}
    env.update(HOME=str(home), TMPDIR=str(tmpdir), TRI_WORKERS="1")
    command = [sys.executable, "-m", "tri.cli", "loop", "--root", str(project), "--generations", "1"]
    log = tmp_path / "strace.log"
    marker = tmp_path / "marker"
    marker.touch()
    if STRACE:
        command = [STRACE, "-f", "--seccomp-bpf", "-qq", "-y", "-e", f"trace={CALLS},{CWD_CALLS}",
                   "-o", str(log), *command]
    proc = subprocess.run(command, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["generation", "self-play", "mean"], proc.stdout
    rows = [line for line in lines[1:] if not line.startswith("  gen-")]  # not the progress lines
    assert rows[0].split()[0] == "1", proc.stdout

    if STRACE:
        outside = sorted(f"{path} ({call})" for path, call in writes(log.read_text(), elsewhere).items()
                         if not allowed(path, project, tmpdir))
    else:  # pytest's own temporary folders (this session's and any other's) are not the command's
        basetemp = tmp_path.parent
        base = basetemp.parent if basetemp.parent.name.startswith("pytest-of-") else basetemp
        outside = [p for p in changed_since(marker, [home, tmpdir, Path("/var/tmp"), Path("/tmp")], [base, project])
                   if not allowed(p, project, tmpdir)]
    assert outside == [], "written outside the project:\n" + "\n".join(outside)
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == []
    assert sorted(str(p.relative_to(tmpdir)) for p in tmpdir.rglob("*")) == []
    assert list(elsewhere.iterdir()) == []
