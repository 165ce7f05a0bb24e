"""Where the configuration files are, and the secrets they hold as written.

Read without pydantic: the views of runs (`runs`, `report`, `sessions`, `export`, the
dashboard) mask what a run of the directory could know, and must not pay for checking
every setting to learn it (a tenth of a second of a command that should answer at once).
A file that does not load as settings still has its secrets masked: a view never shows
a token because a setting beside it is wrong.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from claudeloop.adapters.notify.urls import url_secrets
from claudeloop.adapters.redaction import secret_values
from claudeloop.application.project_setup import CONFIG_FILE

PROJECT_FILE = CONFIG_FILE
USER_FILE = "config.toml"
CONFIG_DIR_VARIABLE = "CLAUDELOOP_CONFIG_DIR"
NOTIFY_VARIABLE = "CLAUDELOOP_NOTIFY"


def user_config_dir(environ: Mapping[str, str]) -> Path:
    """CLAUDELOOP_CONFIG_DIR, else the platform's user config directory."""
    override = environ.get(CONFIG_DIR_VARIABLE)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("claudeloop"))


def config_files(cwd: Path, environ: Mapping[str, str]) -> tuple[Path, Path]:
    """(the project file, the user file), whether they exist or not."""
    return cwd / PROJECT_FILE, user_config_dir(environ) / USER_FILE


def secrets_written(cwd: Path, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every secret a run of `cwd` could be given: this environment's, and in both
    configuration files every profile's token (written, or the variable it names), the
    secrets of its extra_env and the password of its base URL, and the notification
    URLs and their secret parts (of the files and of CLAUDELOOP_NOTIFY)."""
    env = os.environ if environ is None else environ
    found = list(secret_values(env))
    urls = re.split(r"[,\s]+", env.get(NOTIFY_VARIABLE, "").strip())
    for path in config_files(cwd, env):
        table = _table(path)
        urls += _texts(table.get("notify"))
        profiles = table.get("profiles")
        for profile in profiles.values() if isinstance(profiles, dict) else ():
            if isinstance(profile, dict):
                found += secret_values(_profile_environment(profile, env))
    for url in filter(None, urls):
        found += (url, *url_secrets(url))
    return tuple(dict.fromkeys(found))


def _table(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        yield from (item for item in value if isinstance(item, str))


def _profile_environment(profile: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """What of a profile's table Claude Code is given, as variables whose names say
    which are secrets: its token, its base URL (a password in it), its extra_env."""
    given: dict[str, str] = {}
    token = profile.get("auth_token")
    named = profile.get("auth_token_env")
    if isinstance(token, str):
        given["ANTHROPIC_AUTH_TOKEN"] = token
    elif isinstance(named, str) and env.get(named):
        given["ANTHROPIC_AUTH_TOKEN"] = env[named]
    if isinstance(profile.get("base_url"), str):
        given["ANTHROPIC_BASE_URL"] = profile["base_url"]
    extra = profile.get("extra_env")
    if isinstance(extra, dict):
        given |= {name: value for name, value in extra.items() if isinstance(value, str)}
    return given
