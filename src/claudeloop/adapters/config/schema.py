"""What a configuration source may say: every key, its type and its range.

Strict pydantic models, unknown keys refused. Files are TOML and typed, so they are read
strictly (`max_turns = "5"` is an error); environment variables are text, so they are
read laxly (`CLAUDELOOP_MAX_TURNS=5`). `ACCEPTED` words what each key takes, for the
one-line errors.

The run settings are not written here: `RunSettings` is made from their descriptions
(`claudeloop.application.settings.SETTINGS`), one pydantic type per kind of value.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Annotated, Any, Literal, assert_never
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    create_model,
    model_validator,
)

from claudeloop.adapters.notify.urls import looks_like_apprise_url
from claudeloop.application.codec import LARGEST_WHOLE
from claudeloop.application.durations import parse_duration
from claudeloop.application.run_link import dashboard_url_problem
from claudeloop.application.settings import SETTINGS, NotifyKind, Setting
from claudeloop.domain.confinement import domain_problem, read_path_problem
from claudeloop.domain.limits import LimitKind, parse_action, render_action
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.verification import CheckCommand

PRESETS: tuple[str, ...] = ("ollama", "lmstudio", "llamacpp", "vllm", "litellm")
_LONGEST = timedelta(days=365)
_PROFILE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_WHOLE = "a whole number above 0"
_TEXT = "non-empty text"
_MODEL = "a model name, such as qwen3 or claude-sonnet-4-5"

# What each key takes: the run settings' words from their descriptions, then the keys
# of a [profiles.NAME] table.
ACCEPTED: dict[str, str] = {
    **{setting.key: setting.accepted for setting in SETTINGS},
    "profiles": "[profiles.NAME] tables, NAME made of letters, digits, - and _",
    "preset": "one of " + ", ".join(PRESETS),
    "base_url": "an http:// or https:// URL, such as http://localhost:11434",
    "auth_token": _TEXT,
    "auth_token_env": "the name of an environment variable, such as OLLAMA_API_KEY",
    "small_fast_model": _MODEL,
    "context_window": f"{_WHOLE} (tokens)",
    "max_output_tokens": f"{_WHOLE} (tokens)",
    "done_marker_fallback": "true or false",
    "cost": '"reported" or "zero"',
    "extra_env": 'a table of environment variables, NAME = "text"',
}


def _duration(value: object) -> object:
    """A bare number is seconds; text is `90s`, `5m`, `1h30m`, `1.5h`, `2d`."""
    if isinstance(value, bool):
        return value  # refused by the strict check that follows
    if isinstance(value, int):
        try:
            return timedelta(seconds=value)
        except OverflowError:
            raise ValueError("out of range") from None
    if isinstance(value, str):
        return parse_duration(value)
    return value


def _zero_to_a_year(value: timedelta) -> timedelta:
    if value < timedelta(0) or value > _LONGEST:
        raise ValueError("out of range")
    return value


def _within_a_year(value: timedelta) -> timedelta:
    if value <= timedelta(0) or value > _LONGEST:
        raise ValueError("out of range")
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("not finite")
    return value


def is_http_url(value: str) -> bool:
    """An http:// or https:// URL with a host, and a port when it names one."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    try:
        _ = parts.port
    except ValueError:
        return False
    return True


def _url(value: str) -> str:
    if not is_http_url(value):
        raise ValueError("not an http(s) URL with a host")
    return value.rstrip("/")


def _listed(value: object) -> object:
    """A list as it is; text (a variable, or one URL in a file) split at commas and blanks."""
    if isinstance(value, str):
        return [part for part in re.split(r"[,\s]+", value) if part]
    return value


def _apprise_url(value: str) -> str:
    if not looks_like_apprise_url(value):
        raise ValueError("not an apprise URL")
    return value


def _dashboard_url(value: str) -> str:
    if (problem := dashboard_url_problem(value)) is not None:
        raise ValueError(problem)
    return value.strip().rstrip("/")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("blank")
    return value


def _profile_name(value: str) -> str:
    if not _PROFILE_NAME.match(value):
        raise ValueError("bad name")
    return value


def _env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError("bad variable name")
    return value


Duration = Annotated[timedelta, BeforeValidator(_duration), AfterValidator(_within_a_year)]
DurationOrZero = Annotated[timedelta, BeforeValidator(_duration), AfterValidator(_zero_to_a_year)]
WholeAboveZero = Annotated[int, Field(ge=1, le=LARGEST_WHOLE)]
Dollars = Annotated[float, Field(gt=0), AfterValidator(_finite)]
Text = Annotated[str, AfterValidator(_not_blank)]
ProfileName = Annotated[str, AfterValidator(_profile_name)]
EnvName = Annotated[str, AfterValidator(_env_name)]
Url = Annotated[str, AfterValidator(_url)]
DashboardUrl = Annotated[str, AfterValidator(_dashboard_url)]
AppriseUrls = Annotated[
    list[Annotated[str, AfterValidator(_apprise_url)]], BeforeValidator(_listed)
]


def _pause_at(value: str) -> str:
    return PauseThresholds.parse(value).render()


def _limit_pairs(value: object) -> object:
    """Text (a variable, a flag) is `five_hour=wind-down,credits=switch-profile local`."""
    if isinstance(value, str):
        pairs = [part.split("=", 1) for part in value.split(",") if part.strip()]
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError("not LIMIT=ACTION")
        return {kind.strip(): action.strip() for kind, action in pairs}
    if isinstance(value, list | tuple):
        return _limit_pairs(",".join(str(item) for item in value))
    return value


def _action(value: str) -> str:
    return render_action(parse_action(value))


def _check(value: str) -> str:
    CheckCommand.parse(value)  # an empty command or unbalanced quoting: a ValueError
    return value


def _lines(value: object) -> object:
    """Text (a variable) is one command per line; a list is as it is."""
    if isinstance(value, str):
        return [line for line in value.splitlines() if line.strip()] or [value]
    return value


def _domain(value: str) -> str:
    if (problem := domain_problem(value)) is not None:
        raise ValueError(problem)
    return value


def _read_path(value: str) -> str:
    if (problem := read_path_problem(value)) is not None:
        raise ValueError(problem)
    return value


Domains = Annotated[list[Annotated[str, AfterValidator(_domain)]], BeforeValidator(_listed)]
ReadPaths = Annotated[list[Annotated[str, AfterValidator(_read_path)]], BeforeValidator(_listed)]
PauseAt = Annotated[str, AfterValidator(_pause_at)]
Checks = Annotated[list[Annotated[str, AfterValidator(_check)]], BeforeValidator(_lines)]
WholeOrZero = Annotated[int, Field(ge=0, le=LARGEST_WHOLE)]
Limits = Annotated[
    dict[LimitKind, Annotated[str, AfterValidator(_action)]], BeforeValidator(_limit_pairs)
]
NotifyKinds = Annotated[list[NotifyKind], BeforeValidator(_listed)]


# A type form (what pydantic validates against) has no static type of its own: `Any` here
# types the schema being made, never a setting's value.
def _one_of(choices: tuple[str, ...]) -> Any:
    """The Literal type of `choices`: pydantic checks the value is one of them."""
    return Literal.__getitem__(choices)


def pydantic_type(setting: Setting[object]) -> Any:
    """The type a source's value of `setting` is checked as."""
    match setting.kind:
        case "profile":
            return ProfileName
        case "text":
            return Text
        case "choice":
            return _one_of(setting.choices)
        case "whole":
            return WholeAboveZero
        case "whole_or_zero":
            return WholeOrZero
        case "dollars":
            return Dollars
        case "duration":
            return Duration
        case "duration_or_zero":
            return DurationOrZero
        case "switch":
            return bool
        case "urls":
            return AppriseUrls
        case "choices":
            return Annotated[list[_one_of(setting.choices)], BeforeValidator(_listed)]  # type: ignore[misc]
        case "pause_at":
            return PauseAt
        case "limits":
            return Limits
        case "checks":
            return Checks
        case "domains":
            return Domains
        case "paths":
            return ReadPaths
        case "address":
            return DashboardUrl
        case _:
            assert_never(setting.kind)


# The settings of `run` and `resume`, as one source gives them (unset: None), in the
# order of SETTINGS.
_SETTING_FIELDS: dict[str, Any] = {
    setting.key: (pydantic_type(setting) | None, None) for setting in SETTINGS
}
RunSettings: type[BaseModel] = create_model(
    "RunSettings",
    __config__=ConfigDict(strict=True, extra="forbid", frozen=True),
    __doc__="The settings of `run` and `resume`, as one source gives them (unset: None).",
    **_SETTING_FIELDS,
)


class ProfileTable(BaseModel):
    """One `[profiles.NAME]` table: how the Claude Code CLI reaches a backend."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    preset: Literal["ollama", "lmstudio", "llamacpp", "vllm", "litellm"] | None = None
    base_url: Url | None = None
    auth_token: Text | None = None
    auth_token_env: EnvName | None = None
    model: Text | None = None
    small_fast_model: Text | None = None
    context_window: WholeAboveZero | None = None
    max_output_tokens: WholeAboveZero | None = None
    done_marker_fallback: bool | None = None
    cost: Literal["reported", "zero"] | None = None
    extra_env: dict[EnvName, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _coherent(self) -> ProfileTable:
        if self.auth_token is not None and self.auth_token_env is not None:
            raise ValueError("set auth_token or auth_token_env, not both")
        if self.preset is not None and self.model is None:
            raise ValueError(f'preset "{self.preset}" needs model = "NAME" (the model to serve)')
        if self.base_url is not None and self.model is None:
            raise ValueError(
                'a profile with base_url needs model = "NAME": without it Claude Code asks '
                "the server for claude-* models"
            )
        return self


# A whole file: the run settings at the top level, and `[profiles.NAME]` tables.
ConfigFile: type[BaseModel] = create_model(
    "ConfigFile",
    __base__=RunSettings,
    __doc__="A whole file: the run settings at the top level, and `[profiles.NAME]` tables.",
    profiles=(dict[ProfileName, ProfileTable], Field(default_factory=dict)),
)


def defined_profiles(parsed: BaseModel) -> dict[str, ProfileTable]:
    """The `[profiles.NAME]` tables of a file `ConfigFile` read."""
    profiles: dict[str, ProfileTable] = dict(parsed)["profiles"]
    return profiles
