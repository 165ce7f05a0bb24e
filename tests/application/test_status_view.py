"""`status --json` and the `--json` result: one reading of a run's record, where a run
stands now and how it ended."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from claudeloop.application.summary import result_object
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import CreditsExhausted, WindowExhausted
from claudeloop.domain.loop import Detour, Phase, RunState
from tests.application.fakes import START
from tests.application.test_runner import record
from tests.json_view import plain, status_object

WAITING = RunState(
    phase=Phase.WAITING,
    ledger=BudgetLedger(turns=2, attempts=3, dollars=0.0123456789),
    capacity=WindowExhausted("five_hour", START + timedelta(hours=1)),
    probes=1,
    next_probe_at=START + timedelta(seconds=90),
    summary="Wrote step2.txt.",
)


def test_a_waiting_run_says_what_it_waits_for_and_when_it_probes() -> None:
    view = status_object(replace(record(), state=WAITING), now=START, driver_pid=4242)
    assert view["phase"] == "waiting"
    assert view["outcome"] is None  # not ended: no outcome yet
    assert view["capacity"].startswith("5-hour window closed until")
    assert view["next_probe_in_seconds"] == 90.0
    assert (view["driver_pid"], view["driver_alive"]) == (4242, True)
    assert view["detour"] is None


def test_a_note_left_waits_for_the_next_turn_and_status_says_so() -> None:
    noted = replace(WAITING, notes=("use the staging database",))
    view = status_object(replace(record(), state=noted), now=START, driver_pid=4242)
    assert view["pending_notes"] == ["use the staging database"]
    said = replace(record(), state=replace(noted, notes=()))  # a turn was answered
    assert status_object(said, now=START, driver_pid=None)["pending_notes"] == []


def test_a_detour_says_what_the_runs_own_backend_awaits_and_when_it_is_asked_again() -> None:
    detour = Detour(
        profile="local",
        awaiting=CreditsExhausted(),
        since=START,
        check_at=START - timedelta(seconds=5),  # overdue: shown as now, never negative
    )
    running = replace(WAITING, phase=Phase.RUNNING, next_probe_at=None, detour=detour)
    view = status_object(replace(record(), state=running), now=START, driver_pid=None)
    assert view["next_probe_in_seconds"] is None
    assert view["driver_alive"] is False
    assert view["detour"] == {
        "profile": "local",
        "model": None,
        "to": "profile local",
        "awaiting": "credits exhausted",
        "check_at": detour.check_at.isoformat(),
        "check_in_seconds": 0.0,
    }


def test_status_and_the_result_tell_the_same_spend() -> None:
    rec = replace(record(), state=WAITING, session_id="s-1")
    status = status_object(rec, now=START, driver_pid=None)
    result = plain(result_object(rec))
    shared = ("run_id", "session_id", "turns", "attempts", "probes", "dollars", "summary")
    assert {key: status[key] for key in shared} == {key: result[key] for key in shared}
    assert status["dollars"] == 0.012346
    assert result["outcome"] == "failed"  # a record with no outcome ended somehow
