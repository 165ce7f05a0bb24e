"""The fleet's commands between parsing and rendering, on a fleet in memory."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from claudeloop.application.errors import UsageError
from claudeloop.application.fleet import (
    cancel,
    control,
    events,
    look_up,
    overview,
    queue_listing,
    status_view,
)
from claudeloop.application.ports import AccountCapacity, StoredRun
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import WindowExhausted
from claudeloop.domain.loop import ControlCommand, Phase, RunState
from claudeloop.domain.plan import WorkPlan
from tests.application.fakes import START, MemoryFleet


def _shown(view: dict[str, Any]) -> dict[str, Any]:
    return {key: ("***" if key == "secret" else value) for key, value in view.items()}


def waiting_record(run_id: str) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        spec=RunSpec(cwd=Path("/src/app"), task="t"),
        state=RunState(
            phase=Phase.WAITING,
            ledger=BudgetLedger(turns=2, attempts=3, dollars=0.42),
            capacity=WindowExhausted("five_hour", START + timedelta(minutes=30)),
            waiting_since=START,
            next_probe_at=START + timedelta(minutes=5),
        ),
        started_at=START,
        plan=WorkPlan.parse("- [x] a\n- [ ] b\n"),
    )


def fleet_of_two() -> MemoryFleet:
    fleet = MemoryFleet()
    fleet.enqueue("r1", "/src/app", ["PLAN.md"], "acct")
    fleet.enqueue("r2", "/src/api", ["PLAN.md"], "acct")
    fleet.runs["r1"] = replace(fleet.runs["r1"], state="running", worker="w1")
    fleet.records["r1"] = StoredRun("w1", "waiting", waiting_record("r1"))
    return fleet


def test_a_fleet_never_made_lists_an_empty_queue_without_making_one() -> None:
    fleet = MemoryFleet(made=False)
    assert queue_listing(fleet) == []
    assert not fleet.made


@pytest.mark.parametrize(
    "asked",
    [
        lambda fleet: overview(fleet, now=START, mask=_shown),
        lambda fleet: cancel(fleet, "r1"),
        lambda fleet: control(fleet, "r1", ControlCommand.STOP),
    ],
)
def test_asking_a_fleet_never_made_is_one_line_that_names_how_to_make_it(asked: Any) -> None:
    fleet = MemoryFleet(made=False)
    with pytest.raises(UsageError, match=r"there is no fleet at sqlite:///memory yet; "):
        asked(fleet)
    assert not fleet.made


def test_the_overview_is_newest_first_with_each_runs_status_and_the_capacity() -> None:
    fleet = fleet_of_two()
    fleet.sightings = [AccountCapacity("acct", "closed", "t", "probe", "w1", None)]
    seen = overview(fleet, now=START, mask=_shown)
    assert [row["run_id"] for row in seen.runs] == ["r2", "r1"]
    r2, r1 = seen.runs
    assert (r1["state"], r1["phase"], r1["worker"], r1["turns"]) == ("running", "waiting", "w1", 2)
    assert r1["plan"] == {"done": 1, "total": 2}
    assert r1["next_probe_in_seconds"] == 300
    assert (r2["state"], r2["phase"], r2["turns"], r2["cwd"]) == ("queued", None, None, "/src/api")
    assert seen.capacity == fleet.sightings


def test_a_record_that_cannot_be_read_is_a_row_that_says_so() -> None:
    fleet = fleet_of_two()
    fleet.records["r1"] = StoredRun("w1", "waiting", None, readable=False)
    r1 = overview(fleet, now=START, mask=_shown).runs[1]
    assert (r1["run_id"], r1["phase"], r1["turns"]) == ("r1", "unreadable", None)


def test_a_runs_status_is_masked_and_none_before_its_first_record() -> None:
    fleet = fleet_of_two()

    def mask(view: dict[str, Any]) -> dict[str, Any]:
        return {**view, "summary": "masked"}

    view = status_view(look_up(fleet, "r1"), now=START, mask=mask)
    assert view is not None
    assert (view["phase"], view["state"], view["worker"]) == ("waiting", "running", "w1")
    assert view["summary"] == "masked"
    assert status_view(look_up(fleet, "r2"), now=START, mask=mask) is None


def test_an_unknown_run_is_named_with_the_fleet() -> None:
    with pytest.raises(UsageError, match=r"--run-id nope: no such run in the fleet of sqlite"):
        look_up(fleet_of_two(), "nope")


def test_cancel_gives_the_run_as_it_was_and_an_unknown_one_is_one_line() -> None:
    fleet = fleet_of_two()
    assert cancel(fleet, "r2").state == "queued"
    assert fleet.runs["r2"].state == "cancelled"
    with pytest.raises(UsageError, match=r"queue cancel nope: no such run in the queue"):
        cancel(fleet, "nope")


def test_only_a_running_run_is_asked_to_stop() -> None:
    fleet = fleet_of_two()
    assert control(fleet, "r1", ControlCommand.WIND_DOWN).worker == "w1"
    assert fleet.asked == [("r1", ControlCommand.WIND_DOWN)]
    with pytest.raises(UsageError, match=r"run r2 is queued, not running; nothing to stop"):
        control(fleet, "r2", ControlCommand.STOP)
    fleet.records["r1"] = replace(fleet.records["r1"], phase="complete")
    with pytest.raises(UsageError, match=r"run r1 has ended \(complete\); nothing to stop"):
        control(fleet, "r1", ControlCommand.STOP)
    fleet.runs["r1"] = replace(fleet.runs["r1"], state="exit 3")
    with pytest.raises(UsageError, match=r"run r1 has ended \(exit 3\)"):
        control(fleet, "r1", ControlCommand.STOP)
    assert len(fleet.asked) == 1


def test_the_events_of_an_ended_run_are_each_given_once() -> None:
    fleet = fleet_of_two()
    fleet.runs["r1"] = replace(fleet.runs["r1"], state="done")
    fleet.lines["r1"] = [b"one\n", b"two\n"]
    slept: list[float] = []
    assert list(events(fleet, look_up(fleet, "r1"), follow=True, sleep=slept.append)) == [
        b"one\n",
        b"two\n",
    ]
    assert slept == []


def test_following_a_run_gives_new_lines_once_until_the_queue_says_it_ended() -> None:
    fleet = fleet_of_two()
    fleet.lines["r1"] = [b"one\n"]
    polls = iter(range(100))

    def sleep(_seconds: float) -> None:
        match next(polls):
            case 0:
                fleet.lines["r1"].append(b"two\n")
            case 1:
                # A record that says it ended may be handed back: only the queue says so.
                fleet.records["r1"] = replace(fleet.records["r1"], phase="complete")
            case _:
                fleet.runs["r1"] = replace(fleet.runs["r1"], state="done")

    found = look_up(fleet, "r1")
    assert list(events(fleet, found, follow=True, sleep=sleep)) == [b"one\n", b"two\n"]


def test_a_queued_run_followed_gives_its_lines_once_a_worker_stored_them() -> None:
    fleet = fleet_of_two()
    found = look_up(fleet, "r2")
    polls = iter(range(100))

    def sleep(_seconds: float) -> None:
        match next(polls):
            case 0:
                fleet.records["r2"] = StoredRun("w1", "running", waiting_record("r2"))
                fleet.lines["r2"] = [b"started\n"]
                fleet.runs["r2"] = replace(fleet.runs["r2"], state="running")
            case n if n < 12:
                pass
            case _:
                fleet.runs["r2"] = replace(fleet.runs["r2"], state="cancelled")

    assert list(events(fleet, found, follow=True, sleep=sleep)) == [b"started\n"]
    assert next(polls) <= 25  # asked the queue now and then, not only at the end
