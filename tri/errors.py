"""User-facing errors.

Library code raises these; only the CLI turns them into a message and an exit status, so the
library stays usable from tests, notebooks and Prefect tasks (no ``sys.exit`` below the CLI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


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


_MESSAGES = {
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "extra_forbidden": "unknown setting",
    "missing": "is required",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "literal_error": "must be one of {expected}",
    "model_type": "must be a mapping of settings",
    "model_attributes_type": "must be a mapping of settings",
    "dict_type": "must be a mapping of settings",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
}


def format_errors(error: ValidationError) -> list[str]:
    """One ``section.key: problem`` line per validation error."""
    lines = []
    for e in error.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"] if not str(p).startswith("function-"))
        template = _MESSAGES.get(e["type"])
        if template:
            try:
                msg = template.format(**(e.get("ctx") or {}))
            except (KeyError, IndexError):
                msg = e["msg"]
        else:
            msg = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        lines.append(f"{loc}: {msg}" if loc else msg)
    return lines
