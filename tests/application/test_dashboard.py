"""What the dashboard and `runs --all` show, on an index, runs and boards in memory."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from claudeloop.application.dashboard import (
    AccountView,
    accounts_view,
    find_entry,
    fleet_rows,
    machine_rows,
)
from claudeloop.application.errors import UsageError
from claudeloop.application.ports import AccountSighting, IndexedRun, ProjectRuns, Sighting
from claudeloop.application.run_page import PlanItem, run_view, spend_series, timeline
from claudeloop.application.verbs import VERBS, verb_named
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.signals import TurnSignals, WindowUsage
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap
from tests.application.fakes import START, MemoryBoards, MemoryFleet, MemoryIndex, MemoryRuns
from tests.application.test_fleet import fleet_of_two, waiting_record
from tests.json_view import plain

APP = Path("/src/app")


def _masked(cwd: Path) -> Any:
    return lambda view: {key: "***" if value == "s3cret" else value for key, value in view.items()}


def entry(run_id: str, minutes: int = 0, account: str | None = "acct") -> IndexedRun:
    return IndexedRun(
        run_id=run_id,
        directory=APP / ".claudeloop" / "runs" / run_id,
        cwd=APP,
        account=account,
        host="box",
        registered_at=START + timedelta(minutes=minutes),
    )


ALL_VERBS = ["stop", "wind-down", "probe-now", "raise", "note"]


def machine() -> tuple[MemoryIndex, MemoryRuns]:
    """Three runs registered; r3's directory is gone since."""
    index = MemoryIndex(entry("r1"), entry("r2", 1), entry("r3", 2))
    index.gone.add(entry("r3", 2).key)
    return index, MemoryRuns(waiting_record("r1"), waiting_record("r2"))


def _runs_of(runs: MemoryRuns) -> Any:
    def runs_of(cwd: Path) -> ProjectRuns:
        assert cwd == APP
        return runs

    return runs_of


def line(kind: str, minutes: float, **fields: Any) -> bytes:
    ts = (START + timedelta(minutes=minutes)).isoformat()
    return (json.dumps({"ts": ts, "run_id": "r1", "type": kind, **fields}) + "\n").encode()


def test_every_run_of_the_machine_newest_first_a_gone_one_and_an_unreadable_one_say_so() -> None:
    index, runs = machine()
    runs.unreadable.add("r2")
    runs.drivers["r1"] = 7
    rows = [
        plain(row.to_json()) for row in machine_rows(index, _runs_of(runs), now=START, mask=_masked)
    ]
    assert [(row["run_id"], row["phase"]) for row in rows] == [
        ("r3", "gone"),
        ("r2", "unreadable"),
        ("r1", "waiting"),
    ]
    assert "gone" in rows[0]["problem"]
    live = rows[2]
    plan = {"done": 1, "total": 2}
    assert (live["driver_alive"], live["plan"], live["answered"]) == (True, plan, 2)
    assert live["next_probe_in_seconds"] == 300.0
    assert live["waiting_for"].startswith("5-hour window closed")
    assert live["last_verification"] is None


def test_a_row_is_masked() -> None:
    _, runs = machine()
    runs.records["r1"] = waiting_record("r1")
    rows = machine_rows(
        MemoryIndex(entry("r1")),
        _runs_of(runs),
        now=START,
        mask=lambda _cwd: lambda v: {k: "x" if val == "/src/app" else val for k, val in v.items()},
    )
    assert rows[0].place is not None
    assert rows[0].place.cwd == "x"


def test_a_key_not_in_the_index_is_a_usage_error() -> None:
    index, _ = machine()
    assert find_entry(index, entry("r2", 1).key).run_id == "r2"
    with pytest.raises(UsageError, match="no run 'nope'"):
        find_entry(index, "nope")


def test_the_fleets_rows_and_an_engine_that_does_not_answer() -> None:
    rows, problem = fleet_rows(fleet_of_two(), mask=_masked)
    assert problem is None
    assert [(row.queued.run_id, row.phase, row.turns) for row in rows] == [
        ("r1", "waiting", 2),
        ("r2", "queued", None),
    ]

    class Away(MemoryFleet):
        def queue(self) -> Any:
            raise ConnectionError("refused")

    rows, problem = fleet_rows(Away(), mask=_masked)
    assert rows == []
    assert problem is not None
    assert "unreachable (ConnectionError: refused)" in problem
    rows, problem = fleet_rows(MemoryFleet(made=False), mask=_masked)
    assert rows == []
    assert problem == "sqlite:///memory: no fleet there yet (`claudeloop fleet init` makes one)"


def test_a_runs_page_reads_the_tail_draws_its_timeline_and_spend() -> None:
    index, runs = machine()
    runs.events["r1"] = b"".join(
        [
            line("turn.started", 0, turn=1),
            line("turn.finished", 1, turn=1, verdict="continue", cost_usd=0.1, error=None),
            line("wait.started", 2, capacity="window"),
            line("probe.finished", 3, capacity="open", cost_usd=0.02),
            line("verify.started", 4, command="pytest"),
            line("verify.finished", 5, command="pytest", passed=False),
            line("review.started", 6, turn=1),
            b"not json\n",
            line("turn.started", 7, turn=2),
        ]
    )
    view = run_view(
        entry("r1"), index, _runs_of(runs), now=START + timedelta(minutes=8), mask=_masked
    )
    assert [(span.kind, span.ok) for span in view.timeline] == [
        ("turn", True),
        ("wait", True),
        ("probe", True),
        ("check", False),
        ("review", True),
        ("turn", True),
    ]
    assert view.timeline[-1].label == "turn 2 (in flight)"
    assert view.timeline[-1].end == START + timedelta(minutes=8)
    # The record's 0.42 ends the series; what came before the tail is its start, at the
    # first event's instant (the timeline's start: both pictures share one axis).
    assert view.spend == (
        (START, 0.3),
        (START + timedelta(minutes=1), 0.4),
        (START + timedelta(minutes=3), 0.42),
    )
    assert view.plan == (PlanItem("a", True), PlanItem("b", False))
    assert len(view.events) == 8
    assert view.offset == len(runs.events["r1"])
    assert [verb.name for verb in view.verbs] == ALL_VERBS


def test_a_runs_page_has_the_notes_waiting_for_its_next_turn_masked() -> None:
    index, runs = machine()
    before = runs.records["r1"]
    runs.records["r1"] = replace(before, state=replace(before.state, notes=("s3cret", "hi")))
    view = run_view(entry("r1"), index, _runs_of(runs), now=START, mask=_masked)
    assert view.notes == ("***", "hi")
    assert run_view(entry("r2"), index, _runs_of(runs), now=START, mask=_masked).notes == ()


def test_a_gone_runs_page_says_so_and_reads_nothing() -> None:
    index, runs = machine()
    index.gone.add(entry("r1").key)
    view = run_view(entry("r1"), index, _runs_of(runs), now=START, mask=_masked)
    assert view.row.phase == "gone"
    assert view.events == ()


def test_a_failed_turn_and_an_erring_turn_are_not_ok() -> None:
    events = [
        json.loads(line("turn.started", 0, turn=1)),
        json.loads(line("turn.failed", 1, turn=1)),
        json.loads(line("turn.started", 2, turn=2)),
        json.loads(line("turn.finished", 3, turn=2, error="rate_limit")),
        {"type": "turn.started", "ts": "not a date"},
    ]
    assert [span.ok for span in timeline(events, now=START)] == [False, False]


def test_spend_never_starts_below_nothing() -> None:
    events = [json.loads(line("turn.finished", 0, cost_usd=1.0))]
    assert spend_series(events, total=0.5) == [(START, 0.0), (START, 1.0)]


def test_the_verbs_ask_a_live_run_and_say_when_it_takes_effect() -> None:
    _, runs = machine()
    runs.drivers["r1"] = 7
    stop = verb_named("stop")
    assert stop is not None
    assert "at once if waiting" in stop.ask(runs, "r1", {})
    assert runs.sent == [("r1", ControlCommand.STOP)]
    assert verb_named("nope") is None
    assert [verb.name for verb in VERBS] == ALL_VERBS


def test_probe_now_on_a_run_nothing_drives_says_nothing_was_asked() -> None:
    _, runs = machine()
    said = asked_verb("probe-now").ask(runs, "r1", {})
    assert not said.startswith("asked run")
    assert "a probe now does nothing" in said
    assert runs.sent == []


def test_accounts_show_their_windows_and_which_runs_wait_on_them() -> None:
    signals = TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type="five_hour",
        resets_at=START + timedelta(hours=1),
        windows=(WindowUsage("seven_day", 0.5, START + timedelta(days=2), "allowed"),),
        overage_in_use=True,
    )
    sighting = Sighting(
        seq=3, at=START, pid=1, writer="w", source="turn", standing="closed", signals=signals
    )
    boards = MemoryBoards([AccountSighting("acct", sighting), AccountSighting("other", None)])
    index, runs = machine()
    rows = machine_rows(index, _runs_of(runs), now=START, mask=_masked)
    accounts = accounts_view(boards, rows, now=START + timedelta(seconds=30))
    first, second = accounts
    assert first.waiting == ("r2", "r1")
    assert first.next_probe_at == START + timedelta(minutes=5)
    assert first.sighting is sighting
    assert first.age_seconds == 30
    assert second == AccountView("other", None, None, (), (), None)


def test_a_fleets_running_run_has_the_verbs_and_they_ask_its_worker() -> None:
    fleet = fleet_of_two()
    rows, _ = fleet_rows(fleet, mask=_masked)
    assert [verb.name for verb in rows[0].verbs] == ALL_VERBS
    assert rows[1].verbs == ()  # queued: nothing to stop yet
    stop = verb_named("stop")
    assert stop is not None
    assert stop.ask_fleet is not None
    assert stop.ask_fleet(fleet, "r1", {}) == "asked run r1 (on w1) to stop"
    assert fleet.asked == [("r1", ControlCommand.STOP)]
    with pytest.raises(UsageError, match="queued, not running"):
        stop.ask_fleet(fleet, "r2", {})


def asked_verb(name: str) -> Any:
    verb = verb_named(name)
    assert verb is not None
    return verb


def test_the_steering_buttons_ask_what_the_commands_ask() -> None:
    _, runs = machine()
    runs.drivers["r1"] = 7
    said = asked_verb("probe-now").ask(runs, "r1", {})
    assert "probe" in said
    assert "the note waits for the next turn" in asked_verb("note").ask(
        runs, "r1", {"text": "use staging"}
    )
    asked_verb("raise").ask(runs, "r1", {"max_turns": "40", "max_dollars": "", "max_wait": "30d"})
    assert [asked for _, asked in runs.sent] == [
        ProbeNow(),
        AddNote("use staging"),
        RaiseCap(Cap.TURNS, 40.0),
        RaiseCap(Cap.WAIT, 30 * 86400.0),
    ]


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({}, "give at least one of max-turns, max-dollars, max-wait"),
        ({"max_turns": "many"}, "max-turns: 'many' is not a positive number"),
        ({"max_dollars": "nan"}, "max-dollars: 'nan' is not a positive number"),
        ({"max_dollars": "-3"}, "max-dollars: '-3' is not a positive number"),
        ({"max_wait": "soon"}, "max-wait: 'soon' is not a duration"),
    ],
)
def test_a_raise_form_that_gives_no_cap_it_can_read_names_the_field(
    form: dict[str, str], said: str
) -> None:
    _, runs = machine()
    runs.drivers["r1"] = 7
    with pytest.raises(UsageError, match=re.escape(said)):
        asked_verb("raise").ask(runs, "r1", form)
    assert runs.sent == []


def test_a_fleets_run_is_steered_through_its_worker_and_an_empty_note_is_refused() -> None:
    fleet = fleet_of_two()
    assert "on w1" in asked_verb("probe-now").ask_fleet(fleet, "r1", {})
    asked_verb("raise").ask_fleet(fleet, "r1", {"max_turns": "9"})
    asked_verb("note").ask_fleet(fleet, "r1", {"text": "hi"})
    with pytest.raises(UsageError, match="the note is empty"):
        asked_verb("note").ask_fleet(fleet, "r1", {"text": "  "})
    assert fleet.steered == [
        ("r1", ProbeNow()),
        ("r1", RaiseCap(Cap.TURNS, 9.0)),
        ("r1", AddNote("hi")),
    ]


def test_the_machines_report_has_every_present_run_and_its_totals() -> None:
    from claudeloop.application.dashboard import last_hours, machine_report

    index, runs = machine()
    runs.events["r1"] = line("turn.finished", 1, turn=1, cost_usd=0.42)
    made = machine_report(index, _runs_of(runs), now=START, since=None, mask=_masked)
    assert sorted(run.run_id for run in made.runs) == ["r1", "r2"]  # r3: its directory is gone
    assert made.totals.runs == 2
    assert made.totals.answered == 4
    rows = machine_rows(index, _runs_of(runs), now=START, mask=_masked)
    recent = last_hours(rows, now=START + timedelta(hours=13))
    assert recent.runs == 0  # started more than 12 hours before
    assert last_hours(rows, now=START).outcomes == (("gone", 1), ("waiting", 2))
