"""A session whose transcript Claude Code could not save is never resumed as if whole."""

from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.loop import (
    Finish,
    Outcome,
    Phase,
    RunState,
    SendTurn,
    Transition,
    decide_on_failure,
)
from claudeloop.domain.lost_writes import (
    MAX_LOST_IN_A_ROW,
    HandOff,
    ResumeSession,
    StopLost,
    after_lost_writes,
    session_for_next_turn,
)

RUNNING = RunState(phase=Phase.RUNNING, ledger=BudgetLedger(budget=Budget(), turns=1, attempts=1))


def test_a_whole_session_is_resumed() -> None:
    assert session_for_next_turn("s1", writes_lost=False, lost_in_a_row=0) == ResumeSession("s1")


def test_no_session_yet_is_a_new_one() -> None:
    assert session_for_next_turn(None, writes_lost=True, lost_in_a_row=1) == ResumeSession(None)


def test_a_first_loss_hands_off_to_a_new_session() -> None:
    assert session_for_next_turn("s1", writes_lost=True, lost_in_a_row=1) == HandOff("s1")


def test_a_second_loss_in_a_row_stops_with_the_reason() -> None:
    choice = session_for_next_turn("s2", writes_lost=True, lost_in_a_row=MAX_LOST_IN_A_ROW)
    assert isinstance(choice, StopLost)
    assert "full disk" in choice.reason
    assert "2 sessions" in choice.reason


@given(st.text(min_size=1), st.integers(min_value=0, max_value=10))
def test_a_session_that_lost_writes_is_never_resumed(session: str, in_a_row: int) -> None:
    choice = session_for_next_turn(session, writes_lost=True, lost_in_a_row=in_a_row)
    assert not isinstance(choice, ResumeSession)


def test_a_stop_ends_a_run_that_would_go_on_failed_with_its_reason() -> None:
    going_on = Transition(RUNNING, SendTurn())
    stop = StopLost("the disk is full")
    ended = after_lost_writes(going_on, stop)
    assert ended.decision == Finish(outcome=Outcome.FAILED, reason="the disk is full")
    assert ended.state.outcome is Outcome.FAILED
    assert ended.state.outcome.exit_code == 1


def test_a_turn_that_ended_the_run_keeps_its_own_end() -> None:
    done = decide_on_failure(RUNNING, "something else")
    assert after_lost_writes(done, StopLost("the disk is full")) == done


def test_a_handoff_changes_nothing_of_the_loop() -> None:
    going_on = Transition(RUNNING, SendTurn())
    assert after_lost_writes(going_on, HandOff("s1")) == going_on
    assert after_lost_writes(going_on, ResumeSession("s1")) == going_on
