"""Every ``params.yaml`` setting is documented where it is defined, and :func:`describe_params`
prints the effective values with those descriptions as YAML that reads back to the same params."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from tri.config import MAX_SEED, NetParams, Params, load_params
from tri.params_yaml import describe_params, dump_params
from tri.games import GAMES


def walk(model: BaseModel, path: str = ""):
    """``(dotted name, field info, value)`` of every field of ``model`` and of the models nested
    in it, depth first."""
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        dotted = f"{path}.{name}" if path else name
        yield dotted, field, value
        if isinstance(value, BaseModel):
            yield from walk(value, dotted)


def own_doc(model: BaseModel) -> str:
    return (type(model).__dict__.get("__doc__") or "").strip()


def plain(text: str) -> str:
    """``text`` on one line without Sphinx roles and backquotes."""
    return " ".join(re.sub(r":\w+:", "", text).replace("`", "").replace("~", "").split())


def comment_text(text: str) -> str:
    """Every comment of ``text`` (whole-line and trailing) joined into one line."""
    parts = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            parts.append(stripped[1:])
        elif "  # " in line:
            parts.append(line.split("  # ", 1)[1])
    return " ".join(" ".join(parts).split())


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(text)
    return path


def varied() -> Params:
    """Non-default values of every kind: long and small floats, the largest seed, a literal, a
    small triangle board with its own templates."""
    return Params(
        game={"name": "triangle",
              "triangle": {"rows": 4, "cols": 7, "playable": [[1, 6], [0, 7], [0, 7], [1, 6]], "num_slots": 2,
                           "templates": [[[0, 0, "U"]], [[0, 0, "D"], [0, 1, "U"]]],
                           "rewards": {"placed": 0.125, "cleared": 1.0, "alive": 0.0, "illegal": -1.5}},
              "connect4": {"rows": 5, "cols": 6, "connect": 3}, "tictactoe": {"m": 4, "n": 4, "k": 3}},
        net={"channels": 8, "blocks": 0, "support_eps": 1e-7, "seed": MAX_SEED},
        mcts={"gumbel": True, "gumbel_c_scale": 1.0, "discount": 0.95},
        train={"lr": 3.5e-5, "continue_from": "latest", "seed": 7},
        arena={"rule": "ci_lower", "threshold": -0.25, "win_rate": 0.5},
    )


CASES = {"defaults": Params(), **{f"game-{g}": Params(game={"name": g}) for g in GAMES}, "varied": varied()}


def test_every_field_is_documented():
    missing = []
    for name, field, value in walk(Params()):
        if isinstance(value, BaseModel):  # a section: its description, else its model's docstring
            if not (field.description or "").strip() and not own_doc(value):
                missing.append(name)
        elif not (field.description or "").strip():
            missing.append(name)
    assert not missing, f"params fields without a description: {', '.join(missing)}"
    # the walk reached the game rules, nested ones included, and every section
    names = {name for name, _, _ in walk(Params())}
    assert {"game.name", "game.triangle.rewards.illegal", "game.connect4.connect", "game.tictactoe.k",
            "net.seed", "mcts.gumbel_c_scale", "selfplay.td_steps", "train.continue_from",
            "arena.win_rate"} <= names


def test_every_model_has_a_summary():
    models = [Params()] + [v for _, _, v in walk(Params()) if isinstance(v, BaseModel)]
    assert all(own_doc(m) for m in models), [type(m).__name__ for m in models if not own_doc(m)]


@pytest.mark.parametrize("params", CASES.values(), ids=CASES.keys())
def test_describe_round_trips(tmp_path, params):
    text = describe_params(params)
    assert load_params(write(tmp_path, text)) == params
    # the same content, in the same order, as dump_params
    assert yaml.safe_load(text) == yaml.safe_load(dump_params(params))
    assert list(yaml.safe_load(text)) == list(yaml.safe_load(dump_params(params)))


@pytest.mark.parametrize("params", CASES.values(), ids=CASES.keys())
def test_describe_shows_every_description(params):
    text = describe_params(params)
    comments = comment_text(text)
    for name, field, value in walk(params):
        description = " ".join((field.description or "").split())
        if description:
            assert description in comments, name
        if isinstance(value, BaseModel):  # its model's summary, the first paragraph of its docstring
            assert plain(own_doc(value).split("\n\n")[0]) in plain(comments), name
    # sections are headed by their model's summary, the file by Params'
    assert text.startswith("# Every result-affecting number")
    assert "# `net`: the network's shape" in text


def test_leaf_descriptions_sit_beside_their_values():
    text = describe_params(Params())
    assert "  channels: 32" in text
    line = next(x for x in text.splitlines() if x.strip().startswith("channels:"))
    assert line.split("  # ", 1)[1] == NetParams.model_fields["channels"].description
    # a long list is written one item per line, still in flow style
    assert "\n      - [[0, 0, U]]\n" in text
