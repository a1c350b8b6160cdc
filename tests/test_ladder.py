"""``tri ladder``: Bradley-Terry ratings with intervals (Tic-Tac-Toe), paired means (the triangle
puzzle on the small board), the cache of results (a ladder run again plays nothing, one more
player plays only its pairings), ``--run`` folders, the files, and bad input through the CLI.

Players are the baselines and tiny untrained networks searching 2 simulations, on a few seeds:
the whole file takes seconds."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import tri.ladder as ladder
from tri import layout
from tri.arena import arena_seeds
from tri.cli import main as cli
from tri.config import ArenaParams, GameParams, Params, Runtime
from tri.episodes import run_episodes
from tri.errors import TriError
from tri.players import GreedyAgent
from tri.ratings import ELO_PER_LOGIT, Match, bradley_terry

from tests.pipeline_fixtures import (PARAMS, PNG_SIGNATURE, TINY_NET, game_of, save_model, tri_cli,
                                     with_section)

CPU = Runtime(workers=1, device="cpu")
TTT = Params(game=GameParams(name="tictactoe"), net=TINY_NET,
             arena=ArenaParams(games=4, simulations=2, concurrent=8, max_moves=20))
TRIANGLE = with_section(PARAMS, "arena", max_moves=200)


class CountingEpisodes:
    """``run_episodes`` that counts its calls (the games it would play: one call per result)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return run_episodes(*args, **kwargs)


@pytest.fixture
def counted(monkeypatch) -> CountingEpisodes:
    counter = CountingEpisodes()
    monkeypatch.setattr(ladder, "run_episodes", counter)
    return counter


# ---- the rating fit -----------------------------------------------------------------------------


def test_two_players_rate_at_the_log_odds_of_their_score_with_one_virtual_draw():
    """Two players: the fit is saturated, so the rating is the logit of the score (one virtual
    draw added) exactly; a clean sweep stays finite; the anchor is 0 with no interval."""
    anchor, other = bradley_terry(2, [Match(1, 0, wins=7, draws=2, losses=3)], anchor=0)
    assert anchor.rating == anchor.low == anchor.high == 0.0
    p = (7 + 1.5) / 13
    assert other.rating == pytest.approx(ELO_PER_LOGIT * math.log(p / (1 - p)), rel=1e-6)
    assert other.low < other.rating < other.high
    assert other.se == pytest.approx(ELO_PER_LOGIT / math.sqrt(13 * p * (1 - p)), rel=1e-4)
    sweep = bradley_terry(2, [Match(0, 1, wins=20, draws=0, losses=0)], anchor=1)[0]
    assert math.isfinite(sweep.rating) and sweep.rating == pytest.approx(ELO_PER_LOGIT * math.log(20.5 / 0.5))


def test_three_players_are_ordered_and_unlinked_players_refused():
    matches = [Match(0, 1, 8, 0, 2), Match(1, 2, 8, 0, 2), Match(0, 2, 10, 0, 0)]
    r = bradley_terry(3, matches, anchor=1)
    assert r[0].rating > r[1].rating == 0 > r[2].rating
    assert all(x.low <= x.rating <= x.high for x in r)
    with pytest.raises(TriError, match="linked to the anchor"):
        bradley_terry(3, [Match(0, 1, 1, 0, 1)], anchor=0)


# ---- two-player ---------------------------------------------------------------------------------


def test_tictactoe_ratings_cache_and_one_more_player(tmp_path, counted):
    ckpt = save_model(tmp_path / "tiny.pt", TTT)
    out = tmp_path / "ladder"
    specs = ["random", "greedy", str(tmp_path / "tiny.pt")]
    first = ladder.run(TTT, specs, out=out, runtime=CPU)
    assert (first.kind, first.played, first.reused, counted.calls) == ("ratings", 3, 0, 3)
    rows = {r.name: r for r in first.standings}
    assert first.anchor == "greedy" and rows["greedy"].value == rows["greedy"].low == rows["greedy"].high == 0
    assert rows["greedy"].value > rows["random"].value
    assert all(r.low <= r.value <= r.high and r.games == 2 * 2 * 4 for r in first.standings)
    assert [r.value for r in first.standings] == sorted((r.value for r in first.standings), reverse=True)
    for p in first.pairings:  # both colours of every seed; the counts add up
        assert p.games == 8 == p.wins + p.draws + p.losses == len(p.outcomes)
    assert sum(r.wins for r in first.standings) == sum(r.losses for r in first.standings)

    # The same ladder again: everything is read back, nothing is played, the table is the same.
    again = ladder.run(TTT, list(reversed(specs)), out=out, runtime=CPU)
    assert (again.played, again.reused, counted.calls) == (0, 3, 3)
    assert [(r.name, r.wins, r.draws, r.losses) for r in again.standings] == \
        [(r.name, r.wins, r.draws, r.losses) for r in first.standings]
    assert [r.value for r in again.standings] == pytest.approx([r.value for r in first.standings])

    # The same weights under another path are the same player (its content hash, not its path).
    shutil.copy(tmp_path / "tiny.pt", tmp_path / "copy.pt")
    moved = ladder.run(TTT, ["random", "greedy", str(tmp_path / "copy.pt")], out=out, runtime=CPU)
    assert (moved.played, moved.reused, counted.calls) == (0, 3, 3)

    # One more player: only its three pairings are played.
    more = ladder.run(TTT, [*specs, f"net:{tmp_path / 'tiny.pt'}"], out=out, runtime=CPU)
    assert (more.played, more.reused, counted.calls) == (3, 3, 6)
    assert len(more.standings) == 4 and len(more.pairings) == 6

    # A gauntlet: every player against greedy only; all already played.
    gauntlet = ladder.run(TTT, ["random", str(tmp_path / "tiny.pt")], gauntlet="greedy", anchor="random",
                          out=out, runtime=CPU)
    assert (gauntlet.played, gauntlet.reused, len(gauntlet.standings)) == (0, 2, 3)
    assert all("greedy" in (p.a, p.b) for p in gauntlet.pairings)
    assert gauntlet.anchor == "random" and {r.name: r.value for r in gauntlet.standings}["random"] == 0

    # Other settings are other results: a different seed replays.
    ladder.run(TTT, ["random", "greedy"], seed=7, out=out, runtime=CPU)
    assert counted.calls == 7

    data = json.loads((out / "ladder.json").read_text())
    assert data["kind"] == "ratings" and data["seed"] == 7 and "virtual draw" in data["method"]
    assert (out / "ladder.png").read_bytes().startswith(PNG_SIGNATURE)
    assert (out / "ladder.csv").read_text().splitlines()[0].startswith("rank,player,spec,rating,low,high")
    assert len(list((out / "cache").glob("*.json"))) == 7
    assert any(ckpt.model_id in f.read_text() for f in (out / "cache").glob("*.json"))


def test_run_folder_adds_every_generation_checkpoint(tmp_path):
    root = tmp_path / "project"
    save_model(layout.model_path(root, 0), TTT)
    layout.candidate_path(root, 1).parent.mkdir(parents=True)
    save_model(layout.candidate_path(root, 1), TTT, generation=1, seed=5)
    layout.arena_path(root, 2).parent.mkdir(parents=True)
    layout.arena_path(root, 2).write_text("{}")  # generation 2 happened; its candidate is not here
    found, missing = ladder.run_checkpoints(root)
    assert [g for g, _ in found] == [0, 1] and missing == [2]
    result = ladder.run(TTT, ["greedy"], runs=[root], games=2, out=tmp_path / "out", runtime=CPU)
    assert sorted(r.name for r in result.standings) == ["gen-0000", "gen-0001", "greedy"]
    assert result.skipped == ("gen-0002",) and result.played == 3
    assert {r.spec for r in result.standings} >= {str(layout.model_path(root, 0)),
                                                  str(layout.candidate_path(root, 1))}


# ---- single-player ------------------------------------------------------------------------------


def test_triangle_paired_means(tmp_path, counted):
    out = tmp_path / "ladder"
    result = ladder.run(TRIANGLE, ["random", "greedy"], out=out, runtime=CPU)
    assert (result.kind, result.played, result.reused, result.anchor) == ("means", 2, 0, "greedy")
    greedy, rand = result.standings
    assert (greedy.name, rand.name) == ("greedy", "random") and greedy.value > rand.value
    # Greedy's scores are its own games on the arena's seeds, in seed order.
    game = game_of(TRIANGLE)
    seeds = arena_seeds(TRIANGLE.arena.seed, TRIANGLE.arena.games)
    alone = run_episodes(game, [GreedyAgent(game)], seeds, concurrent=4, max_moves=200)
    assert greedy.scores == tuple(g.score for g in alone.games) and result.seeds == tuple(seeds.tolist())
    diff = np.array(rand.scores) - np.array(greedy.scores)
    assert rand.diff == pytest.approx(diff.mean()) and rand.diff_low <= rand.diff <= rand.diff_high
    assert (rand.wins, rand.draws, rand.losses) == ((diff > 0).sum(), (diff == 0).sum(), (diff < 0).sum())
    assert greedy.diff == 0 and greedy.draws == greedy.games == 6
    assert greedy.value == pytest.approx(np.mean(greedy.scores)) and greedy.low < greedy.value < greedy.high

    anchored = ladder.run(TRIANGLE, ["greedy", "random"], anchor="random", out=out, runtime=CPU)
    assert (anchored.played, anchored.reused, counted.calls) == (0, 2, 2)
    assert anchored.anchor == "random"
    assert {r.name: r.diff for r in anchored.standings}["greedy"] == pytest.approx(-rand.diff)
    assert (out / "ladder.png").read_bytes().startswith(PNG_SIGNATURE)
    assert json.loads((out / "ladder.json").read_text())["standings"][0]["scores"] == list(greedy.scores)
    with pytest.raises(TriError, match="single-player"):
        ladder.run(TRIANGLE, ["greedy", "random"], gauntlet="greedy", out=None, runtime=CPU)


# ---- the command --------------------------------------------------------------------------------


def test_command_prints_the_table_and_reuses(tmp_path):
    args = ["ladder", "--game", "tictactoe", "random", "greedy", "--games", "3", "--out", "out"]
    first = tri_cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "greedy" in first.stdout and "virtual draw" in first.stdout and "played 1" in first.stdout
    again = tri_cli(*args, cwd=tmp_path)
    assert again.returncode == 0 and "reused 1 result, played 0" in again.stdout
    assert {p.name for p in (tmp_path / "out").iterdir()} >= {"ladder.json", "ladder.csv", "ladder.png"}


@pytest.mark.parametrize("args, needle", [
    (["greedy"], "1 player: a ladder needs at least 2"),
    (["greedy", "bogus"], "unknown player 'bogus'"),
    (["greedy", "missing.pt"], "missing.pt: file not found"),
    (["greedy", "greedy"], "'greedy' is given twice"),
    (["greedy", "random", "--games", "1"], "--games 1: at least 2"),
    (["greedy", "random", "--anchor", "net:missing.pt"], "file not found"),
    (["greedy", "random", "--run", "nowhere"], "--run nowhere: no such folder"),
], ids=["one", "unknown", "missing", "duplicate", "games", "anchor", "run"])
def test_bad_input_is_one_error_line(tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["ladder", "--game", "tictactoe", *args])
    assert result.exit_code == 1, (result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "data").exists()


def test_trees_per_move_make_another_player(tmp_path, counted):
    """``mcts:PATH:NxK`` is not ``mcts:PATH:N``: both are played (one identity would play once and
    reuse that for the other), and each is reused as itself. With afterstates the two are one
    player (one tree), and the ladder says so."""
    model = tmp_path / "m.pt"
    save_model(model, TRIANGLE)
    players = [f"mcts:{model}:2", f"mcts:{model}:2x2"]
    out = tmp_path / "ladder"
    sampled = with_section(TRIANGLE, "mcts", afterstates=False)
    first = ladder.run(sampled, players, out=out, runtime=CPU)
    assert (first.played, first.reused) == (2, 0)
    again = ladder.run(sampled, players, out=out, runtime=CPU)
    assert (again.played, again.reused) == (0, 2)
    with pytest.raises(TriError, match="are the same player"):
        ladder.run(with_section(TRIANGLE, "mcts", afterstates=True), players, out=tmp_path / "after",
                   runtime=CPU)


def test_a_symmetrized_network_is_another_player(tmp_path, counted):
    """``mcts.symmetrize`` changes what a network player plays, searched or alone: with it on,
    the same checkpoints are played again, not reused; with it off, the identity is the one
    results kept before the setting existed (no ``symmetrize`` in it)."""
    model = tmp_path / "tiny.pt"
    save_model(model, TTT)
    players = ["greedy", f"net:{model}", f"mcts:{model}:2"]
    out = tmp_path / "ladder"
    assert (ladder.run(TTT, players, out=out, runtime=CPU).played, counted.calls) == (3, 3)
    kept = [json.loads(i) for f in (out / "cache").glob("*.json") for i in json.loads(f.read_text())["players"]]
    searched = [i for i in kept if i["kind"] == "mcts"]
    assert searched and not any("symmetrize" in i or "symmetrize" in i.get("mcts", {}) for i in kept)
    on = with_section(TTT, "mcts", symmetrize=True)
    again = ladder.run(on, players, out=out, runtime=CPU)
    assert (again.played, again.reused) == (3, 0)  # the two network players' two pairings, and theirs
    assert (ladder.run(on, players, out=out, runtime=CPU).reused) == 3
