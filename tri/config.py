"""Configuration: result-affecting ``params.yaml`` and the runtime settings that are not.

``params.yaml`` has one section per stage; each section is a small frozen pydantic model and
``dvc.yaml`` lists, per stage, only the sections it reads. The root :class:`Params` is read with
pydantic-settings' YAML source and nothing else: environment variables must not change results.

:class:`Runtime` holds what does not change results (device, worker count, store locations);
it reads ``TRI_``-prefixed environment variables (``TRI_DEVICE=cpu``, ``TRI_WORKERS=2``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, \
    YamlConfigSettingsSource

from tri.errors import ParamsError
from tri.games.triangle_rules import TriangleConfig

DEFAULT_PARAMS = Path("params.yaml")


class GameParams(BaseModel):
    """``game``: which game, and the rules of each game tri knows."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: Literal["triangle"] = "triangle"
    triangle: TriangleConfig = TriangleConfig()


class Params(BaseSettings):
    """Every result-affecting number, one section per stage."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")
    game: GameParams = GameParams()

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   **_: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only what load_params passes in (the YAML file): no environment, no dotenv.
        return (init_settings,)


class Runtime(BaseSettings):
    """Settings that never change results; ``TRI_<NAME>`` environment variables override."""

    model_config = SettingsConfigDict(env_prefix="TRI_", frozen=True, extra="ignore")
    device: str = Field("auto", description="torch device: auto, cpu, cuda, cuda:1, mps")
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, gt=0,
                         description="worker processes for self-play")


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


def load_params(path: str | Path | None = None) -> Params:
    """Read and validate ``params.yaml``.

    ``path=None`` reads ``./params.yaml`` when it exists and the embedded defaults otherwise; an
    explicit path must exist. Raises :class:`ParamsError` with one line per problem.
    """
    if path is None:
        if not DEFAULT_PARAMS.exists():
            return Params()
        path = DEFAULT_PARAMS
    path = Path(path)
    if not path.is_file():
        raise ParamsError(str(path), ["file not found"])
    try:
        data = YamlConfigSettingsSource(Params, yaml_file=path)()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParamsError(str(path), [f"not valid YAML{where}: {problem}"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ParamsError(str(path), [f"cannot be read: {exc}"]) from None
    if not isinstance(data, dict):
        raise ParamsError(str(path), ["must be a mapping of sections (game: ...)"])
    try:
        return Params(**data)
    except ValidationError as exc:
        raise ParamsError(str(path), format_errors(exc)) from None


def dump_params(params: Params) -> str:
    """``params`` as YAML, in the same shape :func:`load_params` reads."""
    return yaml.safe_dump(params.model_dump(mode="json"), sort_keys=False, default_flow_style=None,
                          width=100)
