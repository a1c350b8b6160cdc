"""The loop flow end to end on a tiny setup in a plain (unversioned) project folder: the
documented file layout after two generations, how generations are wired (who plays, who trains
from what), continuing after the decision log and after an interruption, and ``tri curve``.
(Versioning with DVC, git and MLflow: ``test_flow.py``.)

The arena's rule is forced through its threshold (``mean > -1e9`` always promotes, ``> 1e9``
never does), so both branches of the decision are exercised deterministically.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import polars as pl
import pytest

import tri.promote
from tri import layout
from tri.arena_result import load_result
from tri.net import load_checkpoint
from tri.shards import read_positions
from tri.record.versioning import next_generation

from tests.pipeline_fixtures import (PARAMS, PNG_SIGNATURE, assert_clean_error, game_of, run_generations, tri_cli,
                                     with_section)

ALWAYS = with_section(PARAMS, "arena", rule="mean", threshold=-1e9)
NEVER = with_section(PARAMS, "arena", rule="mean", threshold=1e9)


@pytest.fixture(scope="module")
def loop(tmp_path_factory, prefect_server):
    root = tmp_path_factory.mktemp("loop") / "project"
    results = run_generations(root, ALWAYS, 2)
    return {"root": root, "results": results}


def log_entries(root) -> list[dict]:
    return [json.loads(line) for line in layout.promotions_log(root).read_text().splitlines()]


def test_layout_after_two_generations(loop):
    root = loop["root"]
    expected = {"models/best.pt", "models/gen-0000.pt", "models/promotions.jsonl", "params.yaml",
                "models/generation.yaml", "models/.generation.lock",
                "models/candidates/gen-0001.pt", "models/candidates/gen-0002.pt",
                "data/arena/gen-0001.json", "data/arena/gen-0002.json"}
    for g in (1, 2):
        expected |= {f"data/train/gen-000{g}/metrics.json", f"data/train/gen-000{g}/losses.csv",
                     f"data/pictures/gen-000{g}.png"}  # the candidate's game, drawn for people
        for s in range(PARAMS.selfplay.shards):
            expected |= {f"data/selfplay/gen-000{g}/shard-00{s}.parquet",
                         f"data/selfplay/gen-000{g}/shard-00{s}.games.parquet"}
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert files == expected  # nothing else: no rejected models, no temporaries
    assert layout.best_path(root) == root / "models" / "best.pt"
    for g in (1, 2):
        assert layout.shard_paths(layout.selfplay_dir(root, g))
        metrics = json.loads(layout.train_metrics_path(root, g).read_text())
        assert metrics["generation"] == g
        header = layout.train_losses_path(root, g).read_text().splitlines()
        assert header[0] == "step,lr,loss,policy_loss,value_loss" and len(header) == metrics["steps"] + 1
        assert load_checkpoint(layout.candidate_path(root, g), game_of()).generation == g
        assert layout.game_picture_path(root, g).read_bytes()[:8] == PNG_SIGNATURE


def test_decision_log_and_results(loop):
    root, results = loop["root"], loop["results"]
    entries = log_entries(root)
    assert [e["generation"] for e in entries] == [1, 2]
    assert all(e["promoted"] for e in entries)
    assert [r["generation"] for r in results] == [1, 2] and all(r["promoted"] for r in results)
    for r, e in zip(results, entries):
        arena = load_result(layout.arena_path(root, r["generation"]))
        assert arena.promote and arena.rule == "mean > -1e+09"
        # The arena names players by role (as dvc.yaml's command does), not by path.
        assert (arena.a.name, arena.b.name) == ("candidate", "best")
        assert arena.games == PARAMS.arena.games
        assert (r["candidate_mean"], r["best_mean"], r["diff_low"]) == (arena.a.mean, arena.b.mean, arena.diff_low)
        assert e["model_id"] == load_checkpoint(layout.candidate_path(root, r["generation"])).model_id
        assert e["kept"] == "models/best.pt" and "time" not in e  # relative to the project, no wall time
        assert r["selfplay_games"] == PARAMS.selfplay.games and r["train_steps"] > 0
        assert 0 < r["stage_seconds"] < r["seconds"]
    # The best model is the last promoted candidate.
    assert layout.best_path(root).read_bytes() == layout.candidate_path(root, 2).read_bytes()


def test_generations_are_wired_together(loop):
    """Generation 1: the initial network plays and is trained; generation 2: the promoted
    candidate 1 plays, and training continues from it on the window gen-1..gen-2."""
    root, game = loop["root"], game_of()
    initial = load_checkpoint(layout.model_path(root, 0), game)
    assert initial.generation == 0
    c1, c2 = (load_checkpoint(layout.candidate_path(root, g), game) for g in (1, 2))
    for g, player in ((1, initial), (2, c1)):
        df = read_positions(layout.shard_paths(layout.selfplay_dir(root, g)), game, ["generation", "model_id"])
        assert df["generation"].unique().to_list() == [g]
        assert df["model_id"].unique().to_list() == [player.model_id]
    assert c1.provenance["parent_generation"] == "0" and c2.provenance["parent_generation"] == "1"
    assert c2.provenance["data"].split(",") == [layout.selfplay_dir(root, g).name for g in (1, 2)]
    sizes = {g: pl.read_parquet(layout.shard_paths(layout.selfplay_dir(root, g))).height for g in (1, 2)}
    m2 = json.loads(layout.train_metrics_path(root, 2).read_text())
    assert m2["new_positions"] == sizes[2] and m2["window_positions"] == sizes[1] + sizes[2]
    # Self-play differs between generations (seeded by generation).
    g1 = pl.read_parquet(layout.games_path(layout.selfplay_dir(root, 1), 0))["seed"].to_list()
    g2 = pl.read_parquet(layout.games_path(layout.selfplay_dir(root, 2), 0))["seed"].to_list()
    assert set(g1).isdisjoint(g2)


def test_continues_after_the_log_and_after_an_interruption(loop, tmp_path, monkeypatch):
    root = tmp_path / "project"
    shutil.copytree(loop["root"], root)
    best_before = layout.best_path(root).read_bytes()
    assert next_generation(root) == 3
    # Generation 3 is interrupted after its arena, before the decision is applied.
    real_promote = tri.promote.run

    def crash(*args, **kwargs):
        raise RuntimeError("power cut")

    monkeypatch.setattr(tri.promote, "run", crash)
    with pytest.raises(RuntimeError, match="power cut"):
        run_generations(root, NEVER, 1)
    assert layout.arena_path(root, 3).exists() and next_generation(root) == 3
    monkeypatch.setattr(tri.promote, "run", real_promote)
    # Running again redoes generation 3 (and only it), then rejects its candidate.
    results = run_generations(root, NEVER, 1)
    assert [r["generation"] for r in results] == [3] and not results[0]["promoted"]
    assert [e["generation"] for e in log_entries(root)] == [1, 2, 3]
    assert layout.best_path(root).read_bytes() == best_before
    assert layout.rejected_path(root, 3).read_bytes() == layout.candidate_path(root, 3).read_bytes()
    assert next_generation(root) == 4
    assert not layout.rejected_path(root, 2).exists()
    # Generation 4 trains from the best model (continue_from: best), or with continue_from: latest
    # from the rejected candidate 3; the best model plays either way.
    run_generations(root, NEVER, 1)
    c2, c3, c4 = (load_checkpoint(layout.candidate_path(root, g), game_of()) for g in (2, 3, 4))
    assert c4.provenance["parent_model_id"] == c2.model_id == load_checkpoint(layout.best_path(root)).model_id
    run_generations(root, with_section(NEVER, "train", continue_from="latest"), 1)
    c5 = load_checkpoint(layout.candidate_path(root, 5), game_of())
    assert c5.provenance["parent_model_id"] == c4.model_id
    df = read_positions(layout.shard_paths(layout.selfplay_dir(root, 5)), game_of(), ["model_id"])
    assert df["model_id"].unique().to_list() == [c2.model_id]


def test_next_generation_reads_the_log(tmp_path):
    assert next_generation(tmp_path) == 1
    log = layout.promotions_log(tmp_path)
    log.parent.mkdir(parents=True)
    log.write_text("")
    assert next_generation(tmp_path) == 1
    log.write_text('{"generation": 4}\n\n{"generation": 7}\n{"generation": 5}\n')
    assert next_generation(tmp_path) == 8


def test_ensure_initial_keeps_an_existing_best(tmp_path, prefect_server):
    from pipelines.generation import ensure_initial

    best = ensure_initial(PARAMS, tmp_path)
    assert best == layout.best_path(tmp_path)
    initial = layout.model_path(tmp_path, 0)
    assert best.read_bytes() == initial.read_bytes()
    assert load_checkpoint(best, game_of()).generation == 0
    best.write_bytes(b"someone else's best")
    assert ensure_initial(PARAMS, tmp_path) == best and best.read_bytes() == b"someone else's best"


def test_stop_conditions():
    from pipelines.loop import should_stop

    rows = [{"promoted": p} for p in (True, False, False)]
    assert should_stop([], 0.0, generations=None, minutes=0, plateau=None) == "0 minute(s) passed"
    assert should_stop(rows, 10.0, generations=3, minutes=None, plateau=None) == "3 generation(s) done"
    assert should_stop(rows, 10.0, generations=4, minutes=1, plateau=None) is None
    assert should_stop(rows, 60.0, generations=4, minutes=1, plateau=None) == "1 minute(s) passed"
    assert should_stop(rows, 10.0, generations=None, minutes=None, plateau=2) == "no promotion in 2 generation(s)"
    assert should_stop(rows, 10.0, generations=None, minutes=None, plateau=3) is None


def test_the_loops_server_launches_before_prefect_is_imported():
    """``tri loop`` launches its Prefect server, then imports the loop (Prefect and the flows,
    5-9 s) while the server boots: the module that launches it must not import Prefect itself."""
    code = ("import sys; import pipelines.loop_server; "
            "print(sorted(m for m in ('prefect', 'mlflow', 'pipelines.loop', 'pipelines.generation') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_cli_curve(loop):
    root = loop["root"]
    proc = tri_cli("curve", "--root", root, "--baseline", "greedy=7.5")
    assert proc.returncode == 0, proc.stderr
    png = layout.learning_curve_path(root)
    assert png.read_bytes()[:8] == PNG_SIGNATURE and png.stat().st_size > 1000
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["generation", "candidate", "best", "promoted", "best", "model", "(games)"]
    rows = [line.split() for line in lines[1:] if line.split() and line.split()[0].isdigit()]
    assert [int(r[0]) for r in rows] == [1, 2]
    for r in rows:
        arena = load_result(layout.arena_path(root, int(r[0])))
        assert float(r[1]) == pytest.approx(arena.a.mean, abs=0.006)
        assert float(r[2]) == pytest.approx(arena.b.mean, abs=0.006)
        assert r[3] == "yes"
        # Promoted: the best model is the candidate, pooled over its own games of that arena.
        assert float(r[4]) == pytest.approx(arena.a.mean, abs=0.006) and r[5] == f"({arena.games})"
    assert lines[-1] == f"wrote {png}"


def test_cli_curve_and_loop_errors(loop, tmp_path):
    assert_clean_error(tri_cli("curve", "--root", tmp_path), 1, "no arena results")
    assert_clean_error(tri_cli("curve", "--root", loop["root"], "--out", tmp_path / "c.png", "--baseline", "greedy"),
                       1, "NAME=SCORE")
    assert not (tmp_path / "c.png").exists()
    assert_clean_error(tri_cli("loop", "--root", tmp_path), 1, "--generations, --minutes or --plateau")


def test_loop_refuses_bad_input_before_starting_anything(tmp_path):
    """Bad input to ``tri loop`` gets one-line errors and a non-zero exit before any server
    starts or any file is written: a missing project folder (a typo must not create one and
    train there), a malformed params.yaml, an empty one, a setting the machine has no memory
    for, a bad option."""
    typo = tmp_path / "a" / "typo"
    assert_clean_error(tri_cli("loop", "--root", typo, "--generations", "1"), 2, "does not exist")
    assert not (tmp_path / "a").exists()
    root = tmp_path / "project"
    root.mkdir()
    cases = [("game: {name: chess}\nmcts: {simulations: -1}\n", 2, "game.name: must be one of",
              "mcts.simulations: must be > 0"),
             ("mcts: [1, 2\n", 2, "not valid YAML"),
             ("# nothing but a comment\n", 2, "is empty"),
             ("mcts: {simulations: 1000000000}\n", 1, "mcts.simulations", "memory")]
    for text, code, *needles in cases:
        (root / "params.yaml").write_text(text)
        proc = tri_cli("loop", "--root", root, "--generations", "1", timeout=60)
        assert_clean_error(proc, code, *needles)
        assert sorted(p.name for p in root.iterdir()) == ["params.yaml"], text  # nothing started, nothing written
    assert_clean_error(tri_cli("loop", "--root", root, "--generations", "0"), 2, "--generations")
