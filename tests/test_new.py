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
