"""How a run weighs the board's record: its own earlier sighting never holds it back;
another run's is trusted while its process runs and it is not older than what this run
learned itself, and is checked with one probe at once otherwise."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.sightings import RecordTrust, is_news, trust_in_record
from claudeloop.domain.signals import TurnSignals, WindowUsage

SEEN = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)

instants = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)
)
liveness = st.sampled_from([True, False, None])


def test_a_runs_own_earlier_sighting_is_ignored_even_from_a_driver_that_is_gone() -> None:
    assert trust_in_record(by_this_run=True, writer_alive=False, seen_at=SEEN, known_at=None) is (
        RecordTrust.IGNORE
    )


def test_another_live_runs_sighting_is_trusted() -> None:
    assert trust_in_record(by_this_run=False, writer_alive=True, seen_at=SEEN, known_at=None) is (
        RecordTrust.TRUST
    )


def test_another_runs_sighting_whose_process_is_gone_is_checked() -> None:
    assert trust_in_record(by_this_run=False, writer_alive=False, seen_at=SEEN, known_at=None) is (
        RecordTrust.CHECK
    )


def test_a_sighting_older_than_what_this_run_learned_is_checked() -> None:
    known = SEEN + timedelta(seconds=1)
    assert trust_in_record(by_this_run=False, writer_alive=True, seen_at=SEEN, known_at=known) is (
        RecordTrust.CHECK
    )


def test_a_sighting_since_what_this_run_learned_is_trusted() -> None:
    assert trust_in_record(by_this_run=False, writer_alive=True, seen_at=SEEN, known_at=SEEN) is (
        RecordTrust.TRUST
    )


def test_a_process_on_another_machine_is_weighed_by_its_age_alone() -> None:
    older = trust_in_record(by_this_run=False, writer_alive=None, seen_at=SEEN, known_at=SEEN)
    newer = trust_in_record(
        by_this_run=False, writer_alive=None, seen_at=SEEN, known_at=SEEN + timedelta(hours=1)
    )
    assert (older, newer) == (RecordTrust.TRUST, RecordTrust.CHECK)


@given(alive=liveness, seen=instants, known=st.none() | instants)
def test_only_a_runs_own_sighting_is_ever_ignored(
    alive: bool | None, seen: datetime, known: datetime | None
) -> None:
    own = trust_in_record(by_this_run=True, writer_alive=alive, seen_at=seen, known_at=known)
    other = trust_in_record(by_this_run=False, writer_alive=alive, seen_at=seen, known_at=known)
    assert own is RecordTrust.IGNORE
    assert other is not RecordTrust.IGNORE


@given(
    alive=liveness,
    seen=instants,
    later=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3650)),
    known=instants,
)
def test_a_later_sighting_is_never_trusted_less(
    alive: bool | None, seen: datetime, later: timedelta, known: datetime
) -> None:
    # Trust never decays as news gets newer: what is trusted at one instant is trusted
    # at every later one, with the same writer and the same knowledge.
    earlier = trust_in_record(by_this_run=False, writer_alive=alive, seen_at=seen, known_at=known)
    newer = trust_in_record(
        by_this_run=False, writer_alive=alive, seen_at=seen + later, known_at=known
    )
    assert earlier is not RecordTrust.TRUST or newer is RecordTrust.TRUST


@given(seen=instants, known=st.none() | instants)
def test_not_knowing_whether_the_writer_runs_is_trusting_it_runs(
    seen: datetime, known: datetime | None
) -> None:
    # A fleet's run on another machine: the run-id and age rules alone decide, and they
    # decide as they would for a writer known to run.
    unknown = trust_in_record(by_this_run=False, writer_alive=None, seen_at=seen, known_at=known)
    alive = trust_in_record(by_this_run=False, writer_alive=True, seen_at=seen, known_at=known)
    assert unknown is alive


@given(seen=instants, known=st.none() | instants)
def test_a_gone_writers_sighting_is_never_trusted(seen: datetime, known: datetime | None) -> None:
    assert trust_in_record(by_this_run=False, writer_alive=False, seen_at=seen, known_at=known) is (
        RecordTrust.CHECK
    )


# What is worth writing on the board: what the capacity says, not each answer.

RESET = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
OPEN = TurnSignals(
    rate_limit_status="allowed",
    rate_limit_type="five_hour",
    resets_at=RESET,
    windows=(WindowUsage("five_hour", 0.2, RESET), WindowUsage("seven_day", 0.1, None)),
    result_text="Wrote step1.txt.",
)
CLOSED = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    resets_at=RESET,
    api_error_status=429,
    is_error=True,
    result_text="API Error: 429 you have hit your limit",
)


def test_a_first_record_is_news() -> None:
    assert is_news(None, OPEN)


def test_an_open_answer_that_says_what_the_record_says_is_not_written_again() -> None:
    later = replace(
        OPEN,
        result_text="Wrote step2.txt.",
        windows=(WindowUsage("five_hour", 0.5, RESET), WindowUsage("seven_day", 0.3, None)),
    )
    assert not is_news(OPEN, later)


def test_a_refusal_is_always_told_even_one_the_record_holds() -> None:
    assert is_news(OPEN, CLOSED)
    assert is_news(CLOSED, CLOSED)


def test_a_window_that_opened_again_is_news() -> None:
    assert is_news(CLOSED, OPEN)


def test_a_reset_that_moved_or_a_window_announced_anew_is_news() -> None:
    moved = RESET + timedelta(hours=5)
    assert is_news(OPEN, replace(OPEN, resets_at=moved))
    announced = replace(OPEN, windows=(*OPEN.windows, WindowUsage("seven_day_opus", 0.1, moved)))
    assert is_news(OPEN, announced)


def test_a_warning_or_paid_overage_within_the_open_is_news() -> None:
    assert is_news(OPEN, replace(OPEN, rate_limit_status="allowed_warning"))
    assert is_news(OPEN, replace(OPEN, overage_in_use=True, overage_status="allowed"))


@given(
    text=st.text(max_size=20),
    utilization=st.floats(min_value=0, max_value=1),
    reset=instants,
    status=st.sampled_from(["allowed", "allowed_warning"]),
)
def test_an_open_answer_is_never_news_to_a_record_of_the_same_capacity(
    text: str, utilization: float, reset: datetime, status: str
) -> None:
    board = replace(
        OPEN,
        rate_limit_status=status,
        resets_at=reset,
        windows=(WindowUsage("five_hour", 0.1, reset),),
    )
    seen = replace(board, result_text=text, windows=(WindowUsage("five_hour", utilization, reset),))
    assert not is_news(board, seen)
    assert is_news(board, replace(seen, resets_at=reset + timedelta(minutes=1)))
