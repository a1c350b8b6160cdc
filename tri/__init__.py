"""tri: AlphaZero training for the triangle puzzle and classic board games."""

__version__ = "0.1.0"
