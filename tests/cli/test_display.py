"""What the screen shows: one line per thing that matters; -v shows every event."""

from __future__ import annotations

import io
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from claudeloop.application.events import (
    CostGuessed,
    Event,
    NotifyFailed,
    PlanUpdated,
    RunFinished,
    SessionWritesLost,
    TurnFinished,
    TurnInterrupted,
    TurnRetrying,
    TurnStarted,
    WaitStarted,
)
from claudeloop.cli.display import ConsoleView, _Status
from claudeloop.domain.loop import Outcome


def shown(view_args: dict[str, bool], *events: Event) -> str:
    stream = io.StringIO()
    view = ConsoleView(
        stream=stream,
        quiet=view_args.get("quiet", False),
        verbose=view_args.get("verbose", False),
    )
    for event in events:
        view.emit(event)
    view.close()
    return stream.getvalue()


SUMMARY = TurnFinished(
    turn=1,
    capacity="available",
    verdict="continue",
    summary="Wrote the parser.\nAnd its tests.",
    cost_usd=0.01,
    session_id="s1",
    denied_tools=(),
    sent=True,
    error=None,
)
QUIET_EVENT = NotifyFailed(service="json://127.0.0.1/****", kind="done", reason="refused")


def test_by_default_a_line_per_event_that_matters() -> None:
    text = shown({}, SUMMARY, QUIET_EVENT)
    assert "turn 1 answered, not done yet ($0.01) — Wrote the parser." in text
    assert "notify.failed" not in text
    assert "And its tests." not in text


def test_a_resent_turn_a_guessed_price_and_a_retry_are_said_without_verbose() -> None:
    text = shown(
        {},
        TurnInterrupted(turn=4, reason="the run stopped while ..."),
        CostGuessed(models=("qwen3-coder",), guessed_usd=0.003, reason="..."),
        TurnRetrying(attempt=2, max_retries=10, error_status=529, error="x", retry_delay_ms=None),
    )
    assert "Claude Code retries a failed request (attempt 2 of 10: 529 x)" in text
    beyond = TurnRetrying(
        attempt=0, max_retries=0, error_status=401, error="authentication_failed", retry_delay_ms=0
    )
    # Sent again beyond a budget of none: no "attempt 0 of 0".
    assert "Claude Code retries a failed request (401 authentication_failed)" in shown({}, beyond)
    # What the CLI calls "unknown" with no status is a request no server answered.
    no_answer = TurnRetrying(
        attempt=1, max_retries=10, error_status=None, error="unknown", retry_delay_ms=600
    )
    assert "Claude Code retries a failed request (attempt 1 of 10: no answer from the server " in (
        shown({}, no_answer)
    )
    assert "turn 4: cut off when the run stopped (a crash, a kill, Ctrl-C); sent again" in text
    assert "cost of qwen3-coder not counted: Claude Code only guesses its price" in text


def test_a_lost_transcript_is_said_with_what_the_run_does_instead_of_resuming() -> None:
    handed = SessionWritesLost(session_id="s-1", action="new_session", reason="...")
    stopped = SessionWritesLost(session_id="s-2", action="stop", reason="...")
    text = shown({}, handed, stopped)
    assert (
        "Claude Code could not save the transcript of session s-1 (a full disk or quota): "
        "it is not resumed; the next turn starts a new session"
    ) in text
    assert "session s-2 (a full disk or quota), again: the run ends" in text


def test_verbose_shows_every_event_and_the_whole_summary() -> None:
    text = shown({"verbose": True}, SUMMARY, QUIET_EVENT)
    assert "notify.failed: service=json://127.0.0.1/****, kind=done, reason=refused" in text
    assert "And its tests." in text


def test_quiet_shows_nothing() -> None:
    assert shown({"quiet": True, "verbose": True}, SUMMARY, QUIET_EVENT) == ""


def test_text_from_elsewhere_is_not_read_as_markup() -> None:
    finished = RunFinished(
        outcome=Outcome.BACKEND_MISCONFIGURED,
        exit_code=78,
        reason="fix `model` in [profiles.local]",
    )
    text = shown({}, finished)
    assert "[profiles.local]" in text


FIVE_HOURS = "5-hour window closed until 2026-11-30 13:22:27 UTC"


def test_the_live_line_keeps_the_countdown_within_80_columns_during_a_five_hour_wait() -> None:
    status = _Status()
    status.update(TurnStarted(turn=12, session_id="s1"))
    status.update(replace(SUMMARY, cost_usd=1.25))
    status.update(PlanUpdated(done=7, total=19, open=()))
    probe_at = datetime.now(UTC) + timedelta(hours=5)
    status.update(WaitStarted(capacity=FIVE_HOURS, probe_at=probe_at))
    console = Console(width=80, file=io.StringIO(), soft_wrap=True)
    lines = console.render_lines(status, console.options, pad=False)
    assert len(lines) == 1
    shown = "".join(segment.text for segment in lines[0])
    assert len(shown) <= 80
    # What is awaited, whole, and the countdown first; the rest as room allows.
    assert shown.startswith(f"{FIVE_HOURS}; next probe in ")
    assert re.search(r"; next probe in [45]h\d\dm\d\ds( · |$)", shown), shown


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_the_wait_and_its_countdown_are_never_cut_for_the_turn_or_the_spend(width: int) -> None:
    status = _Status()
    status.update(TurnStarted(turn=2, session_id="s1"))
    status.update(PlanUpdated(done=1, total=3, open=()))
    probe_at = datetime.now(UTC) + timedelta(seconds=3)
    status.update(WaitStarted(capacity=FIVE_HOURS, probe_at=probe_at))
    shown = status.line(width)
    assert len(shown) <= width
    assert re.search(r"next probe in \ds", shown), shown
    if width >= 80:
        assert FIVE_HOURS in shown  # the reset time is never cut at 80 columns
    if width >= 120:
        assert shown.endswith("· turn 2 · $0.00 · plan 1/3")


def test_on_a_narrow_terminal_the_countdown_stays_and_the_description_goes() -> None:
    status = _Status()
    probe_at = datetime.now(UTC) + timedelta(minutes=3)
    status.update(WaitStarted(capacity=FIVE_HOURS, probe_at=probe_at))
    shown = status.line(40)
    assert len(shown) <= 40
    assert re.search(r"next probe in [23]m\d\ds$", shown), shown


def test_each_verification_and_review_is_a_line_naming_command_ending_and_output() -> None:
    from claudeloop.application.events import (
        NoProgress,
        ReviewFinished,
        ReviewStarted,
        VerifyFinished,
        VerifyStarted,
    )
    from claudeloop.cli.display import event_line

    def finished(**how: object) -> VerifyFinished:
        fields: dict[str, object] = {
            "turn": 3, "command": "make test", "passed": False, "exit_code": None,
            "seconds": 2.0, "output": "/r/c.log", "timed_out": False, "error": None,
        }  # fmt: skip
        return VerifyFinished(**(fields | how))  # type: ignore[arg-type]

    assert event_line(VerifyStarted(turn=3, command="make test", output="/r/c.log")) == (
        "turn 3: verifying: make test"
    )
    assert event_line(finished(passed=True, exit_code=0)) == (
        "turn 3: make test: passed (2s); output in /r/c.log"
    )
    assert "failed: exit 2" in str(event_line(finished(exit_code=2)))
    assert "failed: timed out" in str(event_line(finished(timed_out=True)))
    assert "could not start (no such file)" in str(
        event_line(finished(error="no such file", output=None))
    )
    assert "review started" in str(event_line(ReviewStarted(turn=4)))
    review = ReviewFinished(
        turn=4, capacity="available", verdict="continue", summary="no tests",
        remaining_work=("tests",), cost_usd=0.1,
    )  # fmt: skip
    assert event_line(review) == "turn 4: the reviewer disagrees (continue): no tests"
    assert "agrees" in str(event_line(replace(review, verdict="done", summary="")))
    assert event_line(NoProgress(turn=5, turns_without_progress=2, stall_turns=3)) == (
        "no evidence of progress: 2 of 3 turns in a row"
    )
    assert event_line(NoProgress(turn=5, turns_without_progress=2, stall_turns=0)) is None


def test_a_usage_warning_is_said_on_a_line_under_its_turn() -> None:
    from claudeloop.application.events import TurnFinished
    from claudeloop.cli.display import event_line

    finished = TurnFinished(
        turn=2,
        capacity="available",
        verdict="continue",
        summary="Wrote step2.txt.",
        cost_usd=0.0016,
        session_id=None,
        denied_tools=(),
        usage_warning="the 5-hour window is 92% used",
    )
    assert str(event_line(finished)).splitlines() == [
        "turn 2 answered, not done yet ($0.0016) — Wrote step2.txt.",
        "turn 2: warning: the 5-hour window is 92% used",
    ]
    without = event_line(replace(finished, usage_warning=None))
    assert without == "turn 2 answered, not done yet ($0.0016) — Wrote step2.txt."


def test_every_resume_is_said_in_one_wording_with_where_the_run_had_got_to() -> None:
    from claudeloop.application.events import RunResumed
    from claudeloop.cli.display import event_line

    assert event_line(RunResumed(phase="waiting", run_id="r1", cwd="/src/app")) == (
        "claudeloop: run r1 resumed in /src/app (waiting for capacity)"
    )
    assert event_line(RunResumed(phase="preflight", run_id="r1", cwd="/src/app")) == (
        "claudeloop: run r1 resumed in /src/app (before its first turn)"
    )
    # A line of before has neither the run nor its directory.
    assert event_line(RunResumed(phase="running")) == "claudeloop: run ? resumed (it was in a turn)"


def test_a_probe_is_said_by_its_capacity_kind_and_a_line_of_before_by_its_words() -> None:
    from claudeloop.application.events import ProbeFinished
    from claudeloop.cli.display import event_line

    back = ProbeFinished(capacity="available", cost_usd=0.0, capacity_kind="available")
    assert event_line(back) == "probe: capacity is back"
    # The words alone do not make it open once the kind says otherwise...
    spent = ProbeFinished(capacity="available", cost_usd=0.0, capacity_kind="proxy_budget")
    assert event_line(spent) == "probe: still available"
    # ...and a line written before events carried the kind is read by its words.
    assert event_line(ProbeFinished(capacity="available", cost_usd=0.0)) == (
        "probe: capacity is back"
    )
    closed = ProbeFinished(capacity="credits exhausted", cost_usd=0.0)
    assert event_line(closed) == "probe: still credits exhausted"
