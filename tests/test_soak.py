"""Soak: 12 tiny generations through the versioned flow in a git + DVC project.

One loop runs them (as ``tri loop --generations 12`` does). Then git has exactly the tags
``tri/gen-0001`` .. ``tri/gen-0012``, one commit each, each on the one before, each with the plan
of its own generation and the decision log up to it; ``dvc status`` and ``git status`` are
clean. Then, at the tag of generation 9
(DVC once read the plan's ``gen: 0008`` as the integer 8, so every project died at generation 8,
and again at 9, 18, 19, ...), ``dvc checkout && dvc repro --force`` re-creates the generation
byte for byte. (``test_versioning`` reads every plan up to 10,000 through DVC's loader;
this runs the whole loop past the first of those generations.)

Every generation is promoted (threshold -1e9), so each plays a new model; MLflow is off (tested
in ``test_flow``) to keep the generations fast.
"""

from __future__ import annotations

import difflib
import json
import shutil
import time
from pathlib import Path

import pytest

from tri import layout
from tri.record import versioning

from tests.pipeline_fixtures import run_generations
from tests.test_flow import ALWAYS, dvc, git, new_project

GENERATIONS = 12


def _tag(g: int) -> str:
    return f"tri/gen-{g:04d}"


def _files(root: Path, generation: int) -> dict[str, bytes]:
    """Every file of generation ``generation``'s outputs (dvc.yaml's outs, metrics, plots), by
    path relative to ``root``."""
    files = {}
    for out in layout.generation_outputs(root, generation):
        for path in sorted(out.rglob("*")) if out.is_dir() else [out]:
            if path.is_file():
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


@pytest.fixture(scope="module")
def soaked(tmp_path_factory, prefect_server):
    """The project after one loop of 12 generations (as ``tri loop --generations 12`` runs them),
    or the error that stopped it."""
    root = new_project(tmp_path_factory.mktemp("soak") / "project")
    t0 = time.perf_counter()
    try:  # a loop that raises is reported by the tests
        results, error = run_generations(root, ALWAYS, GENERATIONS), None
    except Exception as exc:
        results, error = [], f"{type(exc).__name__}: {exc}"
    return {"root": root, "results": results, "error": error, "seconds": round(time.perf_counter() - t0, 1)}


def _completed(soaked) -> None:
    assert soaked["error"] is None, f"the loop stopped: {soaked['error']}"
    assert [(r["generation"], r["promoted"]) for r in soaked["results"]] == [(n, True) for n in range(1, GENERATIONS + 1)]


def test_every_generation_is_tagged_and_clean(soaked):
    print("seconds:", soaked["seconds"], "per generation:", [round(r["seconds"], 1) for r in soaked["results"]])
    _completed(soaked)
    root = soaked["root"]
    assert git(root, "tag", "--list", "tri/*").split() == [_tag(g) for g in range(1, GENERATIONS + 1)]
    assert git(root, "status", "--porcelain") == ""
    assert versioning.dvc_status_clean(root)
    assert versioning.read_plan(root).generation == GENERATIONS
    assert versioning.next_generation(root) == GENERATIONS + 1
    for g in range(1, GENERATIONS + 1):
        # Each tag's plan names its own generation (the zero-padded ``gen`` DVC interpolates), its
        # decision log ends with it, and its commit is the previous tag's child: one commit per
        # generation, recording its lock file, its plan and its decision.
        assert versioning.parse_plan(git(root, "show", f"{_tag(g)}:models/generation.yaml")).generation == g
        log = git(root, "show", f"{_tag(g)}:models/promotions.jsonl").splitlines()
        assert [json.loads(line)["generation"] for line in log] == list(range(1, g + 1))
        if g > 1:
            assert git(root, "rev-parse", f"{_tag(g)}^").strip() == git(root, "rev-parse", f"{_tag(g - 1)}^{{commit}}").strip()
            changed = git(root, "diff", "--name-only", _tag(g - 1), _tag(g)).split()
            assert {"dvc.lock", "models/generation.yaml", "models/promotions.jsonl"} <= set(changed), (g, changed)


@pytest.mark.parametrize("generation", [9])
def test_dvc_repro_at_a_late_tag_is_byte_identical(soaked, tmp_path, generation):
    """The README's way back: ``git checkout TAG && dvc checkout``, in the project as the loop
    left it (later generations' files still there), then ``dvc repro --force``."""
    _completed(soaked)
    root = tmp_path / "clone"
    shutil.copytree(soaked["root"], root, symlinks=True)
    git(root, "checkout", "-q", _tag(generation))
    proc = dvc(root, "checkout")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lock = (root / "dvc.lock").read_bytes()
    assert lock == git(root, "show", f"{_tag(generation)}:dvc.lock").encode()
    before = _files(root, generation)
    # Self-play shards (2 of each kind), the candidate, metrics + losses, the arena result.
    assert len(before) == 8, sorted(before)
    assert before == _files(soaked["root"], generation)  # what the flow wrote

    proc = dvc(root, "repro", "--force")
    assert proc.returncode == 0, proc.stderr[-2000:]
    after = _files(root, generation)
    assert sorted(after) == sorted(before)
    assert [p for p in before if after[p] != before[p]] == []
    # Every dependency, param and output hash: the lock file the generation committed.
    changed = "".join(difflib.unified_diff(lock.decode().splitlines(True),
                                           (root / "dvc.lock").read_text().splitlines(True), "tag", "repro"))
    assert not changed, changed
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""
    assert dvc(root, "status").stdout.strip().endswith("up to date.")
