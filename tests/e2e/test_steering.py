"""Steering a live run end to end: the real CLI against the rehearsal API, and
`claudeloop probe-now` / `note` from another process, as a person at 3 a.m. would."""

from __future__ import annotations

import json

import pytest

from claudeloop.application.prompts import NOTE_OPENING
from tests.e2e.conftest import FAST_WAITS, Rehearsal, wait_for, write_plan
from tests.e2e.test_run_directory import kill_hard, phase

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("window_five_hours_at_2")
def test_probe_now_ends_a_five_hour_wait_and_the_run_finishes(rehearsal: Rehearsal) -> None:
    plan = write_plan(rehearsal.project)
    # The window's reset is five hours away and announced: the run would wait for it.
    process = rehearsal.start(
        "run", str(plan), *FAST_WAITS, "--window-probe-interval", "1h", "--max-wait", "10h"
    )
    try:
        wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait", timeout=120)
        rehearsal.server.lift()  # capacity is back, and the person knows it
        asked = rehearsal.claudeloop("probe-now")
        assert asked.exit_code == 0, asked.stderr
        assert asked.result["effective"] is True
        out, err = process.communicate(timeout=150)
    except BaseException:
        kill_hard(process)
        raise
    assert process.returncode == 0, err
    assert json.loads(out)["outcome"] == "done"
    finished = rehearsal.claudeloop("status")
    types = [event["type"] for event in _events(rehearsal)]
    assert types.index("wait.started") < types.index("probe.asked") < types.index("probe.finished")
    assert types.count("wait.started") == 1
    (said,) = [event for event in _events(rehearsal) if event["type"] == "probe.asked"]
    assert said["applied"] is True
    probes = [r for r in rehearsal.requests() if r["kind"] == "probe"]
    assert len(probes) == 1  # the one asked for, not one at the reset
    assert finished.exit_code == 0


@pytest.mark.scenario("window_until_lift_at_2")
def test_a_note_sent_in_a_wait_is_in_the_next_turns_request_only(rehearsal: Rehearsal) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS, "--window-probe-interval", "2s")
    try:
        wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait", timeout=120)
        noted = rehearsal.claudeloop("note", "the flaky test in test_io.py is known")
        assert noted.exit_code == 0, noted.stderr
        wait_for(
            lambda: any(e["type"] == "note.added" for e in _events(rehearsal)),
            "the run to take the note",
        )
        rehearsal.server.lift()
        out, err = process.communicate(timeout=150)
    except BaseException:
        kill_hard(process)
        raise
    assert process.returncode == 0, err
    assert json.loads(out)["outcome"] == "done"
    turns = [r for r in rehearsal.requests() if r["kind"] == "turn" and r["answered"]]
    carrying = [r["turn"] for r in turns if NOTE_OPENING in (r["prompt"] or "")]
    # Turn 2, refused before the note, is sent again with it; turn 3 is not told again.
    assert sorted(set(carrying)) == [2]
    assert all(
        "the flaky test in test_io.py is known" in r["prompt"] for r in turns if r["turn"] == 2
    )
    # The report of the night says the wait, and what it was on.
    report = rehearsal.claudeloop("report")
    assert report.exit_code == 0, report.stderr
    (run,) = report.result["runs"]
    assert run["outcome"] == "done"
    assert run["turns_refused"] >= 1
    (waited_on,) = run["waited_on"]
    assert waited_on.startswith("5-hour window closed")


@pytest.mark.scenario("window_five_hours_at_2")
def test_a_turn_cap_set_to_the_turns_answered_ends_a_five_hour_wait_at_once(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    # Turn 2 meets the 5-hour window, its reset five hours away: the probe an hour on.
    process = rehearsal.start(
        "run", str(plan), *FAST_WAITS, "--window-probe-interval", "1h", "--max-wait", "10h"
    )
    note = "the flaky test in test_io.py is known"
    try:
        wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait", timeout=120)
        noted = rehearsal.claudeloop("note", note)
        assert noted.exit_code == 0, noted.stderr
        assert noted.result["will"].startswith("the note waits for the next turn")
        wait_for(
            lambda: any(e["type"] == "note.added" for e in _events(rehearsal)),
            "the run to take the note",
        )
        waiting = rehearsal.claudeloop("status")
        assert waiting.exit_code == 0, waiting.stderr
        assert waiting.result["phase"] == "waiting"
        assert waiting.result["pending_notes"] == [note]
        answered = waiting.result["turns"]
        assert answered == 1
        raised = rehearsal.claudeloop("raise", "--max-turns", str(answered))
        assert raised.exit_code == 0, raised.stderr
        out, err = process.communicate(timeout=150)
    except BaseException:
        kill_hard(process)
        raise
    assert process.returncode == 3, err
    result = json.loads(out)
    assert (result["outcome"], result["reason"]) == (
        "budget_exhausted",
        "budget cap reached (max-turns)",
    )
    # Ended in the wait: no probe went out, the window never reopened, the note unsaid.
    served = [r for r in rehearsal.requests() if r["kind"] in ("turn", "probe")]
    assert [r["kind"] for r in served] == ["turn"] * len(served)
    assert [(r["turn"], r["status"]) for r in served if not r["answered"]] == [(2, 429)]
    assert served[-1]["turn"] == 2
    assert {r["turn"] for r in served} == {1, 2}
    assert all(note not in (r["prompt"] or "") for r in served)
    types = [event["type"] for event in _events(rehearsal)]
    assert types.count("wait.started") == 1
    assert "probe.finished" not in types
    assert (
        types.index("wait.started")
        < types.index("note.added")
        < types.index("cap.raised")
        < types.index("run.finished")
    )
    # The note still waits for the next turn, which a resume would send.
    ended = rehearsal.claudeloop("status")
    assert ended.result["outcome"] == "budget_exhausted"
    assert ended.result["pending_notes"] == [note]
    assert ended.result["probes"] == 0


def _events(rehearsal: Rehearsal) -> list[dict[str, object]]:
    (run,) = list((rehearsal.project / ".claudeloop" / "runs").iterdir())
    path = run / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]
