"""The settings of `run` and `resume`, each described once: its key (in claudeloop.toml),
the kind of value it takes, its type, its default, its flag, its environment variable,
the words of its help and of what it accepts.

Everything else derives from `SETTINGS`: the TOML schema and the variables
(`adapters/config/schema.py`, `adapters/config/loading.py`), the flags of `run` and
`resume` (`cli/main.py`), `claudeloop config show` and the settings table of
docs/reference/cli.md. A setting is read through its description, typed:
`settings.get(MAX_TURNS)` is an `int | None`, and `settings.of(MAX_TURNS)` says where the
value came from as well. Adding a setting is one `Setting` here, listed in `SETTINGS`,
and its use (in `run_spec.py`, or where it is read).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, Literal, TypeVar

from claudeloop.application.durations import DURATION_FORMS
from claudeloop.application.run_link import DASHBOARD_URL_ACCEPTED
from claudeloop.domain.completion import DEFAULT_DONE_MARKER
from claudeloop.domain.confinement import SANDBOX_SWITCHES
from claudeloop.domain.limits import LIMIT_KINDS, LimitKind
from claudeloop.domain.overage import PAID_OVERAGE
from claudeloop.domain.pause import WINDOW_SHORT_NAMES
from claudeloop.domain.stagnation import DEFAULT_SAME_FAILURE, DEFAULT_STALL_TURNS
from claudeloop.domain.verification import DEFAULT_VERIFY_TIMEOUT_SECONDS
from claudeloop.domain.waiting import WaitPolicyConfig
from claudeloop.domain.watchdog import DEFAULT_SILENCE, LOCAL_SILENCE

T = TypeVar("T")
# A setting's type: a `Setting[int | None]` is a `Setting[object]` of `SETTINGS`.
T_co = TypeVar("T_co", covariant=True)

ENV_PREFIX = "CLAUDELOOP_"
# The profile that means "no profile": the environment as the user's `claude` sees it.
DEFAULT_PROFILE = "default"
PERMISSION_MODES: tuple[str, ...] = (
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "auto",
)
NotifyKind = Literal["done", "blocked", "failed", "wait", "credits", "overage"]
NOTIFY_KINDS: tuple[NotifyKind, ...] = ("done", "blocked", "failed", "wait", "credits", "overage")

# Where a value came from, highest first.
OriginKind = Literal["flag", "env", "project", "user", "profile", "default"]


@dataclass(frozen=True, slots=True)
class Origin:
    kind: OriginKind
    # The flag, the variable, the file, or the profile table a value came from.
    where: str = ""

    def describe(self) -> str:
        """Where the value came from, for a message: `flag --max-turns`, a file."""
        match self.kind:
            case "flag":
                return f"flag {self.where}"
            case "env":
                return f"env {self.where}"
            case "default":
                return "default"
            case _:
                return self.where


@dataclass(frozen=True, slots=True)
class Sourced(Generic[T]):
    """A setting's value and where it came from."""

    value: T
    origin: Origin


# The kinds of value a setting takes. Each has one Python type (`PYTHON_TYPES`), one
# pydantic type in the schema and one click type on the command line; `mypy` makes each
# of those matches name every kind.
ValueKind = Literal[
    "profile",  # a [profiles.NAME] name: str
    "text",  # non-empty text: str
    "choice",  # one of `choices`: str
    "whole",  # a whole number above 0: int
    "whole_or_zero",  # a whole number, 0 for off: int
    "dollars",  # a number above 0: float
    "duration",  # above 0, at most 365 days: timedelta
    "duration_or_zero",  # 0 for off, at most 365 days: timedelta
    "switch",  # true or false: bool
    "urls",  # apprise URLs: list[str]
    "choices",  # some of `choices`: list[str]
    "pause_at",  # WINDOW=PERCENT pairs: str
    "limits",  # LIMIT = ACTION: dict[str, str]
    "checks",  # commands a Done must pass: list[str]
    "domains",  # domain names, *.example.org: list[str]
    "paths",  # folders, absolute or under ~: list[str]
    "address",  # an http(s) URL a person reaches: str
]
PYTHON_TYPES: dict[ValueKind, type] = {
    "profile": str,
    "text": str,
    "choice": str,
    "whole": int,
    "whole_or_zero": int,
    "dollars": float,
    "duration": timedelta,
    "duration_or_zero": timedelta,
    "switch": bool,
    "urls": list,
    "choices": list,
    "pause_at": str,
    "limits": dict,
    "checks": list,
    "domains": list,
    "paths": list,
    "address": str,
}
# The kinds whose flag may be given again and again, each adding one item.
REPEATABLE: frozenset[ValueKind] = frozenset({"urls", "limits", "checks", "domains", "paths"})


@dataclass(frozen=True, slots=True)
class Setting(Generic[T_co]):
    """One setting: `T` is the type of its value (None where it may be unset), which is
    the Python type of `kind` (tests/application/test_settings.py holds them together)."""

    key: str
    kind: ValueKind
    default: T_co
    # What it accepts, for a one-line error: `expected {accepted}`.
    accepted: str
    # The help of its flag; "" for a setting with no flag.
    help: str = ""
    # Its flag, when not --KEY-WITH-DASHES; "" for none (see `has_flag`).
    flag: str | None = None
    choices: tuple[str, ...] = ()

    @property
    def has_flag(self) -> bool:
        return self.flag != ""

    @property
    def option(self) -> str:
        """The flag, such as `--max-turns` (`--on-limit` for limits)."""
        return self.flag or "--" + self.key.replace("_", "-")

    @property
    def variable(self) -> str:
        """The environment variable, such as CLAUDELOOP_MAX_TURNS."""
        return ENV_PREFIX + self.key.upper()


def short_duration(value: timedelta) -> str:
    """`5m`, `2s`: a default as the help says it."""
    seconds = int(value.total_seconds())
    return f"{seconds // 60}m" if seconds >= 60 and seconds % 60 == 0 else f"{seconds}s"


_POLICY = WaitPolicyConfig()
# The largest whole number a setting takes is codec.LARGEST_WHOLE, TOML's largest integer.
_WHOLE = "a whole number above 0"
_DURATION = f"a duration above 0 and at most 365 days: {DURATION_FORMS} (a bare number is seconds)"
_TEXT = "non-empty text"
_MODEL = "a model name, such as qwen3 or claude-sonnet-4-5"
_STOPS = "Stop (exit 3)"


# What the help says of the limits whose names do not say it.
_LIMITS_SAID: dict[LimitKind, str] = {
    PAID_OVERAGE: "an answer on paid extra usage; default: wait for the window's reset",
    "unknown": "a window the service did not name, or one this claudeloop does not know",
}


def _limit_words() -> str:
    """five_hour, ..., overage_in_use (an answer on paid extra usage; ...), ... or credits."""
    named = [
        f"{kind} ({_LIMITS_SAID[kind]})" if kind in _LIMITS_SAID else kind for kind in LIMIT_KINDS
    ]
    return ", ".join(named[:-1]) + " or " + named[-1]


PROFILE: Setting[str] = Setting(
    "profile",
    "profile",
    DEFAULT_PROFILE,
    accepted="the name of a [profiles.NAME] table, or default (the inherited environment)",
    help="Backend profile: a [profiles.NAME] table of claudeloop.toml or the user "
    "config (default: the inherited environment).",
)
MODEL: Setting[str | None] = Setting(
    "model", "text", None, accepted=_MODEL, help="Model for every turn."
)
PERMISSION_MODE: Setting[str] = Setting(
    "permission_mode",
    "choice",
    "acceptEdits",
    accepted="one of " + ", ".join(PERMISSION_MODES),
    help="Claude Code permission mode (default acceptEdits: edits in the "
    "working directory; shell commands run without asking, inside the sandbox: "
    "see --sandbox).",
    choices=PERMISSION_MODES,
)
MAX_TURNS: Setting[int | None] = Setting(
    "max_turns", "whole", None, accepted=_WHOLE, help=f"{_STOPS} after N answered turns."
)
MAX_DOLLARS: Setting[float | None] = Setting(
    "max_dollars",
    "dollars",
    None,
    accepted="a number above 0",
    help=f"{_STOPS} once spend reaches X dollars.",
)
MAX_ATTEMPTS: Setting[int | None] = Setting(
    "max_attempts",
    "whole",
    None,
    accepted=_WHOLE,
    help=f"{_STOPS} after N prompts sent, refused ones included.",
)
MAX_WAIT: Setting[timedelta | None] = Setting(
    "max_wait",
    "duration",
    _POLICY.max_wait,
    accepted=_DURATION,
    help="Give up (exit 4) after waiting this long for capacity.",
)
WINDOW_PROBE_INTERVAL: Setting[timedelta] = Setting(
    "window_probe_interval",
    "duration",
    _POLICY.window_probe_interval,
    accepted=_DURATION,
    help="Probe a closed window at least this often "
    f"(default {short_duration(_POLICY.window_probe_interval)}).",
)
CREDITS_PROBE_INTERVAL: Setting[timedelta] = Setting(
    "credits_probe_interval",
    "duration",
    _POLICY.credits_probe_interval,
    accepted=_DURATION,
    help="First probe after credits run out "
    f"(default {short_duration(_POLICY.credits_probe_interval)}).",
)
CREDITS_PROBE_CEILING: Setting[timedelta] = Setting(
    "credits_probe_ceiling",
    "duration",
    _POLICY.credits_probe_ceiling,
    accepted=_DURATION,
    help="Longest gap between credit probes "
    f"(default {short_duration(_POLICY.credits_probe_ceiling)}).",
)
RESET_GRACE: Setting[timedelta] = Setting(
    "reset_grace",
    "duration",
    _POLICY.reset_grace,
    accepted=_DURATION,
    help="Probe this long after an announced reset "
    f"(default {short_duration(_POLICY.reset_grace)}).",
)
READY_AHEAD: Setting[timedelta] = Setting(
    "ready_ahead",
    "duration_or_zero",
    _POLICY.ready_ahead,
    accepted=f"0 (off) or {_DURATION}",
    help="Start Claude Code this long before a probe, so only the request waits for "
    f"its instant (default {short_duration(_POLICY.ready_ahead)}; 0: start it then).",
)
DONE_MARKER: Setting[str] = Setting(
    "done_marker",
    "text",
    DEFAULT_DONE_MARKER,
    accepted=_TEXT,
    help="Marker text for the fallback completion check.",
)
CONTINUE_PROMPT: Setting[str | None] = Setting(
    "continue_prompt",
    "text",
    None,
    accepted=_TEXT,
    help="Text that opens every continue prompt.",
)
# Where notifications go (an empty list: nowhere) and which are sent.
NOTIFY: Setting[list[str] | None] = Setting(
    "notify",
    "urls",
    None,
    accepted="a list of apprise URLs (scheme://...), such as "
    '["ntfy://ntfy.sh/my-topic", "json://127.0.0.1:8080/hook"]; in CLAUDELOOP_NOTIFY '
    "separated by commas or spaces",
    help="Send notifications to this apprise URL (repeatable): run done, blocked "
    "or failed, a wait started, credits out, paid overage in use. "
    "Needs the notify extra (the README's Install section).",
)
NOTIFY_ON: Setting[list[str]] = Setting(
    "notify_on",
    "choices",
    list(NOTIFY_KINDS),
    accepted="a list of: " + ", ".join(NOTIFY_KINDS),
    flag="",
    choices=NOTIFY_KINDS,
)
# Where the person reaches the dashboard: each notification links to the run's page there.
DASHBOARD_URL: Setting[str | None] = Setting(
    "dashboard_url",
    "address",
    None,
    accepted=DASHBOARD_URL_ACCEPTED,
    flag="",
)
UPDATE_PLAN: Setting[bool] = Setting(
    "update_plan",
    "switch",
    False,
    accepted="true or false",
    help="Write the checkmarks claudeloop reconciles into the plan file (default: "
    "never touch it; the model checks items off itself).",
)
# Pause before the wall, and what to do per limit (see domain.pause, domain.limits).
PAUSE_AT: Setting[str | None] = Setting(
    "pause_at",
    "pause_at",
    None,
    accepted="WINDOW=PERCENT pairs, such as 5h=90%,7d=95% "
    f"(windows: {', '.join(WINDOW_SHORT_NAMES.values())})",
    help="Pause before the wall: when a window's utilization reaches its threshold, "
    "finish the turn and wait for that window's reset (e.g. 5h=90%,7d=95%).",
)
LIMITS: Setting[dict[LimitKind, str] | None] = Setting(
    "limits",
    "limits",
    None,
    accepted="a table of LIMIT = ACTION, LIMIT one of " + ", ".join(LIMIT_KINDS) + ", ACTION "
    f'"wait", "wind-down", "go-on" ({PAID_OVERAGE} only), "switch-profile NAME" or '
    '"switch-model MODEL"; '
    "in CLAUDELOOP_LIMITS LIMIT=ACTION pairs "
    "separated by commas, as each --on-limit LIMIT=ACTION",
    help=f"What to do when a limit is met (repeatable): LIMIT is {_limit_words()}; "
    "ACTION is wait, wind-down, "
    "'switch-profile NAME', 'switch-model MODEL' (e.g. seven_day_opus=switch-model "
    f"sonnet: the same session on another model until the window lifts) or go-on "
    f"({PAID_OVERAGE} only).",
    flag="--on-limit",
)
# Loops on one account share what they learn about capacity (adapters.shared_capacity).
SHARE_CAPACITY: Setting[bool] = Setting(
    "share_capacity",
    "switch",
    True,
    accepted="true or false (share what loops on one account learn about capacity)",
    help="Share what is learnt about capacity with the other loops on this account "
    "and machine: none sends a turn into a window another found closed, one probes "
    "for all (default: on).",
)
# What a Done must pass, and the brake on turns that change nothing (domain.loop).
VERIFY: Setting[list[str]] = Setting(
    "verify",
    "checks",
    [],
    accepted='a list of commands a Done must pass, such as ["make test", "ruff check ."] '
    "(split like a shell, none empty); in CLAUDELOOP_VERIFY one command per line",
    help="A command a Done must pass before the run ends (repeatable, run in order "
    "in the working directory, no shell): e.g. --verify 'make test'. A failure "
    "sends its output back to the same session.",
)
VERIFY_TIMEOUT: Setting[timedelta] = Setting(
    "verify_timeout",
    "duration",
    timedelta(seconds=DEFAULT_VERIFY_TIMEOUT_SECONDS),
    accepted=_DURATION,
    help="Kill a verification command after this long; it counts as failed "
    f"(default {short_duration(timedelta(seconds=DEFAULT_VERIFY_TIMEOUT_SECONDS))}).",
)
# How long Claude Code may say nothing in a turn before it is ended (domain.watchdog).
SILENCE_TIMEOUT: Setting[timedelta | None] = Setting(
    "silence_timeout",
    "duration",
    None,
    accepted=_DURATION,
    help="End a turn in which Claude Code says nothing for this long while no tool "
    "runs (a stalled answer, a hung process) and send it again on the same session "
    f"(default {short_duration(timedelta(seconds=DEFAULT_SILENCE))}; "
    f"{short_duration(timedelta(seconds=LOCAL_SILENCE))} on a local backend).",
)
REVIEW: Setting[bool] = Setting(
    "review",
    "switch",
    False,
    accepted="true or false (an independent read-only review before a Done is accepted)",
    help="After the checks pass, an independent review in a fresh read-only "
    "session must agree the task is done (a turn against the caps; default: off).",
)
STALL_TURNS: Setting[int] = Setting(
    "stall_turns",
    "whole_or_zero",
    DEFAULT_STALL_TURNS,
    accepted="a whole number, 0 for off (turns in a row without progress that stop the run)",
    help="Stop (exit 1) after N turns in a row without evidence of progress: no "
    "plan item checked, no file changed, the same remaining work and checks "
    f"(default {DEFAULT_STALL_TURNS}; 0: off).",
)
SAME_FAILURE: Setting[int] = Setting(
    "same_failure",
    "whole_or_zero",
    DEFAULT_SAME_FAILURE,
    accepted="a whole number, 0 for off (rounds in a row of one verification failure "
    "that stop the run)",
    help="Stop (exit 1) when one verification failure repeats N rounds in a row "
    f"(default {DEFAULT_SAME_FAILURE}; 0: off).",
)

# A commit per answered turn, in a worktree of its own or on the current branch.
WORKTREE_FROM_CHOICES: tuple[str, ...] = ("head", "working-tree")
WORKTREE: Setting[bool] = Setting(
    "worktree",
    "switch",
    False,
    accepted="true or false (work in a git worktree of the repository on a branch of the run)",
    help="Work in a git worktree of this repository on the branch claudeloop/RUN_ID, "
    "made from HEAD, and commit each answered turn there; the checkout is never "
    "touched (default: off; see --worktree-from).",
)
WORKTREE_FROM: Setting[str] = Setting(
    "worktree_from",
    "choice",
    "head",
    accepted="head (the last commit; uncommitted changes stay behind) or working-tree "
    "(the uncommitted changes, untracked files included, are copied into the worktree)",
    help="What a --worktree starts from: head (default: the last commit, uncommitted "
    "changes stay in the checkout) or working-tree (copied into the worktree too).",
    choices=WORKTREE_FROM_CHOICES,
)
CHECKPOINT: Setting[bool] = Setting(
    "checkpoint",
    "switch",
    False,
    accepted="true or false (commit each answered turn on the current branch)",
    help="Commit each answered turn's changes on the current branch, trailers naming "
    "the run, the turn, its cost and its checks (default: off; implied by --worktree).",
)

# Where the model's commands and the checks run (domain.confinement).
SANDBOX: Setting[str] = Setting(
    "sandbox",
    "choice",
    "on",
    accepted="on (commands and checks run confined) or off (unconfined)",
    help="on (default): the model's shell commands run in Claude Code's sandbox and "
    "the checks in bubblewrap: writes only in the working tree and temp, the home's "
    "secrets hidden, no network but --sandbox-allow-domain. off: both run unconfined.",
    choices=SANDBOX_SWITCHES,
)
SANDBOX_ALLOW_DOMAINS: Setting[list[str]] = Setting(
    "sandbox_allow_domains",
    "domains",
    [],
    accepted='a list of domain names commands may reach, such as ["pypi.org", '
    '"*.npmjs.org"]; in CLAUDELOOP_SANDBOX_ALLOW_DOMAINS separated by commas or spaces',
    help="A domain the model's commands may reach through the sandbox (repeatable): "
    "e.g. --sandbox-allow-domain pypi.org (default: none).",
    flag="--sandbox-allow-domain",
)
SANDBOX_ALLOW_READ: Setting[list[str]] = Setting(
    "sandbox_allow_read",
    "paths",
    [],
    accepted='a list of folders of your home commands may read, such as ["~/.m2", '
    '"/opt/sdk"] (absolute or under ~); in CLAUDELOOP_SANDBOX_ALLOW_READ separated by '
    "commas or spaces",
    help="A folder of your home the model's commands and the checks may read "
    "(repeatable): a toolchain the built-in list lacks, e.g. --sandbox-allow-read ~/.m2.",
    flag="--sandbox-allow-read",
)

# Every setting, in the order `config show`, the schema's errors and `--help` list them.
SETTINGS: tuple[Setting[object], ...] = (
    PROFILE,
    MODEL,
    PERMISSION_MODE,
    MAX_TURNS,
    MAX_DOLLARS,
    MAX_ATTEMPTS,
    MAX_WAIT,
    WINDOW_PROBE_INTERVAL,
    CREDITS_PROBE_INTERVAL,
    CREDITS_PROBE_CEILING,
    RESET_GRACE,
    READY_AHEAD,
    DONE_MARKER,
    CONTINUE_PROMPT,
    NOTIFY,
    NOTIFY_ON,
    DASHBOARD_URL,
    UPDATE_PLAN,
    PAUSE_AT,
    LIMITS,
    SHARE_CAPACITY,
    VERIFY,
    VERIFY_TIMEOUT,
    SILENCE_TIMEOUT,
    REVIEW,
    STALL_TURNS,
    SAME_FAILURE,
    WORKTREE,
    WORKTREE_FROM,
    CHECKPOINT,
    SANDBOX,
    SANDBOX_ALLOW_DOMAINS,
    SANDBOX_ALLOW_READ,
)
SETTING_KEYS: tuple[str, ...] = tuple(setting.key for setting in SETTINGS)
BY_KEY: dict[str, Setting[object]] = {setting.key: setting for setting in SETTINGS}
