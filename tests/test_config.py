"""``params.yaml`` loading and validation (one readable line per problem), the ``tri params``
command, and the environment-driven :class:`Runtime`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from tri.cli import main as cli
from tri.config import Params, Runtime, load_params
from tri.params_yaml import dump_params
from tri.errors import ParamsError, TriError
from tri.games import make_game
from tri.games.triangle.rules import DEFAULT_TEMPLATES, TriangleConfig
from tri.resources import format_bytes, machine_memory
from tri.selfplay import check_params

from tests.pipeline_fixtures import assert_clean_error, tri_cli

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "params.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ParamsError) as info:
        load_params(path)
    err = info.value
    assert err.source == str(path)
    assert str(err).splitlines() == [f"{path}: {p}" for p in err.problems]
    assert err.exit_code == 2 and isinstance(err, TriError)
    return err.problems


# ---- the shipped file and the defaults --------------------------------------------------------


def test_shipped_params_equal_defaults():
    params = load_params(REPO / "params.yaml")
    assert params == Params()
    assert params.game.triangle == TriangleConfig()
    assert params.game.triangle.templates == DEFAULT_TEMPLATES
    assert len(params.game.triangle.templates) == 31


def test_default_path_and_embedded_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_params() == Params()  # no ./params.yaml: embedded defaults
    write(tmp_path, "game:\n  triangle:\n    num_slots: 2\n")
    assert load_params().game.triangle.num_slots == 2  # ./params.yaml when present


EMPTY = "is empty; write the sections to change (see tri params) or delete it to use the embedded defaults"


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n# and another\n", "{}\n"],
                         ids=["empty", "blank", "comments", "empty-mapping"])
def test_empty_file_is_refused(tmp_path, text):
    assert problems(write(tmp_path, text)) == [EMPTY]


def test_cli_empty_params_file(tmp_path):
    write(tmp_path, "# nothing yet\n", "params.yaml")
    for args in (["params"], ["params", "--params", "params.yaml"]):  # found in the folder, or named
        proc = tri_cli(*args, cwd=tmp_path)
        assert_clean_error(proc, 2)
        assert proc.stderr.splitlines() == [f"error: params.yaml: {EMPTY}"]


def test_dump_round_trips(tmp_path):
    assert load_params(write(tmp_path, dump_params(Params()))) == Params()
    cfg = TriangleConfig(rows=4, cols=7, playable=((1, 6), (0, 7), (0, 7), (1, 6)), num_slots=2,
                         templates=DEFAULT_TEMPLATES[:5] + (((0, 0, False), (1, 1, False)),))
    custom = Params(game={"triangle": cfg})
    loaded = load_params(write(tmp_path, dump_params(custom), "custom.yaml"))
    assert loaded == custom and loaded != Params()
    assert make_game(loaded.game).num_actions == 2 * 4 * 7


def test_templates_accept_letters_and_booleans(tmp_path):
    text = "game:\n  triangle:\n    templates:\n      - [[0, 0, U], [1, 0, d]]\n      - [[0, 0, true]]\n"
    cfg = load_params(write(tmp_path, text)).game.triangle
    assert cfg.templates == (((0, 0, True), (1, 0, False)), ((0, 0, True),))


# ---- one line per problem -------------------------------------------------------------------


def test_rows_must_be_positive(tmp_path):
    assert problems(write(tmp_path, "game: {triangle: {rows: 0}}\n")) == ["game.triangle.rows: must be > 0"]


def test_several_problems_one_line_each(tmp_path):
    lines = problems(write(tmp_path, "game:\n  triangle: {rows: 0, cols: 40, num_slots: abc}\n"))
    assert "game.triangle.rows: must be > 0" in lines
    assert "game.triangle.cols: must be <= 32" in lines
    assert "game.triangle.num_slots: must be an integer" in lines
    assert len(lines) == 3


@pytest.mark.parametrize("text, problem", [
    ("mcts: {simulations: 2147483647}", "mcts.simulations: must be <= 2147483646"),
    ("arena: {simulations: 10000000000}", "arena.simulations: must be <= 2147483646"),
    ("selfplay: {max_moves: 2147483648}", "selfplay.max_moves: must be <= 2147483647"),
    ("mcts: {leaves_per_step: 65537}", "mcts.leaves_per_step: must be <= 65536"),
    ("train: {threads: 1025}", "train.threads: must be <= 1024"),
    ("selfplay: {seed: -1}", "selfplay.seed: must be >= 0"),
    ("net: {seed: 9223372036854775808}", "net.seed: must be <= 9223372036854775807"),
])
def test_hard_upper_bounds(tmp_path, text, problem):
    assert problems(write(tmp_path, text + "\n")) == [problem]


def test_the_bounds_themselves_are_accepted(tmp_path):
    text = ("mcts: {simulations: 2147483646, leaves_per_step: 65536}\nselfplay: {max_moves: 2147483647, "
            "seed: 9223372036854775807}\ntrain: {threads: 1024}\n")
    params = load_params(write(tmp_path, text))
    assert params.mcts.simulations == 2**31 - 2 and params.selfplay.max_moves == 2**31 - 1


# ---- what fits in memory (tri.resources) ---------------------------------------------------------


def test_format_bytes():
    assert [format_bytes(n) for n in (512, 2048, 56_050_000_000, 2**50 * 3)] == \
        ["512 bytes", "2.0 KiB", "52.2 GiB", "3.0 PiB"]


def test_machine_memory_is_the_physical_memory():
    total = machine_memory()
    assert total is None or total == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") > 2**28


def test_check_params_passes_the_defaults_and_refuses_what_does_not_fit(monkeypatch):
    import tri.resources

    check_params(Params())  # the shipped settings fit (they need about 0.2 GiB)
    monkeypatch.setattr(tri.resources, "machine_memory", lambda: 2**30)
    check_params(Params())
    with pytest.raises(TriError) as info:
        check_params(Params(mcts={"simulations": 1_000_000}, selfplay={"concurrent": 32}))
    assert str(info.value) == ("mcts.simulations: 1000000 simulations for 32 games at once need about 110.9 GiB "
                               "for the search trees, more than this machine's 1.0 GiB of memory; lower "
                               "mcts.simulations or selfplay.concurrent")
    with pytest.raises(TriError, match=r"^mcts.simulations: .* in each of 2 workers .*, or TRI_WORKERS$"):
        check_params(Params(mcts={"simulations": 30_000}), workers=2)
    with pytest.raises(TriError, match=r"^selfplay.games: 1000000 games in 2 shards keep up to 250,000,000 "
                                       r"positions .* use more selfplay.shards or fewer selfplay.games"):
        check_params(Params(selfplay={"games": 1_000_000}))
    with pytest.raises(TriError, match=r"^arena.simulations: 1000000 simulations for 32 games at once .*; "
                                       r"lower arena.simulations or arena.concurrent$"):
        check_params(Params(arena={"simulations": 1_000_000}))


def test_unknown_setting(tmp_path):
    lines = problems(write(tmp_path, "game:\n  triangle:\n    rowz: 3\n"))
    assert lines == ["game.triangle.rowz: unknown setting"]
    lines = problems(write(tmp_path, "gmae: {}\n", "top.yaml"))
    assert lines == ["gmae: unknown setting"]


def test_invalid_yaml_names_the_line(tmp_path):
    lines = problems(write(tmp_path, "game:\n  triangle: {rows: 8\n  name: [\n"))
    assert len(lines) == 1
    assert "not valid YAML" in lines[0] and "line 3" in lines[0]


def test_tab_indentation_is_invalid_yaml(tmp_path):
    lines = problems(write(tmp_path, "game:\n\ttriangle: {}\n"))
    assert len(lines) == 1 and "not valid YAML" in lines[0] and "line 2" in lines[0]


@pytest.mark.parametrize("text", ["- 1\n- 2\n", "just a string\n", "42\n", "[game, triangle]\n"],
                         ids=["list", "string", "number", "flow-list"])
def test_top_level_must_be_a_mapping(tmp_path, text):
    lines = problems(write(tmp_path, text))
    assert len(lines) == 1 and "mapping" in lines[0], lines


def test_section_must_be_a_mapping(tmp_path):
    assert problems(write(tmp_path, "game: 3\n")) == ["game: must be a mapping of settings"]


def test_missing_explicit_file(tmp_path):
    assert problems(tmp_path / "nope.yaml") == ["file not found"]
    assert problems(tmp_path) == ["file not found"]  # a directory is not a file


def test_bad_template(tmp_path):
    lines = problems(write(tmp_path, "game:\n  triangle:\n    templates: [[[0, 0, U]], [[0, 0, X]]]\n"))
    assert len(lines) == 1 and lines[0].startswith("game.triangle.templates"), lines
    assert "template 1" in lines[0]
    lines = problems(write(tmp_path, "game:\n  triangle:\n    templates: []\n", "empty.yaml"))
    assert len(lines) == 1 and lines[0].startswith("game.triangle.templates")


def test_bad_playable(tmp_path):
    lines = problems(write(tmp_path, "game:\n  triangle: {rows: 4}\n"))
    assert len(lines) == 1 and lines[0].startswith("game.triangle") and "playable" in lines[0]
    text = "game:\n  triangle: {rows: 2, cols: 4, playable: [[0, 4], [3, 5]]}\n"
    lines = problems(write(tmp_path, text, "p2.yaml"))
    assert len(lines) == 1 and "playable row 1" in lines[0]


def test_afterstates_and_chance_nodes_combine(tmp_path):
    """Both on: the search's afterstates with chance nodes (tests/search/test_afterstates.py)."""
    mcts = load_params(write(tmp_path, "mcts: {afterstates: true, chance_outcomes: 4}\n")).mcts
    assert mcts.afterstates and mcts.chance_outcomes == 4
    assert load_params(write(tmp_path, "mcts: {chance_outcomes: 4}\n", "default.yaml")).mcts.afterstates


def test_bootstrapping_at_afterstates_needs_them(tmp_path):
    lines = problems(write(tmp_path, "mcts: {afterstates: false}\ntrain: {bootstrap: afterstate}\n"))
    assert lines == ["train.bootstrap: afterstate needs mcts.afterstates: true"]
    ok = load_params(write(tmp_path, "train: {bootstrap: afterstate, luck_samples: 0}\n", "ok.yaml"))
    assert ok.train.bootstrap == "afterstate"


@pytest.mark.parametrize("text", ["train: {bootstrap: afterstate, luck_samples: 4}\n",
                                  "train: {bootstrap: afterstate}\n"])  # the recipe's luck_samples is 4
def test_luck_removal_needs_targets_that_hold_the_draws(tmp_path, text):
    lines = problems(write(tmp_path, text))
    assert lines == ["train.bootstrap: afterstate needs train.luck_samples: 0 (a target bootstrapped at an "
                     "afterstate holds no draw's luck)"]
    assert load_params(write(tmp_path, "train: {luck_samples: 2}\n", "ok.yaml")).train.luck_samples == 2
    assert Params().train.luck_samples == 4


def test_wrong_game_name(tmp_path):
    lines = problems(write(tmp_path, "game: {name: chess}\n"))
    assert len(lines) == 1 and lines[0].startswith("game.name: must be one of")


def test_params_ignore_environment(monkeypatch):
    monkeypatch.setenv("GAME", '{"triangle": {"rows": 3}}')
    monkeypatch.setenv("TRI_GAME", '{"triangle": {"rows": 3}}')
    assert Params() == Params(game={})
    assert Params().game.triangle.rows == 8


# ---- the CLI ----------------------------------------------------------------------------------


def test_cli_params_prints_effective_yaml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["params"])
    assert result.exit_code == 0, result.output
    assert load_params(write(tmp_path, result.stdout, "echo.yaml")) == Params()


AFTERSTATES = ("note: params.yaml leaves out mcts.afterstates, whose default became true on 2026-11-27, so this "
               "project now runs on it; write 'afterstates: false' under mcts: to keep the old recipe")
LUCK = ("note: params.yaml leaves out train.luck_samples, whose default became 4 on 2026-11-29, so this project "
        "now runs on it; write 'luck_samples: 0' under train: to keep the old recipe")


@pytest.mark.parametrize("text, notes", [
    ("game: {name: triangle}\nmcts: {simulations: 16}\n", [AFTERSTATES, LUCK]),  # written before both existed
    ("game: {name: triangle}\nmcts: {afterstates: true}\n", [LUCK]),
    ("game: {name: triangle}\nmcts: {afterstates: false}\ntrain: {luck_samples: 0}\n", []),
    ("game: {name: triangle}\nmcts: {afterstates: true}\ntrain: {luck_samples: 4}\n", []),
    ("game: {name: connect4}\n", []),  # no draws: the settings change nothing
])
def test_a_setting_whose_default_changed_is_noted_when_left_out(tmp_path, monkeypatch, text, notes):
    """A params.yaml that leaves out a setting whose default changed since (mcts.afterstates,
    train.luck_samples) runs on the new default; tri params (and tri loop) say so in one line
    each, and how to keep the old recipe."""
    from tri.params_yaml import changed_defaults

    monkeypatch.chdir(tmp_path)
    write(tmp_path, text, "params.yaml")
    result = CliRunner().invoke(cli, ["params"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == notes
    assert changed_defaults(Path("params.yaml"), load_params("params.yaml")) == notes


def test_cli_params_bad_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "game:\n  triangle: {rows: 0, cols: 40}\n", "bad.yaml")
    result = CliRunner().invoke(cli, ["params", "--params", "bad.yaml"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["error: bad.yaml: game.triangle.rows: must be > 0",
                                          "error: bad.yaml: game.triangle.cols: must be <= 32"]
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("text, needle", [
    ("game: {triangle: {rows: 8\n", "not valid YAML"),
    ("- 1\n- 2\n", "mapping"),
    (None, "file not found"),
], ids=["yaml", "list", "missing"])
def test_cli_params_other_errors(tmp_path, monkeypatch, text, needle):
    monkeypatch.chdir(tmp_path)
    if text is not None:
        write(tmp_path, text, "bad.yaml")
    result = CliRunner().invoke(cli, ["params", "--params", "bad.yaml"])
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: bad.yaml: ") and needle in lines[0], lines
    assert "Traceback" not in result.output


def test_cli_subprocess_exit_status_and_stderr(tmp_path):
    """The real process: exit status 2, the message on stderr, no traceback."""
    write(tmp_path, "game: {triangle: {rows: 0}}\n", "bad.yaml")
    proc = subprocess.run([sys.executable, "-m", "tri.cli", "params", "--params", "bad.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["error: bad.yaml: game.triangle.rows: must be > 0"]
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr + proc.stdout


# ---- runtime settings from the environment ----------------------------------------------------


def test_runtime_reads_environment(monkeypatch):
    monkeypatch.setenv("TRI_WORKERS", "3")
    monkeypatch.setenv("TRI_DEVICE", "cpu")
    rt = Runtime()
    assert rt.workers == 3 and rt.device == "cpu"


def test_runtime_defaults(monkeypatch):
    monkeypatch.delenv("TRI_WORKERS", raising=False)
    monkeypatch.delenv("TRI_DEVICE", raising=False)
    rt = Runtime()
    assert rt.device == "auto" and rt.workers == (os.cpu_count() or 1)


def test_runtime_rejects_bad_workers(monkeypatch):
    monkeypatch.setenv("TRI_WORKERS", "0")
    with pytest.raises(ValidationError):
        Runtime()
    monkeypatch.setenv("TRI_WORKERS", "many")
    with pytest.raises(ValidationError):
        Runtime()
