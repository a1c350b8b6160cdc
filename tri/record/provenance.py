"""Where a record comes from: the tags every MLflow run of tri carries (project, version, seeds,
git commit, DVC hashes of the inputs), params as flat ``section.key`` values, file hashes.

Records are portable: no tag or param holds an absolute path (nor the user: MLflow records
"unknown" without an ``mlflow.user`` tag); the project is named by an id (:func:`project_id`)
and its folder's name (``tri.project_name``)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

import tri
from tri import layout
from tri.config import Params


def project_id(root: Path) -> str:
    """A short id of the project folder (runs and versions of one project carry it)."""
    return hashlib.sha256(str(root).encode()).hexdigest()[:16]


def git_tags(root: Path) -> dict[str, str]:
    """The project's git commit (and whether tracked files differ from it); nothing if git or the
    repository is missing."""
    def git(*args: str) -> str | None:
        try:
            # --no-optional-locks: never take the index lock (others may be using the repository)
            proc = subprocess.run(["git", "--no-optional-locks", "-C", str(root), *args], capture_output=True,
                                  text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return {}
    dirty = git("status", "--porcelain", "--untracked-files=no")
    tags = {"tri.git.commit": commit, "mlflow.source.git.commit": commit}
    if dirty is not None:
        tags["tri.git.dirty"] = str(bool(dirty)).lower()
    return tags


def dvc_tags(root: Path) -> dict[str, str]:
    """Hashes of the ``models/`` and ``data/`` inputs of the stages in ``dvc.lock`` (if any)."""
    lock = root / "dvc.lock"
    try:
        text = lock.read_bytes()
        stages = (yaml.safe_load(text) or {}).get("stages", {})
    except (OSError, yaml.YAMLError, AttributeError):
        return {}
    tags = {"tri.dvc.lock_md5": hashlib.md5(text).hexdigest()}
    for stage, body in stages.items() if isinstance(stages, dict) else ():
        for dep in (body or {}).get("deps", []) or []:
            path, digest = dep.get("path", ""), dep.get("md5") or dep.get("etag") or dep.get("checksum")
            if digest and str(path).startswith(("models/", "data/")):
                key = re.sub(r"[^\w./ -]", "_", f"tri.dvc.{stage}.{path}")[:250]
                tags[key] = str(digest)
    return tags


def base_tags(root: Path, params: Params, kind: str) -> dict[str, str]:
    """The tags of every run of ``kind`` (``loop``, ``generation``, ``eval``) of the project ``root``."""
    return {"tri.kind": kind, "tri.project": project_id(root), "tri.project_name": Path(root).resolve().name,
            "tri.version": tri.__version__, "tri.game": params.game.name,
            "tri.seed.net": str(params.net.seed),
            "tri.seed.selfplay": str(params.selfplay.seed), "tri.seed.train": str(params.train.seed),
            "tri.seed.arena": str(params.arena.seed), **git_tags(root), **dvc_tags(root), **teacher_tags(root)}


def teacher_tags(root: Path) -> dict[str, str]:
    """``tri.teacher``: the model id of the project's teacher (``tri new --teacher``), which plays
    its self-play; nothing without one."""
    from tri.net import load_checkpoint  # torch: only for a project with a teacher

    teacher = layout.teacher_path(root)
    if not teacher.is_file():
        return {}
    try:
        return {"tri.teacher": load_checkpoint(teacher, ensemble=True).model_id}
    except Exception:  # a damaged file: self-play fails on it with its own error; the record says so
        return {"tri.teacher": "unreadable"}


def flatten_params(params: Params) -> dict[str, str]:
    """``section.key`` -> value as text. Long values (the triangle's template list) are left
    out: the game config is logged whole as an artifact and identified by ``game.config_sha256``."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
            return
        text = json.dumps(value) if isinstance(value, (list, tuple)) else str(value)
        if len(text) <= 250:
            out[prefix] = text

    data = params.model_dump(mode="json")
    walk("", data)
    game = json.dumps(data["game"], sort_keys=True).encode()
    out["game.config_sha256"] = hashlib.sha256(game).hexdigest()[:16]
    return out
