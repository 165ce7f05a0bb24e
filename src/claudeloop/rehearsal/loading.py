"""Reading scenarios from files and from the built-ins, with one-line errors.

A user's scenario file is user input: every mistake ends in a single line naming the
file, the key and what would be accepted, never in pydantic's multi-line report.
"""

from __future__ import annotations

import json
import tomllib
import types
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from claudeloop.rehearsal.scenario import Scenario

BUILTIN_SCENARIOS: tuple[str, ...] = (
    "happy",
    "window",
    "window-silent",
    "weekly",
    "warning",
    "credits",
    "auth",
    "model-missing",
    "local-busy",
    "local-load-failed",
    "overloaded",
    "stall",
    "drop",
    "pause",
    "overage",
    "grace",
    "daily-cap",
    "switch-profile",
    "verify",
)
# Shipped beside them, never played alone: the local server `switch-profile` switches to.
HELPER_SCENARIOS = ("switch-profile-local",)

_SUFFIXES = (".toml", ".json")


class ScenarioError(ValueError):
    """A scenario that cannot be played; the message is one line for the user."""


def load_scenario(path: Path) -> Scenario:
    """The scenario in a TOML or JSON file."""
    if path.suffix not in _SUFFIXES:
        raise ScenarioError(f"{path}: unsupported file type; accepted: {', '.join(_SUFFIXES)}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(f"{path}: cannot read: {error.strerror or error}") from None
    return parse_scenario(text, source=str(path), fmt=path.suffix[1:], default_name=path.stem)


def builtin_scenario(name: str) -> Scenario:
    """One of BUILTIN_SCENARIOS (or HELPER_SCENARIOS), shipped as a TOML file inside the
    package."""
    if name not in BUILTIN_SCENARIOS + HELPER_SCENARIOS:
        raise ScenarioError(
            f"unknown built-in scenario '{name}'; accepted: {', '.join(BUILTIN_SCENARIOS)}"
        )
    resource = resources.files("claudeloop.rehearsal").joinpath("scenarios", f"{name}.toml")
    text = resource.read_text(encoding="utf-8")
    return parse_scenario(text, source=f"built-in:{name}", fmt="toml", default_name=name)


def resolve_scenario(spec: str) -> Scenario:
    """A built-in by NAME, else the scenario FILE at that path (the CLI's argument)."""
    if spec in BUILTIN_SCENARIOS:
        return builtin_scenario(spec)
    path = Path(spec)
    if path.suffix not in _SUFFIXES:
        raise ScenarioError(
            f"'{spec}' is neither a built-in scenario ({', '.join(BUILTIN_SCENARIOS)}) "
            f"nor a {' or '.join(_SUFFIXES)} file"
        )
    return load_scenario(path)


def parse_scenario(
    text: str, *, source: str, fmt: Literal["toml", "json"] | str, default_name: str = ""
) -> Scenario:
    """The scenario in `text`; `source` names it in errors."""
    data: object
    try:
        data = tomllib.loads(text) if fmt == "toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise ScenarioError(f"{source}: not valid {fmt.upper()}: {error}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: the top level must be a table of keys")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as error:
        raise ScenarioError(f"{source}: {_one_line(error)}") from None
    if not scenario.name:
        scenario = scenario.model_copy(update={"name": default_name})
    return scenario


def _one_line(error: ValidationError) -> str:
    problems = error.errors(include_url=False)
    first = problems[0]
    path, model, union = _walk(first["loc"])
    kind = first["type"]
    if kind == "extra_forbidden":
        accepted = ", ".join(model.model_fields) if model else "?"
        text = f"{path}: unknown key; accepted: {accepted}"
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = ", ".join(_tags(union)) if union is not None else "?"
        given = first.get("ctx", {}).get("tag")
        what = f"unknown kind '{given}'" if given is not None else "missing"
        text = f"{_join(path, 'kind')}: {what}; accepted: {tags}"
    else:
        message = first["msg"].removeprefix("Value error, ")
        given = "" if kind == "value_error" else f" (got {first['input']!r})"
        text = f"{path}: {message}{given}" if path else f"{message}{given}"
    more = len(problems) - 1
    return text + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def _walk(loc: tuple[int | str, ...]) -> tuple[str, type[BaseModel] | None, Any]:
    """The user-facing key path of `loc`, the model holding its last key and the
    discriminated union at its end (pydantic puts union tags into `loc`; users never
    wrote them, so they are consumed here and not shown)."""
    path = ""
    current: Any = Scenario
    holder: type[BaseModel] | None = Scenario
    union: Any = None
    for part in loc:
        current = _unwrap(current)
        if _is_union(current):
            union = current
            member = _member(current, part)
            if member is not None:
                current, holder, union = member, member, None
                continue
        if isinstance(part, int):
            path += f"[{part}]"
            current = get_args(current)[0] if get_origin(current) is list else Any
            continue
        path = _join(path, part)
        if isinstance(current, type) and issubclass(current, BaseModel):
            holder = current
            field = current.model_fields.get(part)
            current = field.annotation if field is not None else Any
        else:
            current = Any
    final = _unwrap(current)
    if _is_union(final):
        union = final
    if isinstance(final, type) and issubclass(final, BaseModel):
        holder = final
    return path, holder, union


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _member(union: Any, tag: int | str) -> type[BaseModel] | None:
    for member in get_args(union):
        if isinstance(member, type) and issubclass(member, BaseModel):
            kind = member.model_fields.get("kind")
            if kind is not None and tag in get_args(kind.annotation):
                return member
    return None


def _tags(union: Any) -> list[str]:
    tags: list[str] = []
    for member in get_args(union):
        if isinstance(member, type) and issubclass(member, BaseModel):
            kind = member.model_fields.get("kind")
            if kind is not None:
                tags.extend(str(tag) for tag in get_args(kind.annotation))
    return tags
