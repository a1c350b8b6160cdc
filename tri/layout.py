"""Where every stage's files live. No other module builds paths.

Generation ``N`` is the ``N``-th turn of the loop: the best model (or the project's teacher)
plays, a candidate is trained, the arena decides. Numbers are zero-padded::

    models/best.pt                        the current best model (a copy, replaced atomically)
    models/gen-0000.pt                    the initial network
    models/start.pt                       weights generation 0 starts from (tri new --from), if any
    models/teacher.pt                     the network that plays every generation's self-play instead
                                          of the best model (tri new --teacher: distillation), if any
    models/candidates/gen-NNNN.pt         the candidate trained in generation N
    models/rejected/gen-NNNN.pt           a candidate the arena did not promote
    models/promotions.jsonl               one line per decision (paths relative to the project)
    models/generation.yaml                the generation dvc.yaml describes (written between generations)
    models/.generation.lock               held while a generation runs
    data/selfplay/gen-NNNN/               self-play of generation N (by the best model then, or the teacher)
    data/selfplay/start-KK/               games the project starts with (tri new --games: self-play folders
                                          of other runs, in the order given), generation 0's self-play:
                                          the windows of the first train.window - 1 generations hold them
        shard-SSS.parquet                 positions (schema: tri.shards)
        shard-SSS.games.parquet           one summary row per game
    data/train/gen-NNNN/metrics.json      training summary; losses.csv: loss per step
    data/arena/gen-NNNN.json              the arena's result and decision
    data/pictures/gen-NNNN.png            a whole game the candidate of generation N played (for
                                          people; not a DVC output, not in git); .gif: its every move
    data/learning-curve.png               arena mean score per generation

**The best model.** ``models/best.pt`` is the source of truth for "the best model", with the
decision log ``models/promotions.jsonl`` saying how it got there (promotion replaces the file
atomically and appends the decision; DVC and git version both). Everything else is a copy for
people: the MLflow alias ``champion`` (on the registered model ``tri-<game>``) is moved after
the decision to the latest promoted candidate, and a failed or disabled tracking never changes
which model is best.

:func:`generation_paths` gives every path one generation reads and writes
(:class:`GenerationPaths`); the flow, the benchmark's plain run and the tests wire a
generation through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SHARD_GLOB = "shard-*[0-9].parquet"
GAMES_GLOB = "shard-*.games.parquet"
METRICS_FILE = "metrics.json"
LOSSES_FILE = "losses.csv"


def _gen(generation: int) -> str:
    return f"gen-{generation:04d}"


def model_path(root: Path, generation: int) -> Path:
    return Path(root) / "models" / f"{_gen(generation)}.pt"


def start_path(root: Path) -> Path:
    """The checkpoint whose weights generation 0 takes (``tri new --from``); absent: fresh weights."""
    return Path(root) / "models" / "start.pt"


def teacher_path(root: Path) -> Path:
    """The checkpoint that plays self-play in every generation instead of the best model (``tri new
    --teacher``: the candidates learn from its games, the arena still gates them against the best);
    absent: the best model plays."""
    return Path(root) / "models" / "teacher.pt"


def best_path(root: Path) -> Path:
    return Path(root) / "models" / "best.pt"


def candidate_path(root: Path, generation: int) -> Path:
    return Path(root) / "models" / "candidates" / f"{_gen(generation)}.pt"


def rejected_path(root: Path, generation: int) -> Path:
    return Path(root) / "models" / "rejected" / f"{_gen(generation)}.pt"


def promotions_log(root: Path) -> Path:
    return Path(root) / "models" / "promotions.jsonl"


def log_root(log: Path) -> Path:
    """The project a decision log (:func:`promotions_log`) belongs to: its paths are written
    relative to it."""
    return Path(log).parent.parent


def relative(root: Path, path: Path | str) -> str:
    """``path`` relative to the project ``root`` (posix) when it is inside it, else as given.
    Relative and absolute spellings of the two are compared as absolute paths (then with links
    resolved). Its reader gets the path back with ``Path(root) / text`` (an absolute ``text``
    stays absolute)."""
    for norm in (lambda p: Path(p), lambda p: Path(p).absolute(), lambda p: Path(p).resolve()):
        try:
            return norm(path).relative_to(norm(root)).as_posix()
        except ValueError:
            continue
    return str(path)


def plan_path(root: Path) -> Path:
    return Path(root) / "models" / "generation.yaml"


def lock_path(root: Path) -> Path:
    return Path(root) / "models" / ".generation.lock"


def generation_outputs(root: Path, generation: int) -> list[Path]:
    """What generation ``generation``'s stages write (dvc.yaml's outs, metrics and plots)."""
    return [selfplay_dir(root, generation), candidate_path(root, generation), train_dir(root, generation),
            arena_path(root, generation)]


def train_dir(root: Path, generation: int) -> Path:
    return Path(root) / "data" / "train" / _gen(generation)


def train_metrics_path(root: Path, generation: int) -> Path:
    """Training's summary (JSON) of generation ``generation``."""
    return train_dir(root, generation) / METRICS_FILE


def train_losses_path(root: Path, generation: int) -> Path:
    """Training's loss per step (CSV) of generation ``generation``."""
    return train_dir(root, generation) / LOSSES_FILE


def game_picture_path(root: Path, generation: int) -> Path:
    """The picture of a game the candidate of ``generation`` played (for people, not versioned)."""
    return Path(root) / "data" / "pictures" / f"{_gen(generation)}.png"


def game_animation_path(root: Path, generation: int) -> Path:
    """The same game, a GIF frame per move (:func:`tri.record.render.render_game`'s ``animation``)."""
    return game_picture_path(root, generation).with_suffix(".gif")


def arena_path(root: Path, generation: int) -> Path:
    return Path(root) / "data" / "arena" / f"{_gen(generation)}.json"


def arena_paths(root: Path) -> list[Path]:
    """Every generation's arena result, in generation order."""
    return sorted((Path(root) / "data" / "arena").glob("gen-[0-9]*.json"))


def learning_curve_path(root: Path) -> Path:
    return Path(root) / "data" / "learning-curve.png"


def selfplay_dir(root: Path, generation: int) -> Path:
    return Path(root) / "data" / "selfplay" / _gen(generation)


def start_games_dir(root: Path, k: int) -> Path:
    """The ``k``-th (from 1) folder of games the project starts with (``tri new --games``)."""
    return Path(root) / "data" / "selfplay" / f"start-{k:02d}"


def start_games_dirs(root: Path) -> list[Path]:
    """The folders of games the project starts with, in the order ``tri new --games`` gave them."""
    folders = (Path(root) / "data" / "selfplay").glob("start-[0-9][0-9]")
    return sorted(f for f in folders if f.is_dir())


def window_dirs(root: Path, generation: int, window: int) -> list[Path]:
    """Self-play folders of the last ``window`` generations up to ``generation``, oldest first,
    that exist; generation 0's are the games the project starts with (:func:`start_games_dirs`)."""
    folders = []
    for g in range(max(0, generation - window + 1), generation + 1):
        folders += start_games_dirs(root) if g == 0 else [selfplay_dir(root, g)]
    return [f for f in folders if f.exists()]


def shard_path(folder: Path, shard: int) -> Path:
    return Path(folder) / f"shard-{shard:03d}.parquet"


def games_path(folder: Path, shard: int) -> Path:
    return Path(folder) / f"shard-{shard:03d}.games.parquet"


def shard_paths(folder: Path) -> list[Path]:
    """The position shards in ``folder``, in shard order."""
    return sorted(Path(folder).glob(SHARD_GLOB))


def games_paths(folder: Path) -> list[Path]:
    """The game summaries in ``folder``, in shard order."""
    return sorted(Path(folder).glob(GAMES_GLOB))


@dataclass(frozen=True)
class GenerationPaths:
    """Every path of one generation (see the module docstring): what it reads (``player``,
    ``start``, the self-play folders of ``window``) and what it writes."""

    root: Path
    generation: int
    player: Path  # defends in the arena, and plays self-play unless a teacher does: the best model then (in the flow, its own file)
    start: Path  # the network training starts from
    window: tuple[Path, ...]  # self-play folders training reads, oldest first; the last is ``selfplay``
    selfplay: Path
    candidate: Path
    train_metrics: Path
    train_losses: Path
    arena: Path
    rejected: Path  # where the candidate goes if the arena does not promote it
    best: Path
    promotions: Path
    picture: Path
    selfplayer: Path | None = None  # plays self-play: the teacher (models/teacher.pt), or None: the player

    @property
    def selfplay_model(self) -> Path:
        """The network that plays this generation's self-play."""
        return self.selfplayer or self.player

    def relative(self, path: Path) -> str:
        """``path`` relative to the project when it is inside it (posix), else as given."""
        return relative(self.root, path)


def generation_paths(root: Path, generation: int, *, player: Path | str, start: Path | str,
                     window: int, selfplayer: Path | str | None = None) -> GenerationPaths:
    """The paths of generation ``generation`` of the project ``root``: ``player``, ``start`` and
    ``selfplayer`` (a teacher, None: the player; relative to ``root`` or absolute;
    :mod:`tri.record.versioning`'s plan names them) and the
    ``window`` (``train.window``) newest self-play folders up to this generation's, of which the
    earlier ones that exist now (this generation's own folder is written by its self-play)."""
    root = Path(root)
    selfplay = selfplay_dir(root, generation)
    earlier = window_dirs(root, generation - 1, window - 1)
    return GenerationPaths(
        root=root, generation=generation, player=root / player, start=root / start,
        window=(*earlier, selfplay), selfplay=selfplay, candidate=candidate_path(root, generation),
        train_metrics=train_metrics_path(root, generation), train_losses=train_losses_path(root, generation),
        arena=arena_path(root, generation), rejected=rejected_path(root, generation), best=best_path(root),
        promotions=promotions_log(root), picture=game_picture_path(root, generation),
        selfplayer=root / selfplayer if selfplayer is not None else None)
