"""The best model's pooled arena mean in the decision log (tri/promote.py): over every arena game
the model has played as the best, across generations, restarting at a promotion with the new
best's own games; read back from old logs (absolute paths, a wall time, no pool) too."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from tri import layout, promote
from tri.arena_result import ArenaResult, PlayerReport
from tri.record import publish, report, versioning

from tests.pipeline_fixtures import save_model

# generation: (candidate's scores, best's scores, promoted); arenas of different sizes, so the
# pool must weight by games.
ARENAS = {1: ([1.0, 2.0], [10.0, 12.0], False),
          2: ([3.0, 3.0, 3.0, 3.0], [8.0, 8.0, 8.0, 8.0], False),
          3: ([20.0, 22.0], [9.0, 9.0], True),
          4: ([5.0, 5.0, 5.0, 5.0], [17.0, 19.0, 21.0, 23.0], False)}


def write_arena(root: Path, g: int, a: list[float], b: list[float], promoted: bool, *, paired: bool = True) -> Path:
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    result = ArenaResult(game="triangle", a=PlayerReport("candidate", mean_a, mean_a, mean_a, 10.0),
                         b=PlayerReport("best", mean_b, mean_b, mean_b, 10.0), games=len(a), rule="mean > 0",
                         promote=promoted, paired=paired, diff_mean=mean_a - mean_b, seeds=list(range(len(a))),
                         scores_a=a, scores_b=b)
    path = layout.arena_path(root, g)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.to_json() + "\n")
    return path


@pytest.fixture
def project(tmp_path):
    initial = save_model(layout.best_path(tmp_path), generation=0, seed=0)
    candidates = {g: save_model(layout.candidate_path(tmp_path, g), generation=g, seed=g) for g in ARENAS}
    for g, (a, b, promoted) in ARENAS.items():
        write_arena(tmp_path, g, a, b, promoted)
    return {"root": tmp_path, "initial": initial.model_id, "ids": {g: c.model_id for g, c in candidates.items()}}


def decide(root: Path, g: int) -> promote.PromoteResult:
    return promote.run(layout.arena_path(root, g), layout.candidate_path(root, g), layout.best_path(root),
                       rejected=layout.rejected_path(root, g), log=layout.promotions_log(root), generation=g)


def log_lines(root: Path) -> list[dict]:
    return [json.loads(line) for line in layout.promotions_log(root).read_text().splitlines()]


# The best model after each generation and its pool: the initial network's games of arenas 1-2
# (2 + 4 games), then candidate 3's own games of arena 3, then those and its games of arena 4.
EXPECTED = {1: ("initial", 11.0, 2), 2: ("initial", (22 + 32) / 6, 6), 3: (3, 21.0, 2), 4: (3, (42 + 80) / 6, 6)}


def test_pooled_best_mean_across_generations_with_a_promotion(project):
    root = project["root"]
    ids = {"initial": project["initial"], **project["ids"]}
    for g in ARENAS:
        r = decide(root, g)
        model, mean, games = EXPECTED[g]
        assert (r.best_model_id, r.best_pooled_games) == (ids[model], games)
        assert r.best_pooled_mean == pytest.approx(mean)
    lines = log_lines(root)
    assert [(e["best_model_id"], e["best_pooled_games"]) for e in lines] == [
        (ids[m], n) for m, _, n in EXPECTED.values()]
    assert [e["best_pooled_mean"] for e in lines] == pytest.approx([m for _, m, _ in EXPECTED.values()])
    # The arena's own figure for the best stays as it was: this arena's seeds only.
    assert [e["best_mean"] for e in lines] == [11.0, 8.0, 9.0, 20.0]
    # The learning curve's "best" line is the pooled mean of the best model after each decision.
    points = report.learning_curve(root)
    assert [p.generation for p in points] == [1, 2, 3, 4]
    assert [p.best_pooled for p in points] == pytest.approx([m for _, m, _ in EXPECTED.values()])
    assert [p.best_pooled_games for p in points] == [2, 6, 2, 6]
    assert [p.best for p in points] == [11.0, 8.0, 9.0, 20.0]


def old_line(root: Path, g: int, promoted: bool, model_id: str, a: list[float], b: list[float]) -> str:
    """A decision log line as tri wrote them before: absolute paths, a wall time, no pool."""
    kept = layout.best_path(root) if promoted else layout.rejected_path(root, g)
    return json.dumps({"time": "2026-11-23T17:39:14Z", "generation": g,
                       "candidate": str(layout.candidate_path(root, g)), "model_id": model_id, "promoted": promoted,
                       "rule": "mean > 0", "diff_mean": 0.0, "diff_low": 0.0, "diff_high": 0.0, "score_rate": 0.0,
                       "candidate_mean": statistics.fmean(a), "best_mean": statistics.fmean(b), "kept": str(kept)})


def test_old_log_lines_are_still_read(project):
    """A project whose log was written before: its lines have absolute paths and a time; the next
    decision replays the pool from the arena results, and every reader of the log works."""
    root = project["root"]
    log = layout.promotions_log(root)
    log.write_text("".join(old_line(root, g, ARENAS[g][2], project["ids"][g], *ARENAS[g][:2]) + "\n" for g in (1, 2)))
    r = decide(root, 3)  # promoted: the pool restarts with candidate 3's games
    assert (r.best_model_id, r.best_pooled_mean, r.best_pooled_games) == (project["ids"][3], 21.0, 2)
    r = decide(root, 4)
    assert r.best_pooled_mean == pytest.approx(EXPECTED[4][1]) and r.best_pooled_games == 6
    lines = log_lines(root)
    assert ["time" in e for e in lines] == [True, True, False, False]
    # Paths, absolute (old) or relative (new), read back the same way: root / text.
    assert [root / e["kept"] for e in lines] == [layout.rejected_path(root, 1), layout.rejected_path(root, 2),
                                                 layout.best_path(root), layout.rejected_path(root, 4)]
    assert [root / e["candidate"] for e in lines] == [layout.candidate_path(root, g) for g in ARENAS]
    # The readers: the plan and the next generation, publishing, the learning curve.
    assert [d["generation"] for d in versioning.decisions(root)] == [1, 2, 3, 4]
    assert versioning.next_generation(root) == 5
    assert publish._promotion(root, publish._promotions(root), None, tagged={1, 2, 3, 4})[0] == 3
    points = report.learning_curve(root)
    assert [p.best_pooled for p in points] == pytest.approx([m for _, m, _ in EXPECTED.values()])


def test_old_log_with_a_missing_arena_result(project):
    """A generation whose arena result is gone adds nothing to the pool; the rest still counts."""
    root = project["root"]
    layout.promotions_log(root).write_text(
        "".join(old_line(root, g, False, project["ids"][g], *ARENAS[g][:2]) + "\n" for g in (1, 2)))
    layout.arena_path(root, 1).unlink()
    write_arena(root, 3, [1.0, 1.0], [14.0, 14.0], False)
    r = decide(root, 3)
    assert (r.best_model_id, r.best_pooled_games) == (project["initial"], 6)
    assert r.best_pooled_mean == pytest.approx((32 + 28) / 6)


def test_a_new_best_model_restarts_the_pool(project):
    """If the model in models/best.pt is not the one the log's pool belongs to (the best was
    replaced by hand), its pool starts over with this arena."""
    root = project["root"]
    decide(root, 1)
    save_model(layout.best_path(root), generation=0, seed=99)
    r = decide(root, 2)
    assert (r.best_pooled_mean, r.best_pooled_games) == (8.0, 4)


def test_two_player_arenas_keep_no_pool(project):
    """Two-player arenas score the best against a different candidate each time: no pool."""
    root = project["root"]
    write_arena(root, 1, [1.0, 0.5], [0.0, 0.5], False, paired=False)
    r = decide(root, 1)
    assert (r.best_model_id, r.best_pooled_mean, r.best_pooled_games) == (project["initial"], None, 0)
    [entry] = log_lines(root)
    assert (entry["best_pooled_mean"], entry["best_pooled_games"]) == (None, 0)
    [point] = report.learning_curve(root)[:1]
    assert point.best_pooled is None and point.best == 0.25
