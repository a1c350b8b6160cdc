"""User-facing errors.

Library code raises these; only the CLI turns them into a message and an exit status, so the
library stays usable from tests, notebooks and Prefect tasks (no ``sys.exit`` below the CLI).
"""

from __future__ import annotations


class TriError(Exception):
    """A problem the user can fix: bad input, a missing file, a mismatched checkpoint.

    ``str(error)`` is the whole message; ``exit_code`` is what the CLI exits with.
    """

    exit_code = 1


class ParamsError(TriError):
    """``params.yaml`` (or a section of it) is malformed; one line per problem."""

    exit_code = 2

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        super().__init__("\n".join(f"{source}: {p}" for p in problems))
