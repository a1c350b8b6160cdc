"""``params.yaml`` as text: :func:`dump_params` (plain YAML, what ``tri params`` prints) and
:func:`describe_params` (the same YAML with every setting's description beside it, what ``tri
params --describe`` prints and ``tri new`` writes). :func:`tri.config.load_params` reads both.
:func:`changed_defaults`: the settings a file leaves out whose default changed since."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import yaml
from pydantic import BaseModel

from tri.config import Params


def dump_params(params: Params) -> str:
    """``params`` as YAML, in the same shape :func:`load_params` reads."""
    return yaml.safe_dump(params.model_dump(mode="json"), sort_keys=False, default_flow_style=None,
                          width=100)


def describe_params(params: Params) -> str:
    """``params`` as :func:`dump_params` writes them (the same keys, values and order), with each
    field's ``description`` as a ``#`` comment beside its value and each section headed by the
    summary of its model's docstring: what ``tri params --describe`` prints. Still YAML that
    :func:`load_params` reads back to ``params``."""
    header = _comments([_summary(type(params))], "")
    return "\n".join(header + _describe(params, params.model_dump(mode="json"), "")) + "\n"


_WIDTH = 100  # as dump_params: a longer list is written one item per line
_COMMENT_COLUMN = 40  # trailing comments line up, unless a value is longer than this


def _describe(model: BaseModel, data: dict, indent: str) -> list[str]:
    """The lines of one mapping: nested models as headed blocks, other fields as ``key: value``
    in YAML flow style with their description as a trailing comment, aligned per mapping."""
    fields = type(model).model_fields
    items: list[str | tuple[str, str]] = []  # a finished line, or (text, comment) to align
    for key, value in data.items():
        field, attr = fields[key], getattr(model, key)
        if isinstance(attr, BaseModel):
            if not indent:
                items.append("")  # a blank line between top-level sections
            items += _comments(dict.fromkeys([field.description or "", _summary(type(attr))]), indent)
            items.append(f"{indent}{key}:")
            items += _describe(attr, value, indent + "  ")
            continue
        comment = " ".join((field.description or "").split())
        text = f"{indent}{key}: {_flow(value)}"
        if len(text) <= _WIDTH or not isinstance(value, list) or not value:
            items.append((text, comment))
        else:  # a long list: one flow item per line
            items.append((f"{indent}{key}:", comment))
            items += [f"{indent}  - {_flow(v)}" for v in value]
    short = [len(i[0]) for i in items if isinstance(i, tuple) and len(i[0]) < _COMMENT_COLUMN]
    column = max(short, default=0) + 2
    return [i if isinstance(i, str) else (f"{i[0].ljust(column - 2)}  # {i[1]}" if i[1] else i[0])
            for i in items]


def _flow(value: object) -> str:
    """``value`` as one line of YAML flow style (quoted where a plain scalar would read differently)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=2**31, allow_unicode=True)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _summary(model: type) -> str:
    """The first paragraph of a model's own docstring on one line, Sphinx markup made plain."""
    doc = textwrap.dedent(model.__dict__.get("__doc__") or "").strip().split("\n\n")[0]
    doc = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(doc.split()))
    return doc.replace("``", "`")


def _comments(texts, indent: str) -> list[str]:
    """Each non-empty text as ``#`` comment lines, wrapped to :data:`_WIDTH` columns."""
    prefix = f"{indent}# "
    return [line for text in texts if text
            for line in textwrap.wrap(text, _WIDTH, initial_indent=prefix, subsequent_indent=prefix,
                                      break_long_words=False, break_on_hyphens=False)]


# Settings whose default changed after projects had been made, (section, key) -> (date, the old
# default, the games whose results it changes). A params.yaml written before the change that
# leaves the setting out runs on the new default: tri loop says so (:func:`changed_defaults`).
CHANGED_DEFAULTS: dict[tuple[str, str], tuple[str, object, tuple[str, ...]]] = {
    ("mcts", "afterstates"): ("2026-11-27", False, ("triangle",)),
    ("train", "luck_samples"): ("2026-11-29", 0, ("triangle",)),
}


def changed_defaults(path: str | Path, params: Params) -> list[str]:
    """One line per setting of :data:`CHANGED_DEFAULTS` that the params file ``path`` (already
    validated into ``params``) leaves out, where it changes ``params``' game's results; none when
    there is no such file (the embedded defaults)."""
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    notes = []
    for (section, key), (date, old, games) in CHANGED_DEFAULTS.items():
        given = data.get(section) if isinstance(data, dict) else None
        if params.game.name in games and not (isinstance(given, dict) and key in given):
            new = getattr(getattr(params, section), key)
            notes.append(f"note: {path} leaves out {section}.{key}, whose default became {_yaml(new)} on "
                         f"{date}, so this project now runs on it; write '{key}: {_yaml(old)}' under "
                         f"{section}: to keep the old recipe")
    return notes


def _yaml(value: object) -> str:
    return yaml.safe_dump(value, default_flow_style=True).removesuffix("\n...\n").strip()
