"""Soak: 12 tiny generations through the versioned flow in a git + DVC project.

After each generation: git has exactly the tags ``tri/gen-0001`` .. ``tri/gen-N``, ``dvc status``
and ``git status`` are clean, and the plan names generation N. Then, at the tag of generation 9
(DVC once read the plan's ``gen: 0008`` as the integer 8, so every project died at generation 8,
and again at 9, 18, 19, ...), ``dvc checkout && dvc repro --force`` re-creates the generation
byte for byte. (``test_versioning`` reads every plan up to 10,000 through DVC's loader;
this runs the whole loop past the first of those generations.)

Every generation is promoted (threshold -1e9), so each plays a new model; MLflow is off (tested
in ``test_flow``) to keep the generations fast.
"""

from __future__ import annotations

import difflib
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
    """The project after 12 generations, run one at a time, with what was seen after each."""
    root = new_project(tmp_path_factory.mktemp("soak") / "project")
    seen = []
    for n in range(1, GENERATIONS + 1):
        t0 = time.perf_counter()
        try:  # a generation that raises, or a check that does, is reported by the tests
            results = run_generations(root, ALWAYS, 1)
            seen.append({"generation": n, "results": [(r["generation"], r["promoted"]) for r in results],
                         "tags": git(root, "tag", "--list", "tri/*").split(),
                         "dvc_status_clean": versioning.dvc_status_clean(root),
                         "git_status": git(root, "status", "--porcelain"),
                         "plan": versioning.read_plan(root).generation,
                         "seconds": round(time.perf_counter() - t0, 1)})
        except Exception as exc:
            seen.append({"generation": n, "error": f"{type(exc).__name__}: {exc}"})
            break
    return {"root": root, "seen": seen}


def _completed(soaked) -> None:
    last = soaked["seen"][-1]
    assert len(soaked["seen"]) == GENERATIONS and "error" not in last, f"stopped at generation {last}"


def test_every_generation_is_tagged_and_clean(soaked):
    print("seconds per generation:", [s.get("seconds") for s in soaked["seen"]])
    for s in map(dict, soaked["seen"]):
        n = s.pop("generation")
        s.pop("seconds", None)
        assert s == {"results": [(n, True)], "tags": [_tag(g) for g in range(1, n + 1)], "dvc_status_clean": True,
                     "git_status": "", "plan": n}, f"after generation {n}"
    _completed(soaked)
    root = soaked["root"]
    assert versioning.next_generation(root) == GENERATIONS + 1
    # Each tag's plan names its own generation (the zero-padded ``gen`` DVC interpolates).
    for g in (8, 9, 10, 11, 12):
        assert versioning.parse_plan(git(root, "show", f"{_tag(g)}:models/generation.yaml")).generation == g


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
