"""Promotion: the candidate replaces the best model atomically (a crash at any point leaves the
old best, byte for byte), a rejected candidate is kept aside, every decision is one log line,
damaged inputs are refused, and the ``tri promote`` command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tri import promote
from tri.arena_result import ArenaResult, PlayerReport
from tri.errors import TriError
from tri.net import load_checkpoint

from tests.pipeline_fixtures import save_model, tri_cli


def arena_json(path: Path, promote_it: bool) -> Path:
    result = ArenaResult(game="triangle", a=PlayerReport("cand.pt", 5.0, 4.0, 6.0, 20.0),
                         b=PlayerReport("best.pt", 3.0, 2.0, 4.0, 15.0), games=8, rule="ci_lower > 0",
                         promote=promote_it, diff_mean=2.0 if promote_it else -0.5,
                         diff_low=0.5 if promote_it else -1.5, diff_high=3.5 if promote_it else 0.5,
                         wins=6, ties=1, losses=1, seeds=list(range(8)), scores_a=[5.0] * 8, scores_b=[3.0] * 8)
    path.write_text(result.to_json() + "\n")
    return path


@pytest.fixture
def project(tmp_path):
    models = tmp_path / "models"
    best, candidate = models / "best.pt", models / "candidates" / "gen-0001.pt"
    old = save_model(best, generation=0, seed=0)
    new = save_model(candidate, generation=1, seed=1)
    assert best.read_bytes() != candidate.read_bytes()
    return {"root": tmp_path, "best": best, "candidate": candidate, "rejected": models / "rejected" / "gen-0001.pt",
            "log": models / "promotions.jsonl", "old": old, "new": new, "best_bytes": best.read_bytes(),
            "candidate_bytes": candidate.read_bytes(), "promote": arena_json(tmp_path / "yes.json", True),
            "reject": arena_json(tmp_path / "no.json", False)}


def run(p, decision: str, **kwargs):
    return promote.run(p[decision], p["candidate"], p["best"], rejected=p["rejected"], log=p["log"], **kwargs)


def log_lines(p) -> list[dict]:
    return [json.loads(line) for line in p["log"].read_text().splitlines()]


def listing(folder: Path) -> set[str]:
    return {str(q.relative_to(folder)) for q in folder.rglob("*")}


def assert_best_untouched(p) -> None:
    assert p["best"].read_bytes() == p["best_bytes"]
    assert load_checkpoint(p["best"]).model_id == p["old"].model_id


def test_promotion_replaces_best_and_logs_one_line(project):
    p = project
    r = run(p, "promote")
    assert r.promoted and r.kept == str(p["best"]) and r.best == str(p["best"])
    assert p["best"].read_bytes() == p["candidate_bytes"]
    assert p["candidate"].read_bytes() == p["candidate_bytes"]  # the candidate stays where it was
    assert not p["rejected"].exists()
    [entry] = log_lines(p)
    assert entry["promoted"] is True and entry["generation"] == 1
    assert entry["model_id"] == p["new"].model_id and entry["rule"] == "ci_lower > 0"
    # Portable: paths relative to the project (the log's models/ folder is in it), no wall time.
    assert (entry["candidate"], entry["kept"]) == ("models/candidates/gen-0001.pt", "models/best.pt")
    assert "time" not in entry and str(p["root"]) not in p["log"].read_text()
    assert (entry["diff_mean"], entry["diff_low"], entry["diff_high"]) == (2.0, 0.5, 3.5)
    assert (entry["candidate_mean"], entry["best_mean"]) == (5.0, 3.0)
    # The new best's pool starts with its own games of this arena.
    assert (entry["best_model_id"], entry["best_pooled_mean"], entry["best_pooled_games"]) == (p["new"].model_id, 5.0, 8)
    assert (r.best_model_id, r.best_pooled_mean, r.best_pooled_games) == (p["new"].model_id, 5.0, 8)
    assert not [q for q in p["best"].parent.iterdir() if q.name.startswith(".")]


def test_rejection_keeps_the_candidate_aside(project):
    p = project
    r = run(p, "reject", generation=7)
    assert not r.promoted and r.kept == str(p["rejected"])
    assert p["rejected"].read_bytes() == p["candidate_bytes"]
    assert_best_untouched(p)
    [entry] = log_lines(p)
    assert entry["promoted"] is False and entry["generation"] == 7 and entry["kept"] == "models/rejected/gen-0001.pt"
    assert (p["root"] / entry["kept"]).read_bytes() == p["candidate_bytes"]  # read back relative to the project
    # The best model stays best: its pool is its games of this arena.
    assert (entry["best_model_id"], entry["best_pooled_mean"], entry["best_pooled_games"]) == (p["old"].model_id, 3.0, 8)


def test_decisions_append_to_the_log(project):
    p = project
    run(p, "reject")
    first = p["log"].read_text()
    run(p, "promote")
    text = p["log"].read_text()
    assert text.startswith(first) and text.endswith("\n")
    assert [e["promoted"] for e in log_lines(p)] == [False, True]
    # A log whose last line lacks its newline still gets whole lines.
    p["log"].write_text(text.rstrip("\n"))
    run(p, "reject")
    assert [e["promoted"] for e in log_lines(p)] == [False, True, False]


def test_damaged_or_missing_candidate_is_refused(project):
    p = project
    p["candidate"].write_bytes(p["candidate_bytes"][: len(p["candidate_bytes"]) // 2])
    with pytest.raises(TriError, match="not a readable tri checkpoint"):
        run(p, "promote")
    assert_best_untouched(p)
    assert not p["log"].exists() and not p["rejected"].exists()
    p["candidate"].unlink()
    with pytest.raises(TriError, match="not found"):
        run(p, "promote")
    assert_best_untouched(p)


def test_bad_arena_result_is_refused(project):
    p = project
    p["promote"].write_text('{"promote": true}')
    with pytest.raises(TriError, match="not an arena result"):
        run(p, "promote")
    p["promote"].unlink()
    with pytest.raises(TriError, match="not found"):
        run(p, "promote")
    assert_best_untouched(p)
    assert not p["log"].exists()


def _half_copy_then_fail(src, dst, *args, **kwargs):
    data = Path(src).read_bytes()
    Path(dst).write_bytes(data[: len(data) // 2])
    raise OSError(28, "No space left on device")


def _replace_fails(src, dst, *args, **kwargs):
    raise OSError(5, "Input/output error")


@pytest.mark.parametrize("where, fake", [(shutil, "copyfile"), (os, "replace")], ids=["copy", "rename"])
def test_crash_mid_promotion_leaves_the_old_best(project, monkeypatch, where, fake):
    p = project
    before = listing(p["root"])
    monkeypatch.setattr(where, fake, {"copyfile": _half_copy_then_fail, "replace": _replace_fails}[fake])
    with pytest.raises(OSError):
        run(p, "promote")
    monkeypatch.undo()
    assert_best_untouched(p)
    # No partial file under the best's name, no temporary left, no decision logged.
    assert listing(p["root"]) == before
    assert not list(p["best"].parent.glob(".best.pt.*.tmp"))
    assert not p["log"].exists()
    # Once the fault is gone, the promotion goes through.
    run(p, "promote")
    assert p["best"].read_bytes() == p["candidate_bytes"]


def test_hard_crash_mid_copy_leaves_the_old_best(project):
    """The process dies (no clean-up) after writing half of the new best: the best model is
    still the old file; at most a hidden temporary remains."""
    p = project
    script = textwrap.dedent(f"""
        import os, shutil, sys
        from pathlib import Path
        from tri import promote

        def die_half_way(src, dst, *args, **kwargs):
            data = Path(src).read_bytes()
            with open(dst, "wb") as f:
                f.write(data[: len(data) // 2])
                f.flush()
            os._exit(9)

        shutil.copyfile = die_half_way
        promote.run(Path({str(p['promote'])!r}), Path({str(p['candidate'])!r}), Path({str(p['best'])!r}),
                    rejected=Path({str(p['rejected'])!r}), log=Path({str(p['log'])!r}))
    """)
    before = listing(p["root"])
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    assert_best_untouched(p)
    new_files = listing(p["root"]) - before
    assert all(Path(name).name.startswith(".best.pt.") and name.endswith(".tmp") for name in new_files), new_files
    assert not p["log"].exists()


def test_cli_promote(project):
    p = project
    args = ["--candidate", p["candidate"], "--best", p["best"], "--rejected", p["rejected"], "--log", p["log"]]
    proc = tri_cli("promote", "--arena", p["reject"], *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"rejected: {p['candidate']} -> {p['rejected']}"
    assert_best_untouched(p)
    proc = tri_cli("promote", "--arena", p["promote"], *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"promoted: {p['candidate']} -> {p['best']}"
    assert p["best"].read_bytes() == p["candidate_bytes"]
    assert [e["promoted"] for e in log_lines(p)] == [False, True]
    # Run from the project with relative paths: the same relative paths in the log.
    rel = ["--candidate", "models/candidates/gen-0001.pt", "--best", "models/best.pt",
           "--rejected", "models/rejected/gen-0001.pt", "--log", "models/promotions.jsonl"]
    proc = tri_cli("promote", "--arena", p["reject"], *rel, cwd=p["root"])
    assert proc.returncode == 0, proc.stderr
    last = log_lines(p)[-1]
    assert (last["candidate"], last["kept"]) == ("models/candidates/gen-0001.pt", "models/rejected/gen-0001.pt")
