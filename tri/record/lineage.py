"""Where a project's networks came from, as the ``tri new`` options a champion's card writes in
its project command: ``--from`` (the network generation 0 went on from) and ``--teacher`` (the
network that played its self-play), each named ``champion`` when it is the game's shipped
champion, and by model id; ``--games`` (the games it started with), by how many."""

from __future__ import annotations

from pathlib import Path

from tri import layout
from tri.champions import ChampionCard, champion
from tri.errors import TriError
from tri.net import load_checkpoint


def started_from(project: Path, game: str, folder: Path | None = None) -> str:
    """`` --from ...`` where the project went on from a network (``tri new --from``): ``champion``
    when it is the game's shipped champion (before a publish replaces it), else the start's
    model id; empty for fresh weights."""
    start = layout.start_path(project)
    if not start.is_file():
        return ""
    model_id, card = load_checkpoint(start).model_id, _shipped(game, folder)
    if card is None:
        return f" --from models/start.pt (model {model_id})"
    if model_id == card.model_id:
        return " --from champion"
    ids = [m.model_id for m in card.members]
    if model_id in ids:  # tri new --from an ensemble champion starts from one of its networks
        k = ids.index(model_id) + 1
        return f" --from champion (model {model_id})" if k == 1 else \
            f" --from champion --member {k} (model {model_id})"
    return f" --from models/start.pt (model {model_id})"


def taught_by(project: Path, game: str, folder: Path | None = None) -> str:
    """`` --teacher ...`` where a teacher played the project's self-play (``tri new --teacher``):
    ``champion`` when it is the game's shipped champion (before a publish replaces it), with its
    model id either way; empty without one."""
    teacher = layout.teacher_path(project)
    if not teacher.is_file():
        return ""
    model_id, card = load_checkpoint(teacher, ensemble=True).model_id, _shipped(game, folder)
    named = "champion" if card is not None and model_id == card.model_id else "models/teacher.pt"
    return f" --teacher {named} (model {model_id})"


def started_with(project: Path) -> str:
    """`` --games ...`` where the project started with other runs' games (``tri new --games``):
    how many folders and games; empty without them."""
    import pyarrow.parquet as pq

    folders = layout.start_games_dirs(project)
    if not folders:
        return ""
    games = sum(pq.read_metadata(p).num_rows for f in folders for p in layout.games_paths(f))
    return f" --games ... ({len(folders)} self-play folder{'s' if len(folders) > 1 else ''} of other runs, {games:,} games)"


def _shipped(game: str, folder: Path | None) -> ChampionCard | None:
    """The card of the game's shipped champion, or None if none ships."""
    try:
        return champion(game, folder)[1]
    except TriError:
        return None
