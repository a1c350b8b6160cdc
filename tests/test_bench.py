"""``tri bench search`` on a tiny network: both root selections measured in one run, the params'
own first, with figures that hold together (the share outside the network is the rest of the
network's speed; a 2,048-simulation move is timed for each)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tri.bench import search
from tri.cli import main

TINY = ("net: {channels: 8, blocks: 1, value_hidden: 8}\nmcts: {simulations: 4, afterstates: false}\n"
        "selfplay: {concurrent: 4}\n")


def _bench(tmp_path, text: str) -> list[dict]:
    params = tmp_path / "params.yaml"
    params.write_text(text)
    args = ["bench", "search", "--params", str(params), "--repeats", "1", "--moves", "2", "--leaves", "4",
            "--trees", "3", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_bench_search_reports_both_root_selections(tmp_path, capsys):
    benches = _bench(tmp_path, TINY)
    assert [(b["root"], b["shipped"]) for b in benches] == [("gumbel", True), ("puct", False)]
    for b in benches:
        assert b["batch"] == 4 and b["simulations"] == 4 and b["move_2048_leaves"] == 4
        assert b["sims_per_second"] > 0 and b["net_evals_per_second"] > 0
        assert abs(b["network_speed_share"] + b["outside_network_share"] - 1) < 1e-9
        # every move evaluates its root and then at most one leaf per simulation
        assert 1 <= b["evals_per_position"] <= b["simulations"] + 1
        # the old figure is the new one with only the simulations counted as network work
        assert abs(b["sims_share"] - b["network_speed_share"] * b["simulations"] / b["evals_per_position"]) < 1e-9
        assert b["speedup_vs_alphatriangle"] == b["alphatriangle_seconds"] / b["move_2048_seconds"]
        assert b["play_trees"] == 3 and b["play_simulations"] == 32 and b["play_move_seconds"] > 0
    # The table (the command without --json) of the same figures: printed by the same function.
    search.print_report([search.SearchBench(**b) for b in benches])
    table = capsys.readouterr().out
    assert "gumbel (the params)" in table and "puct" in table
    assert "a player's move, 32 simulations x 3 trees" in table


def test_bench_search_times_one_tree_for_a_search_with_afterstates(tmp_path):
    """A player with afterstates grows one tree whatever ``--trees`` says (as ``tri play`` does),
    and the bench times that move."""
    benches = _bench(tmp_path, TINY.replace("afterstates: false", "afterstates: true"))
    assert [b["play_trees"] for b in benches] == [1, 1]


# ---- tri bench move ------------------------------------------------------------------------------


def test_bench_move_times_a_players_own_moves(tmp_path):
    """Moves of the player's own games, one after another (a game that ends gives way to the next
    seed's); the triangle's figures beside issue 22's 100 ms, another game's with no anchor."""
    from tri.bench import move
    from tri.config import recipe_params

    params = recipe_params("triangle")
    greedy = move.run(params, "greedy", moves=60, seed=3, threads=1)
    assert greedy.moves == 60 and greedy.games >= 2  # greedy dies within about 40 moves
    assert 0 < greedy.median <= greedy.p90 <= greedy.slowest and greedy.limit == move.MOVE_LIMIT
    text = move.format_report(greedy)
    assert text.splitlines()[0] == ("tri bench move: greedy (triangle) on cpu, 1 thread, 60 moves in "
                                    f"{greedy.games} games from seed 3")
    assert "x the limit (100 ms, issue 22)" in text.splitlines()[1]
    result = CliRunner().invoke(main, ["bench", "move", "champion:tictactoe", "--moves", "3", "--json"])
    assert result.exit_code == 0, result.output
    ttt = json.loads(result.output)
    assert (ttt["game"], ttt["player"], ttt["moves"], ttt["limit"]) == ("tictactoe", "champion:tictactoe", 3, None)
    assert ttt["runtime"] == "torch"  # a two-player game's one-tree player: the model itself
    assert "limit" not in move.format_report(move.MoveBench(**ttt))
    # --compare: the same moves on torch first, then as the player runs them, and the ratios.
    both = CliRunner().invoke(main, ["bench", "move", "greedy", "--moves", "5", "--threads", "1",
                                     "--compare"])
    assert both.exit_code == 0, both.output
    lines = both.output.splitlines()
    assert len(lines) == 9 and lines[0] == lines[4] and lines[-1].startswith("ONNX Runtime / torch: median ")
    bad = CliRunner().invoke(main, ["bench", "move", "nobody"])
    assert bad.exit_code == 1 and bad.stderr.strip().startswith("error: unknown player 'nobody'")
