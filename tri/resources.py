"""Will it fit? Memory estimates checked against the machine before a stage starts.

Each stage estimates what it will hold (search trees, recorded positions, the training window)
and calls :func:`check_memory`, which raises :class:`~tri.errors.TriError` naming the setting,
the estimate, the machine's memory and what to lower, instead of letting numpy fail with a
traceback or the kernel kill the process halfway. :func:`check_params` runs every check that
needs only ``params.yaml`` (self-play and the arena), so a long command can refuse at once.
"""

from __future__ import annotations

import os

from tri.errors import TriError
from tri.search import search_bytes


def machine_memory() -> int | None:
    """The machine's physical memory in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def plural(n: int, noun: str) -> str:
    """``plural(1, 'game') -> '1 game'``, ``plural(32, 'game') -> '32 games'``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def format_bytes(n: float) -> str:
    """``56_050_000_000 -> '52.2 GiB'`` (binary units)."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_memory(needed: int, what: str, advice: str) -> None:
    """Raise :class:`TriError` if ``needed`` bytes exceed the machine's memory. ``what`` says
    what needs them, with ``{need}`` where the estimate goes (e.g. ``"mcts.simulations: ...
    need about {need} for the search trees"``; nothing else in it is a placeholder: it may quote
    a path); ``advice`` says which settings to lower."""
    total = machine_memory()
    if total is not None and needed > total:
        raise TriError(f"{what.replace('{need}', format_bytes(needed))}, more than this machine's "
                       f"{format_bytes(total)} of memory; {advice}")


def check_search(game, mcts, *, simulations: int, batch: int, setting: str, advice: str,
                 copies: int = 1) -> int:
    """Refuse a search of ``simulations`` for ``batch`` games at once (``copies`` such searches
    running side by side, e.g. one per worker) that would not fit in memory. ``setting`` names
    where ``simulations`` came from (``"mcts.simulations"``, ``"player 'mcts:m.pt:800'"``).
    Returns the bytes of one such search."""

    one = search_bytes(batch, simulations, game.num_actions, game.state_size,
                       leaves_per_step=mcts.leaves_per_step, gumbel_actions=mcts.gumbel_actions if mcts.gumbel else 0)
    where = f" in each of {copies} workers" if copies > 1 else ""
    check_memory(copies * one, f"{setting}: {simulations} simulations for {plural(batch, 'game')} at once{where} "
                               "need about {need} for the search trees", advice)
    return one


def arena_batch(arena, game, games: int | None = None) -> int:
    """Games the arena plays at once: ``arena.concurrent``, at most its games (two-player games
    play every seed twice)."""
    total = (games or arena.games) * (2 if game.num_players == 2 else 1)
    return min(arena.concurrent, total)
