"""MLflow tracking on a real three-generation project (tiny params): the store inside the
project, runs with params, metric histories, artifacts and provenance under a loop's parent run,
registered versions and the ``champion`` alias, idempotent re-logging, recovery from an
interrupted log, ``models:/`` URIs resolved to byte-identical checkpoints, and ``tri arena``
with a registry URI.

Generation 1 is promoted, 2 is not, 3 is (the arena's threshold forces each decision), so the
alias must move 1 -> 1 -> 3.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import shutil
import statistics
import time
from pathlib import Path

import pytest

from tri import arena, atomic, layout, promote, selfplay, train
from tri.arena_result import load_result
from tri.config import Params, Runtime
from tri.device import resolve_device, resolve_precision
from tri.errors import TriError
from tri.games import make_game
from tri.net import initial_checkpoint, load_checkpoint, save_checkpoint
from tri.player_specs import PlayerSpec, parse_spec
from tri.record import mlstore, outputs, provenance, registry, render, runs

from tests.pipeline_fixtures import PARAMS, PNG_SIGNATURE, game_of, tri_cli, with_section, write_params

ONE = Runtime(workers=1, device="cpu")
ALWAYS = with_section(PARAMS, "arena", rule="mean", threshold=-1e9)
NEVER = with_section(PARAMS, "arena", rule="mean", threshold=1e9)
PLAN = {1: ALWAYS, 2: NEVER, 3: ALWAYS}
LOCAL = Runtime(workers=1, device="cpu", tracking=True, mlflow_uri=None)
# When each generation ran (epoch ms), as the flow passes them: long before it is logged.
SPANS = {g: (1_700_000_000_000 + g * 1_000_000, 1_700_000_000_000 + g * 1_000_000 + 107_250) for g in PLAN}


def paths_of(root: Path, g: int, params: Params = PARAMS) -> layout.GenerationPaths:
    """Generation ``g``'s paths, the best model playing and training from it."""
    best = layout.best_path(root)
    return layout.generation_paths(root, g, player=best, start=best, window=params.train.window)


def run_generation(params: Params, root: Path, g: int) -> None:
    """One generation by its stage functions, with the files where the flow puts them (without
    Prefect: this file tests the tracking alone; test_flow.py runs it inside the flow), and the
    picture of the candidate's game the flow draws."""
    best = layout.best_path(root)
    if not best.exists():
        save_checkpoint(initial_checkpoint(make_game(params.game), params.net), layout.model_path(root, 0))
        atomic.copy(layout.model_path(root, 0), best)
    paths = paths_of(root, g, params)
    selfplay.run(params, paths.player, paths.selfplay, generation=g, runtime=ONE)
    train.run(params, paths.start, list(paths.window), paths.candidate, generation=g,
              metrics=paths.train_metrics, losses=paths.train_losses)
    arena.run(params, str(paths.candidate), str(paths.player), generation=g, out=paths.arena, runtime=ONE,
              labels=("candidate", "best"))
    promote.run(paths.arena, paths.candidate, paths.best, rejected=paths.rejected, log=paths.promotions,
                generation=g)
    assert render.render_game(params, paths.candidate, paths.picture, generation=g) == paths.picture


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    base = tmp_path_factory.mktemp("tracking")
    root, cwd = base / "project", base / "elsewhere"
    cwd.mkdir()
    home_before = {p: p.exists() for p in (Path.home() / "mlruns", Path.home() / ".mlflow", Path.home() / "mlflow.db")}
    with pytest.MonkeyPatch.context() as mp:
        # The store must come from the project, never from the environment or the cwd.
        for name in ("TRI_MLFLOW_URI", "TRI_TRACKING", "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
            mp.delenv(name, raising=False)
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        mp.chdir(cwd)
        for g, params in PLAN.items():
            run_generation(params, root, g)
        write_params(root / "params.yaml", ALWAYS)
        (root / "dvc.lock").write_text(
            "schema: '2.0'\nstages:\n  train:\n    cmd: tri train\n    deps:\n"
            "    - path: models/best.pt\n      hash: md5\n      md5: 0123456789abcdef0123456789abcdef\n"
            "    - path: params.yaml\n      md5: ffff\n")
        parent = runs.start_loop(root, ALWAYS, name="test-loop")
        records, seconds = {}, {}
        for g, params in PLAN.items():
            start = time.perf_counter()
            records[g] = runs.log_generation(params, paths_of(root, g), parent_run_id=parent,
                                             metrics={"selfplay_seconds": 2.0, "generation_seconds": 30.0,
                                                      "time_arena": 4.0},
                                             start_time_ms=SPANS[g][0], end_time_ms=SPANS[g][1], runtime=LOCAL)
            seconds[g] = time.perf_counter() - start
        runs.end_loop(root, parent)
        from mlflow import MlflowClient

        uri = mlstore.store(root).tracking_uri
        yield {"root": root, "cwd": cwd, "parent": parent, "records": records, "seconds": seconds,
               "client": MlflowClient(tracking_uri=uri, registry_uri=uri), "home_before": home_before}


def generation_runs(project) -> dict[int, object]:
    client = project["client"]
    exp = client.get_experiment_by_name("tri-triangle")
    runs = client.search_runs([exp.experiment_id], "tags.`tri.kind` = 'generation'")
    return {int(r.data.tags["tri.generation"]): r for r in runs}


def test_store_lives_in_the_project(project):
    root = project["root"]
    s = mlstore.store(root, LOCAL)
    assert s.tracking_uri == f"sqlite:///{root.resolve()}/.mlflow/mlflow.db" and s.database.is_file()
    exp = project["client"].get_experiment_by_name("tri-triangle")
    assert exp.artifact_location == (root.resolve() / ".mlflow" / "artifacts").as_uri()
    assert list(project["cwd"].iterdir()) == []  # no ./mlruns, no ./mlflow.db
    assert {p: p.exists() for p in project["home_before"]} == project["home_before"]
    assert not (root / ".mlflow" / "staging").exists() or not any((root / ".mlflow" / "staging").iterdir())
    # Settings: a URI elsewhere, and tracking off.
    assert mlstore.store(root, Runtime(mlflow_uri="http://127.0.0.1:5000")) == \
        mlstore.Store("http://127.0.0.1:5000", None, None)
    assert mlstore.store(root, Runtime(mlflow_uri="sqlite:////x/db.sqlite")).artifact_location == s.artifact_location
    off = Runtime(tracking=False)
    assert runs.start_loop(root, ALWAYS, runtime=off) is None
    record = runs.log_generation(ALWAYS, paths_of(root, 1), runtime=off)
    assert record == runs.GenerationRecord(None, None, True, None)


def test_provenance_helpers(tmp_path):
    import tri

    assert provenance.git_tags(tmp_path) == {}  # not a repository: no tags, no error
    tags = provenance.git_tags(Path(tri.__file__).parent)  # this checkout, when it is one
    assert not tags or (re.fullmatch(r"[0-9a-f]{40}", tags["tri.git.commit"]) and tags["tri.git.dirty"] in
                        ("true", "false"))
    assert provenance.dvc_tags(tmp_path) == {}
    (tmp_path / "dvc.lock").write_text("not: [valid")
    assert provenance.dvc_tags(tmp_path) == {}
    flat = provenance.flatten_params(Params())
    assert "game.triangle.templates" not in flat and flat["game.triangle.rows"] == "8"
    assert flat["train.lr"] == str(Params().train.lr) and max(map(len, flat.values())) <= 250


def test_runtime_settings_from_the_environment(monkeypatch):
    monkeypatch.setenv("TRI_TRACKING", "false")
    monkeypatch.setenv("TRI_MLFLOW_URI", "http://tracking:5000")
    assert (Runtime().tracking, Runtime().mlflow_uri) == (False, "http://tracking:5000")


def test_runs_params_metrics_and_provenance(project):
    root, client = project["root"], project["client"]
    runs = generation_runs(project)
    assert sorted(runs) == [1, 2, 3]
    parent = client.get_run(project["parent"])
    assert parent.info.status == "FINISHED" and parent.data.tags["tri.kind"] == "loop"
    assert parent.info.run_name == "test-loop"
    assert parent.data.tags["mlflow.note.content"].startswith(
        "**3 generations** recorded (gen-0001 to gen-0003), 2 promoted: gen-0001, gen-0003; the loop ended.")
    for g, run in runs.items():
        tags, params = run.data.tags, run.data.params
        assert run.info.run_name == f"gen-{g:04d}" and run.info.status == "FINISHED"
        assert tags["mlflow.parentRunId"] == project["parent"] and run.info.run_id == project["records"][g].run_id
        assert tags["tri.project_name"] == root.name and "tri.root" not in tags and tags["tri.version"]
        device = resolve_device(Runtime().device)  # what the stages ran on, and the formats auto gives there
        assert (tags["tri.device"], tags["tri.precision.search"], tags["tri.precision.train"]) == \
            (device, resolve_precision(PARAMS.mcts.precision, device), resolve_precision(PARAMS.train.precision, device))
        assert (tags["tri.seed.selfplay"], tags["tri.seed.train"], tags["tri.seed.arena"], tags["tri.seed.net"]) == \
            tuple(str(s) for s in (PARAMS.selfplay.seed, PARAMS.train.seed, PARAMS.arena.seed, PARAMS.net.seed))
        assert tags["tri.dvc.train.models/best.pt"] == "0123456789abcdef0123456789abcdef"
        assert "tri.dvc.train.params.yaml" not in tags and re.fullmatch(r"[0-9a-f]{32}", tags["tri.dvc.lock_md5"])
        candidate = load_checkpoint(layout.candidate_path(root, g), game_of())
        assert tags["tri.model_id"] == candidate.model_id
        assert params["mcts.simulations"] == "4" and params["arena.threshold"] == str(PLAN[g].arena.threshold)
        assert params["game.name"] == "triangle" and re.fullmatch(r"[0-9a-f]{16}", params["game.config_sha256"])
        assert "game.triangle.templates" not in params and max(len(v) for v in params.values()) <= 250
        # Metric histories: one loss per training step, one score per self-play game.
        train = json.loads(layout.train_metrics_path(root, g).read_text())
        losses = client.get_metric_history(run.info.run_id, "2 training/loss")
        assert sorted(m.step for m in losses) == list(range(train["steps"]))
        csv_rows = layout.train_losses_path(root, g).read_text().splitlines()[1:]
        assert sorted(m.value for m in losses) == pytest.approx(sorted(float(r.split(",")[2]) for r in csv_rows))
        assert len(client.get_metric_history(run.info.run_id, "5 training details/learning rate")) == train["steps"]
        scores = client.get_metric_history(run.info.run_id, "1 self-play/score by game")
        assert sorted(m.step for m in scores) == list(range(PARAMS.selfplay.games))
        arena = json.loads(layout.arena_path(root, g).read_text())
        m = run.data.metrics
        assert m["3 arena/promoted"] == float(g != 2) and m["3 arena/difference"] == pytest.approx(arena["diff_mean"])
        assert m["3 arena/candidate mean"] == pytest.approx(arena["a"]["mean"])
        assert m["4 arena details/wins"] + m["4 arena details/ties"] + m["4 arena details/losses"] == \
            PARAMS.arena.games
        assert m["6 self-play details/games"] == PARAMS.selfplay.games and m["6 self-play details/positions"] > 0
        assert m["9 timing/self-play positions per second"] == \
            pytest.approx(m["6 self-play details/positions"] / 2.0)
        assert m["9 timing/self-play seconds"] == 2.0 and m["5 training details/steps"] == train["steps"]
        assert m["5 training details/reanalysed positions"] == train["reanalysed_positions"]
        assert m["9 timing/generation seconds"] == 30.0 and m["9 timing/phase arena seconds"] == 4.0
        assert m["2 training/final loss"] == pytest.approx(train["loss"], rel=1e-6)
        assert m["1 self-play/mean score"] > 0
        # Its description (Description, on the run's Overview page) tells the generation: who played, what trained, the verdict.
        story = tags["mlflow.note.content"]
        assert story.startswith(f"**Generation {g}** of `{root.name}` (triangle).")
        assert f"played {PARAMS.selfplay.games:,} games, mean score {m['1 self-play/mean score']:.1f}" in story
        assert f"{train['steps']:,} steps from `" in story and f"model id `{candidate.model_id}`" in story
        assert f"difference {arena['diff_mean']:+.1f}" in story
        assert ("**promoted**" if g != 2 else "**not promoted**") in story
    # The loop's run has one point per generation (step = generation) of each curve, with the values
    # of the generations' runs.
    for key in ("1 self-play/mean score", "2 training/final loss", "3 arena/candidate mean", "3 arena/best mean",
                "3 arena/difference", "3 arena/promoted", "9 timing/generation seconds"):
        history = client.get_metric_history(project["parent"], key)
        assert {h.step: h.value for h in history} == pytest.approx({g: r.data.metrics[key] for g, r in runs.items()})


def test_artifacts(project, tmp_path):
    root, client = project["root"], project["client"]
    run = generation_runs(project)[2]
    listed = {a.path for d in ("checkpoint", "plots", "arena", "game", "params", "train")
              for a in client.list_artifacts(run.info.run_id, d)}
    assert {"checkpoint/model.pt", "checkpoint/tri-checkpoint.json", "plots/learning-curve.png", "arena/arena.md",
            "arena/arena.json", "game/candidate-game.png", "params/params.yaml", "params/game.json",
            "train/metrics.json", "train/losses.csv"} <= listed
    local = Path(client.download_artifacts(run.info.run_id, "", str(tmp_path)))
    assert (local / "checkpoint" / "model.pt").read_bytes() == layout.candidate_path(root, 2).read_bytes()
    for png in ("plots/learning-curve.png", "game/candidate-game.png"):
        assert (local / png).read_bytes()[:8] == PNG_SIGNATURE and (local / png).stat().st_size > 2000
    assert (local / "arena" / "arena.json").read_bytes() == layout.arena_path(root, 2).read_bytes()
    table = (local / "arena" / "arena.md").read_text()
    assert "| candidate (`models/candidates/gen-0002.pt`) |" in table
    assert "| best (`models/best.pt`) |" in table
    assert "candidate: candidate" not in table
    assert "difference candidate - best" in table and "keep the best" in table
    picture = layout.game_picture_path(root, 2)
    assert (local / "game" / "candidate-game.png").read_bytes() == picture.read_bytes()
    assert json.loads((local / "params" / "game.json").read_text())["triangle"]["templates"]


def test_registered_versions_and_champion(project):
    root, client = project["root"], project["client"]
    runs = generation_runs(project)
    versions = {int(v.version): v for v in client.search_model_versions("name='tri-triangle'")}
    assert sorted(versions) == [1, 2, 3]
    for g, v in versions.items():
        arena = json.loads(layout.arena_path(root, g).read_text())
        assert v.run_id == runs[g].info.run_id and v.tags["generation"] == str(g)
        assert v.tags["promoted"] == ("false" if g == 2 else "true")
        assert float(v.tags["diff_mean"]) == pytest.approx(arena["diff_mean"], rel=1e-5)
        assert float(v.tags["diff_low"]) == pytest.approx(arena["diff_low"], rel=1e-5)
        assert v.source.startswith((root.resolve() / ".mlflow" / "artifacts").as_uri())
    assert [project["records"][g].champion_version for g in (1, 2, 3)] == [1, 1, 3]
    assert [project["records"][g].model_version for g in (1, 2, 3)] == [1, 2, 3]
    assert client.get_model_version_by_alias("tri-triangle", "champion").version in ("3", 3)


def test_logging_again_changes_nothing(project):
    client = project["client"]
    before = generation_runs(project)
    for g, params in PLAN.items():
        again = runs.log_generation(params, paths_of(project["root"], g), parent_run_id=project["parent"],
                                    runtime=LOCAL)
        first = project["records"][g]
        assert (again.run_id, again.model_version, again.promoted) == (first.run_id, first.model_version, first.promoted)
        assert again.champion_version == 3
    after = generation_runs(project)
    assert {g: r.info.run_id for g, r in after.items()} == {g: r.info.run_id for g, r in before.items()}
    assert len(client.search_model_versions("name='tri-triangle'")) == 3
    steps = json.loads(layout.train_metrics_path(project["root"], 1).read_text())["steps"]
    assert len(client.get_metric_history(after[1].info.run_id, "2 training/loss")) == steps
    assert {g: (r.info.start_time, r.info.end_time) for g, r in after.items()} == SPANS  # the first log's times
    # The loop's curves keep one point per generation.
    assert sorted(h.step for h in client.get_metric_history(project["parent"], "3 arena/candidate mean")) == [1, 2, 3]


def test_logging_is_fast(project):
    # Generation 1 pays for creating the database; 2 and 3 are the steady state.
    median = statistics.median([project["seconds"][2], project["seconds"][3]])
    print(f"log_generation: {project['seconds']}, median of the steady state {median:.2f} s")
    assert median < 2.0


def test_resolve_model(project, tmp_path):
    root = project["root"]
    path = registry.resolve_model("models:/tri-triangle@champion", root, runtime=LOCAL)
    assert path.is_relative_to(root.resolve() / ".mlflow" / "cache")
    assert path.read_bytes() == layout.candidate_path(root, 3).read_bytes() == layout.best_path(root).read_bytes()
    assert load_checkpoint(path, game_of()).generation == 3
    assert registry.resolve_model("models:/tri-triangle@champion", root, runtime=LOCAL) == path  # cached
    two = registry.resolve_model("models:/tri-triangle/2", root, runtime=LOCAL)
    assert two.read_bytes() == layout.candidate_path(root, 2).read_bytes()
    assert not list(path.parent.parent.glob(".*.tmp"))
    # A damaged cached copy is fetched again.
    two.write_bytes(b"damaged")
    assert registry.resolve_model("models:/tri-triangle/2", root, runtime=LOCAL).read_bytes() == \
        layout.candidate_path(root, 2).read_bytes()


def test_a_moved_project_keeps_its_runs_and_artifacts(project, tmp_path):
    # MLflow names artifacts by absolute URI and tri a project by its folder: a project moved
    # elsewhere must read and write under its new folder only, and know its runs as its own.
    root = project["root"]
    moved = tmp_path / "moved"
    shutil.copytree(root, moved, ignore=shutil.ignore_patterns("cache"))  # no copies resolved before
    away = root.with_name(root.name + "-away")
    root.rename(away)
    try:
        path = registry.resolve_model("models:/tri-triangle/2", moved, runtime=LOCAL)
        assert path.read_bytes() == layout.candidate_path(moved, 2).read_bytes()
        client, s = mlstore.open_store(moved, LOCAL, create=False)
        assert s.artifact_location == (moved.resolve() / ".mlflow" / "artifacts").as_uri()
        assert client.get_experiment_by_name("tri-triangle").artifact_location == s.artifact_location
        assert all(v.source.startswith(s.artifact_location + "/")
                   for v in client.search_model_versions("name='tri-triangle'"))
        # Its generations are still its own: logging one again reuses its run and version.
        again = runs.log_generation(ALWAYS, paths_of(moved, 3), runtime=LOCAL)
        assert (again.run_id, again.model_version) == (project["records"][3].run_id, project["records"][3].model_version)
        assert client.get_run(again.run_id).info.artifact_uri.startswith(s.artifact_location + "/")
        new = client.create_run(client.get_experiment_by_name("tri-triangle").experiment_id).info.run_id
        client.log_text(new, "moved", "note.txt")
        assert (moved / ".mlflow" / "artifacts" / new / "artifacts" / "note.txt").read_text() == "moved"
        client.delete_run(new)
        assert not root.exists()  # nothing was written where the project was
        assert not mlstore.follow_move(moved, s)  # done once
        # A version whose checkpoint is gone from the store: one line, no MLflow traceback.
        shutil.rmtree(moved / ".mlflow" / "artifacts" / project["records"][1].run_id / "artifacts" / "checkpoint")
        with pytest.raises(TriError, match=r"version 1's checkpoint cannot be read from file://") as info:
            registry.resolve_model("models:/tri-triangle/1", moved, runtime=LOCAL)
        assert "\n" not in str(info.value)
    finally:
        away.rename(root)
    # The project it was copied from still names its own folder.
    assert project["client"].get_experiment_by_name("tri-triangle").artifact_location == \
        (root.resolve() / ".mlflow" / "artifacts").as_uri()


@pytest.mark.parametrize("uri, needle", [
    ("models:/tri-triangle@nope", "no alias 'nope'"),
    ("models:/tri-triangle/99", "no version 99"),
    ("models:/tri-nothing@champion", "no registered model 'tri-nothing'"),
    ("models:/tri-triangle", "expected models:/NAME@ALIAS"),
])
def test_resolve_model_errors(project, uri, needle):
    with pytest.raises(TriError) as info:
        registry.resolve_model(uri, project["root"], runtime=LOCAL)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_resolve_model_without_a_store(tmp_path):
    with pytest.raises(TriError, match="no MLflow store"):
        registry.resolve_model("models:/tri-triangle@champion", tmp_path, runtime=LOCAL)
    assert list(tmp_path.iterdir()) == []  # looking does not create a database
    with pytest.raises(TriError, match="tracking is off"):
        registry.resolve_model("models:/tri-triangle@champion", tmp_path, runtime=Runtime(tracking=False))


def test_player_specs_with_model_uris(project, monkeypatch):
    root = project["root"]
    champion = registry.resolve_model("models:/tri-triangle@champion", root, runtime=LOCAL)
    assert parse_spec("models:/tri-triangle@champion", root) == \
        PlayerSpec("mcts", champion, text="models:/tri-triangle@champion")
    assert parse_spec("net:models:/tri-triangle@champion", root).path == champion
    assert parse_spec("mcts:models:/tri-triangle/1:8", root).simulations == 8
    monkeypatch.chdir(root)  # the default project is the current directory
    assert parse_spec("models:/tri-triangle@champion").path == champion
    with pytest.raises(TriError, match=r"^model 'models:/tri-triangle@gone': 'tri-triangle' has no alias 'gone'$"):
        parse_spec("models:/tri-triangle@gone")
    with pytest.raises(TriError, match=r"^player 'net:models:/tri-triangle/9': model 'models:/tri-triangle/9': "):
        parse_spec("net:models:/tri-triangle/9")


def test_cli_arena_with_the_champion(project):
    root = project["root"]
    proc = tri_cli("arena", "models:/tri-triangle@champion", "greedy", "--games", "2", "--params",
                   root / "params.yaml", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "models:/tri-triangle@champion" in proc.stdout
    assert not (root / "mlruns").exists() and not (root / "mlflow.db").exists()


def test_runs_span_the_generations_real_times(project):
    """A generation's run starts and ends when the flow says the generation did (107.25 s here),
    not while it is logged; the loop's run spans its generations' logging."""
    for g, run in generation_runs(project).items():
        assert (run.info.start_time, run.info.end_time) == SPANS[g]
        assert run.info.end_time - run.info.start_time == 107_250
    parent = project["client"].get_run(project["parent"]).info
    assert parent.end_time >= parent.start_time > SPANS[3][1]


def test_experiments_are_machine_learning_experiments(project, tmp_path):
    """MLflow's UI shows an experiment tagged ``custom_model_development`` as a machine-learning
    one; tri tags its experiments so, and an older tri's experiment when it next logs to it."""
    client = project["client"]
    assert client.get_experiment_by_name("tri-triangle").tags[mlstore.KIND_TAG] == "custom_model_development"
    made, s = mlstore.open_store(tmp_path, LOCAL, create=True)
    fresh = mlstore.experiment_id(made, s, "fresh")
    assert made.get_experiment(fresh).tags[mlstore.KIND_TAG] == "custom_model_development"  # from its creation
    old = made.create_experiment("tri-old", artifact_location=s.artifact_location)  # as tri made them before
    assert mlstore.KIND_TAG not in made.get_experiment(old).tags
    assert mlstore.experiment_id(made, s, "old") == old
    assert made.get_experiment(old).tags[mlstore.KIND_TAG] == "custom_model_development"
    chosen = made.create_experiment("tri-chosen", tags={mlstore.KIND_TAG: "genai_development"})
    assert mlstore.experiment_id(made, s, "chosen") == chosen  # a kind someone set is theirs
    assert made.get_experiment(chosen).tags[mlstore.KIND_TAG] == "genai_development"


def test_metrics_come_in_sections_in_the_order_that_matters(project):
    """MLflow's charts make a panel of each prefix before a ``/``, panels sorted by name: every
    metric of a generation has a section, self-play, training and the arena first, timing last."""
    sections = {k.split("/")[0] for r in generation_runs(project).values() for k in r.data.metrics}
    assert sorted(sections) == ["1 self-play", "2 training", "3 arena", "4 arena details", "5 training details",
                                "6 self-play details", "9 timing"]
    loop = project["client"].get_run(project["parent"]).data.metrics
    assert sorted({k.split("/")[0] for k in loop}) == ["1 self-play", "2 training", "3 arena", "9 timing"]
    assert outputs.extra_name("time_git_commit") == "9 timing/phase git commit seconds"
    assert outputs.extra_name("something_else") == "something_else"  # logged as given
    assert outputs.read_metric({"generation_seconds": 5.0}, outputs.GENERATION_SECONDS) == 5.0  # an older run


def test_the_loop_run_carries_the_curve_and_the_table(project, tmp_path):
    client, parent = project["client"], project["parent"]
    assert {a.path for a in client.list_artifacts(parent)} >= {"learning-curve.png", "generations.md",
                                                                  "generations.csv"}
    local = Path(client.download_artifacts(parent, "", str(tmp_path)))
    png = (local / "learning-curve.png").read_bytes()
    assert png[:8] == PNG_SIGNATURE and len(png) > 2000
    gens = generation_runs(project)
    rows = list(csv.DictReader((local / "generations.csv").read_text().splitlines()))
    assert [r["generation"] for r in rows] == ["1", "2", "3"]
    assert [r["promoted"] for r in rows] == ["true", "false", "true"]
    for r in rows:
        m = gens[int(r["generation"])].data.metrics
        assert float(r["selfplay_mean"]) == pytest.approx(m["1 self-play/mean score"], rel=1e-5)
        assert float(r["loss"]) == pytest.approx(m["2 training/final loss"], rel=1e-5)
        assert float(r["candidate"]) == pytest.approx(m["3 arena/candidate mean"], rel=1e-5)
        assert float(r["best"]) == pytest.approx(m["3 arena/best mean"], rel=1e-5)
    table = (local / "generations.md").read_text().splitlines()
    assert table[2] == "| generation | self-play mean | loss | candidate | best | promoted |"
    assert [line.split("|")[-2].strip() for line in table[4:7]] == ["yes", "no", "yes"]


def test_a_new_loop_gets_the_points_of_generations_it_reuses(project):
    """A loop that logs again generations recorded before (a resumed run) has them on its curves."""
    root, client = project["root"], project["client"]
    second = runs.start_loop(root, ALWAYS, name="second-loop")
    for g, params in PLAN.items():
        runs.log_generation(params, paths_of(root, g), parent_run_id=second, runtime=LOCAL)
    runs.end_loop(root, second)
    history = client.get_metric_history(second, "1 self-play/mean score")
    assert sorted(h.step for h in history) == [1, 2, 3]
    assert all(r.data.tags["mlflow.parentRunId"] == second for r in generation_runs(project).values())
    assert {a.path for a in client.list_artifacts(second)} >= {"learning-curve.png", "generations.csv"}


def test_no_tag_or_param_holds_an_absolute_path(project):
    """Records are portable: nothing in a run's or a registered version's tags or params names the
    project's folder on this machine (the project is an id and a folder name)."""
    client, root = project["client"], project["root"].resolve()
    found = []
    for exp in client.search_experiments():
        for run in client.search_runs([exp.experiment_id]):
            found += [(run.info.run_name, k, v) for k, v in {**run.data.tags, **run.data.params}.items()]
    for v in client.search_model_versions("name='tri-triangle'"):
        found += [(f"version {v.version}", k, value) for k, value in v.tags.items()]
    assert len(found) > 100
    bad = [(who, k, v) for who, k, v in found
           if str(root) in v or str(root.parent) in v or v.startswith(("/", "file:")) or k.startswith("/")]
    assert not bad, bad


def test_links_to_the_ui(project, tmp_path):
    """``tri serve`` prints the addresses of the experiment, the project's latest loop and the
    registered model, in the UI's machine-learning view; only those that exist, creating nothing."""
    root, client = project["root"], project["client"]
    exp = client.get_experiment_by_name("tri-triangle").experiment_id
    latest = client.search_runs([exp], "tags.`tri.kind` = 'loop'", order_by=["attributes.start_time DESC"])[0]
    got = mlstore.links(root, "triangle", "http://127.0.0.1:5000/", runtime=LOCAL)
    assert got == [
        ("MLflow experiment tri-triangle",
         f"http://127.0.0.1:5000/#/experiments/{exp}/runs?workflowType=machine_learning&compareRunsMode=CHART"),
        (f"MLflow latest loop {latest.info.run_name}",
         (f"http://127.0.0.1:5000/#/experiments/{exp}/runs/{latest.info.run_id}/model-metrics"
          "?workflowType=machine_learning")),
        ("MLflow model tri-triangle", "http://127.0.0.1:5000/#/models/tri-triangle?workflowType=machine_learning")]
    # An experiment (of evaluations) without a loop or a registered model
    made, s = mlstore.open_store(root, LOCAL, create=False)
    mlstore.experiment_id(made, s, "tictactoe")
    ttt = mlstore.links(root, "tictactoe", "http://h:1", runtime=LOCAL)
    assert [label for label, _ in ttt] == ["MLflow experiment tri-tictactoe"]
    assert mlstore.links(root, "connect4", "http://h:1", runtime=LOCAL) == []
    assert mlstore.links(tmp_path, "triangle", "http://h:1", runtime=LOCAL) == []
    assert list(tmp_path.iterdir()) == []  # no store was created
    assert mlstore.links(root, "triangle", "http://h:1", runtime=Runtime(tracking=False)) == []
    # A generation's run, for the link on its Prefect page
    run = generation_runs(project)[2].info.run_id
    assert runs.run_link(root, "triangle", run, "http://h:1/", runtime=LOCAL) == \
        f"http://h:1/#/experiments/{exp}/runs/{run}/model-metrics?workflowType=machine_learning"
    assert runs.run_link(tmp_path, "triangle", run, "http://h:1", runtime=LOCAL) is None


def test_interrupted_and_changed_generations_are_replaced(project):
    """Runs last: it changes the registry. A run that never finished logging is replaced (its
    version withdrawn); one whose files changed is replaced and its version marked superseded."""
    root, client = project["root"], project["client"]
    old = generation_runs(project)
    client.set_tag(old[3].info.run_id, "tri.logged", "false")  # as if the process died while logging
    metrics = layout.train_metrics_path(root, 2)
    metrics.write_text(metrics.read_text() + "\n")  # generation 2's files changed since
    r2 = runs.log_generation(NEVER, paths_of(root, 2), runtime=LOCAL)
    r3 = runs.log_generation(ALWAYS, paths_of(root, 3), runtime=LOCAL)
    new = generation_runs(project)
    assert sorted(new) == [1, 2, 3] and new[1].info.run_id == old[1].info.run_id
    assert r2.run_id != old[2].info.run_id and r3.run_id != old[3].info.run_id
    assert client.get_run(old[3].info.run_id).info.lifecycle_stage == "deleted"
    versions = {int(v.version): v for v in client.search_model_versions("name='tri-triangle'")}
    assert sorted(versions) == [1, 2, 4, 5]  # 3 withdrawn
    assert versions[2].tags.get("tri.superseded") == "true" and versions[4].run_id == r2.run_id
    assert (r2.model_version, r3.model_version, r3.champion_version) == (4, 5, 5)
    assert registry.resolve_model("models:/tri-triangle@champion", root, runtime=LOCAL).read_bytes() == \
        layout.candidate_path(root, 3).read_bytes()


def test_evaluations_are_logged_into_an_existing_store_only(project, tmp_path):
    from tri.config import GameParams

    ttt = PARAMS.model_copy(update={"game": GameParams(name="tictactoe")})
    result = tmp_path / "eval.json"
    result.write_text('{"rows": []}\n')
    run_id = runs.log_evaluation(project["root"], ttt, "eval-tictactoe greedy",
                                 {"3x3 k=3/wrong_rate": 0.023, "never_loses": 0.0}, artifact=result,
                                 runtime=LOCAL)
    client = project["client"]
    run = client.get_run(run_id)
    assert run.info.experiment_id == client.get_experiment_by_name("tri-tictactoe").experiment_id
    assert run.data.metrics["3x3 k_3/wrong_rate"] == pytest.approx(0.023) and run.data.tags["tri.kind"] == "eval"
    assert [a.path for a in client.list_artifacts(run_id, "eval")] == ["eval/eval.json"]
    # No store in a plain folder: nothing logged, no database created.
    assert runs.log_evaluation(tmp_path, ttt, "eval", {"x": 1.0}, runtime=LOCAL) is None
    assert not (tmp_path / ".mlflow").exists()


def test_artifacts_without_a_picture_and_the_arena_table(project, tmp_path):
    """Tracking logs only the picture it is given: none drawn, a note instead. The arena table
    names the players by role (with their files when known), or by the names the result gives
    them when these are not roles (a result written by ``tri arena`` without ``--names``)."""
    root = project["root"]
    paths = dataclasses.replace(paths_of(root, 1), picture=tmp_path / "none.png")
    inputs = outputs.read_inputs(ALWAYS, paths)
    outputs.stage_artifacts(tmp_path / "staged", ALWAYS, paths, inputs)
    assert sorted(p.name for p in (tmp_path / "staged" / "game").iterdir()) == ["NOTE.txt"]
    assert (tmp_path / "staged" / "game" / "NOTE.txt").read_text().startswith("no picture: ")
    table = outputs.arena_markdown(inputs.arena, 1)
    assert "| candidate |" in table and "| best |" in table
    inputs.arena.a.name = "models/candidates/gen-0001.pt"
    assert "| candidate: `models/candidates/gen-0001.pt` |" in outputs.arena_markdown(inputs.arena)
    with pytest.raises(TriError, match="not an arena result"):
        (tmp_path / "bad.json").write_text('{"game": "triangle"}')
        load_result(tmp_path / "bad.json")
