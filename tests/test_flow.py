"""A versioned project end to end: two generations through the Prefect flow (process-pool task
runner, MLflow tracking on) in a git + DVC project laid out like this repository, then

- the files, the decisions, the MLflow runs, registered versions and the ``champion`` alias;
- the lock file: ``dvc status`` is clean, git has one tagged commit per generation;
- reproducibility: ``dvc repro --force`` re-creates the generation's outputs byte for byte;
- faults: a shard writer killed mid-write leaves no partial shard, a failed shard task is
  retried and the generation completes; a second generation on the same project is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
import yaml

from tri import layout
from tri.params_yaml import dump_params
from tri.errors import TriError
from tri.net import load_checkpoint
from tri.record import mlstore, registry, versioning

from tests.pipeline_fixtures import PARAMS, assert_clean_error, run_generations, tri_cli, with_section

REPO = Path(__file__).resolve().parents[1]
# Generation 1 is promoted, generation 2 rejected (the arena's threshold is edited in between,
# as a user would edit params.yaml).
ALWAYS = with_section(PARAMS, "arena", rule="mean", threshold=-1e9)
NEVER = with_section(PARAMS, "arena", rule="mean", threshold=1e9)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def dvc(root: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    # The stages' commands are `tri ...`: the environment's bin folder on PATH, as an activated
    # virtual environment would have it.
    # DVC's site cache in the project from `dvc init` on (before .dvc/config says so), as tri sets it.
    env = {**os.environ, "DVC_NO_ANALYTICS": "1",
           "DVC_SITE_CACHE_DIR": str(Path(root).resolve() / ".dvc" / "tmp" / "site-cache"),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True, text=True,
                          env=env, timeout=timeout)


def new_project(root: Path) -> Path:
    """A fresh project laid out like this repository: its dvc.yaml, DVC config and ignore files."""
    root.mkdir(parents=True)
    for name in ("dvc.yaml", ".dvcignore", ".gitignore"):
        shutil.copy(REPO / name, root / name)
    git(root, "init", "-q")
    git(root, "config", "user.email", "test@localhost")
    git(root, "config", "user.name", "test")
    assert dvc(root, "init", "-q").returncode == 0
    shutil.copy(REPO / ".dvc" / "config", root / ".dvc" / "config")
    shutil.copy(REPO / ".dvc" / "plots.html", root / ".dvc" / "plots.html")  # the config's html_template
    (root / "params.yaml").write_text(dump_params(ALWAYS))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a new tri project")
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory, prefect_server):
    root = new_project(tmp_path_factory.mktemp("flow") / "project")
    first = run_generations(root, ALWAYS, 1, runner="processes", tracking=True)
    second = run_generations(root, NEVER, 1, runner="processes", tracking=True)
    return {"root": root, "results": first + second}


def test_generations_files_and_decisions(project):
    root, results = project["root"], project["results"]
    assert [r["generation"] for r in results] == [1, 2]
    assert [r["promoted"] for r in results] == [True, False]
    for g in (1, 2):
        assert len(layout.shard_paths(layout.selfplay_dir(root, g))) == PARAMS.selfplay.shards
        assert load_checkpoint(layout.candidate_path(root, g)).generation == g
        assert json.loads(layout.arena_path(root, g).read_text())["promote"] == (g == 1)
    log = [json.loads(line) for line in layout.promotions_log(root).read_text().splitlines()]
    assert [(e["generation"], e["promoted"]) for e in log] == [(1, True), (2, False)]
    assert layout.best_path(root).read_bytes() == layout.candidate_path(root, 1).read_bytes()
    assert layout.rejected_path(root, 2).read_bytes() == layout.candidate_path(root, 2).read_bytes()
    # Generation 2's plan: the promoted candidate 1 plays (and training starts from it).
    plan = versioning.read_plan(root)
    assert (plan.generation, plan.player, plan.start) == (2, "models/candidates/gen-0001.pt",
                                                          "models/candidates/gen-0001.pt")
    # Training's window: generation 1's self-play, pinned by the hash of its .dvc file.
    import yaml

    md5 = yaml.safe_load((root / "data/selfplay/gen-0001.dvc").read_text())["outs"][0]["md5"]
    assert plan.window == (f"data/selfplay/gen-0001 {md5}",)


def test_mlflow_runs_versions_and_champion(project):
    root, results = project["root"], project["results"]
    from mlflow import MlflowClient

    uri = mlstore.store(root).tracking_uri
    assert uri == f"sqlite:///{root.resolve()}/.mlflow/mlflow.db"
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.get_experiment_by_name("tri-triangle")
    runs = client.search_runs([experiment.experiment_id])
    generation_runs = {r.data.tags.get("tri.generation"): r for r in runs if r.data.tags.get("tri.generation")}
    assert set(generation_runs) == {"1", "2"}
    for r in results:
        run = generation_runs[str(r["generation"])]
        assert run.info.run_id == r["mlflow_run_id"]
        assert run.data.params["mcts.simulations"] == str(PARAMS.mcts.simulations)
        assert "2 training/loss" in run.data.metrics and "3 arena/difference" in run.data.metrics
        assert len(client.get_metric_history(run.info.run_id, "2 training/loss")) == r["train_steps"]
    versions = client.search_model_versions("name='tri-triangle'")
    assert sorted(int(v.version) for v in versions) == [1, 2]
    assert str(client.get_model_version_by_alias("tri-triangle", "champion").version) == "1"
    champion = registry.resolve_model("models:/tri-triangle@champion", root)
    assert champion.read_bytes() == layout.best_path(root).read_bytes()
    proc = tri_cli("arena", "models:/tri-triangle@champion", "greedy", "--games", "2", cwd=root)
    assert proc.returncode == 0, proc.stderr


def test_lock_file_and_versions(project):
    root = project["root"]
    assert versioning.dvc_status_clean(root)
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "tag", "--list", "tri/*").split() == ["tri/gen-0001", "tri/gen-0002"]
    lock = (root / "dvc.lock").read_text()
    assert "data/selfplay/gen-0002" in lock and "models/candidates/gen-0002.pt" in lock
    # Generation 1's outputs left the lock file and are tracked by .dvc files.
    for path in layout.generation_outputs(Path("."), 1):
        assert (root / f"{path}.dvc").is_file(), path
    # Each stage lists only the params it reads.
    import yaml

    stages = yaml.safe_load(lock)["stages"]
    assert set(stages["train"]["params"]["params.yaml"]) == {"game", "train", "mcts.discount", "mcts.move_bonus",
                                                             "mcts.afterstates", "selfplay.td_steps"}
    assert stages["train"]["params"]["models/generation.yaml"] == {"window": list(versioning.read_plan(root).window)}
    assert set(stages["selfplay"]["params"]["params.yaml"]) == {"game", "mcts", "selfplay"}


def test_dvc_repro_is_byte_identical(project, tmp_path):
    root = tmp_path / "clone"
    shutil.copytree(project["root"], root, symlinks=True)
    before = (root / "dvc.lock").read_text()
    candidate = layout.candidate_path(root, 2).read_bytes()
    proc = dvc(root, "repro", "--force")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (root / "dvc.lock").read_text() == before  # every output hash, byte for byte
    assert layout.candidate_path(root, 2).read_bytes() == candidate
    assert dvc(root, "status").stdout.strip().endswith("up to date.")


def test_recording_a_generation_leaves_earlier_archives_as_they_were(project, tmp_path):
    """A generation's record commits dvc.yaml's stages only: an archived output of an earlier
    generation that changed since is reported by ``dvc status``, not silently re-recorded."""
    root = tmp_path / "clone"
    shutil.copytree(project["root"], root, symlinks=True)
    archive = root / "data/train/gen-0001.dvc"
    before = archive.read_bytes()
    losses = root / "data/train/gen-0001/losses.csv"
    changed = losses.with_name("changed.csv")
    changed.write_bytes(losses.read_bytes() + b"999,0,0,0\n")
    changed.replace(losses)  # a new file: the DVC cache's copy is untouched
    versioning.record(root)
    assert archive.read_bytes() == before
    assert not versioning.dvc_status_clean(root)
    assert git(root, "status", "--porcelain") == ""  # dvc.lock rewritten as it was


_KILLED_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tri import atomic

    def slow(tmp):
        Path(tmp).write_bytes(b"PAR1 half a shard")
        print("writing", flush=True)
        time.sleep(60)

    atomic.write_with(Path(sys.argv[1]), slow)
""")


def test_a_killed_shard_write_leaves_no_partial_shard(tmp_path):
    folder = tmp_path / "gen-0001"
    folder.mkdir()
    shard = layout.shard_path(folder, 0)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(shard)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not shard.exists() and layout.shard_paths(folder) == []
    leftovers = list(folder.iterdir())
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".shard-000.parquet.")  # ignored by DVC, readers


def test_a_failed_shard_task_is_retried(prefect_server, tmp_path, monkeypatch):
    import tri.shards

    root = tmp_path / "project"
    real = tri.shards.pq.write_table
    calls = []

    def dies_once(table, where, **kwargs):
        calls.append(where)
        if len(calls) == 1:
            Path(where).write_bytes(b"PAR1 half a shard")
            raise OSError("worker lost mid-write")
        return real(table, where, **kwargs)

    monkeypatch.setattr(tri.shards.pq, "write_table", dies_once)
    results = run_generations(root, ALWAYS, 1, runner="threads")
    assert [r["generation"] for r in results] == [1] and len(calls) > 2
    folder = layout.selfplay_dir(root, 1)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"shard-00{s}{suffix}" for s in range(PARAMS.selfplay.shards) for suffix in (".parquet", ".games.parquet"))


def test_a_second_generation_is_refused(prefect_server, tmp_path):
    import threading

    root = tmp_path / "project"
    root.mkdir()
    held, release = threading.Event(), threading.Event()

    def holder():  # another thread: the lock is re-entrant only in the thread that holds it
        with versioning.project_lock(root):
            held.set()
            release.wait(60)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(TriError, match="another generation is already running"):
            run_generations(root, ALWAYS, 1)
        proc = tri_cli("loop", "--root", root, "--generations", "1", timeout=60)
        assert_clean_error(proc, 1, "another generation is already running")
    finally:
        release.set()
        thread.join()
    assert not layout.selfplay_dir(root, 1).exists()


def test_a_versioned_project_runs_on_its_params_yaml(project, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text(dump_params(PARAMS))
    proc = tri_cli("loop", "--root", project["root"], "--generations", "1", "--params", other, timeout=60)
    assert_clean_error(proc, 1, "DVC project", "params.yaml")
    assert versioning.next_generation(project["root"]) == 3


def test_shards_are_the_same_bytes_through_dask(prefect_server, tmp_path):
    """Self-play shards fanned out to a real local Dask cluster (prefect-dask) are the bytes the
    thread runner writes: where a shard runs does not change it."""
    import prefect_dask  # noqa: F401  (the dev extra installs it: a missing runner must fail, not skip)
    by = {}
    for runner in ("threads", "dask"):
        root = tmp_path / runner
        assert [r["generation"] for r in run_generations(root, ALWAYS, 1, runner=runner)] == [1]
        by[runner] = {p.name: p.read_bytes() for p in layout.selfplay_dir(root, 1).iterdir()}
    assert len(by["dask"]) == 2 * PARAMS.selfplay.shards and by["dask"] == by["threads"]


def test_a_two_player_game_goes_through_the_same_flow(prefect_server, tmp_path):
    """Tic-Tac-Toe through the versioned flow: its own MLflow experiment and registered model,
    colours alternating in the arena, a clean lock file."""
    from mlflow import MlflowClient

    from tri.config import ArenaParams, GameParams, MctsParams, SelfplayParams

    params = PARAMS.model_copy(update={
        "game": GameParams(name="tictactoe"), "mcts": MctsParams(simulations=8),
        "selfplay": SelfplayParams(games=8, shards=2, concurrent=4, max_moves=9, temperature_moves=2, noise=True),
        "arena": ArenaParams(games=4, simulations=8, concurrent=8, max_moves=9, win_rate=0.0, temperature_moves=2,
                             temperature=1.0)})
    root = new_project(tmp_path / "ttt")
    results = run_generations(root, params, 1, tracking=True)
    assert results[0]["promoted"]
    arena = json.loads(layout.arena_path(root, 1).read_text())
    assert arena["games"] == 2 * params.arena.games and not arena["paired"]
    assert versioning.dvc_status_clean(root)
    uri = mlstore.store(root).tracking_uri
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    assert client.get_experiment_by_name("tri-tictactoe") is not None
    assert str(client.get_model_version_by_alias("tri-tictactoe", "champion").version) == "1"
    # Its best network published as a champion: the card from the project's record and the
    # commands written on it (run against the staged champion).
    from tri.champions import champion, render_card
    from tri.record.publish import EVALUATIONS, publish

    folder = tmp_path / "champions"
    card = publish("tictactoe", root, loop="tri loop --generations 1", tri_commit="test", folder=folder,
                   search={"solver": True}, echo=lambda line: None)
    # It plays with it, and in float32 (the project's precision is auto), whatever the CPU computes natively.
    assert params.mcts.precision == "auto" and card.search == {"solver": True, "precision": "float32"}
    assert card.mcts.solver and not params.mcts.solver and card.mcts.precision == "float32"
    assert "`solver: true`" in render_card(card) and "`precision: \"float32\"`" in render_card(card)
    assert card.generation == 1 and card.training.tag == "tri/gen-0001" and card.training.generations == 1
    assert card.training.project_commit == git(root, "rev-parse", "tri/gen-0001").strip()
    assert card.training.promoted == 1 and card.training.wall_minutes > 0
    assert champion("tictactoe", folder)[1] == card and (folder / "tictactoe.md").read_text() == render_card(card)
    assert [e.command for e in card.evaluations] == [c for _, c in EVALUATIONS["tictactoe"]]
    assert [e.result["game"] for e in card.evaluations] == ["tictactoe"] * 3
    assert card.evaluations[0].result["simulations"] == params.arena.simulations
    assert sorted(p.name for p in folder.iterdir()) == ["tictactoe.json", "tictactoe.md", "tictactoe.pt"]
    # Measured again under another search, as for a champion whose project is gone: the
    # evaluations are run again with the new budget and settings; the file and record stay.
    from tri.record.publish import remeasure

    again = remeasure("tictactoe", simulations=5, search={"c_puct": 2.0}, folder=folder, echo=lambda line: None)
    assert again.search == {"c_puct": 2.0, "precision": "float32"} and again.mcts.c_puct == 2.0
    assert not again.mcts.solver and again.mcts.precision == "float32"
    assert again.simulations == 5 and again.evaluations[0].result["simulations"] == 5
    assert (again.sha256, again.training, again.params) == (card.sha256, card.training, card.params)
    assert champion("tictactoe", folder)[1] == again and (folder / "tictactoe.md").read_text() == render_card(again)
    assert sorted(p.name for p in folder.iterdir()) == ["tictactoe.json", "tictactoe.md", "tictactoe.pt"]
    with pytest.raises(TriError, match="'depth' is not an mcts setting"):
        remeasure("tictactoe", search={"depth": 3}, folder=folder)
    assert champion("tictactoe", folder)[1] == again
    # A later generation joins it as an ensemble (tri ensemble): the shipped network first, with
    # its card's training, search and budget; both networks' trainings on the card.
    from tri.champions import Member
    from tri.net import load_checkpoint
    from tri.record.publish import Source, publish_ensemble

    assert run_generations(root, params, 1, tracking=True)[0]["promoted"]
    both = publish_ensemble("tictactoe", [Source(root, "tri loop --generations 1 (twice)", "test")], join=True,
                            folder=folder, echo=lambda line: None)
    assert [m.generation for m in both.members] == [1, 2] and both.generation == 2
    assert both.members[0] == Member(model_id=card.model_id, generation=1, training=card.training)
    assert both.members[1].training.tag == "tri/gen-0002" and both.members[1].training.generations == 2
    assert (both.search, both.simulations, both.params, both.training) == (again.search, 5, card.params, card.training)
    shipped = load_checkpoint(folder / "tictactoe.pt", ensemble=True)
    assert shipped.members == 2 and shipped.model_id == both.model_id != card.model_id
    assert champion("tictactoe", folder)[1] == both and "An ensemble of 2 networks" in render_card(both)
    assert [e.result["game"] for e in both.evaluations] == ["tictactoe"] * 3
    with pytest.raises(TriError, match="given twice"):  # generation 2 is in it already
        publish_ensemble("tictactoe", [Source(root, "l", "c", 2)], join=True, folder=folder, echo=lambda line: None)
    with pytest.raises(TriError, match="at least two networks"):
        publish_ensemble("tictactoe", [Source(root, "l", "c")], folder=folder)
    assert champion("tictactoe", folder)[1] == both
    assert sorted(p.name for p in folder.iterdir()) == ["tictactoe.json", "tictactoe.md", "tictactoe.pt"]


@pytest.mark.parametrize("name, moves, repro", [("gobang", 81, True), ("othello", 40, False),
                                               ("santorini", 40, False), ("pyrga", 30, False)])
def test_the_newer_games_go_through_the_versioned_flow(prefect_server, tmp_path, name, moves, repro):
    """A tiny generation of each of issues 19's and 20's games in a git + DVC project: promoted, its own
    MLflow experiment and champion alias, DVC clean; for Gobang, ``dvc repro --force`` re-creates
    every output byte for byte (the same stages as every game's, and ``test_dvc_repro_is_byte_identical``
    and the soak repro the triangle's; kept to one game here for CI's time)."""
    from mlflow import MlflowClient

    from tri.config import ArenaParams, NetParams, SelfplayParams, recipe_params

    recipe = recipe_params(name)
    params = recipe.model_copy(update={
        "net": NetParams(channels=8, blocks=1, value_hidden=8), "mcts": recipe.mcts.model_copy(update={"simulations": 4}),
        "selfplay": SelfplayParams(games=4, shards=2, concurrent=2, max_moves=moves, temperature_moves=2, noise=True),
        "train": recipe.train.model_copy(update={"max_steps": 4, "batch_size": 16}),
        "arena": ArenaParams(games=2, simulations=4, concurrent=4, max_moves=moves, win_rate=0.0, temperature_moves=2,
                             temperature=1.0)})
    root = new_project(tmp_path / name)
    results = run_generations(root, params, 1, tracking=True)
    assert results[0]["promoted"]
    assert versioning.dvc_status_clean(root)
    uri = mlstore.store(root).tracking_uri
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    assert str(client.get_model_version_by_alias(f"tri-{name}", "champion").version) == "1"
    if not repro:
        return
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    before = (copy / "dvc.lock").read_text()
    proc = dvc(copy, "repro", "--force")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (copy / "dvc.lock").read_text() == before  # every output hash, byte for byte


def test_games_a_project_starts_with_are_trained_on_and_pinned(prefect_server, tmp_path):
    """``tri new --games``: generation 1 trains on the given folders (generation 0's self-play)
    and its own, and ``dvc.lock`` pins them by hash; generation 2, whose window of 2 no longer
    reaches generation 0, trains on generations 1 and 2 alone."""
    from tests.pipeline_fixtures import game_of, write_synthetic_folder
    from tri.record.project import new_project as tri_new
    from tri.shards import count_positions

    params = with_section(ALWAYS, "train", window=2)
    folder = tmp_path / "other" / "gen-0003"
    write_synthetic_folder(folder, game_of(params), games=8)
    root = tri_new(tmp_path / "p", params, games=(folder,))
    run_generations(root, params, 2)
    rows = lambda f: count_positions(layout.shard_paths(f), game_of(params))  # noqa: E731
    given, first, second = layout.start_games_dir(root, 1), layout.selfplay_dir(root, 1), layout.selfplay_dir(root, 2)
    metrics = [json.loads(layout.train_metrics_path(root, g).read_text()) for g in (1, 2)]
    assert [m["window_positions"] for m in metrics] == [rows(given) + rows(first), rows(first) + rows(second)]
    md5 = yaml.safe_load((given.parent / "start-01.dvc").read_text())["outs"][0]["md5"]
    locked = git(root, "show", "tri/gen-0001:dvc.lock")
    assert f"data/selfplay/start-01 {md5}" in locked
    assert "start-01" not in (root / "dvc.lock").read_text()
    assert versioning.dvc_status_clean(root)
    from tri.record import outputs  # the generation's story, as its MLflow page tells it

    for g, said in ((1, "on 2 self-play folders (1 of them the games the project started with, tri new --games)"),
                    (2, "on 2 self-play folders; candidate")):
        paths = layout.generation_paths(root, g, player="models/gen-0000.pt", start="models/gen-0000.pt", window=2)
        assert said in outputs.summary(params, paths, outputs.read_inputs(params, paths))


def test_a_teacher_plays_every_generations_self_play(prefect_server, tmp_path):
    """Distillation (``tri new --teacher``): the project's teacher, here an ensemble of another
    shape, plays the generation's self-play (its model id in every shard), the candidate trains
    on it and is gated against the best as always; the plan and ``dvc.lock`` name the teacher as
    self-play's model, the MLflow run carries its model id, and ``dvc repro --force`` re-creates
    every output byte for byte."""
    from mlflow import MlflowClient

    from tests.test_ensemble import trained_looking
    from tri.ensemble import make_ensemble
    from tri.net import save_checkpoint
    from tri.record.project import new_project as tri_new

    other = with_section(ALWAYS, "net", channels=4)
    for k in range(2):
        trained_looking(tmp_path / f"m{k}.pt", other, seed=k + 1)
    teacher = make_ensemble([tmp_path / "m0.pt", tmp_path / "m1.pt"])
    save_checkpoint(teacher, tmp_path / "teacher.pt")
    root = tri_new(tmp_path / "p", ALWAYS, teacher=tmp_path / "teacher.pt")
    assert "models/teacher.pt" in git(root, "ls-files", "models").split()
    results = run_generations(root, ALWAYS, 1, tracking=True)
    assert results[0]["promoted"]
    plan = versioning.read_plan(root)
    assert (plan.player, plan.selfplay_model) == ("models/gen-0000.pt", "models/teacher.pt")
    shards = layout.shard_paths(layout.selfplay_dir(root, 1))
    assert len(shards) == 2 and all(
        pl.read_parquet(s, columns=["model_id"])["model_id"].unique().to_list() == [teacher.model_id] for s in shards)
    best = load_checkpoint(layout.best_path(root))
    assert best.net_params.channels == ALWAYS.net.channels  # the student keeps its own shape
    lock = (root / "dvc.lock").read_text()
    assert "tri selfplay --model models/teacher.pt" in lock
    assert versioning.dvc_status_clean(root)
    uri = mlstore.store(root).tracking_uri
    runs = MlflowClient(tracking_uri=uri).search_runs(
        [e.experiment_id for e in MlflowClient(tracking_uri=uri).search_experiments()],
        "tags.`tri.kind` = 'generation'")
    assert [r.data.tags.get("tri.teacher") for r in runs] == [teacher.model_id]
    assert "- Self-play: the teacher `models/teacher.pt` played" in runs[0].data.tags["mlflow.note.content"]
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    proc = dvc(copy, "repro", "--force")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (copy / "dvc.lock").read_text() == lock  # every output hash, byte for byte
