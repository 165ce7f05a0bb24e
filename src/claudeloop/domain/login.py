"""When a stored claude.ai login ends: warned of before a run, and never waited past.

Claude Code knows the end of a stored claude.ai login's refresh chain (the date the
server sent at sign-in, else a 30-day estimate; the real end can be up to 3 days
earlier, never later, and renewing the access token does not move it). It reports it
as `loginExpiresAt` in `claude auth status --json` and as `credential_expires_at` on a
result; nothing is known for an API key or a token from the environment.

The rules:
- a run warns at its start (and doctor warns) when the login ends before the run could
  end. A run's length is bounded by one wait: `--max-wait` when set, else seven days,
  the longest usage window a run can wait out. Turns are not counted: claudeloop does not
  bound a turn's length, and a turn takes minutes where a wait takes hours;
- once the login's end has passed, no turn or probe is sent: the run ends 77 with the
  way to log in again, then resume (a turn may still be served while the last access
  token lives, but nothing can renew it, so the run would fail mid-turn later);
- a wait that would end at or after the login's end (the probe's instant, or the reset
  the limit announced) is never begun: the run ends 77 at once, instead of sleeping
  until a window opens to a login that is over.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import assert_never

from claudeloop.domain.capacity import WaitableState, WindowExhausted
from claudeloop.domain.loop import (
    Finish,
    Outcome,
    Phase,
    RunProbe,
    ScheduleProbe,
    SendTurn,
    Transition,
)
from claudeloop.domain.text import utc_instant

# The longest usage window a run can wait out (seven_day): a run with no --max-wait
# could wait that long for it.
LONGEST_WAIT = timedelta(days=7)
# The command that logs in again (the bundled CLI's login, with a run's environment).
LOGIN_COMMAND = "claudeloop login"


@dataclass(frozen=True, slots=True)
class LoginLasts:
    """No end is known, or it comes after the run could end."""


@dataclass(frozen=True, slots=True)
class LoginEndsFirst:
    """The login ends while the run could still be going."""

    ends_at: datetime


@dataclass(frozen=True, slots=True)
class LoginEnded:
    """The login's end has passed: it has probably ended."""

    ends_at: datetime


LoginStanding = LoginLasts | LoginEndsFirst | LoginEnded


def run_could_end_by(now: datetime, max_wait: timedelta | None) -> datetime:
    """The latest a run started `now` could end, as bounded in the module docstring."""
    return now + (max_wait if max_wait is not None else LONGEST_WAIT)


def login_standing(
    ends_at: datetime | None, *, now: datetime, could_end_by: datetime
) -> LoginStanding:
    """How the login stands against a run that could go on until `could_end_by`."""
    if ends_at is None or ends_at > could_end_by:
        return LoginLasts()
    if ends_at <= now:
        return LoginEnded(ends_at)
    return LoginEndsFirst(ends_at)


def login_warning(standing: LoginStanding) -> str | None:
    """The one line a person is warned with, or None."""
    match standing:
        case LoginLasts():
            return None
        case LoginEndsFirst(ends_at=ends_at):
            return (
                f"the Claude login ends by {utc_instant(ends_at)}, before this run could end; "
                f"log in again now with `{LOGIN_COMMAND}`, or use a long-lived token "
                "(CLAUDE_CODE_OAUTH_TOKEN) for unattended runs"
            )
        case LoginEnded(ends_at=ends_at):
            return (
                f"the Claude login has probably ended (its end, {utc_instant(ends_at)}, has "
                f"passed); log in again with `{LOGIN_COMMAND}`"
            )
        case _:
            assert_never(standing)


def within_login(transition: Transition, *, ends_at: datetime | None, now: datetime) -> Transition:
    """`transition`, unless it sends a request after the login's end or begins a wait
    that would end at or after it: then the run ends 77, saying how to log in again."""
    if ends_at is None:
        return transition
    decision = transition.decision
    match decision:
        case SendTurn() | RunProbe() if now >= ends_at:
            why = f"the Claude login ended at {utc_instant(ends_at)}"
        case ScheduleProbe(at=at, awaiting=awaiting) if _wait_outlasts(at, awaiting, ends_at):
            why = (
                f"the Claude login ends at {utc_instant(ends_at)}, before the capacity this "
                "run would wait for is back"
            )
        case _:
            return transition
    reason = f"{why}; log in again with `{LOGIN_COMMAND}`, then `claudeloop resume` the run"
    ended = replace(
        transition.state,
        phase=Phase.FAILED,
        outcome=Outcome.AUTH_FAILED,
        reason=reason,
        next_probe_at=None,
    )
    return Transition(ended, Finish(outcome=Outcome.AUTH_FAILED, reason=reason))


def _wait_outlasts(at: datetime, awaiting: WaitableState, ends_at: datetime) -> bool:
    reset = awaiting.resets_at if isinstance(awaiting, WindowExhausted) else None
    return at >= ends_at or (reset is not None and reset >= ends_at)
