"""What a person is told, decided from the run's events: ends, waits, credits."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from claudeloop.adapters.config.schema import NotifyKinds
from claudeloop.adapters.notify.messages import (
    Notification,
    RunSoFar,
    notification_for,
)
from claudeloop.application.events import (
    Event,
    PlanUpdated,
    ProbeFinished,
    RunFinished,
    RunResumed,
    RunStarted,
    ToolsDenied,
    TurnFailed,
    TurnFinished,
    TurnStarted,
    WaitStarted,
)
from claudeloop.application.settings import NOTIFY_KINDS
from claudeloop.domain.capacity import CapacityKind
from claudeloop.domain.loop import Outcome

RUN = RunSoFar(run_id="20261130-101500-a1b2c3", cwd="/home/ada/app")
WINDOW = "5-hour window closed until 2026-11-30 15:00:00 UTC"


def play(events: list[Event], run: RunSoFar = RUN, **options: Any) -> list[Notification]:
    sent: list[Notification] = []
    for event in events:
        notification, run = notification_for(event, run, **options)
        if notification is not None:
            sent.append(notification)
    return sent


def turn(cost: float) -> list[Event]:
    return [
        TurnStarted(turn=1, session_id=None),
        TurnFinished(
            turn=1,
            capacity="available",
            verdict="incomplete",
            summary="",
            cost_usd=cost,
            session_id="s1",
            denied_tools=(),
            sent=True,
            error=None,
        ),
    ]


def wait(
    capacity: str,
    probe_at: str = "2026-11-30T15:00:02+00:00",
    kind: CapacityKind | None = "five_hour",
) -> Event:
    return WaitStarted(
        capacity=capacity, probe_at=datetime.fromisoformat(probe_at), capacity_kind=kind
    )


def credits_out(probe_at: str = "2026-11-30T15:00:02+00:00") -> Event:
    return wait("credits exhausted", probe_at, kind="credits")


def probed(capacity: str, cost: float = 0.0) -> Event:
    return ProbeFinished(capacity=capacity, cost_usd=cost)


def finished(outcome: str, exit_code: int, reason: str) -> Event:
    return RunFinished(outcome=Outcome(outcome), exit_code=exit_code, reason=reason)


def test_done_says_the_plan_progress_and_the_spend_in_the_title() -> None:
    (done,) = play(
        [
            *turn(0.25),
            PlanUpdated(done=1, total=3, open=()),
            probed("available", 0.02),
            *turn(0.15),
            PlanUpdated(done=3, total=3, open=()),
            finished("done", 0, "the agent reported the task complete"),
        ]
    )
    assert done.kind == "done"
    assert done.level == "success"
    assert done.title == "claudeloop: run 20261130-101500-a1b2c3 done — 3/3 plan items, $0.42"
    assert "the agent reported the task complete" in done.body
    assert "/home/ada/app" in done.body


def test_a_run_without_a_plan_says_the_spend_alone() -> None:
    (done,) = play([*turn(1.5), finished("done", 0, "complete")])
    assert done.title.endswith("done — $1.50")


def test_a_resumed_run_counts_from_what_it_had_spent_and_done() -> None:
    resumed = RunSoFar(run_id="r1", cwd="/w", dollars=2.0, plan=(2, 5))
    (done,) = play([*turn(0.5), finished("done", 0, "complete")], run=resumed)
    assert done.title == "claudeloop: run r1 done — 2/5 plan items, $2.50"


def test_blocked_names_the_blocker_and_how_to_go_on() -> None:
    (blocked,) = play([finished("blocked", 1, "blocked on: the staging database is down")])
    assert blocked.kind == "blocked"
    assert "blocked" in blocked.title
    assert "the staging database is down" in blocked.body
    assert "claudeloop resume 20261130-101500-a1b2c3 --cwd /home/ada/app" in blocked.body


def test_any_other_end_is_a_failure_naming_the_outcome_and_the_reason() -> None:
    for outcome, code, reason in [
        ("budget_exhausted", 3, "max_dollars reached: $5.00 of $5.00"),
        ("auth_failed", 77, "authentication failed: invalid x-api-key"),
        ("failed", 1, "three turns in a row ended in an error"),
        ("stopped", 130, "stopped by the user"),
    ]:
        (ended,) = play([finished(outcome, code, reason)])
        assert ended.kind == "failed"
        assert ended.level == "failure"
        assert f"ended: {outcome} (exit {code})" in ended.title
        assert reason in ended.body
        assert "claudeloop resume" in ended.body


def test_a_missing_reason_still_says_something() -> None:
    (ended,) = play([finished("failed", 1, "")])
    assert "no reason given" in ended.body


def test_a_wait_names_what_is_awaited_its_reset_and_the_next_probe() -> None:
    (waiting,) = play([*turn(0.1), wait(WINDOW)])
    assert waiting.kind == "wait"
    assert "5-hour window" in waiting.title
    assert "until 2026-11-30 15:00:00 UTC" in waiting.body
    assert "Next probe at 2026-11-30 15:00:02 UTC" in waiting.body


def test_a_window_still_closed_at_the_probe_is_not_told_twice() -> None:
    silent = "5-hour window closed, no reset announced"
    sent = play(
        [
            *turn(0.1),
            wait(silent, "2026-11-30T10:00:00+00:00"),
            probed(silent),
            wait(silent, "2026-11-30T10:10:00+00:00"),
            probed(silent),
            wait(silent, "2026-11-30T10:20:00+00:00"),
        ]
    )
    assert len(sent) == 1


def test_a_new_reset_or_a_later_wait_is_told_again() -> None:
    later = "5-hour window closed until 2026-11-30 20:00:00 UTC"
    sent = play([wait(WINDOW), wait(later), *turn(0.1), wait(later)])
    assert [n.kind for n in sent] == ["wait", "wait", "wait"]


def test_credits_are_told_once_per_wait_however_many_probes_find_them_empty() -> None:
    sent = play(
        [
            *turn(0.1),
            *[
                event
                for n in range(5)
                for event in (
                    credits_out(f"2026-11-30T10:0{n}:00+00:00"),
                    probed("credits exhausted"),
                )
            ],
            *turn(0.1),
            credits_out(),
        ]
    )
    assert [n.kind for n in sent] == ["credits", "credits"]
    assert "credits exhausted" in sent[0].title
    assert "top-up" in sent[0].body
    assert "next probe at 2026-11-30 10:00:00 UTC" in sent[0].body


def test_notify_on_keeps_only_the_kinds_asked_for() -> None:
    events = [
        wait(WINDOW),
        *turn(0.1),
        credits_out(),
        credits_out(),
        finished("done", 0, "complete"),
    ]
    assert [n.kind for n in play(events, on={"done", "credits"})] == ["credits", "done"]
    assert play(events, on=set()) == []


def test_events_that_tell_nothing_send_nothing() -> None:
    assert (
        play(
            [
                RunStarted(
                    run_id="x",
                    cwd="/w",
                    plan=None,
                    profile="default",
                    model=None,
                    permission_mode="acceptEdits",
                ),
                RunResumed(phase="waiting"),
                *turn(0.1),
                TurnFailed(turn=2, reason="the CLI crashed"),
                ToolsDenied(tools=("Bash",)),
            ]
        )
        == []
    )


def test_the_config_accepts_exactly_the_kinds_the_decision_knows() -> None:
    literal = NotifyKinds.__origin__.__args__[0]  # type: ignore[attr-defined]
    assert set(literal.__args__) == set(NOTIFY_KINDS)


def test_a_proxys_spent_budget_is_told_as_credits_out_not_as_a_wait() -> None:
    # Issue 41: the words ("the proxy's budget is spent (credits out)") do not start
    # with "credits", and it was told at info level as a wait that goes on by itself,
    # which `notify_on = ["credits"]` missed. Its kind says what it is.
    spent = "the proxy's budget is spent (credits out)"
    events = [
        *turn(0.1),
        wait(spent, "2026-11-30T10:00:00+00:00", kind="proxy_budget"),
        probed(spent),
        wait(spent, "2026-11-30T10:01:00+00:00", kind="proxy_budget"),
    ]
    (told,) = play(events, on={"credits"})
    assert told.kind == "credits"
    assert told.level == "warning"
    assert "the proxy's budget is spent" in told.title
    assert "its admin raising or resetting it" in told.body
    assert "next probe at 2026-11-30 10:00:00 UTC" in told.body
    assert "goes on by itself" not in told.body


def test_a_wait_whose_kind_is_unknown_is_told_as_a_wait() -> None:
    # A line of before carries no kind: whatever its words, it is no credits.
    (told,) = play([wait("credits exhausted", kind=None)])
    assert (told.kind, told.level) == ("wait", "info")
