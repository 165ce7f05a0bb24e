"""Where each setting comes from, highest first: flags, `CLAUDELOOP_*` environment
variables, `./claudeloop.toml`, the user's `config.toml`, built-in defaults.

`load_configuration` reads and checks every source, then keeps, for each setting, the
value of the highest source that sets it and where that was. A profile's `model` ranks
below the flag and the variable but above the files' own `model`: a backend profile
knows which models its server has. Profiles are whole tables: a project's
`[profiles.NAME]` replaces the user's table of that name rather than merging into it.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from pydantic import BaseModel, ValidationError

from claudeloop.adapters.config.files import (
    CONFIG_DIR_VARIABLE,
    PROJECT_FILE,
    USER_FILE,
    config_files,
)
from claudeloop.adapters.config.schema import (
    ACCEPTED,
    ConfigFile,
    ProfileTable,
    RunSettings,
    defined_profiles,
)
from claudeloop.adapters.notify.urls import masked_url
from claudeloop.application.errors import ConfigError, NotToml, ProfileNotDefined
from claudeloop.application.fleet_seat import SEAT_VARIABLES
from claudeloop.application.settings import (
    BY_KEY,
    DEFAULT_PROFILE,
    ENV_PREFIX,
    MODEL,
    PROFILE,
    SETTING_KEYS,
    SETTINGS,
    Origin,
    OriginKind,
    Sourced,
)
from claudeloop.application.settings import Setting as SettingDescription

T = TypeVar("T")

# The CLAUDELOOP_* variables that are no setting: where claudeloop keeps its files, which
# Claude Code it runs, a fleet's engine and board, the lease a worker gives its run and
# the descriptor its saves reach the worker through, and the PostgreSQL binaries and the
# real model servers (llama-server) of claudeloop's own tests. Any other is refused: a
# typo (CLAUDELOOP_MAX_TURN=5) must not leave a run without the cap it was meant to have.
OTHER_VARIABLES = frozenset(
    {
        CONFIG_DIR_VARIABLE,
        "CLAUDELOOP_STATE_DIR",
        "CLAUDELOOP_CLI_PATH",
        "CLAUDELOOP_ENGINE",
        *SEAT_VARIABLES,
        "CLAUDELOOP_TEST_POSTGRES",
        "CLAUDELOOP_TEST_BACKENDS",
    }
)
_SECRET_KEYS = frozenset({"auth_token"})
_LONGEST_SHOWN = 60


# tomllib's own words: "Invalid value (at line 2, column 5)", or "(at end of document)".
_TOML_WHERE = re.compile(
    r"^(?P<what>.*?) \(at (?:line (?P<line>\d+), column (?P<column>\d+)|end of document)\)$"
)


def _toml_problem(error: tomllib.TOMLDecodeError, data: bytes) -> str:
    """ "line 2, column 5: not valid TOML (invalid value)", the end of the file being
    its last line's last column."""
    found = _TOML_WHERE.match(str(error))
    if found is None:
        return f"not valid TOML ({error})"
    what = found["what"][:1].lower() + found["what"][1:]
    if found["line"] is not None:
        line, column = int(found["line"]), int(found["column"])
    else:
        lines = data.decode("utf-8").split("\n")
        line, column = len(lines), len(lines[-1]) + 1
    return f"line {line}, column {column}: not valid TOML ({what})"


# A setting's value with where it came from (the name it had here before).
Setting = Sourced


@dataclass(frozen=True, slots=True)
class DefinedProfile:
    name: str
    table: ProfileTable
    source: Path

    @property
    def where(self) -> str:
        return f"[profiles.{self.name}] in {self.source}"


@dataclass(frozen=True, slots=True)
class Configuration:
    """The effective settings, each with its origin, and the profiles the files define."""

    settings: Mapping[str, Sourced[object]]
    profiles: Mapping[str, DefinedProfile]
    # The files that exist and were read, highest first.
    files: tuple[Path, ...]

    def of(self, setting: SettingDescription[T]) -> Sourced[T]:
        """The value of `setting` and where it came from, typed by its description: the
        loader checked each source's value against the schema the description's kind
        makes (tests/application/test_settings.py holds kind and type together)."""
        return cast(Sourced[T], self.settings[setting.key])

    def get(self, setting: SettingDescription[T]) -> T:
        return self.of(setting).value

    @property
    def profile_name(self) -> str:
        return self.get(PROFILE)

    @property
    def profile(self) -> DefinedProfile | None:
        """The selected profile's table; None for the default (inherited) profile."""
        return self.profiles.get(self.profile_name)


def load_configuration(
    *,
    cwd: Path,
    flags: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Configuration:
    """Every source read and checked; raises ConfigError with a one-line message."""
    env = os.environ if environ is None else environ
    project_path, user_path = config_files(cwd, env)
    given_flags = {key: value for key, value in (flags or {}).items() if value is not None}
    unknown = set(given_flags) - set(SETTING_KEYS)
    if unknown:
        raise ValueError(f"not settings: {', '.join(sorted(unknown))}")
    _check_flag_text(given_flags)
    env_settings = _from_environment(env)
    layers: list[tuple[dict[str, object], OriginKind, str]] = [
        (given_flags, "flag", ""),
        (env_settings, "env", ""),
    ]
    profiles: dict[str, DefinedProfile] = {}
    files: list[Path] = []
    file_layers: list[tuple[dict[str, object], OriginKind, str]] = []
    # Lowest first, so a project's profile replaces the user's of the same name.
    sources: tuple[tuple[Path, OriginKind], ...] = ((user_path, "user"), (project_path, "project"))
    for path, kind in sources:
        parsed = _read_file(path)
        if parsed is None:
            continue
        files.insert(0, path)
        file_layers.insert(0, (_set_values(parsed), kind, str(path)))
        for name, table in defined_profiles(parsed).items():
            profiles[name] = DefinedProfile(name, table, path)
    layers += file_layers
    settings: dict[str, Sourced[object]] = {}
    for setting in SETTINGS:
        settings[setting.key] = _highest(setting, layers)
    chosen = _check_profile(settings[PROFILE.key], profiles)
    model = settings[MODEL.key]
    if (
        chosen is not None
        and chosen.table.model is not None
        and model.origin.kind
        not in (
            "flag",
            "env",
        )
    ):
        settings[MODEL.key] = Sourced(chosen.table.model, Origin("profile", chosen.where))
    return Configuration(settings=settings, profiles=profiles, files=tuple(files))


def _highest(
    setting: SettingDescription[object], layers: list[tuple[dict[str, object], OriginKind, str]]
) -> Sourced[object]:
    for values, kind, where in layers:
        if setting.key in values:
            label = where
            if kind == "flag":
                label = setting.option
            elif kind == "env":
                label = setting.variable
            return Sourced(values[setting.key], Origin(kind, label))
    return Sourced(setting.default, Origin("default"))


def _set_values(settings: BaseModel) -> dict[str, object]:
    values = {key: getattr(settings, key) for key in SETTING_KEYS}
    return {key: value for key, value in values.items() if value is not None}


def _check_flag_text(flags: Mapping[str, object]) -> None:
    """A flag's text meets the rule the same key meets in a file or a variable (a blank
    --continue-prompt as a blank continue_prompt); the command line parsed the rest."""
    text = {key: value for key, value in flags.items() if isinstance(value, str)}
    try:
        RunSettings.model_validate(text, strict=False)
    except ValidationError as error:
        key = str(error.errors()[0]["loc"][0])
        flag = BY_KEY[key].option
        raise ConfigError(
            f"flag {flag}={_shown(key, text.get(key))}: "
            f"expected {ACCEPTED.get(key, 'a valid value')}"
        ) from None


def _from_environment(environ: Mapping[str, str]) -> dict[str, object]:
    _refuse_unknown_variables(environ)
    raw = {
        setting.key: environ[setting.variable]
        for setting in SETTINGS
        if environ.get(setting.variable, "") != ""
    }
    try:
        # Variables are text: read them laxly ("5" is a number here, unlike in a file).
        parsed = RunSettings.model_validate(raw, strict=False)
    except ValidationError as error:
        first = error.errors()[0]
        key = str(first["loc"][0])
        shown = _shown(key, raw.get(key))
        raise ConfigError(
            f"environment variable {BY_KEY[key].variable}={shown}: "
            f"{_expected(key, raw.get(key), first['type'])}"
        ) from None
    return _set_values(parsed)


def _refuse_unknown_variables(environ: Mapping[str, str]) -> None:
    settings = {setting.variable for setting in SETTINGS}
    unknown = sorted(
        name
        for name, value in environ.items()
        if name.startswith(ENV_PREFIX) and value and name not in settings | OTHER_VARIABLES
    )
    if not unknown:
        return
    import difflib

    name = unknown[0]
    close = difflib.get_close_matches(name, sorted(settings | OTHER_VARIABLES), n=1)
    meant = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(
        f"environment variable {name} is unknown{meant}; a setting is "
        f"{ENV_PREFIX} and its key in capitals ({ENV_PREFIX}MAX_TURNS for --max-turns; "
        "`claudeloop run --help` lists the flags), and the others are "
        f"{', '.join(sorted(OTHER_VARIABLES))}"
    )


def _read_file(path: Path) -> BaseModel | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a TOML file") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise NotToml(f"{path}: {_toml_problem(error, data)}") from None
    if DEFAULT_PROFILE in (document.get("profiles") or {}):
        raise ConfigError(
            f"{path}: [profiles.{DEFAULT_PROFILE}] is reserved for the inherited "
            "environment; give the profile another name"
        )
    try:
        return ConfigFile.model_validate(document)
    except ValidationError as error:
        raise ConfigError(file_error(path, error)) from None


def file_error(path: Path, error: ValidationError) -> str:
    """The first problem of a file, on one line: file, key, value, what is accepted."""
    first = error.errors()[0]
    loc = [part for part in first["loc"] if part != "[key]"]
    dotted = ".".join(str(part) for part in loc)
    if first["type"] == "extra_forbidden":
        inside_profile = len(loc) > 2 and loc[0] == "profiles"
        keys = [*ProfileTable.model_fields] if inside_profile else [*SETTING_KEYS, "profiles"]
        return f"{path}: unknown key {dotted}; accepted: {', '.join(keys)}"
    key = next((str(part) for part in reversed(loc) if str(part) in ACCEPTED), dotted)
    if "[key]" in first["loc"]:
        name = first["input"]
        return f"{path}: {dotted}: the name {name!r} is not allowed; expected {ACCEPTED[key]}"
    if first["type"] == "value_error" and len(loc) == 2 and loc[0] == "profiles":
        reason = str(first["msg"]).removeprefix("Value error, ")
        return f"{path}: [profiles.{loc[1]}]: {reason}"
    value = first.get("input")
    return f"{path}: {dotted} = {_shown(key, value)}: {_expected(key, value, first['type'])}"


def _expected(key: str, value: object, problem: str = "") -> str:
    """What a key accepts, said after its value; a number too large to be held (TOML
    reads 1e400 as inf, a variable's text is read the same; a whole number past TOML's
    largest, `problem` less_than_equal) is said to be that."""
    accepted = f"expected {ACCEPTED.get(key, 'a valid value')}"
    try:
        infinite = isinstance(value, float | str) and math.isinf(float(value))
    except ValueError:
        infinite = False
    if problem == "less_than_equal" and isinstance(value, int | str):
        return f"a number too large to hold; {accepted}"
    if infinite:
        read = " (TOML reads 1e400 and the like as inf)" if isinstance(value, float) else ""
        return f"a number too large to hold{read}; {accepted}"
    return accepted


def _shown(key: str, value: object) -> str:
    if key in _SECRET_KEYS:
        return "****"
    if key in ("notify", "dashboard_url") and isinstance(value, str):
        # apprise URLs hold passwords and tokens: shown with those masked.
        value = " ".join(masked_url(url) for url in value.replace(",", " ").split()) or value
    if isinstance(value, str):
        text = '"' + value.replace("\n", "\\n") + '"'
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dict):
        text = "{...}"
    else:
        text = repr(value)
    return text if len(text) <= _LONGEST_SHOWN else text[: _LONGEST_SHOWN - 3] + "..."


def _check_profile(
    chosen: Sourced[object], profiles: Mapping[str, DefinedProfile]
) -> DefinedProfile | None:
    name = str(chosen.value)
    if name == DEFAULT_PROFILE:
        return None
    if name in profiles:
        return profiles[name]
    defined = ", ".join(sorted(profiles)) or "none"
    raise ProfileNotDefined(
        f"profile {name!r} (from {chosen.origin.describe()}) is not defined; "
        f"defined profiles: {defined}; add a [profiles.{name}] table to {PROJECT_FILE} "
        f"or to the user {USER_FILE}",
        name=name,
        defined=tuple(sorted(profiles)),
    )
