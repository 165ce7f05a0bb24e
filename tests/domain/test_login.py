"""A stored login that ends: warned of before a run, never waited past (domain.login)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.capacity import CreditsExhausted, WindowExhausted
from claudeloop.domain.login import (
    LONGEST_WAIT,
    LoginEnded,
    LoginEndsFirst,
    LoginLasts,
    login_standing,
    login_warning,
    run_could_end_by,
    within_login,
)
from claudeloop.domain.loop import (
    Finish,
    Outcome,
    Phase,
    RunProbe,
    RunState,
    ScheduleProbe,
    SendTurn,
    Transition,
)

NOW = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=1)
RUNNING = RunState(phase=Phase.RUNNING)
WAITING = RunState(phase=Phase.WAITING, waiting_since=NOW, next_probe_at=LATER)


def test_a_run_could_end_one_wait_from_now_its_max_wait_or_seven_days() -> None:
    assert run_could_end_by(NOW, timedelta(minutes=30)) == NOW + timedelta(minutes=30)
    assert run_could_end_by(NOW, None) == NOW + LONGEST_WAIT == NOW + timedelta(days=7)


def test_how_a_login_stands_against_the_end_of_a_run() -> None:
    by = NOW + timedelta(days=1)
    assert login_standing(None, now=NOW, could_end_by=by) == LoginLasts()
    assert login_standing(by + timedelta(seconds=1), now=NOW, could_end_by=by) == LoginLasts()
    assert login_standing(by, now=NOW, could_end_by=by) == LoginEndsFirst(by)
    assert login_standing(NOW, now=NOW, could_end_by=by) == LoginEnded(NOW)


def test_the_warnings_name_the_end_and_the_command_that_logs_in_again() -> None:
    assert login_warning(LoginLasts()) is None
    first = login_warning(LoginEndsFirst(LATER))
    assert first is not None
    assert "ends by 2026-12-02 04:00:00 UTC" in first
    assert "`claudeloop login`" in first
    ended = login_warning(LoginEnded(NOW))
    assert ended is not None
    assert "probably ended" in ended
    assert "`claudeloop login`" in ended


def test_no_known_end_changes_nothing() -> None:
    transition = Transition(RUNNING, SendTurn())
    assert within_login(transition, ends_at=None, now=NOW) is transition


@pytest.mark.parametrize("decision", [SendTurn(), RunProbe()])
def test_no_request_goes_out_once_the_login_has_ended(decision: SendTurn | RunProbe) -> None:
    ended = within_login(Transition(RUNNING, decision), ends_at=NOW, now=NOW)
    assert isinstance(ended.decision, Finish)
    assert ended.decision.outcome is Outcome.AUTH_FAILED
    assert ended.decision.exit_code == 77
    assert ended.state.outcome is Outcome.AUTH_FAILED
    assert ended.state.phase is Phase.FAILED
    assert ended.state.reason == ended.decision.reason
    assert "the Claude login ended at 2026-12-02 03:00:00 UTC" in ended.decision.reason
    assert "`claudeloop login`" in ended.decision.reason


def test_a_request_before_the_login_ends_goes_out() -> None:
    transition = Transition(RUNNING, SendTurn())
    assert within_login(transition, ends_at=LATER, now=NOW) is transition


def test_a_wait_whose_probe_comes_after_the_login_ends_is_never_begun() -> None:
    wait = ScheduleProbe(at=LATER, awaiting=CreditsExhausted())
    ended = within_login(Transition(WAITING, wait), ends_at=LATER, now=NOW)
    assert isinstance(ended.decision, Finish)
    assert ended.decision.outcome is Outcome.AUTH_FAILED
    assert ended.state.next_probe_at is None
    assert "before the capacity this run would wait for is back" in ended.decision.reason


def test_a_window_that_reopens_after_the_login_ends_is_never_waited_for() -> None:
    # The probe comes soon (an unannounced lift is looked for), but the window's reset
    # is past the login's end: waiting can only meet a login that is over.
    window = WindowExhausted("five_hour", resets_at=NOW + timedelta(hours=5))
    wait = ScheduleProbe(at=NOW + timedelta(minutes=5), awaiting=window)
    ended = within_login(Transition(WAITING, wait), ends_at=LATER, now=NOW)
    assert isinstance(ended.decision, Finish)
    assert ended.decision.exit_code == 77


def test_a_wait_that_ends_before_the_login_does_is_waited() -> None:
    window = WindowExhausted("five_hour", resets_at=NOW + timedelta(minutes=5))
    wait = Transition(WAITING, ScheduleProbe(at=NOW + timedelta(minutes=5), awaiting=window))
    assert within_login(wait, ends_at=LATER, now=NOW) is wait
    unannounced = Transition(
        WAITING,
        ScheduleProbe(at=NOW + timedelta(minutes=5), awaiting=WindowExhausted("unknown")),
    )
    assert within_login(unannounced, ends_at=LATER, now=NOW) is unannounced


def test_an_end_already_decided_is_kept() -> None:
    finish = Transition(RUNNING, Finish(outcome=Outcome.DONE, reason="done"))
    assert within_login(finish, ends_at=NOW, now=NOW) is finish


instants = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 1, 1), timezones=st.just(UTC)
)


@given(ends_at=instants, now=instants, at=instants, reset=st.none() | instants)
def test_no_wait_or_request_outlasts_the_login(
    ends_at: datetime, now: datetime, at: datetime, reset: datetime | None
) -> None:
    """Invariant: whatever the login's end, the checked decision never sends a request
    at or after it, and never sleeps to an instant (probe or reset) at or after it; and
    whatever it changes ends the run 77."""
    for decision in (
        SendTurn(),
        RunProbe(),
        ScheduleProbe(at=at, awaiting=WindowExhausted("five_hour", resets_at=reset)),
    ):
        checked = within_login(Transition(RUNNING, decision), ends_at=ends_at, now=now)
        match checked.decision:
            case SendTurn() | RunProbe():
                assert now < ends_at
            case ScheduleProbe(at=probe_at):
                assert probe_at < ends_at
                assert reset is None or reset < ends_at
            case Finish(outcome=outcome):
                assert outcome is Outcome.AUTH_FAILED
            case _:
                pytest.fail(f"unexpected decision {checked.decision}")
