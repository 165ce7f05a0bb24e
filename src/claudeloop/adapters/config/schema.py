"""What a configuration source may say: every key, its type and its range.

Strict pydantic models, unknown keys refused. Files are TOML and typed, so they are read
strictly (`max_turns = "5"` is an error); environment variables are text, so they are
read laxly (`CLAUDELOOP_MAX_TURNS=5`). `ACCEPTED` words what each key takes, for the
one-line errors.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from claudeloop.adapters.config.durations import DURATION_FORMS, parse_duration
from claudeloop.adapters.notify.messages import NOTIFY_KINDS
from claudeloop.adapters.notify.urls import looks_like_apprise_url
from claudeloop.domain.limits import LIMIT_KINDS, parse_action, render_action
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.verification import CheckCommand

PRESETS: tuple[str, ...] = ("ollama", "lmstudio", "llamacpp", "vllm", "litellm")
PERMISSION_MODES: tuple[str, ...] = (
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "auto",
)
# The profile that means "no profile": the environment as the user's `claude` sees it.
DEFAULT_PROFILE = "default"
_LONGEST = timedelta(days=365)
_PROFILE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_WHOLE = "a whole number above 0"
_DURATION = f"a duration above 0 and at most 365 days: {DURATION_FORMS} (a bare number is seconds)"
_TEXT = "non-empty text"
_MODEL = "a model name, such as qwen3 or claude-sonnet-4-5"

ACCEPTED: dict[str, str] = {
    "profile": "the name of a [profiles.NAME] table, or default (the inherited environment)",
    "model": _MODEL,
    "permission_mode": "one of " + ", ".join(PERMISSION_MODES),
    "max_turns": _WHOLE,
    "max_dollars": "a number above 0",
    "max_attempts": _WHOLE,
    "max_wait": _DURATION,
    "window_probe_interval": _DURATION,
    "credits_probe_interval": _DURATION,
    "credits_probe_ceiling": _DURATION,
    "reset_grace": _DURATION,
    "done_marker": _TEXT,
    "continue_prompt": _TEXT,
    "notify": "a list of apprise URLs (scheme://...), such as "
    '["ntfy://ntfy.sh/my-topic", "json://127.0.0.1:8080/hook"]; in CLAUDELOOP_NOTIFY '
    "separated by commas or spaces",
    "notify_on": "a list of: " + ", ".join(NOTIFY_KINDS),
    "update_plan": "true or false",
    "pause_at": "WINDOW=PERCENT pairs, such as 5h=90%,7d=95% "
    "(windows: 5h, 7d, 7d_opus, 7d_sonnet, 7d_overage_included)",
    "limits": "a table of LIMIT = ACTION, LIMIT one of " + ", ".join(LIMIT_KINDS) + ", ACTION "
    '"wait", "wind-down", "go-on" (overage_in_use only), "switch-profile NAME" or '
    '"switch-model MODEL"; '
    "in CLAUDELOOP_LIMITS LIMIT=ACTION pairs "
    "separated by commas, as each --on-limit LIMIT=ACTION",
    "share_capacity": "true or false (share what loops on one account learn about capacity)",
    "verify": 'a list of commands a Done must pass, such as ["make test", "ruff check ."] '
    "(split like a shell, none empty); in CLAUDELOOP_VERIFY one command per line",
    "verify_timeout": _DURATION,
    "review": "true or false (an independent read-only review before a Done is accepted)",
    "stall_turns": "a whole number, 0 for off (turns in a row without progress that stop the run)",
    "same_failure": "a whole number, 0 for off (rounds in a row of one verification failure "
    "that stop the run)",
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
WholeAboveZero = Annotated[int, Field(ge=1)]
Dollars = Annotated[float, Field(gt=0), AfterValidator(_finite)]
Text = Annotated[str, AfterValidator(_not_blank)]
ProfileName = Annotated[str, AfterValidator(_profile_name)]
EnvName = Annotated[str, AfterValidator(_env_name)]
Url = Annotated[str, AfterValidator(_url)]
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


PauseAt = Annotated[str, AfterValidator(_pause_at)]
Checks = Annotated[list[Annotated[str, AfterValidator(_check)]], BeforeValidator(_lines)]
WholeOrZero = Annotated[int, Field(ge=0)]
# LIMIT_KINDS (domain.limits), as a type pydantic checks.
LimitKind = Literal[
    "five_hour",
    "seven_day",
    "seven_day_opus",
    "seven_day_sonnet",
    "seven_day_overage_included",
    "overage",
    "overage_in_use",
    "credits",
    "local",
]
Limits = Annotated[
    dict[LimitKind, Annotated[str, AfterValidator(_action)]], BeforeValidator(_limit_pairs)
]
NotifyKinds = Annotated[
    list[Literal["done", "blocked", "failed", "wait", "credits", "overage"]],
    BeforeValidator(_listed),
]


class RunSettings(BaseModel):
    """The settings of `run` and `resume`, as one source gives them (unset: None)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    profile: ProfileName | None = None
    model: Text | None = None
    permission_mode: (
        Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"] | None
    ) = None
    max_turns: WholeAboveZero | None = None
    max_dollars: Dollars | None = None
    max_attempts: WholeAboveZero | None = None
    max_wait: Duration | None = None
    window_probe_interval: Duration | None = None
    credits_probe_interval: Duration | None = None
    credits_probe_ceiling: Duration | None = None
    reset_grace: Duration | None = None
    done_marker: Text | None = None
    continue_prompt: Text | None = None
    # Where notifications go (an empty list: nowhere) and which are sent.
    notify: AppriseUrls | None = None
    notify_on: NotifyKinds | None = None
    update_plan: bool | None = None
    # Pause before the wall, and what to do per limit (see domain.pause, domain.limits).
    pause_at: PauseAt | None = None
    limits: Limits | None = None
    # Loops on one account share what they learn about capacity (adapters.shared_capacity).
    share_capacity: bool | None = None
    # What a Done must pass, and the brake on turns that change nothing (domain.loop).
    verify: Checks | None = None
    verify_timeout: Duration | None = None
    review: bool | None = None
    stall_turns: WholeOrZero | None = None
    same_failure: WholeOrZero | None = None


SETTING_KEYS: tuple[str, ...] = tuple(RunSettings.model_fields)


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


class ConfigFile(RunSettings):
    """A whole file: the run settings at the top level, and `[profiles.NAME]` tables."""

    profiles: dict[ProfileName, ProfileTable] = Field(default_factory=dict)
