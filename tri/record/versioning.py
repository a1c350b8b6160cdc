"""Versioning a project's generations with DVC and git.

``dvc.yaml`` describes ONE generation (stages ``init``, ``selfplay``, ``train``, ``arena``) whose
paths and inputs come from the plan file ``models/generation.yaml`` (DVC ``vars``). Promotion is
the step between generations, outside the DAG (DVC rejects cycles). A generation ``N`` goes:

1. :func:`begin`: write the plan of ``N`` (its number, the model that plays = the best model's
   immutable file, the network training starts from) and archive generation ``N-1``'s outputs
   with ``dvc add`` (they leave ``dvc.lock`` when the plan moves on, and later generations still
   read them: the replay window, the player, the start network);
2. the stages run (through Prefect, or ``dvc repro``);
3. :func:`record`: ``dvc commit`` so ``dvc.lock`` describes exactly what ran;
4. promotion, then :func:`finish`: track ``models/best.pt``, and commit to git with the tag
   ``tri/gen-NNNN``. From that tag, ``dvc checkout && dvc repro --force`` re-creates generation
   ``N``'s outputs byte for byte.

A project without ``.dvc/`` (a plain folder) skips all of this: the files are the same.
Plans hold paths relative to the project, so the lock file does not depend on where it lives.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from tri import atomic, layout
from tri.config import Params, Runtime
from tri.errors import TriError

_HERE = Path(".")


@dataclass(frozen=True)
class Plan:
    """What generation ``generation`` reads: ``player`` defends in the arena and plays self-play,
    unless the project has a ``teacher`` (``tri new --teacher``), which then plays self-play;
    training starts from ``start`` and reads the self-play of ``window`` (the earlier
    generations of its replay window, each ``"PATH MD5"`` with the hash of its ``.dvc`` file,
    or ``"PATH"`` in a plain folder) and its own. Paths are relative to the project (posix).
    ``dvc.yaml``'s train stage records ``window`` as a param, so ``dvc.lock`` pins exactly the
    data training read, whatever later generations left in ``data/selfplay``."""

    generation: int
    player: str
    start: str
    window: tuple[str, ...] = ()
    teacher: str | None = None

    @property
    def gen(self) -> str:
        return f"{self.generation:04d}"

    @property
    def selfplay_model(self) -> str:
        """The network that plays this generation's self-play (dvc.yaml's ``${selfplay_model}``)."""
        return self.teacher or self.player

    def to_vars(self) -> dict:
        return {"generation": self.generation, "gen": self.gen, "player": self.player, "start": self.start,
                "selfplay_model": self.selfplay_model, "window": list(self.window)}


def _rel(path: Path) -> str:
    return Path(path).as_posix()


def decisions(root: Path) -> list[dict]:
    """The decision log (``models/promotions.jsonl``), oldest first. Its paths are relative to
    the project (absolute in logs written before): ``root / entry["kept"]`` reads either."""
    log = layout.promotions_log(root)
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def next_generation(root: Path) -> int:
    """One past the last generation with a recorded decision (1 for a new project)."""
    return max((d["generation"] for d in decisions(root)), default=0) + 1


def make_plan(params: Params, root: Path, generation: int) -> Plan:
    """The plan of ``generation``: the player is the last promoted candidate before it (or the
    initial network); training starts from the previous candidate (``train.continue_from:
    latest``) or from the player; the teacher is ``models/teacher.pt`` if the project has one."""
    promoted = [d["generation"] for d in decisions(root) if d["promoted"] and d["generation"] < generation]
    player = layout.candidate_path(_HERE, max(promoted)) if promoted else layout.model_path(_HERE, 0)
    start = player
    previous = layout.candidate_path(_HERE, generation - 1)
    if params.train.continue_from == "latest" and generation > 1 and (Path(root) / previous).exists():
        start = previous
    teacher = layout.teacher_path(_HERE) if layout.teacher_path(root).is_file() else None
    return Plan(generation, _rel(player), _rel(start), teacher=_rel(teacher) if teacher else None)


def plan_text(plan: Plan) -> str:
    """The plan file's text. Every string is double-quoted (JSON), which YAML 1.1 (PyYAML) and
    1.2 (DVC's ruamel loader) both read as a string: a bare ``gen: 0008`` is the integer 8 to
    DVC, and ``${gen}`` would then name ``gen-8``."""
    lines = ["# The generation dvc.yaml describes; written by tri between generations (do not edit)."]
    lines += [f"{k}: {json.dumps(v)}" for k, v in plan.to_vars().items()]
    return "\n".join(lines) + "\n"


def parse_plan(text: str, source: str = "models/generation.yaml") -> Plan:
    """A plan read as DVC reads it (its own YAML loader), checked to be one tri wrote."""
    from dvc.utils.serialize import parse_yaml

    try:
        data = parse_yaml(text, source)
        window = data.get("window", [])
        if not isinstance(window, list):
            raise ValueError(f"window {window!r} is not a list")
        plays = str(data.get("selfplay_model", data["player"]))  # absent in plans written before teachers
        plan = Plan(int(data["generation"]), str(data["player"]), str(data["start"]), tuple(map(str, window)),
                    teacher=plays if plays != str(data["player"]) else None)
        if data["gen"] != plan.gen:
            raise ValueError(f"gen {data['gen']!r} is not {plan.gen!r}")
    except Exception as exc:  # a damaged or hand-edited file
        raise TriError(f"{source}: not a plan tri wrote ({type(exc).__name__}: {exc}); delete it and "
                       "run again (tri writes it before each generation)") from None
    return plan


def read_plan(root: Path) -> Plan | None:
    path = layout.plan_path(root)
    if not path.exists():
        return None
    return parse_plan(path.read_text(), str(path))


def write_plan(root: Path, plan: Plan) -> None:
    atomic.write_text(layout.plan_path(root), plan_text(plan))


# --- the project lock ---------------------------------------------------------------------------

_held = threading.local()  # lock files this thread holds, with their depth


@contextmanager
def project_lock(root: Path):
    """Hold the project's generation lock, or raise :class:`TriError` if another process (or
    thread) holds it. The loop holds it for its whole run and each generation takes it again:
    in the thread that holds it, it is re-entrant. It is an OS file lock, so a crashed run never
    leaves it stuck."""
    path = layout.lock_path(root)
    key = str(Path(path).resolve())
    depth = getattr(_held, "depth", None)
    if depth is None:
        depth = _held.depth = {}
    if key in depth:
        depth[key] += 1
        try:
            yield
        finally:
            depth[key] -= 1
        return
    busy = (f"another generation is already running in {Path(root).resolve()} ({{holder}}); "
            "wait for it or stop it first")
    with atomic.exclusive(path, busy):
        depth[key] = 1
        try:
            yield
        finally:
            del depth[key]


# --- DVC and git ---------------------------------------------------------------------------------

def enabled(root: Path) -> bool:
    """Whether the project is versioned: a DVC project with a ``dvc.yaml``, unless the setting
    ``TRI_VERSIONING=false`` turns versioning off (the files are the same either way)."""
    root = Path(root)
    return Runtime().versioning and (root / ".dvc").is_dir() and (root / "dvc.yaml").is_file()


def check_params_file(root: Path, params_file: str | None) -> None:
    """A versioned project runs on its own params.yaml: DVC records that file's sections, so a
    run from another file would leave a lock file that lies."""
    if params_file is None or not enabled(root):
        return
    path = Path(params_file) if Path(params_file).is_absolute() else Path(root) / params_file
    if path.resolve() != (Path(root) / "params.yaml").resolve():
        raise TriError(f"{Path(root).resolve()} is a DVC project: it runs on its params.yaml (edit that "
                       f"file; DVC records it), not on {params_file}")


@contextmanager
def _repo(root: Path):
    """DVC's Python API on the project; DVC resolves some paths (its stage cache) from the
    current directory, so it runs from the project folder (no stage runs meanwhile)."""
    import contextlib
    import logging

    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    from dvc.repo import Repo

    with contextlib.chdir(root), Repo(str(Path(root).resolve())) as repo:
        # Not its progress lines and "git add ..." hints (tri commits itself); after Repo(),
        # which sets DVC's log level.
        logging.getLogger("dvc").setLevel(logging.WARNING)
        yield repo


def _tracked(root: Path, path: Path) -> bool:
    """Already archived (its ``.dvc`` file exists), or nothing to archive."""
    return (Path(root) / f"{path}.dvc").exists() or not (Path(root) / path).exists()


def begin(params: Params, root: Path, generation: int) -> Plan:
    """Write the plan of ``generation``: archive the outputs of the generations before it that
    ``dvc.lock`` no longer holds (once the plan has moved dvc.yaml's paths past them), then
    name the training window with their hashes."""
    plan = make_plan(params, root, generation)
    if plan.teacher and enabled(root) and "${selfplay_model}" not in (Path(root) / "dvc.yaml").read_text():
        raise TriError(f"{Path(root).resolve()}: has {plan.teacher} but its dvc.yaml (from an older tri) has self-play "
                       "played by ${player}; make the project again with tri new --teacher")
    write_plan(root, plan)
    if enabled(root) and generation > 1:
        archive = [p for g in range(1, generation) for p in layout.generation_outputs(_HERE, g)
                   if not _tracked(root, p)]
        if archive:
            with _repo(root) as repo:
                repo.add([str(p) for p in archive])
    plan = replace(plan, window=_window(root, generation, params.train.window))
    write_plan(root, plan)
    return plan


def _window(root: Path, generation: int, size: int) -> tuple[str, ...]:
    """The earlier self-play folders training reads in ``generation`` (see :class:`Plan`)."""
    entries = []
    for folder in layout.window_dirs(Path(root), generation - 1, size - 1):
        rel = _rel(folder.relative_to(root))
        try:
            outs = yaml.safe_load((Path(root) / f"{rel}.dvc").read_text())["outs"]
            entries.append(f"{rel} {outs[0]['md5']}")
        except FileNotFoundError:  # not archived: a plain folder
            entries.append(rel)
        except (yaml.YAMLError, KeyError, IndexError, TypeError):
            raise TriError(f"{rel}.dvc: not a .dvc file DVC wrote (restore it with git)") from None
    return tuple(entries)


def record(root: Path) -> None:
    """Make ``dvc.lock`` describe the generation that just ran (hashes of every param section,
    dependency and output the stages declare) and store the outputs in the DVC cache. Only
    dvc.yaml's stages: the archived ``.dvc`` files of earlier generations never change, and
    committing them all again took a time that grew with the run (5.2 s a generation at
    generation 28, against 2.2 s for dvc.yaml's stages alone)."""
    if not enabled(root):
        return
    with _repo(root) as repo:
        repo.commit("dvc.yaml", force=True)


def finish(root: Path, generation: int, message: str) -> str | None:
    """Track the best model and commit the generation to git with the tag ``tri/gen-NNNN``;
    returns the commit, or None if the project is not versioned."""
    if not enabled(root):
        return None
    with _repo(root) as repo:
        repo.add([str(layout.best_path(_HERE))])
    return git_commit(root, message, tag=f"tri/gen-{generation:04d}")


def git_run(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``git ARGS`` in ``root`` (tri's identity unless GIT_AUTHOR_*/GIT_COMMITTER_* say otherwise);
    :class:`TriError` with git's last line when it fails and ``check``."""
    env = {**os.environ, "GIT_AUTHOR_NAME": os.environ.get("GIT_AUTHOR_NAME", "tri"),
           "GIT_AUTHOR_EMAIL": os.environ.get("GIT_AUTHOR_EMAIL", "tri@localhost"),
           "GIT_COMMITTER_NAME": os.environ.get("GIT_COMMITTER_NAME", "tri"),
           "GIT_COMMITTER_EMAIL": os.environ.get("GIT_COMMITTER_EMAIL", "tri@localhost")}
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=env, timeout=60)
    if check and proc.returncode != 0:
        raise TriError(f"git {' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}")
    return proc


def git_commit(root: Path, message: str, *, tag: str | None = None) -> str:
    """Commit what a generation ran on and changed (params.yaml and dvc.yaml as they were, the
    plan, the lock file, ``.dvc`` files, the decision log, DVC's ``.gitignore`` files) and tag it."""
    paths = ["params.yaml", "dvc.yaml", "dvc.lock", _rel(layout.plan_path(_HERE)), _rel(layout.promotions_log(_HERE))]
    root = Path(root)
    tracked = sorted(_rel(p.relative_to(root)) for top in ("data", "models") if (root / top).is_dir()
                     for name in ("*.dvc", ".gitignore") for p in (root / top).rglob(name))
    git_run(root, "add", "--", *[p for p in paths if (root / p).exists()], *tracked)
    if git_run(root, "diff", "--cached", "--quiet", check=False).returncode != 0:
        git_run(root, "commit", "-q", "-m", message)
    commit = git_run(root, "rev-parse", "HEAD").stdout.strip()
    if tag:
        git_run(root, "tag", "-f", tag, commit)
    return commit


def uncommitted(root: Path) -> list[str]:
    """The paths ``git status`` shows changed or untracked (each file), none in a plain folder:
    after a stop, the plan of the generation in flight and the earlier generations' outputs it
    archived (``.dvc`` files), which its commit takes when it is run again."""
    if not enabled(root):
        return []
    lines = git_run(root, "status", "--porcelain", "-uall").stdout.splitlines()
    return [line[3:] for line in lines if line.strip()]


def recover(root: Path) -> int | None:
    """Finish the record of a generation whose decision was logged but which was stopped (or
    killed) before its git commit and tag: commit and tag it now. Call with the project lock
    held. Returns the generation finished, or None if there was nothing to do."""
    if not enabled(root):
        return None
    last = next_generation(root) - 1
    tag = f"tri/gen-{last:04d}"
    if last < 1 or git_run(root, "tag", "--list", tag).stdout.strip():
        return None
    finish(root, last, f"tri: generation {last} (recorded after an interrupted run)")
    return last


def dvc_status_clean(root: Path) -> bool:
    """True when ``dvc status`` reports nothing changed (the lock file matches the workspace)."""
    with _repo(root) as repo:
        return not repo.status()

