"""Othello (Reversi): :mod:`.rules` (the config, bit layout and shift tables, the recipe) and
:mod:`.game` (the numba kernels and :class:`~tri.games.othello.game.OthelloGame`)."""
