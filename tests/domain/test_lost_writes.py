from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.lost_writes import (
    MAX_LOST_IN_A_ROW,
    HandOff,
    ResumeSession,
    StopLost,
    session_for_next_turn,
)


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
