"""The shipped champions (``models/champions``) and the ``champion`` player specs.

The first tests check every shipped champion against its card: the file's sha256, the rendered
card, the params (the game's recipe, as ``tri new`` writes it), and a small slice of its
evaluations replayed by the very command written on the card, which must give the card's
figures. The rest use tiny champions made here (``TRI_CHAMPIONS``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline_fixtures import TINY_NET, assert_clean_error, save_model
from tri import champions
from tri.atomic import sha256
from tri.champions import ChampionCard, Evaluation, Training, render_card
from tri.config import GameParams, Params, recipe_params
from tri.errors import TriError
from tri.games import GAMES
from tri.net import load_checkpoint
from tri.player_specs import parse_spec
from tri.record.publish import CHECKS, EVALUATIONS, run_command

SHIPPED = champions.CHECKOUT_CHAMPIONS
SHARED = Path(__file__).resolve().parents[2] / "shared"


# Games registered before their first learning run: no champion ships yet, and
# `tri play GAME` falls back to greedy. Empty this as their champions land.
AWAITING_CHAMPION: tuple[str, ...] = ()
# The settings over the recipe of a champion distilled from a teacher: the triangle's (README,
# ablation line 51: the champion before it grown to 64 channels, line 48's teacher settings,
# 9,681 steps on the games it started with and its own, the arena on 200 seeds).
DISTILLED = {"triangle": {("net", "channels"): 64, ("mcts", "value_scale"): 1.15,
                          ("train", "samples_per_position"): 32.0, ("train", "max_steps"): 10000,
                          ("train", "reanalyse"): False, ("arena", "games"): 200}}
SHIPS = sorted(set(GAMES) - set(AWAITING_CHAMPION))


def test_every_game_ships_a_champion():
    assert champions.available(SHIPPED) == SHIPS
    assert set(EVALUATIONS) == set(CHECKS) == set(GAMES)  # ready for the games still training


@pytest.mark.parametrize("game", SHIPS)
def test_the_shipped_champion_matches_its_card(game):
    path, card = champions.champion(game, SHIPPED)  # checks the sha256
    assert path.stat().st_size < 10 * 2**20  # a small file, in git
    ckpt = load_checkpoint(path, ensemble=bool(card.members))  # weights_only=True
    assert ckpt.game == game and ckpt.model_id == card.model_id and ckpt.generation == card.generation
    assert ckpt.members == max(1, len(card.members))
    assert not ckpt.optimizer
    assert (SHIPPED / f"{game}.md").read_text() == render_card(card)
    # Trained with the game's recipe: `tri new DIR --game GAME` writes these very params (a recipe's
    # precision `auto` is whichever format the training machine computes natively: the card names it).
    params, recipe = Params(**card.params), recipe_params(game)
    for section in ("mcts", "train"):
        if getattr(recipe, section).precision == "auto":
            kept = getattr(recipe, section).model_copy(update={"precision": getattr(params, section).precision})
            recipe = recipe.model_copy(update={section: kept})
    # Settings that became the triangle recipe after its champion was trained, and that two-player
    # games do not use: train.reanalyse (README, ablation line 12; a card written before it existed
    # says false), mcts.afterstates (lines 19-20; the card says false) and train.luck_samples (line 40).
    for section, setting in (("train", "reanalyse"), ("mcts", "afterstates"), ("train", "luck_samples")):
        kept = getattr(recipe, section).model_copy(update={setting: getattr(getattr(params, section), setting)})
        recipe = recipe.model_copy(update={section: kept})
    # A champion distilled from a teacher (tri new --teacher) trained with the settings its
    # project's params.yaml set over the recipe, each listed here; nothing else may differ.
    if "--teacher" in card.training.project:
        for (section, setting), value in DISTILLED[game].items():
            recipe = recipe.model_copy(update={section: getattr(recipe, section).model_copy(update={setting: value})})
    assert params == recipe
    for member in card.members or [card]:  # an ensemble (tri ensemble): each network's own training
        assert member.training.tag == f"tri/gen-{member.generation:04d}"
    if card.members:
        assert card.training == card.members[0].training and card.generation == max(m.generation for m in card.members)
    assert [e.command for e in card.evaluations] == [c for _, c in EVALUATIONS[game]]
    assert card.check.command == CHECKS[game][1]


@pytest.mark.parametrize("game", SHIPS)
def test_the_check_on_the_card_replays_to_the_same_figures(game):
    if game == "connect4" and not (SHARED / "connect4-testsets").is_dir():
        pytest.skip("Pons' test sets (../shared) are not beside the checkout")
    card = champions.load_card(game, SHIPPED)
    result = run_command(card.check.command, SHIPPED)
    assert_same(result, card.check.result)


# Result fields that joined after some cards were measured (tri eval triangle's `baseline_file`
# and `conditions`, 2026-11-28; `player_file`, 2026-11-28 later; `pooled`, 2026-11-30): a card
# written before them lacks them, a replay has them.
LATER_FIELDS = {"baseline_file", "conditions", "player_file", "pooled"}


def assert_same(got, want, where="result"):
    """Equal, but for timings; floats to 1e-9 (the same machine type gives the same bits)."""
    if isinstance(want, dict):
        assert set(got) - (LATER_FIELDS - set(want)) == set(want), where
        for key in want:
            if key != "seconds":
                assert_same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (where, got, want)
    else:
        assert got == want, (where, got, want)


# ---- tiny champions -----------------------------------------------------------------------------


def tiny_champion(folder: Path, game: str, *, simulations: int = 3) -> ChampionCard:
    """A fresh tiny network of ``game`` (default rules) as a champion in ``folder``."""
    params = Params(game=GameParams(name=game), net=TINY_NET)
    folder.mkdir(parents=True, exist_ok=True)
    ckpt = save_model(folder / f"{game}.pt", params, generation=7)
    training = Training(project=f"tri new p --game {game}", loop="tri loop --root p", tag="tri/gen-0007",
                        project_commit="0" * 40, tri_commit="test", generations=7, promoted=3, wall_minutes=1.5,
                        machine="test")
    card = ChampionCard(game=game, checkpoint=f"{game}.pt", sha256=sha256(folder / f"{game}.pt"),
                        model_id=ckpt.model_id, generation=7, simulations=simulations,
                        params=params.model_dump(mode="json"), training=training,
                        evaluations=[Evaluation(title="t", command="tri arena champion greedy", result={"x": 1.5})],
                        check=Evaluation(title="c", command="tri arena champion greedy --games 2", result={}))
    (folder / f"{game}.json").write_text(card.model_dump_json())
    (folder / f"{game}.md").write_text(render_card(card))
    return card


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    folder = tmp_path / "champions"
    for game in ("tictactoe", "triangle"):
        tiny_champion(folder, game)
    monkeypatch.setenv("TRI_CHAMPIONS", str(folder))
    return folder


def test_champion_specs(tiny):
    spec = parse_spec("champion", game="tictactoe")
    assert spec.kind == "mcts" and spec.path == tiny / "tictactoe.pt" and spec.simulations == 3
    assert spec.mcts == Params(game=GameParams(name="tictactoe"), net=TINY_NET).mcts  # its card's search
    assert parse_spec("champion:tictactoe").path == tiny / "tictactoe.pt"
    assert parse_spec("champion:tictactoe", game="tictactoe").path == tiny / "tictactoe.pt"
    assert parse_spec("net:champion:triangle").kind == "net"
    sims = parse_spec("mcts:champion:tictactoe:9")
    assert sims.path == tiny / "tictactoe.pt" and sims.simulations == 9 and sims.mcts is not None
    assert champions.spec_game("net:champion:triangle") == "triangle"
    assert champions.spec_game("mcts:champion:connect4:800") == "connect4"
    assert champions.spec_game("champion") is None and champions.spec_game("greedy") is None


def test_champion_errors_are_one_line(tiny):
    with pytest.raises(TriError, match="which game's champion"):
        parse_spec("champion")
    with pytest.raises(TriError, match=r"plays triangle, but this plays tictactoe \(use --game triangle\)"):
        parse_spec("champion:triangle", game="tictactoe")
    with pytest.raises(TriError, match=r"no champion for connect4: .*connect4.json not found"):
        parse_spec("champion:connect4")
    with open(tiny / "triangle.pt", "ab") as f:
        f.write(b"\0")
    with pytest.raises(TriError, match="does not match the sha256 on its card"):
        parse_spec("champion:triangle")
    (tiny / "tictactoe.json").write_text("{not json")
    with pytest.raises(TriError, match="not a valid card"):
        parse_spec("champion", game="tictactoe")


def cli(*args, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tri.cli", *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=300)


def test_champions_in_the_commands(tiny, tmp_path):
    # tri arena: the game from champion:GAME (another game than params.yaml's plays with its recipe)
    proc = cli("arena", "champion:tictactoe", "greedy", "--games", "2", "--out", tmp_path / "a.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "a.json").read_text())["game"] == "tictactoe"
    proc = cli("arena", "--game", "tictactoe", "champion", "random", "--games", "2", cwd=tmp_path)
    assert proc.returncode == 0 and "champion" in proc.stdout, proc.stderr
    # tri play: the champion is the default opponent
    proc = cli("play", "tictactoe", stdin="5\nq\n", cwd=tmp_path)
    assert proc.returncode == 0 and "2. champion (O):" in proc.stdout, proc.stdout + proc.stderr
    # tri play triangle --watch: the champion plays a seed while you watch (no input read)
    proc = cli("play", "triangle", "--watch", "--seed", "3", cwd=tmp_path)
    assert proc.returncode == 0 and "game over: score" in proc.stdout, proc.stdout + proc.stderr
    assert "(end of input)" not in proc.stdout
    proc = cli("champions", cwd=tmp_path)
    assert proc.returncode == 0 and "tictactoe  generation 7, 3 simulations" in proc.stdout, proc.stdout
    assert_clean_error(cli("arena", "champion:connect4", "greedy", cwd=tmp_path), 1, "no champion for connect4")
    assert_clean_error(cli("play", "triangle", "--watch", "--player", "champion:tictactoe", cwd=tmp_path), 1,
                       "plays tictactoe, but this plays triangle")


def test_a_stopped_publish_leaves_no_staging_folder(tmp_path):
    """``tri champions publish`` runs under ``stop_on_signals``: a SIGTERM (or Ctrl-C) mid-way
    unwinds like an exception, so its staging folder beside the champions is removed (a plain
    SIGTERM would end the process with the folder left there)."""
    script = f"""
import os, signal, tempfile
from tri.cli.common import stop_on_signals
try:
    with stop_on_signals():
        with tempfile.TemporaryDirectory(dir={str(tmp_path)!r}, prefix=".staging-"):
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pause()
except KeyboardInterrupt:
    print("stopped")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "stopped", done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_card_s_search_settings_go_over_its_params():
    """``search`` on a card (``tri champions publish --search solver=true``): the champion plays
    with those mcts settings over its training params; a card without it plays its params; a
    setting that is not mcts's, or a value mcts refuses, is one line."""
    from tri.champions import play_search
    from tri.cli.champions import _settings

    plain = champions.champion("tictactoe")[1]
    assert plain.search == {} and plain.mcts == Params(**plain.params).mcts
    triangle = champions.champion("triangle")[1]  # trained in auto (bfloat16 there) one leaf a call,
    trained = Params(**triangle.params).mcts       # plays in float32, 4 leaves a call (values x 1.15 both)
    assert trained.precision == "auto" and trained.leaves_per_step == 1 and trained.afterstates
    assert trained.value_scale == 1.15
    settings = {"precision": "float32", "leaves_per_step": 4}
    assert triangle.search == settings and triangle.mcts == trained.model_copy(update=settings)
    card = champions.champion("connect4")[1]  # remeasured with its search settings over its params
    trained = Params(**card.params).mcts
    assert card.search and not trained.solver and not trained.gumbel and not trained.symmetrize
    assert card.mcts.solver and card.mcts.gumbel and card.mcts.symmetrize and card.mcts.c_puct == 3.0
    assert card.mcts == play_search(trained, card.search)
    assert play_search(trained, {"solver": True}).solver and play_search(trained, {}) == trained
    with pytest.raises(TriError, match="'depth' is not an mcts setting"):
        play_search(card.mcts, {"depth": 3})
    with pytest.raises(TriError, match="search setting c_puct: "):
        play_search(card.mcts, {"c_puct": -1})
    assert _settings(("solver=true", "c_puct= 3.0")) == {"solver": True, "c_puct": 3.0}
    with pytest.raises(TriError, match="expected KEY=VALUE"):
        _settings(("solver",))


def test_the_champion_player_evaluates_as_its_card_says(monkeypatch):
    """``champion:connect4`` plays with its card's search, the network's evaluation included
    (``symmetrize``, ``precision``), whatever the project's mcts says; ``net:`` and a checkpoint
    path take the project's."""
    import numpy as np

    import tri.players as players
    from tri.games import make_game

    seen = []
    real = players.make_evaluator

    def spy(model, game, device="cpu", **kwargs):
        seen.append(kwargs)
        return real(model, game, device, **kwargs)

    monkeypatch.setattr(players, "make_evaluator", spy)
    params = recipe_params("connect4")
    game = make_game(params.game)
    card = champions.champion("connect4")[1]
    agent = players.make_agent(parse_spec("champion", game="connect4"), game, params.mcts, params.arena,
                               np.random.default_rng(0))
    assert seen[-1] == {"precision": card.mcts.precision, "symmetrize": True, "distinct": False, "fast": False,
                           "cache": 0, "onnx": False}
    assert agent.params == card.mcts
    players.make_agent(parse_spec(str(champions.champion("connect4")[0]), game="connect4"), game, params.mcts,
                       params.arena, np.random.default_rng(0))
    assert seen[-1]["symmetrize"] is False
    # The triangle champion's card: its trees and search (one tree, with afterstates).
    params = recipe_params("triangle")
    game = make_game(params.game)
    card = champions.champion("triangle")[1]
    agent = players.make_agent(parse_spec("champion", game="triangle"), game, params.mcts, params.arena,
                               np.random.default_rng(0))
    assert agent.determinizations == card.determinizations and agent.params == card.mcts
    assert agent.simulations == card.simulations
    # Several trees per move (a search without afterstates): each distinct position once a step;
    # one tree, every position of a step. A single-player game's player searches through the
    # folded snapshot either way, remembering what it evaluated; a two-player game's one tree
    # through the model itself.
    sampled = params.mcts.model_copy(update={"afterstates": False, "precision": "float32"})
    path = str(champions.champion("triangle")[0])
    agent = players.make_agent(parse_spec(f"mcts:{path}:32x8", game="triangle"), game, sampled, params.arena,
                               np.random.default_rng(0))
    assert agent.determinizations == 8
    assert seen[-1] == {"precision": "float32", "symmetrize": False, "distinct": True, "fast": True,
                        "cache": players.PLAYER_CACHE, "onnx": True}
    players.make_agent(parse_spec(f"mcts:{path}:32x1", game="triangle"), game, sampled, params.arena,
                       np.random.default_rng(0))
    assert seen[-1]["distinct"] is False and seen[-1]["fast"] is True and seen[-1]["cache"] == players.PLAYER_CACHE


def test_a_card_that_searches_with_afterstates_says_one_tree():
    """``publish`` and ``remeasure`` write the trees the champion will grow, as a player grows
    them: with afterstates one, whatever was asked; without, the trees asked in a game with
    chance, one in a game without."""
    from tri.config import MctsParams
    from tri.record.publish import _trees

    triangle, tictactoe = recipe_params("triangle"), recipe_params("tictactoe")
    assert _trees(triangle, MctsParams(afterstates=True), 8) == 1
    assert _trees(triangle, MctsParams(afterstates=False), 8) == 8
    assert _trees(tictactoe, MctsParams(afterstates=False), 8) == 1


def test_a_card_names_the_network_its_project_went_on_from(tmp_path):
    """``tri new --from``: the card's project command says where generation 0 came from, the
    shipped champion by name, another network by its model id; fresh weights say nothing."""
    import shutil

    from tri import layout
    from tri.record.lineage import started_from as _started_from

    project = tmp_path / "p"
    assert _started_from(project, "tictactoe") == ""
    layout.start_path(project).parent.mkdir(parents=True)
    shutil.copyfile(champions.champion("tictactoe")[0], layout.start_path(project))
    assert _started_from(project, "tictactoe") == " --from champion"
    other = save_model(layout.start_path(project), Params(game=GameParams(name="tictactoe"), net=TINY_NET))
    assert _started_from(project, "tictactoe") == f" --from models/start.pt (model {other.model_id})"


def test_a_card_names_the_teacher_of_its_project(tmp_path):
    """``tri new --teacher``: the card's project command names the teacher, the shipped
    champion by name, with its model id either way; no teacher says nothing."""
    import shutil

    from tri import layout
    from tri.record.lineage import taught_by as _taught_by

    project = tmp_path / "p"
    assert _taught_by(project, "tictactoe") == ""
    layout.teacher_path(project).parent.mkdir(parents=True)
    shutil.copyfile(champions.champion("tictactoe")[0], layout.teacher_path(project))
    shipped = champions.champion("tictactoe")[1].model_id
    assert _taught_by(project, "tictactoe") == f" --teacher champion (model {shipped})"
    other = save_model(layout.teacher_path(project), Params(game=GameParams(name="tictactoe"), net=TINY_NET))
    assert _taught_by(project, "tictactoe") == f" --teacher models/teacher.pt (model {other.model_id})"


def test_a_card_counts_the_games_its_project_started_with(tmp_path):
    """``tri new --games``: the card's project command says how many folders and games of other
    runs the project started with; a project without them says nothing."""
    from tests.pipeline_fixtures import PARAMS, game_of, write_synthetic_folder
    from tri import layout
    from tri.record.lineage import started_with

    project = tmp_path / "p"
    assert started_with(project) == ""
    for k, games in ((1, 5), (2, 7)):
        write_synthetic_folder(layout.start_games_dir(project, k), game_of(PARAMS), games=games, seed=k)
    assert started_with(project) == " --games ... (2 self-play folders of other runs, 12 games)"


def test_an_ensemble_card_lists_its_members(tmp_path, monkeypatch):
    """An ensemble champion's card (``tri champions publish --join`` or several ``--project``):
    each member's training in the Markdown and in ``tri champions``."""
    from tri.champions import Member

    folder = tmp_path / "champions"
    card = tiny_champion(folder, "tictactoe")
    other = card.training.model_copy(update={"tag": "tri/gen-0009", "project": "tri new q --game tictactoe"})
    card = card.model_copy(update={"members": [Member(model_id=card.model_id, generation=7, training=card.training),
                                               Member(model_id="f" * 16, generation=9, training=other)]})
    text = render_card(card)
    assert "An ensemble of 2 networks" in text and "### Member 2: generation 9" in text
    assert "`tictactoe.pt`: an ensemble of 2 networks (generations 7 and 9), model id" in text
    assert "`tri new q --game tictactoe`" in text and "tri/gen-0009" in text
    (folder / "tictactoe.json").write_text(card.model_dump_json())
    monkeypatch.setenv("TRI_CHAMPIONS", str(folder))
    listed = subprocess.run([sys.executable, "-m", "tri.cli", "champions"], capture_output=True, text=True,
                            timeout=60)
    assert "an ensemble of 2 networks (generations 7 and 9)" in listed.stdout, listed.stderr


def test_publish_asks_each_setting_once_per_project(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    proc = subprocess.run([sys.executable, "-m", "tri.cli", "champions", "publish", "triangle", "--project", a,
                           "--project", b, "--loop", "l", "--tri-commit", "c", "--tri-commit", "d"],
                          capture_output=True, text=True, timeout=60)
    assert_clean_error(proc, 1, "2 --project but --loop 1 times")
