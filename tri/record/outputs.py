"""What one generation's stages wrote, as its MLflow run records it: the files read once
(:func:`read_inputs`, with a fingerprint that says whether they changed), the numbers
(:func:`metrics`), and the folder of artifacts (:func:`stage_artifacts`).

Only files are read here, at the paths :func:`tri.layout.generation_paths` gives: nothing is
played or computed again (the flow draws the candidate's game before, into
``data/pictures/``), and no stage's code is imported.

Metric names are ``SECTION/name``: MLflow's charts put each section (the text before the ``/``)
in a panel of its own, panels in alphabetical order, so the numbered sections put what tells
whether training works first (self-play score, losses, the arena's means) and timings last.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tri import layout
from tri.arena_result import ArenaResult, load_result
from tri.atomic import sha256
from tri.config import Params
from tri.errors import TriError
from tri.params_yaml import dump_params
from tri.record import report
from tri.record.registry import CHECKPOINT_DIR, CHECKPOINT_FILE

ROLES = ("candidate", "best")  # the arena's players a and b, as the flow names them

# Sections of the charts (the UI orders panels alphabetically: the numbers order them).
SELFPLAY, TRAINING, ARENA = "1 self-play", "2 training", "3 arena"
ARENA_MORE, TRAINING_MORE, SELFPLAY_MORE, TIMING = ("4 arena details", "5 training details",
                                                    "6 self-play details", "9 timing")
MEAN_SCORE = f"{SELFPLAY}/mean score"
FINAL_LOSS = f"{TRAINING}/final loss"
CANDIDATE_MEAN, BEST_MEAN = f"{ARENA}/candidate mean", f"{ARENA}/best mean"
DIFFERENCE, SCORE_RATE, PROMOTED = f"{ARENA}/difference", f"{ARENA}/score rate", f"{ARENA}/promoted"
GENERATION_SECONDS = f"{TIMING}/generation seconds"
POSITIONS_PER_SECOND = f"{TIMING}/self-play positions per second"
# What the flow measures beyond the files (its names, see pipelines/generation.py) -> tri's names.
_EXTRA = {"selfplay_seconds": f"{TIMING}/self-play seconds", "selfplay.seconds": f"{TIMING}/self-play seconds",
          "selfplay_positions_per_second": POSITIONS_PER_SECOND,
          "selfplay.positions_per_second": POSITIONS_PER_SECOND,
          "train_seconds": f"{TIMING}/training seconds", "generation_seconds": GENERATION_SECONDS}
# The names of records written before these sections (read back by the table of generations).
LEGACY = {MEAN_SCORE: "selfplay.mean_score", FINAL_LOSS: "train.final_loss", CANDIDATE_MEAN: "arena.candidate_mean",
          BEST_MEAN: "arena.best_mean", PROMOTED: "arena.promoted", GENERATION_SECONDS: "generation_seconds"}


def read_metric(values: Mapping[str, float], key: str) -> float | None:
    """``values[key]`` (a run's metrics), or its name before the sections if the run is older."""
    value = values.get(key)
    return values.get(LEGACY.get(key, key)) if value is None else value


def _words(name: str) -> str:
    return name.replace("_", " ")


@dataclass
class Inputs:
    """What the stages of one generation wrote, read once."""

    candidate: Path
    sha256: str
    model_id: str
    arena: ArenaResult
    arena_json: bytes
    train: dict[str, Any]
    losses: list[dict[str, str]]
    games: Any  # polars DataFrame or None
    promoted: bool
    fingerprint: str


def _promoted(paths: layout.GenerationPaths, arena) -> bool:
    """What promotion did, from the decision log; the arena's verdict stands in for it when the
    log has no entry (tracking called between the arena and the promotion)."""
    promoted = bool(arena.promote)
    if paths.promotions.exists():
        for line in paths.promotions.read_text().splitlines():
            entry = json.loads(line) if line.strip() else {}
            if entry.get("generation") == paths.generation:
                promoted = bool(entry.get("promoted"))
    return promoted


def read_inputs(params: Params, paths: layout.GenerationPaths) -> Inputs:
    """The generation's files; raises :class:`TriError` if one is missing or unreadable."""
    # polars takes ~0.5 s to import: only when a generation is recorded.
    import polars as pl

    generation, candidate = paths.generation, paths.candidate
    if not candidate.is_file():
        raise TriError(f"generation {generation}: candidate {candidate} not found")
    arena = load_result(paths.arena)
    try:
        train_text = paths.train_metrics.read_text()
        train = json.loads(train_text)
        losses_text = paths.train_losses.read_text()
    except (OSError, ValueError) as exc:
        raise TriError(f"generation {generation}: training outputs in {paths.train_metrics.parent} "
                       f"unreadable ({exc})") from None
    losses = list(csv.DictReader(losses_text.splitlines()))
    games_files = layout.games_paths(paths.selfplay)
    games = pl.concat([pl.read_parquet(p) for p in games_files], how="diagonal_relaxed").sort("game") \
        if games_files else None
    promoted = _promoted(paths, arena)
    sha = sha256(candidate)
    h = hashlib.sha256()
    arena_json = paths.arena.read_bytes()
    for part in (dump_params(params), sha, arena_json, train_text, losses_text, str(promoted),
                 *(p.read_bytes() for p in games_files)):
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return Inputs(candidate, sha, str(train.get("model_id", "")), arena, arena_json, train, losses, games,
                  promoted, h.hexdigest()[:32])


def _selfplay_metrics(g, extra: Mapping[str, float], game_players: int) -> list[tuple[str, float, int]]:
    out: list[tuple[str, float, int]] = []
    for i, score in zip(g["game"].to_list(), g["score"].to_list()):
        out.append((f"{SELFPLAY}/score by game", float(score), int(i)))
    positions = int(g["steps"].sum())
    out += [(MEAN_SCORE, float(g["score"].mean()), 0), (f"{SELFPLAY}/max score", float(g["score"].max()), 0),
            (f"{SELFPLAY}/mean steps", float(g["steps"].mean()), 0),
            (f"{SELFPLAY}/terminal fraction", float(g["terminal"].cast(float).mean()), 0),
            (f"{SELFPLAY_MORE}/games", g.height, 0), (f"{SELFPLAY_MORE}/positions", positions, 0)]
    skip = {"game", "seed", "score", "steps", "terminal", "generation", "model_id"}
    for col in g.columns:
        if col not in skip and g[col].dtype.is_numeric() and (col != "outcome" or game_players == 2):
            out.append((f"{SELFPLAY_MORE}/mean {_words(col)}", float(g[col].mean()), 0))
    seconds = extra.get("selfplay.seconds") or extra.get("selfplay_seconds")
    if seconds and not ({"selfplay.positions_per_second", "selfplay_positions_per_second"} & set(extra)):
        out.append((POSITIONS_PER_SECOND, positions / float(seconds), 0))
    return out


def _train_metrics(inputs: Inputs) -> list[tuple[str, float, int]]:
    out: list[tuple[str, float, int]] = []
    for row in inputs.losses:  # a curve over the training steps per column (loss, policy_loss, value_loss, lr)
        step = int(row["step"])
        for k, v in row.items():
            if k != "step" and v not in ("", None):
                name = f"{TRAINING}/{_words(k)}" if "loss" in k else \
                    f"{TRAINING_MORE}/{'learning rate' if k == 'lr' else _words(k)}"
                out.append((name, float(v), step))
    t = inputs.train
    for k in ("steps", "window_positions", "new_positions", "reanalysed_positions", "reanalysed_change",
              "afterstate_positions"):
        if isinstance(t.get(k), (int, float)):
            out.append((f"{TRAINING_MORE}/{_words(k)}", float(t[k]), 0))
    if isinstance(t.get("seconds"), (int, float)):
        out.append((f"{TIMING}/training seconds", float(t["seconds"]), 0))
    for k in ("loss", "policy_loss", "value_loss", "occupancy_loss"):  # train.py: the mean over the last tenth of the steps
        if isinstance(t.get(k), (int, float)):
            out.append((f"{TRAINING}/final {_words(k)}", float(t[k]), 0))
    if t.get("seconds") and t.get("steps"):
        out.append((f"{TIMING}/training steps per second", t["steps"] / t["seconds"], 0))
    return out


def _arena_metrics(inputs: Inputs) -> list[tuple[str, float, int]]:
    out: list[tuple[str, float, int]] = []
    a = inputs.arena
    for who, p in zip(ROLES, (a.a, a.b)):
        out += [(f"{ARENA}/{who} mean", p.mean, 0), (f"{ARENA_MORE}/{who} low", p.low, 0),
                (f"{ARENA_MORE}/{who} high", p.high, 0), (f"{ARENA_MORE}/{who} mean steps", p.mean_steps, 0)]
    out += [(f"{ARENA_MORE}/games", a.games, 0), (f"{ARENA_MORE}/wins", a.wins, 0), (f"{ARENA_MORE}/ties", a.ties, 0),
            (f"{ARENA_MORE}/losses", a.losses, 0), (PROMOTED, float(inputs.promoted), 0)]
    if a.paired:
        out += [(DIFFERENCE, a.diff_mean, 0), (f"{ARENA_MORE}/difference low", a.diff_low, 0),
                (f"{ARENA_MORE}/difference high", a.diff_high, 0)]
        for i, (sa, sb) in enumerate(zip(a.scores_a, a.scores_b)):
            out += [(f"{ARENA}/candidate score by seed", sa, i), (f"{ARENA}/best score by seed", sb, i)]
    else:
        out.append((SCORE_RATE, a.score_rate, 0))
    return out


def extra_name(key: str) -> str:
    """The name a number the flow measured is logged under: in the timing section
    (``generation_seconds``, ``time_<phase>``...), other names as given."""
    if key in _EXTRA:
        return _EXTRA[key]
    if key.startswith("time_"):
        return f"{TIMING}/phase {_words(key[5:]).replace('selfplay', 'self-play')} seconds"
    return key


def metrics(inputs: Inputs, extra: Mapping[str, float], game_players: int) -> list[tuple[str, float, int]]:
    """``(key, value, step)`` of everything the generation measured, then ``extra`` (named by
    :func:`extra_name`): one value per key and step, the caller's measurement winning."""
    out: list[tuple[str, float, int]] = []
    if inputs.games is not None and inputs.games.height:
        out += _selfplay_metrics(inputs.games, extra, game_players)
    out += _train_metrics(inputs) + _arena_metrics(inputs)
    out += [(extra_name(k), float(v), 0) for k, v in extra.items()]
    # MLflow stores NaN but not infinities (an interval of a single game is infinite).
    kept = {(k, s): float(v) for k, v, s in out if not math.isinf(float(v))}
    return [(k, v, s) for (k, s), v in kept.items()]


def summary(params: Params, paths: layout.GenerationPaths, inputs: Inputs) -> str:
    """The generation in a few Markdown lines, the description of its MLflow run (Description,
    on the run's Overview page): who played self-play and how well, what training did from which
    network, and the arena's verdict."""
    lines = [f"**Generation {paths.generation}** of `{paths.root.name}` ({params.game.name})."]
    g = inputs.games
    plays = paths.relative(paths.selfplay_model)
    who = f"the teacher `{plays}`" if paths.selfplayer is not None else f"the best model `{plays}`"
    if g is not None and g.height:
        lines.append(f"- Self-play: {who} played {g.height:,} games, mean score {float(g['score'].mean()):.1f}.")
    t = inputs.train
    steps = f"{int(t['steps']):,} steps" if isinstance(t.get("steps"), (int, float)) else "training"
    folders = sum(w.is_dir() for w in paths.window)
    given = len(set(paths.window) & set(layout.start_games_dirs(paths.root)))
    started = f" ({given} of them the games the project started with, tri new --games)" if given else ""
    lines.append(f"- Training: {steps} from `{paths.relative(paths.start)}` on {folders} self-play "
                 f"folder{'' if folders == 1 else 's'}{started}; candidate model id `{inputs.model_id}`.")
    a = inputs.arena
    if a.paired:
        result = (f"candidate {a.a.mean:.1f}, best {a.b.mean:.1f} on {a.games} paired seeds, difference "
                  f"{a.diff_mean:+.1f} [{a.diff_low:+.1f}, {a.diff_high:+.1f}]")
    else:
        result = f"score rate {a.score_rate:.3f} over {a.games} games"
    lines.append(f"- Arena against `{paths.relative(paths.player)}`: {result}; "
                 f"**{'promoted' if inputs.promoted else 'not promoted'}** ({a.rule}).")
    return "\n".join(lines) + "\n"


def arena_markdown(result, generation: int | None = None, players: Mapping[str, str] | None = None) -> str:
    """The arena result as a Markdown table (what ``tri arena`` prints). Rows are named by role
    (``candidate``, ``best``), with the name the result gives the player when it is not the role
    itself, and the player's file from ``players`` (role -> path) when given."""
    head = f"# Arena{f', generation {generation}' if generation is not None else ''}: {result.game}\n\n"
    if result.paired:
        rows = ["| player | mean score | 95% interval | mean steps |", "| --- | ---: | ---: | ---: |"]
    else:
        rows = ["| player | score rate | 95% interval | mean steps |", "| --- | ---: | ---: | ---: |"]
    for role, p in zip(ROLES, (result.a, result.b)):
        who = role if p.name == role else f"{role}: `{p.name}`"
        if players and players.get(role):
            who += f" (`{players[role]}`)"
        rows.append(f"| {who} | {p.mean:.3f} | [{p.low:.3f}, {p.high:.3f}] | {p.mean_steps:.1f} |")
    lines = [head + "\n".join(rows), ""]
    if result.paired:
        lines.append(f"{result.games} paired seeds; difference candidate - best: {result.diff_mean:+.3f} "
                     f"[{result.diff_low:+.3f}, {result.diff_high:+.3f}]; seeds won / tied / lost: "
                     f"{result.wins} / {result.ties} / {result.losses}")
    else:
        lines.append(f"{result.games} games; wins / draws / losses: "
                     f"{result.wins} / {result.ties} / {result.losses}")
    lines.append(f"rule: {result.rule}; decision: {'promote' if result.promote else 'keep the best'}")
    return "\n".join(lines) + "\n"


def stage_artifacts(folder: Path, params: Params, paths: layout.GenerationPaths, inputs: Inputs) -> None:
    """Everything a generation's run keeps, laid out in ``folder``: the checkpoint, params, the
    arena's result and table, training's outputs, the learning curve up to this generation, and
    the picture of the candidate's game if the flow drew one (``paths.picture``)."""
    generation = paths.generation
    ck = folder / CHECKPOINT_DIR
    ck.mkdir(parents=True)
    shutil.copyfile(inputs.candidate, ck / CHECKPOINT_FILE)
    (ck / "tri-checkpoint.json").write_text(json.dumps({
        "format": "tri checkpoint: torch.save dict of tensors; load with tri.net.load_checkpoint "
                  "(torch.load weights_only=True)",
        "file": CHECKPOINT_FILE, "sha256": inputs.sha256, "model_id": inputs.model_id,
        "game": params.game.name, "generation": generation}, indent=2) + "\n")
    (folder / "params").mkdir()
    (folder / "params" / "params.yaml").write_text(dump_params(params))
    game_json = json.dumps(params.game.model_dump(mode="json"), indent=1)
    (folder / "params" / "game.json").write_text(game_json + "\n")
    (folder / "arena").mkdir()
    (folder / "arena" / "arena.json").write_bytes(inputs.arena_json)
    players = {"candidate": paths.relative(paths.candidate), "best": paths.relative(paths.player)}
    (folder / "arena" / "arena.md").write_text(arena_markdown(inputs.arena, generation, players))
    (folder / "train").mkdir()
    for source in (paths.train_metrics, paths.train_losses):
        shutil.copyfile(source, folder / "train" / source.name)
    points = [p for p in report.learning_curve(paths.root) if p.generation <= generation]
    (folder / "plots").mkdir()
    if points:
        report.plot(points, folder / "plots" / "learning-curve.png")
    (folder / "game").mkdir()
    if paths.picture.is_file():
        shutil.copyfile(paths.picture, folder / "game" / "candidate-game.png")
    else:
        where = paths.relative(paths.picture)  # the flow draws there every game tri can draw
        (folder / "game" / "NOTE.txt").write_text(f"no picture: tri cannot draw {params.game.name} boards "
                                                  f"(none at {where})\n")
