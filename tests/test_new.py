"""``tri new``: a ready project with the game's measured recipe, git and DVC initialised."""

from __future__ import annotations

import subprocess

import pytest

from tests.pipeline_fixtures import tri_cli
from tri.config import load_params, recipe_params
from tri.errors import TriError
from tri.games import GAMES, entry
from tri.record.project import PROJECT_FILES, new_project


@pytest.mark.parametrize("game", GAMES)
def test_the_recipe_is_the_registry_s_over_the_defaults(game):
    params = recipe_params(game)
    assert params.game.name == game
    for section, values in entry(game).recipe.items():
        assert {k: getattr(getattr(params, section), k) for k in values} == dict(values)


def test_tri_new_makes_a_ready_project(tmp_path):
    root = tmp_path / "c4"
    proc = tri_cli("new", root, "--game", "connect4", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"created {root}" in proc.stdout
    for name in PROJECT_FILES:
        assert (root / name).is_file(), name
    assert load_params(root / "params.yaml") == recipe_params("connect4")
    assert "# " in (root / "params.yaml").read_text()  # every setting described
    git = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True)
    assert git.stdout == ""  # everything committed
    log = subprocess.run(["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True, check=True)
    assert log.stdout.strip() == "tri new: a connect4 project"
    again = tri_cli("new", root, cwd=tmp_path)
    assert again.returncode == 1 and again.stderr.strip() == f"error: tri new: {root} exists and is not an empty folder"


def test_tri_new_leaves_nothing_when_it_fails(tmp_path):
    with pytest.raises(TriError, match="not a tri checkout"):
        new_project(tmp_path / "p", recipe_params("triangle"), checkout=tmp_path / "nowhere")
    assert not (tmp_path / "p").exists()
    with pytest.raises(TriError, match="unknown game"):
        recipe_params("chess")


def test_tri_new_from_a_checkpoint_starts_generation_0_from_its_weights(tmp_path):
    """``tri new --from``: the checkpoint goes into the project (committed), the init stage and
    the loop's generation 0 take its weights, and ``dvc repro``'s init command writes the same."""
    from tri.games import make_game
    from tri.layout import start_path
    from tri.net import initial_checkpoint, load_checkpoint, save_checkpoint

    params = recipe_params("tictactoe")
    source = initial_checkpoint(make_game(params.game), params.net.model_copy(update={"seed": 99}))
    save_checkpoint(source, tmp_path / "src.pt")
    root = tmp_path / "p"
    proc = tri_cli("new", root, "--game", "tictactoe", "--from", tmp_path / "src.pt", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"model id {source.model_id}" in proc.stdout
    tracked = subprocess.run(["git", "ls-files", "models"], cwd=root, capture_output=True, text=True, check=True)
    assert tracked.stdout.split() == ["models/start.pt"]
    assert "tri init --from models/start.pt" in (root / "dvc.yaml").read_text()
    assert load_params(root / "params.yaml") == params  # the same shape: the recipe unchanged
    init = tri_cli("init", "--from", start_path(root), "--out", tmp_path / "g0.pt", "--params",
                   root / "params.yaml", cwd=root)
    assert init.returncode == 0, init.stderr
    made = load_checkpoint(tmp_path / "g0.pt")
    assert made.model_id == source.model_id and made.generation == 0
    assert made.provenance["started_from"] == source.model_id

    from pipelines.generation import ensure_initial
    best = ensure_initial(params, root)
    assert load_checkpoint(best).model_id == source.model_id


def test_tri_new_from_refuses_another_game_or_shape(tmp_path):
    from tri.games import make_game
    from tri.net import initial_checkpoint, save_checkpoint

    c4 = recipe_params("connect4")
    save_checkpoint(initial_checkpoint(make_game(c4.game), c4.net), tmp_path / "c4.pt")
    proc = tri_cli("new", tmp_path / "p", "--game", "tictactoe", "--from", tmp_path / "c4.pt", cwd=tmp_path)
    assert proc.returncode == 1 and "it is for the game 'connect4', not 'tictactoe'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "p").exists()
    ttt = recipe_params("tictactoe")
    save_checkpoint(initial_checkpoint(make_game(ttt.game), ttt.net), tmp_path / "t.pt")
    (tmp_path / "p.yaml").write_text("game: {name: tictactoe}\nnet: {channels: 8}\n")
    init = tri_cli("init", "--from", tmp_path / "t.pt", "--out", tmp_path / "g0.pt", "--params",
                   tmp_path / "p.yaml", cwd=tmp_path)
    assert init.returncode == 1 and "its network differs from params.yaml's net: channels" in init.stderr
    assert not (tmp_path / "g0.pt").exists()


def test_tri_new_from_champion_takes_the_shipped_champion(tmp_path):
    from tri.champions import champion
    from tri.net import load_checkpoint

    proc = tri_cli("new", tmp_path / "p", "--game", "tictactoe", "--from", "champion", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shipped = load_checkpoint(champion("tictactoe")[0])
    assert load_checkpoint(tmp_path / "p" / "models" / "start.pt").model_id == shipped.model_id


def test_tri_new_teacher_puts_the_teacher_in_the_project(tmp_path):
    """``tri new --teacher``: the network (here the shipped champion) is copied to
    ``models/teacher.pt`` and committed, the message names its model id; a teacher of another
    game is a one-line error that leaves no folder."""
    from tri.champions import champion
    from tri.layout import teacher_path
    from tri.net import load_checkpoint

    root = tmp_path / "p"
    proc = tri_cli("new", root, "--game", "tictactoe", "--teacher", "champion", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shipped = champion("tictactoe")[0]
    assert teacher_path(root).read_bytes() == shipped.read_bytes()
    assert f"self-play by the teacher champion (model id {load_checkpoint(shipped).model_id})" in proc.stdout
    tracked = subprocess.run(["git", "ls-files", "models"], cwd=root, capture_output=True, text=True, check=True)
    assert tracked.stdout.split() == ["models/teacher.pt"]
    wrong = tri_cli("new", tmp_path / "q", "--game", "connect4", "--teacher", shipped, cwd=tmp_path)
    assert wrong.returncode == 1 and "it is for the game 'tictactoe', not 'connect4'" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1 and not (tmp_path / "q").exists()


def test_tri_new_member_starts_from_that_network_of_an_ensemble(tmp_path):
    from tests.test_ensemble import TICTACTOE, trained_looking
    from tri.ensemble import make_ensemble
    from tri.net import load_checkpoint, save_checkpoint

    for k in range(3):
        trained_looking(tmp_path / f"m{k}.pt", TICTACTOE, seed=k + 1)
    save_checkpoint(make_ensemble([tmp_path / f"m{k}.pt" for k in range(3)]), tmp_path / "ens.pt")
    third = load_checkpoint(tmp_path / "m2.pt").model_id
    proc = tri_cli("new", tmp_path / "p", "--game", "tictactoe", "--from", tmp_path / "ens.pt", "--member", 3,
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"its network 3 (model id {third})" in proc.stdout
    assert load_checkpoint(tmp_path / "p" / "models" / "start.pt").model_id == third
    for args, message in [(["--from", tmp_path / "ens.pt", "--member", 4], "--member 4: "),
                          (["--from", tmp_path / "m0.pt", "--member", 2], "has 1 network"),
                          (["--member", 2], "--member picks a network of the ensemble --from names")]:
        bad = tri_cli("new", tmp_path / "q", "--game", "tictactoe", *args, cwd=tmp_path)
        assert bad.returncode == 1 and message in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "q").exists()


def test_tri_new_games_start_the_project_with_another_run_s_self_play(tmp_path):
    """``tri new --games``: each folder's shards are copied, in order, to ``data/selfplay/start-KK``
    and tracked by DVC in the first commit; they are generation 0's self-play, so the replay window
    of a generation whose ``train.window`` reaches generation 0 holds them (the plan names each
    with its hash), and one whose window does not, none."""
    from tests.pipeline_fixtures import PARAMS, game_of, with_section, write_synthetic_folder
    from tri import layout
    from tri.record import versioning

    folders = [tmp_path / "run" / f"gen-000{k}" for k in (1, 2)]
    for k, folder in enumerate(folders):
        write_synthetic_folder(folder, game_of(PARAMS), games=6, seed=k)
    root = new_project(tmp_path / "p", PARAMS, games=tuple(folders))
    given = layout.start_games_dirs(root)
    assert [g.name for g in given] == ["start-01", "start-02"]
    for folder, copy in zip(folders, given):
        names = sorted(p.name for p in folder.iterdir())
        assert sorted(p.name for p in copy.iterdir()) == names
        assert all((copy / n).read_bytes() == (folder / n).read_bytes() for n in names)
    git = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True, check=True).stdout
    assert git("status", "--porcelain") == ""
    assert git("ls-files", "data/selfplay").split() == [
        "data/selfplay/.gitignore", "data/selfplay/start-01.dvc", "data/selfplay/start-02.dvc"]
    assert layout.window_dirs(root, 0, 1) == given
    plan = versioning.begin(with_section(PARAMS, "train", window=2), root, 1)
    hashes = [yaml_md5(root / f"data/selfplay/start-0{k}.dvc") for k in (1, 2)]
    assert plan.window == (f"data/selfplay/start-01 {hashes[0]}", f"data/selfplay/start-02 {hashes[1]}")
    assert versioning.begin(with_section(PARAMS, "train", window=2), root, 2).window == ()  # gen 1 not run
    assert versioning.begin(with_section(PARAMS, "train", window=1), root, 1).window == ()


def yaml_md5(dvc_file) -> str:
    import yaml

    return yaml.safe_load(dvc_file.read_text())["outs"][0]["md5"]


def test_tri_new_games_refuses_what_is_not_self_play_of_the_game(tmp_path):
    """A folder without shards, or with another configuration's: one line, exit 1, no project."""
    from tests.pipeline_fixtures import PARAMS, assert_clean_error, game_of, write_synthetic_folder

    (tmp_path / "empty").mkdir()
    write_synthetic_folder(tmp_path / "small", game_of(PARAMS), games=4)  # PARAMS' small board
    (tmp_path / "lone").mkdir()
    write_synthetic_folder(tmp_path / "lone", game_of(PARAMS), games=4)
    next((tmp_path / "lone").glob("*.games.parquet")).unlink()
    for folder, needle in [("empty", "no self-play shards"), ("small", "a different triangle configuration"),
                           ("lone", "has no game summaries beside it"), ("missing", "does not exist")]:
        proc = tri_cli("new", tmp_path / "p", "--game", "triangle", "--games", tmp_path / folder, cwd=tmp_path)
        assert_clean_error(proc, 2 if folder == "missing" else 1, needle)
        assert not (tmp_path / "p").exists()
