"""MLflow tracking on a real three-generation project (tiny params): the store inside the
project, runs with params, metric histories, artifacts and provenance under a loop's parent run,
registered versions and the ``champion`` alias, idempotent re-logging, recovery from an
interrupted log, ``models:/`` URIs resolved to byte-identical checkpoints, and ``tri arena``
with a registry URI.

Generation 1 is promoted, 2 is not, 3 is (the arena's threshold forces each decision), so the
alias must move 1 -> 1 -> 3.
"""

from __future__ import annotations

import dataclasses
import json
import re
import statistics
import time
from pathlib import Path

import pytest

from tri import arena, atomic, layout, promote, selfplay, train
from tri.arena_result import load_result
from tri.config import Params, Runtime
from tri.errors import TriError
from tri.games import make_game
from tri.net import initial_checkpoint, load_checkpoint, save_checkpoint
from tri.players import PlayerSpec, parse_spec
from tri.record import mlstore, outputs, provenance, registry, render, runs

from tests.pipeline_fixtures import PARAMS, PNG_SIGNATURE, game_of, tri_cli, with_section, write_params

ONE = Runtime(workers=1, device="cpu")
ALWAYS = with_section(PARAMS, "arena", rule="mean", threshold=-1e9)
NEVER = with_section(PARAMS, "arena", rule="mean", threshold=1e9)
PLAN = {1: ALWAYS, 2: NEVER, 3: ALWAYS}
LOCAL = Runtime(workers=1, device="cpu", tracking=True, mlflow_uri=None)


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
    selfplay.run(params, paths.player, paths.selfplay, generation=g, runtime=ONE, progress=False)
    train.run(params, paths.start, list(paths.window), paths.candidate, generation=g,
              metrics=paths.train_metrics, losses=paths.train_losses, progress=False)
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
                                             metrics={"selfplay_seconds": 2.0}, runtime=LOCAL)
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
    for g, run in runs.items():
        tags, params = run.data.tags, run.data.params
        assert run.info.run_name == f"gen-{g:04d}" and run.info.status == "FINISHED"
        assert tags["mlflow.parentRunId"] == project["parent"] and run.info.run_id == project["records"][g].run_id
        assert tags["tri.root"] == str(root.resolve()) and tags["tri.version"]
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
        losses = client.get_metric_history(run.info.run_id, "train.loss")
        assert sorted(m.step for m in losses) == list(range(train["steps"]))
        csv_rows = layout.train_losses_path(root, g).read_text().splitlines()[1:]
        assert sorted(m.value for m in losses) == pytest.approx(sorted(float(r.split(",")[2]) for r in csv_rows))
        assert len(client.get_metric_history(run.info.run_id, "train.lr")) == train["steps"]
        scores = client.get_metric_history(run.info.run_id, "selfplay.score")
        assert sorted(m.step for m in scores) == list(range(PARAMS.selfplay.games))
        arena = json.loads(layout.arena_path(root, g).read_text())
        m = run.data.metrics
        assert m["arena.promoted"] == float(g != 2) and m["arena.diff_mean"] == pytest.approx(arena["diff_mean"])
        assert m["arena.candidate_mean"] == pytest.approx(arena["a"]["mean"])
        assert m["arena.wins"] + m["arena.ties"] + m["arena.losses"] == PARAMS.arena.games
        assert m["selfplay.games"] == PARAMS.selfplay.games and m["selfplay.positions"] > 0
        assert m["selfplay.positions_per_second"] == pytest.approx(m["selfplay.positions"] / 2.0)
        assert m["selfplay_seconds"] == 2.0 and m["train.steps"] == train["steps"]
    # The loop's run has one point per generation.
    history = client.get_metric_history(project["parent"], "gen.candidate_mean")
    assert sorted(h.step for h in history) == [1, 2, 3]


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
    assert len(client.get_metric_history(after[1].info.run_id, "train.loss")) == steps


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
