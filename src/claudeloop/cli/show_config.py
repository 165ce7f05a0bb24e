"""`claudeloop config show`: the effective settings, where each came from, and the
environment the selected profile gives Claude Code. Secrets are masked: notify URLs
keep only their scheme and server (see adapters/notify/urls.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from claudeloop.application.config_view import BackendShown, ConfigView
from claudeloop.application.durations import format_duration
from claudeloop.application.settings import SETTINGS, Setting
from claudeloop.cli.bootstrap import config_view, masking
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory

MASK = "****"


def show(*, cwd: Path | None, profile: str | None, as_json: bool) -> None:
    view = config_view(working_directory(cwd), profile)
    data = {
        "settings": {
            setting.key: {
                "value": _plain(setting, view.settings.of(setting).value),
                "from": view.settings.of(setting).origin.describe(),
            }
            for setting in SETTINGS
        },
        "files": {
            "project": {"path": str(view.project.path), "read": view.project.read},
            "user": {"path": str(view.user.path), "read": view.user.read},
        },
        "profiles": _profiles(view),
        "backend": _backend(view.backend),
    }
    if as_json:
        print_json(data)
        return
    width = max(len(setting.key) for setting in SETTINGS)
    for setting in SETTINGS:
        entry = data["settings"][setting.key]
        value = "-" if entry["value"] is None else as_written(entry["value"])
        click.echo(f"{setting.key:<{width}}  {value}  ({entry['from']})")
    click.echo("")
    for kind in ("project", "user"):
        entry = data["files"][kind]
        state = "read" if entry["read"] else "not found"
        click.echo(f"{kind} file: {entry['path']} ({state})")
    click.echo("")
    detail = data["backend"]
    click.echo(
        f"profile {detail['profile']} ({detail['defined_in']}): "
        + ("local, " + str(detail["base_url"]) if detail["local"] else "inherits the environment")
    )
    click.echo(f"  credentials: {detail['credentials']}")
    click.echo(
        f"  marker fallback: {'on' if detail['marker_fallback'] else 'off'}; "
        f"cost: {'zero' if detail['zero_cost'] else 'reported'}"
    )
    for name, value in detail["env"].items():
        click.echo(f"  {name}={value}")
    others = [name for name in data["profiles"] if name != detail["profile"]]
    if others:
        click.echo(f"other profiles: {', '.join(others)}")


def _profiles(view: ConfigView) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for name, (defined_in, written) in view.profiles.items():
        table = dict(written)
        if "auth_token" in table:
            table["auth_token"] = MASK
        table["extra_env"] = _masked(table.get("extra_env", {}))
        shown[name] = {"defined_in": defined_in, **table}
    return shown


def _backend(backend: BackendShown) -> dict[str, Any]:
    return {
        "profile": backend.profile,
        "defined_in": backend.defined_in,
        "local": backend.local,
        "base_url": backend.base_url,
        "model": backend.model,
        "small_fast_model": backend.small_fast_model,
        "credentials": backend.credentials,
        "marker_fallback": backend.marker_fallback,
        "zero_cost": backend.zero_cost,
        "env": _masked(dict(backend.env)),
    }


def _masked(env: dict[str, str]) -> dict[str, str]:
    rules = masking()
    return {
        # A URL's password and a token-shaped value are masked under any name.
        name: MASK if value and rules.looks_secret(name) else rules.masked_text(value)
        for name, value in sorted(env.items())
    }


def shown_default(setting: Setting[object]) -> str:
    """A setting's default as `config show` writes it, in backticks; `-` for unset."""
    if setting.default is None:
        return "-"
    return "`" + as_written(_plain(setting, setting.default)) + "`"


def as_written(value: Any) -> str:
    """A value as claudeloop.toml writes it: `false`, `20`, `"5m"`, `["make test"]`,
    `{ five_hour = "wind-down" }`, so that a line of `config show` can be copied into it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _basic_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(as_written(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{_key(name)} = {as_written(item)}" for name, item in value.items())
        return "{ " + ", ".join(pairs) + " }" if value else "{}"
    return as_written(str(value))


def _key(name: object) -> str:
    text = str(name)
    bare = text and all(c.isascii() and (c.isalnum() or c in "_-") for c in text)
    return text if bare else _basic_string(text)


def _basic_string(text: str) -> str:
    """A TOML basic string: backslash, quote and control characters escaped."""
    escaped = "".join(
        {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}.get(c)
        or (f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
        for c in text
    )
    return f'"{escaped}"'


def _plain(setting: Setting[object], value: object) -> object:
    """A value as JSON holds it: apprise URLs masked, durations as written."""
    if setting.kind == "urls" and isinstance(value, list):
        rules = masking()
        return [rules.masked_url(str(url)) for url in value]
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, timedelta):
        return format_duration(value)
    return value
