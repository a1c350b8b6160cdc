"""The plan of a generation, the project lock and the params-file rule (no Prefect needed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tri import layout
from tri.record import versioning
from tri.errors import TriError

from tests.pipeline_fixtures import PARAMS, with_section

REPO = Path(__file__).resolve().parents[1]

LATEST = with_section(PARAMS, "train", continue_from="latest")


def log(root, *entries):
    path = layout.promotions_log(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"generation": g, "promoted": p}) + "\n" for g, p in entries))


def touch_candidate(root, g):
    path = layout.candidate_path(root, g)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")


def test_plan_follows_the_decision_log(tmp_path):
    assert versioning.make_plan(PARAMS, tmp_path, 1) == versioning.Plan(1, "models/gen-0000.pt", "models/gen-0000.pt")
    log(tmp_path, (1, True), (2, False), (3, True), (4, False))
    for g in range(1, 5):
        touch_candidate(tmp_path, g)
    # The player is the last promoted candidate before the generation.
    assert versioning.make_plan(PARAMS, tmp_path, 5).player == "models/candidates/gen-0003.pt"
    assert versioning.make_plan(PARAMS, tmp_path, 3).player == "models/candidates/gen-0001.pt"
    # Training starts from the player (best), or from the previous candidate (latest).
    assert versioning.make_plan(PARAMS, tmp_path, 5).start == "models/candidates/gen-0003.pt"
    assert versioning.make_plan(LATEST, tmp_path, 5).start == "models/candidates/gen-0004.pt"
    assert versioning.make_plan(LATEST, tmp_path, 1).start == "models/gen-0000.pt"
    assert versioning.next_generation(tmp_path) == 5


def test_plan_file_round_trip(tmp_path):
    plan = versioning.Plan(7, "models/candidates/gen-0005.pt", "models/candidates/gen-0006.pt")
    versioning.write_plan(tmp_path, plan)
    assert versioning.read_plan(tmp_path) == plan
    text = layout.plan_path(tmp_path).read_text()
    assert 'gen: "0007"' in text and "generation: 7" in text  # what dvc.yaml interpolates


def test_a_teacher_plays_self_play_in_the_plan(tmp_path):
    """``models/teacher.pt`` (``tri new --teacher``) plays self-play (``selfplay_model``, which
    dvc.yaml's selfplay stage names) while the best model still defends; a plan written before
    teachers (no ``selfplay_model``) reads as the player's self-play."""
    assert versioning.make_plan(PARAMS, tmp_path, 1).selfplay_model == "models/gen-0000.pt"
    layout.teacher_path(tmp_path).parent.mkdir(parents=True)
    layout.teacher_path(tmp_path).write_bytes(b"x")
    plan = versioning.make_plan(PARAMS, tmp_path, 1)
    assert (plan.player, plan.teacher, plan.selfplay_model) == ("models/gen-0000.pt", "models/teacher.pt",
                                                                 "models/teacher.pt")
    versioning.write_plan(tmp_path, plan)
    assert versioning.read_plan(tmp_path) == plan
    assert 'selfplay_model: "models/teacher.pt"' in layout.plan_path(tmp_path).read_text()
    layout.plan_path(tmp_path).write_text('generation: 3\ngen: "0003"\nplayer: "models/gen-0000.pt"\n'
                                          'start: "models/gen-0000.pt"\nwindow: []\n')
    old = versioning.read_plan(tmp_path)
    assert (old.teacher, old.selfplay_model) == (None, "models/gen-0000.pt")
    assert "--model ${selfplay_model}" in (REPO / "dvc.yaml").read_text()


def test_a_teacher_is_refused_by_a_dvc_yaml_from_before_teachers(tmp_path, monkeypatch):
    """A project whose dvc.yaml (copied when it was made) has self-play played by ``${player}``
    would record the wrong model in dvc.lock: a teacher there is a one-line error."""
    monkeypatch.setattr(versioning, "enabled", lambda root: True)
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text().replace("${selfplay_model}", "${player}"))
    layout.teacher_path(tmp_path).parent.mkdir(parents=True)
    layout.teacher_path(tmp_path).write_bytes(b"x")
    with pytest.raises(TriError, match="from an older tri.*tri new --teacher") as info:
        versioning.begin(PARAMS, tmp_path, 1)
    assert "\n" not in str(info.value) and not layout.plan_path(tmp_path).exists()


def test_dvc_reads_every_plan_as_written(tmp_path):
    """Generations 0..299 and the digit boundaries up to 10,001 through the file tri writes and
    the loader DVC uses for ``vars`` (YAML 1.2, where a bare ``0008`` is the integer 8; YAML 1.1
    read ``0010``..``0017`` as octal): ``gen`` stays the zero-padded string."""
    from dvc.fs import LocalFileSystem
    from dvc.parsing.context import Context

    fs, path = LocalFileSystem(), str(layout.plan_path(tmp_path))
    for g in [*range(300), 777, 999, 1000, 1001, 7777, 8888, 9999, 10_000, 10_001]:
        plan = versioning.Plan(g, f"models/candidates/gen-{max(g - 1, 0):04d}.pt", "models/gen-0000.pt")
        versioning.write_plan(tmp_path, plan)
        context = Context.load_from(fs, path)
        assert (context.select("gen").value, context.select("generation").value) == (f"{g:04d}", g), g
        assert versioning.read_plan(tmp_path) == plan


def test_a_damaged_plan_is_a_one_line_error(tmp_path):
    path = layout.plan_path(tmp_path)
    path.parent.mkdir(parents=True)
    for text in ("gen: 0008\ngeneration: 8\nplayer: a\nstart: b\n", "[1, 2\n", "generation: x\n"):
        path.write_text(text)
        with pytest.raises(TriError, match="not a plan tri wrote") as info:
            versioning.read_plan(tmp_path)
        assert "\n" not in str(info.value)


_HOLDER = """
import sys, time
from pathlib import Path
from tri.record import versioning
with versioning.project_lock(Path(sys.argv[1])):
    print("holding", flush=True)
    time.sleep(60)
"""


def test_the_lock_refuses_a_second_generation_and_dies_with_its_holder(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "holding"
    with pytest.raises(TriError, match=rf"already running in .*\(pid {proc.pid}\)"):
        with versioning.project_lock(tmp_path):
            pass
    os.kill(proc.pid, signal.SIGKILL)  # a crashed run never leaves the project locked
    proc.wait()
    with versioning.project_lock(tmp_path):
        pass


def test_the_lock_is_reentrant_in_its_thread_only(tmp_path):
    """The loop holds the lock and each of its generations takes it again (same thread); any
    other thread, like any other process, is refused."""
    import threading

    refused = []

    def other():
        try:
            with versioning.project_lock(tmp_path):
                pass
        except TriError as exc:
            refused.append(str(exc))

    with versioning.project_lock(tmp_path):
        with versioning.project_lock(tmp_path):
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        thread = threading.Thread(target=other)  # still held after the inner exit
        thread.start()
        thread.join()
    assert len(refused) == 2 and all("another generation is already running" in r for r in refused)
    other()  # released after the outer exit
    assert len(refused) == 2


def test_a_versioned_project_runs_on_its_params_yaml(tmp_path):
    versioning.check_params_file(tmp_path, str(tmp_path / "other.yaml"))  # a plain folder: any file
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    versioning.check_params_file(tmp_path, None)
    versioning.check_params_file(tmp_path, "params.yaml")
    with pytest.raises(TriError, match="DVC project: it runs on its params.yaml"):
        versioning.check_params_file(tmp_path, str(tmp_path / "other.yaml"))


def test_archived_outputs_are_recognised_from_any_working_directory(tmp_path, monkeypatch):
    root, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = layout.selfplay_dir(root, 1)
    out.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    rel = layout.selfplay_dir(versioning._HERE, 1)
    assert not versioning._tracked(root, rel)  # present, not archived yet
    (root / f"{rel}.dvc").write_text("outs: []\n")
    assert versioning._tracked(root, rel)
    assert versioning._tracked(root, layout.selfplay_dir(versioning._HERE, 2))  # absent: nothing to do
