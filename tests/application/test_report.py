"""The morning report, read from records and events in memory: per run and in total,
what it did, waited on, passed and failed, and what is left; pictures drawn of it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

from claudeloop.application.pictures import Series, Span, spend_svg, timeline_svg
from claudeloop.application.report import night_report, report_object
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.loop import Outcome, Phase
from tests.application.fakes import START, MemoryRuns
from tests.application.test_fleet import waiting_record
from tests.json_view import plain

NOW = START + timedelta(hours=8)
AT = START.isoformat()


def line(minutes: float, kind: str, **fields: Any) -> bytes:
    at = (START + timedelta(minutes=minutes)).isoformat()
    return (json.dumps({"ts": at, "run_id": "r", "type": kind, **fields}) + "\n").encode()


def turn(minutes: float, number: int, verdict: str, cost: float) -> bytes:
    started = line(minutes, "turn.started", turn=number, session_id="s")
    finished = line(
        minutes + 1,
        "turn.finished",
        turn=number,
        capacity="available",
        verdict=verdict,
        summary="",
        cost_usd=cost,
        session_id="s",
        denied_tools=[],
    )
    return started + finished


def a_night() -> MemoryRuns:
    done = waiting_record("r1")
    done = replace(
        done,
        state=replace(
            done.state,
            phase=Phase.COMPLETE,
            outcome=Outcome.DONE,
            reason="all done",
            ledger=BudgetLedger(turns=3, attempts=4, dollars=0.75),
        ),
        waited_seconds=3600.0,
    )
    live = waiting_record("r2")
    # No plan: what is left is the remaining work the model listed.
    live = replace(live, plan=None, state=replace(live.state, remaining_work=("write the docs",)))
    old = replace(waiting_record("r0"), started_at=START - timedelta(days=3))
    runs = MemoryRuns(done, live, old)
    runs.events["r1"] = (
        turn(0, 1, "continue", 0.25)
        + line(
            2,
            "wait.started",
            capacity="5-hour window closed until 10:00 UTC",
            probe_at=AT,
        )
        + line(62, "probe.finished", capacity="available", cost_usd=0.01)
        + turn(63, 2, "refused", 0.0)
        + line(65, "verify.started", turn=2, command="pytest", output="o")
        + line(
            66,
            "verify.finished",
            turn=2,
            command="pytest",
            passed=False,
            exit_code=1,
            seconds=1.0,
            output="o",
            timed_out=False,
            error=None,
        )
        + line(
            67,
            "verify.finished",
            turn=3,
            command="ruff",
            passed=True,
            exit_code=0,
            seconds=1.0,
            output="o",
            timed_out=False,
            error=None,
        )
        + line(68, "review.started", turn=3)
        + line(
            69,
            "review.finished",
            turn=3,
            capacity="available",
            verdict="done",
            summary="ok",
            remaining_work=[],
            cost_usd=0.2,
        )
        + b'{"ts": "cut off'  # a line a crash left half-written
        + b"\n"
        + line(70, "run.finished", outcome="done", exit_code=0, reason="all done")
    )
    runs.events["r2"] = line(30, "wait.started", capacity="credits exhausted", probe_at=AT) + line(
        40, "note.added", text="hi", applied=True
    )
    runs.events["r0"] = line(
        -3 * 24 * 60,
        "run.started",
        run_id="r0",
        cwd="/x",
        plan=None,
        profile="default",
        model=None,
        permission_mode="x",
    )
    return runs


def test_the_night_per_run_and_in_total() -> None:
    report = night_report(a_night(), now=NOW, since=timedelta(hours=12), mask=dict)
    assert [run.run_id for run in report.runs] == ["r1", "r2"]  # r0 did nothing since
    r1, r2 = report.runs
    facts = r1.facts
    assert (r1.outcome, facts.answered, facts.refused, facts.dollars) == ("done", 3, 1, 0.75)
    # Measured between its events (an hour), said as the record counts it: the parts add
    # up to the total.
    assert r1.waited_on == {"5-hour window closed": 3600}
    assert r1.waited_seconds == 3600
    assert (r1.checks_passed, r1.checks_failed) == (1, 1)
    assert (r1.reviews_passed, r1.reviews_failed) == (1, 0)
    assert r1.spend == Series(
        "r1",
        (
            (START + timedelta(minutes=1), 0.25),
            (START + timedelta(minutes=62), 0.26),
            (START + timedelta(minutes=69), 0.46),
        ),
    )
    kinds = [span.kind for span in r1.spans]
    # The turn the window refused is marked, as the failed check is.
    assert kinds == ["turn", "wait", "probe", "turn_refused", "check_failed", "check", "review"]
    # A wait going on is counted up to now, and what is left is said.
    assert r2.outcome == "waiting"
    assert r2.waited_on == {"credits exhausted": r2.waited_seconds}
    assert r2.waited_seconds > 0
    assert (r2.left, r2.facts.left_from) == (("write the docs",), "model")
    totals = plain(report_object(report))["totals"]
    assert totals["runs"] == 2
    assert totals["outcomes"] == {"done": 1, "waiting": 1}
    assert totals["checks"] == {"passed": 1, "failed": 1}
    assert totals["waited_on"]["5-hour window closed"] == 3600
    assert totals["waited_seconds"] == sum(totals["waited_on"].values())


def test_every_run_without_since_and_an_unreadable_one_is_said() -> None:
    runs = a_night()
    runs.unreadable.add("r2")
    report = night_report(runs, now=NOW, since=None, mask=dict)
    assert [run.run_id for run in report.runs] == ["r0", "r1"]
    assert report.unreadable[0].run_id == "r2"
    assert "unreadable" in report.unreadable[0].problem
    left = next(run for run in report.runs if run.run_id == "r0").left
    assert left == ("b",)  # no remaining work said: the plan's open items


def test_what_is_wrong_with_an_unreadable_run_is_masked_too() -> None:
    # What the codec says of a record it cannot read may quote the record.
    runs = a_night()
    runs.unreadable.add("r2")

    def mask(view: dict[str, Any]) -> dict[str, Any]:
        return {
            key: value.replace("not JSON", "***") if isinstance(value, str) else value
            for key, value in view.items()
        }

    report = night_report(runs, now=NOW, since=None, mask=mask)
    assert report.unreadable[0].problem == "r2/state.json: unreadable (***)"


def test_what_is_shown_is_masked() -> None:
    def mask(view: dict[str, Any]) -> dict[str, Any]:
        masked: dict[str, Any] = json.loads(json.dumps(view).replace("docs", "***"))
        return masked

    report = night_report(a_night(), now=NOW, since=timedelta(hours=12), mask=mask)
    assert report.runs[1].left == ("write the ***",)


def test_the_pictures_are_svg_with_a_tooltip_per_span_and_text_escaped() -> None:
    end = START + timedelta(hours=1)
    spans = [Span("wait", START, end, "5-hour <window>"), Span("mystery", START, START, "?")]
    drawn = timeline_svg([("r<1>", spans)], start=START, end=end)
    assert drawn.startswith("<svg")
    assert drawn.endswith("</svg>")
    assert "5-hour &lt;window&gt;" in drawn
    assert "r&lt;1&gt;" in drawn
    series = [Series("a", ((START, 0.5), (end, 1.5))), Series("empty", ())]
    spend = spend_svg(series, start=START, end=end)
    assert spend.count("<polyline") == 1
    assert "$1.50" in spend
    assert "<script" not in drawn + spend
