"""What the backend can do for us right now, as one closed union."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, assert_never


@dataclass(frozen=True, slots=True)
class Available:
    """Turns can be sent."""


@dataclass(frozen=True, slots=True)
class WindowExhausted:
    """A usage window is closed; a clock fixes it.

    `rate_limit_type` is the window as the service names it (`five_hour`, `seven_day`,
    `seven_day_opus`, `seven_day_sonnet`, `seven_day_overage_included`, `overage`),
    `overage_in_use` for an answer served on paid overage (with `paused_at`: it was
    answered; see domain.overage), `local` for a full local queue, `overloaded` for a
    5xx/529 from the service itself, or `unknown` when the signals were thin.
    `resets_at` is the announced reset, when there is one.
    """

    rate_limit_type: str
    resets_at: datetime | None = None
    # Set when claudeloop paused before the wall: the window is still open, used up to
    # this fraction, at or past the user's threshold (see domain.pause).
    paused_at: float | None = None


@dataclass(frozen=True, slots=True)
class CreditsExhausted:
    """The credit balance is empty.

    Deliberately has no `resets_at`: no clock refills credits, only a person does, so the
    only honest policy is to probe with backoff until a top-up is noticed.
    """

    detail: str = ""


@dataclass(frozen=True, slots=True)
class AuthenticationFailed:
    """The credentials were refused; every further request would be refused too."""

    detail: str = ""


# What is wrong with a misconfigured backend, for the fix a person is told: the model
# (or, on a local server's 404, the model or the whole endpoint) is not there, the model
# failed to load, the prompt outgrew the model's context, nothing answers at the URL.
MisconfigurationKind = Literal["not_found", "load_failed", "prompt_too_long", "unreachable"]


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


def describe(state: CapacityState) -> str:
    """One line a person reads: what the capacity is."""
    match state:
        case Available():
            return "available"
        case WindowExhausted(rate_limit_type="overage_in_use", resets_at=reset):
            # domain.overage.PAID_OVERAGE: answers that spend the account's extra usage.
            until = (
                f"; the window resets {reset.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
                if reset
                else ""
            )
            return f"paid overage in use{until}"
        case WindowExhausted(rate_limit_type=kind, paused_at=float() as used, resets_at=reset):
            until = f" until {reset.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if reset else ""
            return f"{kind} window {used:.0%} used: paused{until}"
        case WindowExhausted(rate_limit_type=kind, resets_at=datetime() as resets_at):
            return f"{kind} window closed until {resets_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
        case WindowExhausted(rate_limit_type=kind):
            return f"{kind} window closed, no reset announced"
        case CreditsExhausted():
            return "credits exhausted"
        case AuthenticationFailed():
            return "authentication failed"
        case BackendMisconfigured(reason=reason):
            return f"backend misconfigured: {reason}"
        case _:
            assert_never(state)
