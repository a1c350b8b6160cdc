"""``tri eval triangle``: the evaluation seeds (deterministic, never the arena's or self-play's),
the paired comparison against games played directly with the one game loop, checkpoint players,
the JSON file, the dispatch by game name, and the command's table and one-line errors. All on
the small board of the pipeline tests, with a few seeds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tri.arena import arena_seeds, mean_ci
from tri.cli import main
from tri.config import Runtime
from tri.episodes import run_episodes
from tri.errors import TriError
from tri.evaluate import TriangleEval, eval_seeds, format_triangle, run, run_triangle
from tri.evaluate.triangle import EVAL_DOMAIN, conditions, pool
from tri.games.kinrow.connect4 import Connect4Game
from tri.games.triangle.game import TriangleGame
from tri.net import initial_checkpoint, save_checkpoint
from tri.players import GreedyAgent, RandomAgent
from tri.selfplay import game_seeds

from tests.pipeline_fixtures import (OTHER_BOARD, PARAMS, SMALL_BOARD, TINY_NET, assert_clean_error, tri_cli,
                                     write_params)

CPU = Runtime(workers=1, device="cpu")
GAMES = 6
KEYS = {"game", "player", "simulations", "baseline", "games", "seed", "mean", "low", "high", "mean_steps",
        "baseline_mean", "baseline_low", "baseline_high", "baseline_mean_steps", "diff_mean", "diff_low",
        "diff_high", "wins", "ties", "losses", "seconds", "seeds", "scores", "baseline_scores", "steps"}


def test_eval_seeds_are_deterministic_and_never_training_seeds():
    seeds = eval_seeds(0, 500)
    assert seeds.dtype == np.int64 and seeds.shape == (500,) and (seeds >= 0).all()
    assert np.array_equal(seeds, eval_seeds(0, 500))
    assert np.array_equal(eval_seeds(0, 20), seeds[:20])  # more games extend the same seeds
    assert len(set(seeds.tolist())) == 500
    assert not set(seeds.tolist()) & set(eval_seeds(1, 500).tolist())
    for generation in range(4):  # the arena's and self-play's seeds of the same seed
        assert not set(seeds.tolist()) & set(arena_seeds(0, 500, generation).tolist())
        assert not set(seeds.tolist()) & set(game_seeds(0, generation, 500).tolist())


def test_greedy_against_itself_ties_every_seed(tmp_path):
    result = run_triangle(PARAMS, "greedy", games=GAMES, seed=3, runtime=CPU)
    assert isinstance(result, TriangleEval) and result.baseline == "greedy" and result.games == GAMES
    assert result.scores == result.baseline_scores and result.steps == result.baseline_steps
    assert (result.diff_mean, result.diff_low, result.diff_high) == (0.0, 0.0, 0.0)
    assert (result.wins, result.ties, result.losses) == (0, GAMES, 0)
    assert result.mean == result.baseline_mean and result.low < result.mean < result.high
    assert result.seeds == eval_seeds(3, GAMES).tolist()
    text = format_triangle(result)
    assert "per seed: player wins 0, ties 6, loses 0" in text and "greedy (baseline)" in text


def test_random_against_greedy_is_the_games_played_directly():
    seed = 11
    result = run_triangle(PARAMS, "random", games=GAMES, seed=seed, runtime=CPU)
    game = TriangleGame(SMALL_BOARD)
    seeds = eval_seeds(seed, GAMES)
    ap = PARAMS.arena
    rand = run_episodes(game, [RandomAgent(game, np.random.default_rng([seed, EVAL_DOMAIN]))], seeds,
                        concurrent=ap.concurrent, max_moves=ap.max_moves).games
    greedy = run_episodes(game, [GreedyAgent(game)], seeds, concurrent=ap.concurrent,
                          max_moves=ap.max_moves).games
    a, b = np.array([g.score for g in rand]), np.array([g.score for g in greedy])
    assert result.scores == a.tolist() and result.baseline_scores == b.tolist()
    assert result.steps == [g.steps for g in rand] and result.baseline_steps == [g.steps for g in greedy]
    assert (result.mean, result.low, result.high) == mean_ci(a)
    assert (result.baseline_mean, result.baseline_low, result.baseline_high) == mean_ci(b)
    assert (result.diff_mean, result.diff_low, result.diff_high) == mean_ci(a - b)
    assert result.mean_steps == np.mean([g.steps for g in rand])
    assert (result.wins, result.ties, result.losses) == (int((a > b).sum()), int((a == b).sum()),
                                                         int((a < b).sum()))
    assert result.wins + result.ties + result.losses == GAMES and result.losses > 0
    again = run(PARAMS, "triangle", "random", games=GAMES, seed=seed, runtime=CPU)  # by name
    assert again.scores == result.scores


def test_checkpoint_players_json_and_metrics(tmp_path, one_torch_thread):
    game = TriangleGame(SMALL_BOARD)
    ckpt = tmp_path / "tiny.pt"
    save_checkpoint(initial_checkpoint(game, TINY_NET), ckpt)
    out = tmp_path / "eval" / "triangle.json"
    result = run_triangle(PARAMS, str(ckpt), baseline=f"net:{ckpt}", games=3, simulations=2, out=out,
                          runtime=CPU)
    assert (result.player, result.simulations) == (str(ckpt), 2)
    assert (result.baseline, result.baseline_simulations) == (f"net:{ckpt}", None)
    saved = json.loads(out.read_text())
    assert KEYS <= set(saved) and saved == json.loads(result.to_json())
    assert saved["game"] == "triangle" and saved["simulations"] == 2 and len(saved["seeds"]) == 3
    assert not list(out.parent.glob(".*.tmp"))  # written atomically
    metrics = result.metrics()
    assert metrics["diff_mean"] == result.diff_mean and metrics["ties"] == float(result.ties)
    assert all(isinstance(v, float) for v in metrics.values())
    again = run_triangle(PARAMS, f"mcts:{ckpt}:2", baseline="random", games=3, runtime=CPU)
    assert again.simulations == 2 and again.scores == result.scores  # the same search, the same seeds
    # Two workers: the two players play at once on two threads, and nothing changes.
    two = run_triangle(PARAMS, str(ckpt), baseline=f"net:{ckpt}", games=3, simulations=2,
                       runtime=Runtime(workers=2, device="cpu"))
    timeless = [{k: v for k, v in json.loads(r.to_json()).items() if k != "seconds"} for r in (two, result)]
    assert timeless[0] == timeless[1]


def test_bad_inputs_are_user_errors(tmp_path):
    with pytest.raises(TriError, match="at least 2"):
        run_triangle(PARAMS, "greedy", games=1, runtime=CPU)
    with pytest.raises(TriError, match="seed -1 is out of range"):
        run_triangle(PARAMS, "greedy", games=2, seed=-1, runtime=CPU)
    with pytest.raises(TriError, match="unknown player 'nobody'"):
        run_triangle(PARAMS, "greedy", baseline="nobody", games=2, runtime=CPU)
    with pytest.raises(TriError, match="--simulations applies"):
        run_triangle(PARAMS, "random", games=2, simulations=3, runtime=CPU)
    c4 = tmp_path / "c4.pt"
    save_checkpoint(initial_checkpoint(Connect4Game(), TINY_NET), c4)
    with pytest.raises(TriError, match="it is for the game 'connect4', not 'triangle'"):
        run_triangle(PARAMS, f"net:{c4}", games=2, runtime=CPU)
    with pytest.raises(TriError, match="no evaluation for the game 'chess'"):
        run(PARAMS, "chess", "greedy")


def _timeless(result: TriangleEval) -> dict:
    return {k: v for k, v in result.to_dict().items() if k not in ("seconds", "baseline_file", "player_file")}


def test_a_saved_result_is_the_baseline_without_playing_it_again(tmp_path):
    saved = tmp_path / "greedy.json"
    run_triangle(PARAMS, "greedy", baseline="random", games=GAMES, seed=4, out=saved, runtime=CPU)
    played = run_triangle(PARAMS, "random", baseline="greedy", games=GAMES, seed=4, runtime=CPU)
    replayed = run_triangle(PARAMS, "random", baseline=str(saved), games=GAMES, seed=4, runtime=CPU)
    assert _timeless(replayed) == _timeless(played)  # the same pairing, figure for figure
    assert replayed.baseline_file == str(saved) and played.baseline_file is None
    assert replayed.conditions == played.conditions == conditions(PARAMS)
    assert f"greedy (baseline, from {saved})" in format_triangle(replayed)
    # FILE.json:baseline: the file's other side (random, which greedy played there).
    other = run_triangle(PARAMS, "greedy", baseline=f"{saved}:baseline", games=GAMES, seed=4, runtime=CPU)
    direct = run_triangle(PARAMS, "greedy", baseline="random", games=GAMES, seed=4, runtime=CPU)
    assert _timeless(other) == _timeless(direct) and other.baseline == "random"
    assert other.baseline_file == f"{saved}:baseline"
    # The file's player is read, never built: a name no player spec knows still pairs.
    record = json.loads(saved.read_text())
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps({**record, "player": "an agent of another machine"}))
    four = run_triangle(PARAMS, "greedy", baseline=str(renamed), games=4, seed=4, runtime=CPU)
    assert four.baseline == "an agent of another machine"
    # Fewer games: the file's first seeds, where greedy (deterministic) meets its own games.
    assert four.baseline_scores == record["scores"][:4] == four.scores
    assert four.baseline_steps == record["steps"][:4] and (four.wins, four.ties, four.losses) == (0, 4, 0)


def test_a_saved_player_pairs_with_a_baseline_that_plays_or_with_another_saved_one(tmp_path):
    greedy, random_ = tmp_path / "greedy.json", tmp_path / "random.json"
    run_triangle(PARAMS, "greedy", baseline="random", games=GAMES, seed=4, out=greedy, runtime=CPU)
    run_triangle(PARAMS, "random", baseline="greedy", games=GAMES, seed=4, out=random_, runtime=CPU)
    played = run_triangle(PARAMS, "greedy", baseline="random", games=GAMES, seed=4, runtime=CPU)
    # The player from its file, the baseline playing: the same figures as both playing.
    half = run_triangle(PARAMS, str(greedy), baseline="random", games=GAMES, seed=4, runtime=CPU)
    assert _timeless(half) == _timeless(played)
    assert half.player_file == str(greedy) and half.baseline_file is None and played.player_file is None
    assert f"greedy (from {greedy})" in format_triangle(half)
    # Both from files, each measured in its own run: nothing plays, so a name no spec knows pairs.
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps({**json.loads(random_.read_text()), "player": "someone else's agent"}))
    both = run_triangle(PARAMS, str(greedy), baseline=str(renamed), games=GAMES, seed=4, runtime=CPU)
    assert {**_timeless(both), "baseline": "random"} == _timeless(played)
    assert (both.player_file, both.baseline_file) == (str(greedy), str(renamed))
    # FILE.json:baseline as the player: the file's other side.
    other = run_triangle(PARAMS, f"{random_}:baseline", baseline=str(random_), games=4, seed=4, runtime=CPU)
    assert (other.player, other.baseline) == ("greedy", "random") and other.player_file == f"{random_}:baseline"
    assert other.scores == played.scores[:4] and other.baseline_scores == played.baseline_scores[:4]
    with pytest.raises(TriError, match=re.escape(f"player {tmp_path / 'missing.json'}: file not found")):
        run_triangle(PARAMS, str(tmp_path / "missing.json"), baseline="random", games=GAMES, seed=4, runtime=CPU)
    with pytest.raises(TriError, match="player .*greedy.json was played on evaluation seed 4, not 0"):
        run_triangle(PARAMS, str(greedy), baseline="random", games=GAMES, seed=0, runtime=CPU)
    with pytest.raises(TriError, match="--simulations sets the budget of a PLAYER that plays"):
        run_triangle(PARAMS, str(greedy), baseline="random", games=GAMES, seed=4, simulations=8, runtime=CPU)


def test_a_saved_baseline_that_does_not_fit_is_a_user_error(tmp_path):
    saved = tmp_path / "greedy.json"
    run_triangle(PARAMS, "greedy", games=GAMES, seed=4, out=saved, runtime=CPU)
    record = json.loads(saved.read_text())

    def variant(name: str, **changes) -> str:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**record, **changes}))
        return str(path)

    other_rules = PARAMS.model_copy(update={"game": PARAMS.game.model_copy(update={"triangle": OTHER_BOARD})})
    longer = PARAMS.model_copy(update={"arena": PARAMS.arena.model_copy(update={"max_moves": 7})})
    cases = [
        (PARAMS, str(tmp_path / "missing.json"), GAMES, 4, "missing.json: file not found"),
        (PARAMS, variant("half", scores=record["scores"][:3]), GAMES, 4, "do not hold 6 games each"),
        (PARAMS, variant("noscores", scores="many"), GAMES, 4, "not a saved tri eval triangle result (scores"),
        (PARAMS, variant("othello", game="othello"), GAMES, 4, "a result of the game 'othello', not 'triangle'"),
        (PARAMS, str(saved), GAMES, 0, "was played on evaluation seed 4, not 0 (use --seed 4)"),
        (PARAMS, str(saved), GAMES + 1, 4, "holds 6 games; this evaluation plays 7"),
        (PARAMS, variant("seeds", seeds=record["seeds"][::-1]), GAMES, 4, "its seeds are not those of evaluation seed 4"),
        (other_rules, str(saved), GAMES, 4, "other rules (game.triangle) or arena.max_moves"),
        (longer, str(saved), GAMES, 4, "other rules (game.triangle) or arena.max_moves"),
    ]
    for params, baseline, games, seed, needle in cases:
        with pytest.raises(TriError, match=re.escape(needle)):
            run_triangle(params, "random", baseline=baseline, games=games, seed=seed, runtime=CPU)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(TriError, match="broken.json: not a saved tri eval triangle result"):
        run_triangle(PARAMS, "random", baseline=str(tmp_path / "broken.json"), games=GAMES, seed=4, runtime=CPU)
    # A file written before the conditions were recorded pairs under any params (nothing to check).
    old = variant("old", conditions="")
    assert run_triangle(longer, "random", baseline=old, games=GAMES, seed=4, runtime=CPU).baseline == "greedy"


def test_pooling_saved_results_is_one_evaluation_over_all_their_seeds(tmp_path):
    """Results of the same two players on evaluation seeds 4 and 5 pool into the comparison of
    the 12 seeds: means, intervals and counts over all of them, as one run of those seeds would
    give (checked against the figures computed from the per-seed scores)."""
    paths = [tmp_path / f"s{seed}.json" for seed in (4, 5)]
    parts = [run_triangle(PARAMS, "random", baseline="greedy", games=GAMES, seed=seed, out=path, runtime=CPU)
             for seed, path in zip((4, 5), paths)]
    pooled = pool(paths, out=tmp_path / "pooled.json")
    assert pooled.games == 2 * GAMES and pooled.pooled == [4, 5] and pooled.seed == 4
    assert pooled.seeds == eval_seeds(4, GAMES).tolist() + eval_seeds(5, GAMES).tolist()
    scores = np.array(parts[0].scores + parts[1].scores)
    base = np.array(parts[0].baseline_scores + parts[1].baseline_scores)
    assert pooled.scores == scores.tolist() and pooled.baseline_scores == base.tolist()
    assert (pooled.mean, pooled.low, pooled.high) == mean_ci(scores)
    assert (pooled.diff_mean, pooled.diff_low, pooled.diff_high) == mean_ci(scores - base)
    assert pooled.wins == parts[0].wins + parts[1].wins and pooled.losses == parts[0].losses + parts[1].losses
    assert pooled.diff_high - pooled.diff_low < max(p.diff_high - p.diff_low for p in parts)
    assert (pooled.player, pooled.baseline, pooled.conditions) == ("random", "greedy", conditions(PARAMS))
    assert format_triangle(pooled).splitlines()[0] == "triangle: 12 paired seeds (evaluation seeds 4, 5, pooled)"
    assert json.loads((tmp_path / "pooled.json").read_text())["pooled"] == [4, 5]
    # A pooled file pools or pairs no further: its seeds are no single evaluation's.
    with pytest.raises(TriError, match=re.escape("already pooled (evaluation seeds 4, 5)")):
        pool([tmp_path / "pooled.json", paths[0]])
    with pytest.raises(TriError, match=re.escape("pooled from evaluation seeds 4, 5; pair with one of")):
        run_triangle(PARAMS, "random", baseline=str(tmp_path / "pooled.json"), games=GAMES, seed=4, runtime=CPU)


def test_results_that_do_not_pool_are_user_errors(tmp_path):
    saved = tmp_path / "s4.json"
    run_triangle(PARAMS, "random", baseline="greedy", games=GAMES, seed=4, out=saved, runtime=CPU)
    record = json.loads(saved.read_text())

    def variant(name: str, **changes) -> Path:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**record, **changes}))
        return path

    five = tmp_path / "s5.json"
    run_triangle(PARAMS, "random", baseline="greedy", games=GAMES, seed=5, out=five, runtime=CPU)
    cases = [
        ([saved], "give at least two saved results"),
        ([saved, tmp_path / "missing.json"], "result " + str(tmp_path / "missing.json") + ": file not found"),
        ([saved, saved], "evaluation seed 4 comes twice"),
        ([saved, variant("other", baseline="random", seed=5, seeds=eval_seeds(5, GAMES).tolist())],
         "compares random with random, " + str(saved) + " random with greedy: pool results of the same two"),
        ([saved, variant("sims", player="mcts:x.pt:32", simulations=32, seed=5,
                         seeds=eval_seeds(5, GAMES).tolist())], "mcts:x.pt:32 (32 simulations) with greedy"),
        ([saved, variant("seeds", seed=5)], "its seeds are not those of evaluation seed 5"),
        ([saved, variant("rules", conditions="0123456789abcdef", seed=5, seeds=eval_seeds(5, GAMES).tolist())],
         "was played under other rules"),
        ([saved, variant("half", scores=record["scores"][:3])], "do not hold 6 games each"),
    ]
    for paths, needle in cases:
        with pytest.raises(TriError, match=re.escape(needle)):
            pool(paths)
    assert pool([saved, five]).games == 2 * GAMES


# ---- the command ---------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with the small board's params.yaml, as the current directory, tracking off."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRI_TRACKING", "false")
    monkeypatch.setenv("TRI_DEVICE", "cpu")
    return write_params(tmp_path / "params.yaml")


def test_eval_triangle_command_prints_the_table_and_writes_json(project, one_torch_thread):
    result = CliRunner().invoke(main, ["eval", "triangle", "random", "--games", "4", "--seed", "5",
                                       "--out", "r.json", "--params", str(project)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "triangle: 4 paired seeds (evaluation seed 5)"
    assert lines[1].split() == ["player", "mean", "score", "95%", "interval", "mean", "steps"]
    assert lines[2].startswith("random ") and lines[3].startswith("greedy (baseline) ")
    assert lines[4].startswith("paired difference player - baseline: ")
    assert lines[5].startswith("per seed: player wins ") and lines[6] == "wrote r.json"
    saved = json.loads((project.parent / "r.json").read_text())
    assert (saved["player"], saved["baseline"], saved["games"], saved["seed"]) == ("random", "greedy", 4, 5)
    assert saved["seeds"] == eval_seeds(5, 4).tolist()


def test_eval_pool_command_prints_the_pooled_table(project, one_torch_thread):
    for seed in (5, 6):
        result = CliRunner().invoke(main, ["eval", "triangle", "random", "--games", "3", "--seed", str(seed),
                                           "--out", f"r{seed}.json", "--params", str(project)])
        assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["eval", "pool", "r5.json", "r6.json", "--out", "both.json"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "triangle: 6 paired seeds (evaluation seeds 5, 6, pooled)" and lines[-1] == "wrote both.json"
    assert json.loads((project.parent / "both.json").read_text())["games"] == 6
    # Bad input: one line, exit 1, nothing written.
    assert_clean_error(tri_cli("eval", "pool", "r5.json", "r5.json", "--out", "no.json", cwd=project.parent), 1,
                       "evaluation seed 5 comes twice")
    assert not (project.parent / "no.json").exists()


def test_eval_triangle_command_errors_are_one_line(project):
    c4 = project.parent / "c4.pt"
    save_checkpoint(initial_checkpoint(Connect4Game(), TINY_NET), c4)
    for args, code, needle in [
        (["--games", "1"], 2, "'--games': 1 is not in the range x>=2"),
        (["--baseline", "nobody"], 1, "unknown player 'nobody'"),
        (["--seed", "-3"], 2, "'--seed': -3 is not in the range"),
        (["--baseline", "gone.json"], 1, "baseline gone.json: file not found"),
    ]:
        result = CliRunner().invoke(main, ["eval", "triangle", "greedy", *args, "--params", str(project)])
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == code and len(lines) == 1, result.output
        assert lines[0].startswith("error: ") and needle in lines[0]
    for player, needle in [("missing.pt", "checkpoint missing.pt: file not found"),
                           (f"net:{c4}", "it is for the game 'connect4', not 'triangle'")]:
        result = CliRunner().invoke(main, ["eval", "triangle", player, "--games", "2",
                                           "--params", str(project)])
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 1 and len(lines) == 1 and needle in lines[0], result.output
    # The installed command, in its own process: no traceback.
    assert_clean_error(tri_cli("eval", "triangle", "nobody", "--params", project, cwd=project.parent), 1,
                       "unknown player 'nobody'")
