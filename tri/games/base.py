"""The game protocol: what search, self-play, training and arena need from a game.

Vocabulary (used with these meanings everywhere in tri):

- **game**: an object that knows the rules of one configured game. It holds only tables derived
  from its config; it never holds positions.
- **state**: one position, *seen from the side to move* (the only player, in a single-player
  game). A state is a row of ``uint64`` words whose layout the game owns; a **batch** of ``B``
  states is an array ``[B, L]``. Copying, gathering and storing states is plain array work.
- **action**: an integer in ``[0, A)``; each game documents how it maps to a move.
- **legal**: ``legal(states) -> [B, A] bool``, the actions allowed in each state.
- **step**: ``step(states, actions) -> Transition``: the next states, the **reward** received by
  the player who acted, and whether the game is now **terminal**. Stepping a terminal state
  leaves it unchanged with reward 0; an illegal action ends the game with the game's penalty.
- **chance**: a stochastic game (the triangle puzzle's shape draws) keeps each state's chance
  stream inside the state. ``reseed`` replaces that stream, so a search can plan with draws of its
  own and never see the real game's future.
- **afterstate** (optional, stochastic games): ``afterstate(states) -> [B, L]`` gives states a
  drawing step produced as they were before the draw (the triangle puzzle: every slot empty), so
  a network can value the position over every draw at once (``mcts.afterstates``).
- **outcome** (two-player zero-sum games): the reward of the final move, +1 for a win, 0 for a
  draw, from the view of the player who made it; the side to move then alternates, so the
  value of a state for the side to move is the negation of the previous mover's.
- **encode**: ``encode(states) -> [B, C, H, W] float32``, the network's input.
- **symmetry**: a permutation of board cells and of actions that maps positions to positions of
  equal value (used for augmentation); a game may have none.

Two protocols: :class:`Game` is what the algorithm needs (search, self-play, training, arena,
the baselines), on batches; :class:`PlayableGame` is what people need (``tri play``, pictures,
the web page), on one state, a row ``[L]``. Every registered game implements both
(:mod:`tri.games` holds the registry; ``tests/games/test_registry.py`` checks each entry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numba as nb
import numpy as np
from pydantic import BaseModel


@dataclass(frozen=True)
class Transition:
    """Result of ``Game.step`` on a batch: ``states [B, L] uint64``, ``reward [B] float64``,
    ``terminal [B] bool``; ``stats``: game-specific per-step counts ``{name: [B]}`` that reports
    add up per game (the triangle puzzle's ``lines`` and ``cleared`` triangles); ``chance [B]
    bool``: the step drew from the state's chance stream (the triangle puzzle's refills), for the
    search's chance nodes (``mcts.chance_outcomes``); None: the game does not say (a stochastic
    game's every step is then taken to have drawn)."""

    states: np.ndarray
    reward: np.ndarray
    terminal: np.ndarray
    stats: dict[str, np.ndarray] = field(default_factory=dict)
    chance: np.ndarray | None = None


@dataclass(frozen=True)
class Symmetry:
    """A symmetry of the board: ``cells [H*W]`` gives, for each cell of the transformed board,
    the cell of the original it comes from; ``actions [A]`` likewise for actions."""

    name: str
    cells: np.ndarray
    actions: np.ndarray

    def apply_planes(self, planes: np.ndarray) -> np.ndarray:
        """``[..., H, W] -> [..., H, W]``."""
        shape = planes.shape
        flat = planes.reshape(*shape[:-2], shape[-2] * shape[-1])
        return flat[..., self.cells].reshape(shape)

    def apply_policy(self, policy: np.ndarray) -> np.ndarray:
        """``[..., A] -> [..., A]``."""
        return policy[..., self.actions]

    def apply_targets(self, policy: np.ndarray, legal: np.ndarray, states: np.ndarray):
        """The training targets of ``states [B, L]`` under the symmetry: ``(policy [B, A],
        legal [B, A])`` mapped. A game whose action map depends on the position (Santorini's
        worker order) overrides this."""
        return self.apply_policy(policy), self.apply_policy(legal)


@runtime_checkable
class Game(Protocol):
    """A batched game. Every method takes and returns whole batches (leading dimension ``B``)."""

    name: str  # the registry's name, also params.yaml's game.name
    config: BaseModel  # the rules (params.yaml's game.<name> section); checkpoints store it
    num_players: int  # 1 or 2
    num_actions: int  # A
    state_size: int  # L, words per state
    obs_shape: tuple[int, int, int]  # (C, H, W) of encode()
    stochastic: bool
    move_limit: int | None  # the most moves a game can last under the rules (None: no bound)

    def initial(self, seeds: np.ndarray) -> np.ndarray:
        """``seeds [B] int64 -> states [B, L]``: new games (a stochastic game's first draws come
        from its seed)."""
        ...

    def legal(self, states: np.ndarray) -> np.ndarray:
        """``[B, L] -> [B, A] bool``."""
        ...

    def step(self, states: np.ndarray, actions: np.ndarray) -> Transition:
        """``[B, L], [B] int -> Transition``; the input states are not modified."""
        ...

    def terminal(self, states: np.ndarray) -> np.ndarray:
        """``[B, L] -> [B] bool``."""
        ...

    def encode(self, states: np.ndarray) -> np.ndarray:
        """``[B, L] -> [B, C, H, W] float32``."""
        ...

    def reseed(self, states: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        """Copy of ``states`` whose chance streams come from ``seeds [B]`` (deterministic games
        return the states unchanged)."""
        ...

    def symmetries(self) -> tuple[Symmetry, ...]:
        """The game's symmetries, identity excluded; possibly none."""
        ...

    def line_fill(self, states: np.ndarray) -> np.ndarray:
        """``[B, L] -> [B] float64``: the ``greedy`` baseline's tie-break after equal rewards,
        scored for the player who just moved (higher is better; zeros if the game has none)."""
        ...


@runtime_checkable
class PlayableGame(Game, Protocol):
    """What people need, one state (a row ``[L]``) at a time: read a typed move, name and draw
    moves and boards, say whose turn it is. Messages are one line, for a person."""

    def parse_move(self, text: str, state: np.ndarray) -> int:
        """The action a person typed (the game's move notation, e.g. ``4`` for a Connect Four
        column, ``0 3 4`` for a triangle placement); ``ValueError`` with a one-line message
        saying what is wrong (unreadable, off the board, illegal now) for anything else,
        whatever its length."""
        ...

    def action_name(self, action: int) -> str:
        """``action`` in the notation :meth:`parse_move` reads."""
        ...

    def move_help(self, state: np.ndarray) -> str:
        """One line: how to type a move in this game."""
        ...

    def to_move(self, state: np.ndarray) -> int:
        """The seat to move: 0 (the first player, or the only one) or 1."""
        ...

    def board(self, state: np.ndarray) -> np.ndarray:
        """``[H, W] int8`` cells in absolute terms: 0 empty (or not part of the board), 1 the first
        player's piece (a filled cell in a single-player game), 2 the second player's."""
        ...

    def render(self, state: np.ndarray) -> str:
        """The board as plain text (no colours), for a terminal or a log."""
        ...


@nb.njit(cache=True, nogil=True)
def _sample_legal(mask, u, out):
    for b in range(mask.shape[0]):
        count = 0
        for a in range(mask.shape[1]):
            count += mask[b, a]
        out[b] = -1
        if count == 0:
            continue
        pick = min(int(u[b] * count), count - 1)
        for a in range(mask.shape[1]):
            if mask[b, a]:
                if pick == 0:
                    out[b] = a
                    break
                pick -= 1


def sample_legal(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per row of ``mask [B, A]``; -1 where none is legal."""
    out = np.empty(mask.shape[0], dtype=np.int64)
    _sample_legal(mask, rng.random(mask.shape[0]), out)
    return out
