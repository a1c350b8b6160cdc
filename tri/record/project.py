"""``tri new DIR --game GAME``: a ready tri project, as users train in one.

The folder gets a ``params.yaml`` with the game's params written out in full, each setting with
its description beside it (:func:`tri.config.describe_params`); tri's ``dvc.yaml``, ``.dvcignore``,
``.gitignore`` and DVC settings (analytics off, caches and the local remote inside the project,
``dvc plots show``'s page from ``.dvc/plots.html``, which needs no network) from the checkout tri
runs from; git and DVC initialised; and a first commit, which holds the network generation 0
starts from (``--from``), the teacher (``--teacher``) and the games the project starts with
(``--games``: other runs' self-play folders, DVC-tracked, which the first generations' replay
windows hold as generation 0's self-play). ``tri loop --root DIR`` then runs
generations in it, each committed and tagged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tri import layout
from tri.config import Params
from tri.errors import TriError
from tri.games import make_game
from tri.params_yaml import describe_params
from tri.record.versioning import git_run
from tri.shards import check_shard

CHECKOUT = Path(__file__).resolve().parents[2]  # tri/record/project.py -> the checkout
PROJECT_FILES = ("dvc.yaml", ".dvcignore", ".gitignore", ".dvc/config", ".dvc/plots.html")
DVC_FILES = (".dvc/config", ".dvc/plots.html")  # copied after `dvc init` made .dvc/


INIT_CMD = "cmd: tri init --out models/gen-0000.pt\n"
STARTED_INIT = ("cmd: tri init --from models/start.pt --out models/gen-0000.pt\n"
                "    deps:\n      - models/start.pt   # tri new --from: the weights generation 0 starts from\n")


def started_dvc_yaml(text: str) -> str:
    """``dvc.yaml``'s text with its ``init`` stage starting from ``models/start.pt``."""
    if text.count(INIT_CMD) != 1:
        raise TriError("tri new: this checkout's dvc.yaml has no init stage of the form tri new --from expects")
    return text.replace(INIT_CMD, STARTED_INIT)


def new_project(root: Path, params: Params, *, checkout: Path = CHECKOUT, message: str | None = None,
                start: Path | None = None, teacher: Path | None = None, games: tuple[Path, ...] = ()) -> Path:
    """Create the project ``root`` (missing or empty) training ``params``; returns its path.
    ``start``: a checkpoint (already checked against ``params``) copied to ``models/start.pt``,
    committed with the project, whose weights generation 0 takes (the ``init`` stage says so).
    ``teacher``: a checkpoint (already checked against the game) copied to ``models/teacher.pt``,
    committed with the project, that plays every generation's self-play (the plan names it).
    ``games``: self-play folders (of ``params``' game; checked here) whose shards are copied to
    ``data/selfplay/start-01``, ``start-02``, ... in this order and tracked by DVC: generation 0's
    self-play, in the replay window of generations 1 to ``train.window - 1``.
    Raises :class:`TriError` (one line) if ``root`` has files, or the checkout lacks a project
    file, or a folder of ``games`` is not one, or git or DVC fail; nothing is left half made."""
    root = Path(root).resolve()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise TriError(f"tri new: {root} exists and is not an empty folder")
    missing = [name for name in PROJECT_FILES if not (checkout / name).is_file()]
    if missing:
        raise TriError(f"tri new: {checkout} is not a tri checkout (no {', '.join(missing)}); run tri from its clone")
    if len(games) > 99:
        raise TriError(f"tri new: {len(games)} folders of --games; at most 99")
    shards = [_check_games(Path(folder), params) for folder in games]
    created = not root.exists()
    try:
        root.mkdir(parents=True, exist_ok=True)
        for name in PROJECT_FILES[1:3]:
            shutil.copy(checkout / name, root / name)
        (root / "params.yaml").write_text(describe_params(params))
        if start is not None:
            layout.start_path(root).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(start, layout.start_path(root))
        if teacher is not None:
            layout.teacher_path(root).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(teacher, layout.teacher_path(root))
        git_run(root, "init", "-q")
        _dvc(root, "init", "-q")
        for name in DVC_FILES:  # DVC's caches inside the project; the offline page of `dvc plots show`
            shutil.copy(checkout / name, root / name)
        if shards:
            folders = [layout.start_games_dir(root, k + 1) for k in range(len(shards))]
            for folder, paths in zip(folders, shards):
                folder.mkdir(parents=True)
                for path in paths:
                    shutil.copy(path, folder / path.name)
            _dvc(root, "add", *(f.relative_to(root).as_posix() for f in folders))
        # After `dvc add`: DVC reads dvc.yaml, whose vars (the plan) tri loop writes later.
        dvc_yaml = (checkout / "dvc.yaml").read_text()
        (root / "dvc.yaml").write_text(started_dvc_yaml(dvc_yaml) if start is not None else dvc_yaml)
        git_run(root, "add", "-A")
        git_run(root, "commit", "-q", "-m", message or f"tri new: a {params.game.name} project")
    except BaseException:
        if created:
            shutil.rmtree(root, ignore_errors=True)
        else:
            for child in root.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        raise
    return root


def _dvc(root: Path, *args: str) -> None:
    """Run ``dvc ARGS`` in the project; raise :class:`TriError` with DVC's last line if it fails."""
    proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "DVC_NO_ANALYTICS": "1"}, timeout=3600)
    if proc.returncode != 0:
        raise TriError(f"tri new: dvc {args[0]} failed: {((proc.stderr + proc.stdout).strip().splitlines() or ['?'])[-1]}")


def _check_games(folder: Path, params: Params) -> list[Path]:
    """The files of the self-play folder ``folder`` (its shards of ``params``' game and their
    game summaries), checked; :class:`TriError` (one line) if it is not such a folder."""
    if not folder.is_dir():
        raise TriError(f"tri new --games {folder}: not a folder")
    positions, summaries = layout.shard_paths(folder), layout.games_paths(folder)
    if not positions:
        raise TriError(f"tri new --games {folder}: no self-play shards (shard-SSS.parquet) in it")
    missing = [p.name for p in positions if p.with_name(p.name.replace(".parquet", ".games.parquet")) not in summaries]
    if missing:
        raise TriError(f"tri new --games {folder}: {missing[0]} has no game summaries beside it "
                       "(shard-SSS.games.parquet)")
    game = make_game(params.game)
    for path in positions:
        check_shard(path, game)
    return positions + summaries
