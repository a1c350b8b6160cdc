"""Player specs: the names ``tri arena``, ``tri eval``, ``tri ladder``, ``tri play`` and the loop
accept wherever a player is expected. Parsing one loads nothing (no torch): a command checks its
players before it imports the agents (:mod:`tri.players`).

========================  ===========================================================
spec                      player
========================  ===========================================================
``random``                a uniformly random legal move
``greedy``                the move with the best immediate reward; ties broken by the
                          game's line-filling heuristic (triangle: the sum over lines of
                          the squared filled fraction after the move), then lowest action
``PATH.pt``               the checkpoint with search (``arena.simulations``)
``mcts:PATH:N``           the checkpoint with ``N`` simulations of search
``mcts:PATH:NxK``         ... in each of ``K`` trees per move, each on its own sampled
                          future (games with chance; ``arena.determinizations``)
``net:PATH``              the checkpoint's policy alone, no search (most probable move)
``models:/NAME@ALIAS``    a registered MLflow version (also ``models:/NAME/VERSION``), e.g.
                          ``models:/tri-triangle@champion``; PATH above may be one too
``champion``              the shipped champion of the game being played, with the search
                          settings and budget on its card (:mod:`tri.champions`)
``champion:GAME``         the shipped champion of GAME; PATH above may be one too
                          (``net:champion``, ``mcts:champion:connect4:800``)
``uct:N``                 plain UCT with ``N`` simulations and random roll-outs, no
                          network (two-player games; :mod:`tri.yardsticks`)
``alphabeta:D``           depth-``D`` alpha-beta over a positional evaluation and
                          mobility (Othello; :mod:`tri.yardsticks`)
========================  ===========================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tri import champions
from tri.config import MAX_SIMULATIONS, MctsParams
from tri.errors import TriError
from tri.record.registry import resolve_model


@dataclass(frozen=True)
class PlayerSpec:
    kind: str  # random | greedy | mcts | net | uct | alphabeta
    path: Path | None = None
    simulations: int | None = None
    text: str = ""
    mcts: MctsParams | None = None  # the search settings it plays with (a champion's own), else the caller's
    determinizations: int | None = None  # trees per move (a champion's own, NxK), else arena.determinizations


def parse_spec(text: str, root: Path | None = None, *, game: str | None = None) -> PlayerSpec:
    """Parse a player spec (see the module docstring); raises :class:`TriError` if malformed.
    ``models:/`` URIs are resolved to a local checkpoint through the MLflow store of the
    project ``root`` (default: the current directory). ``game``: the game being played, which
    ``champion`` names and ``champion:GAME`` must match (None: ``champion`` needs its GAME)."""

    def local(path: str) -> tuple[Path, MctsParams | None, int | None, int | None]:
        """The checkpoint ``path`` names, and a champion's own search settings, budget and trees."""
        if path == "champion" or path.startswith("champion:"):
            name = path.partition(":")[2] or game
            if not name:
                raise TriError(f"player {clip(text)!r}: which game's champion? use champion:GAME")
            if game is not None and name != game:
                raise TriError(f"player {clip(text)!r} plays {name}, but this plays {game} (use --game {name})")
            ckpt, card = champions.champion(name)
            return ckpt, card.mcts, card.simulations, card.determinizations
        if not path.startswith("models:/"):
            return Path(path), None, None, None
        try:
            return resolve_model(path, Path.cwd() if root is None else root), None, None, None
        except TriError as exc:  # its message names the URI: name the whole spec only if it differs
            raise (exc if path == text else TriError(f"player {text!r}: {exc}")) from None

    if text in ("random", "greedy"):
        return PlayerSpec(text, text=text)
    if text.startswith("uct:"):
        n = text[4:]
        if not (n.isascii() and n.isdigit()) or not n.lstrip("0") or len(n) > 7:
            raise TriError(f"player {clip(text)!r}: expected uct:SIMULATIONS, e.g. uct:1000 (1 to 9999999)")
        return PlayerSpec("uct", simulations=int(n), text=text)
    if text.startswith("alphabeta:"):
        d = text[10:]
        if not (d.isascii() and d.isdigit()) or not 1 <= int(d or 0) <= 12 or len(d) > 2:
            raise TriError(f"player {clip(text)!r}: expected alphabeta:DEPTH, e.g. alphabeta:3 (1 to 12)")
        return PlayerSpec("alphabeta", simulations=int(d), text=text)
    if text == "champion" or text.startswith(("models:/", "champion:")):
        path, mcts, sims, trees = local(text)
        return PlayerSpec("mcts", path, sims, text=text, mcts=mcts, determinizations=trees)
    if text.startswith("net:"):
        return PlayerSpec("net", local(text[4:])[0], text=text)
    if text.startswith("mcts:"):
        path, _, budget = text[5:].rpartition(":")
        sims, times, trees = budget.partition("x")
        digits, tree_digits = sims.lstrip("0"), trees.lstrip("0")
        if (not path or not (sims.isascii() and sims.isdigit()) or not digits
                or times and not (trees.isascii() and trees.isdigit() and tree_digits)):
            raise TriError(f"player {clip(text)!r}: expected mcts:PATH:SIMULATIONS or "
                           "mcts:PATH:SIMULATIONSxTREES, e.g. mcts:models/gen-0003.pt:128 or mcts:champion:32x4")
        if len(digits) > len(str(MAX_SIMULATIONS)) or int(digits) > MAX_SIMULATIONS:
            raise TriError(f"player {clip(text)!r}: at most {MAX_SIMULATIONS} simulations "
                           "(tree nodes are numbered in int32)")
        if times and (len(tree_digits) > 4 or int(tree_digits) > 1024):
            raise TriError(f"player {clip(text)!r}: at most 1024 trees per move")
        resolved, mcts, _, card_trees = local(path)
        return PlayerSpec("mcts", resolved, int(digits), text=text, mcts=mcts,
                          determinizations=int(tree_digits) if times else card_trees)
    if text and (Path(text).suffix == ".pt" or Path(text).is_file()):
        return PlayerSpec("mcts", Path(text), text=text)
    raise TriError(f"unknown player {text!r}: use random, greedy, champion, uct:N, alphabeta:D, a checkpoint path (.pt), "
                   "mcts:PATH:N or net:PATH")


def clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_files(specs: list[PlayerSpec]) -> None:
    """Raise :class:`TriError` for the first spec whose checkpoint is not a file (the message
    :func:`tri.net.load_checkpoint` gives), so a command can fail before it loads torch."""
    for spec in specs:
        if spec.path is not None and not spec.path.is_file():
            raise TriError(f"checkpoint {spec.path}: file not found")
