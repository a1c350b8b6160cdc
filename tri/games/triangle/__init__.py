"""The triangle puzzle: rules (config), numba kernels, and the batched game."""
