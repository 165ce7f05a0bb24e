"""What the backend can do for us right now, as one closed union."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, assert_never, get_args

from claudeloop.domain.text import utc_instant

# The usage windows the service reports and rejects by (a `rateLimitType` of the bundled
# CLI, 2.1.332): the plan's 5-hour and 7-day windows and the weekly windows of one model.
WindowKind = Literal[
    "five_hour",
    "seven_day",
    "seven_day_opus",
    "seven_day_sonnet",
    "seven_day_overage_included",
]
WINDOW_KINDS: tuple[WindowKind, ...] = get_args(WindowKind)
# Every window the service names: its windows and its extra-usage (overage) limit.
ServiceWindow = Literal[WindowKind, "overage"]
SERVICE_WINDOWS: tuple[ServiceWindow, ...] = get_args(ServiceWindow)


@dataclass(frozen=True, slots=True)
class UnknownWindow:
    """A window the service named that this claudeloop does not know yet (a new one): its
    kind is `unknown`, which a policy may name; `name` is kept only to say it."""

    name: str


# A window as the service named it, read once where its name comes in (`window_named`).
NamedWindow = ServiceWindow | UnknownWindow


def window_named(name: str) -> NamedWindow:
    """The window the service calls `name`: one of SERVICE_WINDOWS, else an UnknownWindow.
    Where a name comes in (Claude Code's rate-limit events, a file of before) it is read
    by this, once: no name the service sends is passed on as a kind."""
    for window in SERVICE_WINDOWS:
        if name == window:
            return window
    return UnknownWindow(name)


def service_name(window: NamedWindow) -> str:
    """The name the service gave `window`: what a file holds and a page shows."""
    return window.name if isinstance(window, UnknownWindow) else window


# What a closed window or a wait is (`WindowExhausted.rate_limit_type`): a window the
# service names, an answer served on paid overage, a window the signals did not name
# (or one this claudeloop does not know: an UnknownWindow), then claudeloop's own: the
# organization's daily cap, a full local queue, and the outages a probe waits out (the
# service overloaded or failing, an upstream that timed out or cannot be reached, a
# proxy's cooldown, the API unreachable). A new kind is added here, with its words in
# `_WAITS_SAID` (or `_WINDOW_NAMES` for a window): the limits a policy may name
# (domain.limits.LimitKind), the kinds events carry (CapacityKind), the configuration's
# schema and the flags' help follow (the rehearsal plays windows from a list of its own,
# which tests/rehearsal/test_gates.py holds to WINDOW_KINDS).
WaitKind = Literal[
    ServiceWindow,
    "overage_in_use",
    "unknown",
    "daily_cap",
    "local",
    "overloaded",
    "timeout",
    "upstream_unreachable",
    "cooldown",
    "offline",
]
WAIT_KINDS: tuple[WaitKind, ...] = get_args(WaitKind)


@dataclass(frozen=True, slots=True)
class Available:
    """Turns can be sent."""


@dataclass(frozen=True, slots=True)
class WindowExhausted:
    """A usage window is closed; a clock fixes it.

    `rate_limit_type` is its kind (`WaitKind`): the window as the service names it
    (`five_hour`, `seven_day`, `seven_day_opus`, `seven_day_sonnet`,
    `seven_day_overage_included`, `overage`, or an `UnknownWindow` it named),
    `overage_in_use` for an answer served on paid overage (with `paused_at`: it was
    answered; see domain.overage), `local` for a full local queue, `overloaded` for a
    5xx/529 from the service itself, `timeout` for a 408 (an upstream that did not answer
    in time), `upstream_unreachable` for a proxy that cannot connect to its upstream,
    `cooldown` for a proxy's short cooldown, `offline` for a server that cannot be
    reached (the network dropped, or the server is down: domain.classify
    `unreachable_reading`), or `unknown` when the signals were thin. `resets_at` is the
    announced reset, when there is one.
    """

    rate_limit_type: WaitKind | UnknownWindow
    resets_at: datetime | None = None
    # Set when claudeloop paused before the wall: the window is still open, used up to
    # this fraction, at or past the user's threshold (see domain.pause).
    paused_at: float | None = None
    # What is wrong, in a few words, where the kind alone does not say it (`offline`:
    # "api.anthropic.com does not resolve").
    detail: str | None = None


# Whose money ran out: the account's credits, or a budget a proxy in front of the service
# keeps (LiteLLM's key, team or deployment budgets), which its admin raises or resets.
CreditSource = Literal["account", "proxy_budget"]


@dataclass(frozen=True, slots=True)
class CreditsExhausted:
    """The credit balance is empty.

    Deliberately has no `resets_at`: no clock refills credits, only a person does, so the
    only honest policy is to probe with backoff until a top-up is noticed. A proxy's
    budget may have a period, but the proxy announces no reset, so it is backed off the
    same way.
    """

    detail: str = ""
    source: CreditSource = "account"


# Why the account cannot be used, for the fix a person is told: the credentials were
# refused, the account is on hold, it must be verified, its organization does not allow a
# subscription login in Claude Code, the cloud provider's (Bedrock, Vertex) credentials
# could not be loaded. The CLI's `AssistantMessage.error` names all but the first.
AuthFailureKind = Literal[
    "refused", "account_on_hold", "verification_required", "org_not_allowed", "cloud_credentials"
]


@dataclass(frozen=True, slots=True)
class AuthenticationFailed:
    """The credentials were refused; every further request would be refused too."""

    detail: str = ""
    kind: AuthFailureKind = "refused"


def auth_failure_reason(kind: AuthFailureKind) -> str:
    """How a run that `kind` ended says why, before the fix."""
    match kind:
        case "refused":
            return "authentication failed: the credentials were refused"
        case "account_on_hold":
            return "authentication failed: the account is on hold"
        case "verification_required":
            return "authentication failed: the account must be verified"
        case "org_not_allowed":
            return (
                "authentication failed: the organization does not allow its subscription "
                "login in Claude Code"
            )
        case "cloud_credentials":
            return "authentication failed: the cloud provider's credentials could not be loaded"
        case _:
            assert_never(kind)


# What is wrong with a misconfigured backend, for the fix a person is told: the model
# (or, on a local server's 404, the model or the whole endpoint) is not there, the model
# failed to load, the prompt outgrew the model's context, nothing answers at the URL.
MisconfigurationKind = Literal[
    "not_found", "not_loaded", "load_failed", "prompt_too_long", "unreachable"
]


@dataclass(frozen=True, slots=True)
class BackendMisconfigured:
    """The backend, as configured, cannot serve the run (model missing, unreachable...).

    `kind` is None only for a record written before kinds were kept."""

    reason: str
    kind: MisconfigurationKind | None = None


CapacityState = (
    Available | WindowExhausted | CreditsExhausted | AuthenticationFailed | BackendMisconfigured
)
WaitableState = WindowExhausted | CreditsExhausted


def is_waitable(state: CapacityState) -> bool:
    """Whether waiting (and probing) can bring capacity back without a person."""
    match state:
        case Available() | WindowExhausted() | CreditsExhausted():
            return True
        case AuthenticationFailed() | BackendMisconfigured():
            return False
        case _:
            assert_never(state)


# The windows in the words people use for them; a window the service names that is not
# here yet (an UnknownWindow), or a wait said as no window, is said by its own name.
_WINDOW_NAMES: dict[WaitKind, str] = {
    "five_hour": "5-hour window",
    "seven_day": "weekly window",
    "seven_day_opus": "weekly Opus window",
    "seven_day_sonnet": "weekly Sonnet window",
    "seven_day_overage_included": "weekly window of included extra usage",
    "overage": "extra-usage limit",
    "unknown": "usage window",
}
# The limit kind of a refusal while the organization's usage is paused for the day (the
# CLI's `dailyCapPaused`): a wait until the day's reset, never credits (domain.classify).
DAILY_CAP: Final = "daily_cap"

# The waits that are no usage window, each said as what it is.
_WAITS_SAID: dict[WaitKind, str] = {
    DAILY_CAP: "the organization's usage is paused for the day (its daily cap)",
    "upstream_unreachable": "the proxy's upstream is unreachable",
    "timeout": "the upstream timed out (408)",
    "overloaded": "the service is overloaded or failing",
    "local": "the local server is busy (503)",
    "cooldown": "the proxy is cooling down after an upstream error",
    "offline": "no network: the API cannot be reached",
}


def window_name(window: WaitKind | UnknownWindow) -> str:
    """`5-hour window`, `weekly window`, ...: a limit kind as a person calls it."""
    if isinstance(window, UnknownWindow):
        return f"{window.name} window"
    return _WINDOW_NAMES.get(window, f"{window} window")


def wait_kind(state: WindowExhausted) -> WaitKind:
    """The kind of a closed window or a wait: a window of a name this claudeloop does not
    know is `unknown`."""
    window = state.rate_limit_type
    return "unknown" if isinstance(window, UnknownWindow) else window


def usage_warning(
    status: str | None,
    window: NamedWindow | None,
    utilization: float | None,
    resets_at: datetime | None,
) -> str | None:
    """What a warning the service sent with an answer says, in words: `the 5-hour window
    is 92% used; it resets 2026-12-02 14:00 UTC`. None when the answer carried none (a
    warning is capacity still open: classify makes it Available)."""
    if status != "allowed_warning":
        return None
    name = f"the {window_name(window)}" if window else "a usage window"
    used = f"is {round(utilization * 100)}% used" if utilization is not None else "is nearly used"
    reset = f"; it resets {utc_instant(resets_at, seconds=False)}" if resets_at else ""
    return f"{name} {used}{reset}"


def grace_warning(
    window: NamedWindow | None, utilization: float | None, resets_at: datetime | None
) -> str:
    """What an answer served in the service's grace period says, in words: `the 5-hour
    window is past its limit (110% used), answered in a grace period; it resets ...`."""
    name = f"the {window_name(window)}" if window else "a usage window"
    used = f" ({round(utilization * 100)}% used)" if utilization is not None else ""
    reset = f"; it resets {utc_instant(resets_at, seconds=False)}" if resets_at else ""
    return f"{name} is past its limit{used}, answered in a grace period{reset}"


# What `describe` says of open capacity: renderers leave the usual case unsaid.
AVAILABLE = "available"

# Every kind of capacity the classifier produces, closed: what events carry beside
# `describe`'s words, so that what reads them (notifications, the dashboard, the report)
# matches on a kind instead of on prose. The windows the service names (a window it names
# that is not here yet is "unknown"), the waits that are no window, the two kinds of
# money run out, and the two that need a person.
CapacityKind = Literal[
    "available",
    WaitKind,
    "credits",
    "proxy_budget",
    "auth_failed",
    "misconfigured",
]
CAPACITY_KINDS: tuple[CapacityKind, ...] = get_args(CapacityKind)
# The kinds whose money ran out: no clock refills them, a person does.
CREDIT_KINDS: tuple[CapacityKind, ...] = ("credits", "proxy_budget")


def capacity_kind(state: CapacityState) -> CapacityKind:
    """The kind of `state`, one of a closed set (see `CapacityKind`)."""
    match state:
        case Available():
            return "available"
        case WindowExhausted():
            return wait_kind(state)
        case CreditsExhausted(source="proxy_budget"):
            return "proxy_budget"
        case CreditsExhausted():
            return "credits"
        case AuthenticationFailed():
            return "auth_failed"
        case BackendMisconfigured():
            return "misconfigured"
        case _:
            assert_never(state)


def describe(state: CapacityState) -> str:
    """One line a person reads: what the capacity is."""
    match state:
        case Available():
            return AVAILABLE
        case WindowExhausted(rate_limit_type="overage_in_use", resets_at=reset):
            # domain.overage.PAID_OVERAGE: answers that spend the account's extra usage.
            until = f"; the window resets {utc_instant(reset)}" if reset else ""
            return f"paid overage in use{until}"
        case WindowExhausted(rate_limit_type=kind, paused_at=float() as used, resets_at=reset):
            until = f" until {utc_instant(reset)}" if reset else ""
            return f"{window_name(kind)} {used:.0%} used: paused{until}"
        case WindowExhausted(rate_limit_type="offline", detail=str() as detail):
            return f"no network: {detail}"
        case WindowExhausted(resets_at=reset) if wait_kind(state) in _WAITS_SAID:
            until = f" until {utc_instant(reset)}" if reset else ""
            return f"{_WAITS_SAID[wait_kind(state)]}{until or ', no reset announced'}"
        case WindowExhausted(rate_limit_type=kind, resets_at=datetime() as resets_at):
            when = utc_instant(resets_at)
            return f"{window_name(kind)} closed until {when}"
        case WindowExhausted(rate_limit_type=kind):
            return f"{window_name(kind)} closed, no reset announced"
        case CreditsExhausted(source="proxy_budget"):
            return "the proxy's budget is spent (credits out)"
        case CreditsExhausted():
            return "credits exhausted"
        case AuthenticationFailed(kind="refused"):
            return "authentication failed"
        case AuthenticationFailed(kind=kind):
            return f"authentication failed ({kind.replace('_', ' ')})"
        case BackendMisconfigured(reason=reason):
            return f"backend misconfigured: {reason}"
        case _:
            assert_never(state)


# How `describe` begins each capacity that is no window: the words of every version that
# wrote events without their kind (the waits that are no window were once windows too:
# `local window closed`, read below).
_SAID_FIRST: tuple[tuple[str, CapacityKind], ...] = (
    ("paid overage in use", "overage_in_use"),
    *((said, kind) for kind, said in _WAITS_SAID.items()),
    ("the proxy's budget is spent", "proxy_budget"),
    ("credits exhausted", "credits"),
    ("authentication failed", "auth_failed"),
    ("backend misconfigured", "misconfigured"),
)
# A window by the name people use, or by the service's own (`five_hour window`), as
# events said it before `window_name` named it.
_WINDOW_BY_NAME: dict[str, CapacityKind] = {
    **{f"{kind} window": kind for kind in WAIT_KINDS},
    **{window_name(kind): kind for kind in WAIT_KINDS},
}
# A window's words: its name, then `closed ...` or `92% used: paused ...`.
_WINDOW_SAID = re.compile(r"(?P<name>.+?) (?:closed\b|\S+% used: paused)")


def kind_in_words(words: str) -> CapacityKind | None:
    """The kind of the capacity `describe` said in `words`: how an event line written
    before events carried `capacity_kind` (2026-12-06) is read, the words of earlier
    versions too. A window of a name claudeloop does not know is `unknown`, as
    `capacity_kind` says; None for words that say no capacity at all."""
    if words == AVAILABLE:
        return "available"
    for said, kind in _SAID_FIRST:
        if words.startswith(said):
            return kind
    window = _WINDOW_SAID.match(words)
    if window is None:
        return None
    return _WINDOW_BY_NAME.get(window["name"], "unknown")
