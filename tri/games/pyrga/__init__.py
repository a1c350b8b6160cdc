"""Pyrga (``../shared/pyrga-rules.md``): place squares, circles and arrows; own the towers."""
