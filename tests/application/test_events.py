"""What events.jsonl holds reads back as the event that was said; a line it cannot read
(an unknown type, a field missing or of the wrong type) is None, for `logs` to show raw."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from claudeloop.application import events
from claudeloop.application.events import (
    EVENT_TYPES,
    BranchRewound,
    CommitRefused,
    CostGuessed,
    Event,
    ModelRestored,
    ModelSwitched,
    NoProgress,
    NotifyFailed,
    OverageStarted,
    PauseIgnored,
    PlanUpdated,
    ProbeFinished,
    ProfileRestored,
    ProfileSwitched,
    ReviewFinished,
    ReviewStarted,
    RunFinished,
    RunResumed,
    RunStarted,
    SessionReplaced,
    SessionWritesLost,
    ToolsDenied,
    TurnCommitted,
    TurnFailed,
    TurnFinished,
    TurnInterrupted,
    TurnRetrying,
    TurnSilent,
    TurnStarted,
    VerifyFinished,
    VerifyStarted,
    WaitStarted,
    event_fields,
    event_from,
)
from claudeloop.domain.loop import Outcome

AT = datetime(2026, 11, 30, 15, 0, 2, tzinfo=UTC)
EVERY_EVENT: list[Event] = [
    RunStarted(
        run_id="r1",
        cwd="/w",
        plan=None,
        profile="default",
        model="opus",
        permission_mode="acceptEdits",
    ),
    RunResumed(phase="waiting"),
    TurnStarted(turn=1, session_id=None),
    TurnFinished(
        turn=1,
        capacity="available",
        verdict="continue",
        summary="Wrote it.",
        cost_usd=0.25,
        session_id="s1",
        denied_tools=("Bash",),
        sent=True,
        error=None,
    ),
    TurnRetrying(attempt=1, max_retries=10, error_status=529, error="x", retry_delay_ms=500.0),
    TurnFailed(turn=2, reason="the CLI crashed"),
    TurnInterrupted(turn=2, reason="sent again"),
    TurnSilent(turn=2, seconds=91.5, awaiting="the model's answer", action="sent_again"),
    SessionWritesLost(session_id="s1", action="new_session", reason="a full disk"),
    SessionReplaced(session_id="s1", reason="claudeloop resume --new-session"),
    ToolsDenied(tools=("Bash", "Write")),
    CostGuessed(models=("qwen3",), guessed_usd=0.003, reason="a guess"),
    PauseIgnored(windows=("seven_day",), reason="not reported"),
    PlanUpdated(done=1, total=3, open=("b", "c")),
    WaitStarted(capacity="credits exhausted", probe_at=AT, capacity_kind="credits"),
    ProbeFinished(capacity="available", cost_usd=0.001),
    ProfileSwitched(profile="local", because="5-hour window closed", check_at=AT),
    ProfileRestored(profile="local"),
    ModelSwitched(model="sonnet", because="weekly Opus window closed", check_at=AT),
    ModelRestored(model="sonnet"),
    OverageStarted(turn=2, resets_at=datetime(2026, 12, 2, 5, 0, tzinfo=UTC), action="wait"),
    VerifyStarted(turn=3, command="make test", output="/r/checks/turn-3-check-1.log"),
    VerifyFinished(
        turn=3,
        command="make test",
        passed=False,
        exit_code=2,
        seconds=1.5,
        output="/r/checks/turn-3-check-1.log",
        timed_out=False,
        error=None,
    ),
    ReviewStarted(turn=4),
    ReviewFinished(
        turn=4,
        capacity="available",
        verdict="continue",
        summary="no tests",
        remaining_work=("write tests",),
        cost_usd=0.1,
    ),
    NoProgress(turn=5, turns_without_progress=1, stall_turns=3),
    TurnCommitted(turn=5, branch="claudeloop/r1", sha="ab" * 20, files_changed=2),
    CommitRefused(turn=5, files=(".env",), reason="holds a secret"),
    BranchRewound(to_turn=2, sha="cd" * 20, undone=(3, 4), reason="wrong approach"),
    NotifyFailed(service="json://****", kind="done", reason="refused"),
    events.SandboxSet(posture="confined", line="sandbox: commands run confined"),
    events.SandboxBlocked(turn=2, kind="read", target="/home/u/.ssh/id_rsa"),
    events.ProbeAsked(applied=True, reason="the wait ends early; probing now"),
    events.CapRaised(
        cap="max-turns", before=10.0, after=20.0, applied=True, reason="10 turns -> 20 turns"
    ),
    events.NoteAdded(text="the flaky test is known; skip it", applied=True),
    RunFinished(outcome=Outcome.DONE, exit_code=0, reason="complete"),
]


def test_the_samples_are_one_of_each_event() -> None:
    assert sorted(event.type for event in EVERY_EVENT) == sorted(EVENT_TYPES)


@pytest.mark.parametrize("event", EVERY_EVENT, ids=lambda event: event.type)
def test_each_event_reads_back_from_its_json_line(event: Event) -> None:
    line = json.loads(json.dumps({**event_fields(event), "ts": AT.isoformat(), "type": event.type}))
    assert event_from(line) == event


def test_the_json_fields_are_what_events_jsonl_always_held() -> None:
    finished = EVERY_EVENT[3]
    assert event_fields(finished)["denied_tools"] == ["Bash"]  # a list, not a tuple
    assert event_fields(WaitStarted(capacity="c", probe_at=AT))["probe_at"] == AT.isoformat()
    assert event_fields(EVERY_EVENT[-1])["outcome"] == "done"


@pytest.mark.parametrize(
    "line",
    [
        {"type": "something.new"},
        {"type": 5},
        {"type": "turn.started", "turn": 3},  # a field missing
        {"type": "turn.started", "turn": "3", "session_id": None},
        {"type": "turn.started", "turn": True, "session_id": None},
        {"type": "wait.started", "capacity": "closed", "probe_at": "soon"},
        {"type": "wait.started", "capacity": "closed", "probe_at": 17},
        {"type": "tools.denied", "tools": 7},
        {"type": "tools.denied", "tools": ["Bash", 7]},
        {"type": "run.finished", "outcome": "won", "exit_code": 0, "reason": ""},
        {"type": "probe.finished", "capacity": "available", "cost_usd": "a lot"},
    ],
)
def test_a_line_of_the_wrong_shape_is_no_event(line: dict[str, Any]) -> None:
    assert event_from(line) is None


def test_a_whole_number_reads_as_a_cost() -> None:
    line = {"type": "probe.finished", "capacity": "available", "cost_usd": 0}
    assert event_from(line) == ProbeFinished(capacity="available", cost_usd=0.0)


def test_a_turn_finished_before_sent_and_error_were_written_reads_as_sent_without_error() -> None:
    line = {
        "type": "turn.finished",
        "turn": 2,
        "capacity": "available",
        "verdict": "continue",
        "summary": "Wrote step2.txt.",
        "cost_usd": 0.0016,
        "session_id": "s-1",
        "denied_tools": [],
    }
    event = event_from(line)
    assert isinstance(event, TurnFinished)
    assert (event.sent, event.error) == (True, None)
