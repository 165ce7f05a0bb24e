"""Steering a live run end to end: the real CLI against the rehearsal API, and
`claudeloop probe-now` / `note` from another process, as a person at 3 a.m. would."""

from __future__ import annotations

import json

import pytest

from claudeloop.application.prompts import NOTE_OPENING
from tests.e2e.conftest import FAST_WAITS, Rehearsal, wait_for, write_plan
from tests.e2e.patience import COMMAND, STATE
from tests.e2e.test_run_directory import kill_hard, phase

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("window_five_hours_at_2")
def test_a_wait_is_steered_a_note_a_turn_cap_then_probe_now_and_the_run_finishes(
    rehearsal: Rehearsal,
) -> None:
    """Turn 2 meets the 5-hour window, its reset five hours away and announced: the run
    would wait for it, the probe an hour on. A note sent in the wait waits for the next
    turn; a turn cap set to the turns answered ends the wait at once, the note unsaid.
    Resumed past the cap, the run waits again, and `probe-now` ends that wait: the turn
    sent again carries the note, and only it."""
    plan = write_plan(rehearsal.project)
    process = rehearsal.start(
        "run", str(plan), *FAST_WAITS, "--window-probe-interval", "1h", "--max-wait", "10h"
    )
    note = "the flaky test in test_io.py is known"
    try:
        wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait", timeout=STATE)
        noted = rehearsal.claudeloop("note", note)
        assert noted.exit_code == 0, noted.stderr
        assert noted.result["will"].startswith("the note waits for the next turn")
        wait_for(
            lambda: any(e["type"] == "note.added" for e in _events(rehearsal)),
            "the run to take the note",
            timeout=STATE,
        )
        waiting = rehearsal.claudeloop("status")
        assert waiting.exit_code == 0, waiting.stderr
        assert waiting.result["phase"] == "waiting"
        assert waiting.result["pending_notes"] == [note]
        answered = waiting.result["turns"]
        assert answered == 1
        raised = rehearsal.claudeloop("raise", "--max-turns", str(answered))
        assert raised.exit_code == 0, raised.stderr
        out, err = process.communicate(timeout=COMMAND)
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
    assert ended.exit_code == 0, ended.stderr
    assert ended.result["outcome"] == "budget_exhausted"
    assert ended.result["pending_notes"] == [note]
    assert ended.result["probes"] == 0

    process = rehearsal.start("resume", "--max-turns", "9")
    try:
        wait_for(
            lambda: [e["type"] for e in _events(rehearsal)].count("wait.started") == 2,
            "the resumed run to wait",
            timeout=STATE,
        )
        rehearsal.server.lift()  # capacity is back, and the person knows it
        asked = rehearsal.claudeloop("probe-now")
        assert asked.exit_code == 0, asked.stderr
        assert asked.result["effective"] is True
        out, err = process.communicate(timeout=COMMAND)
    except BaseException:
        kill_hard(process)
        raise
    assert process.returncode == 0, err
    assert json.loads(out)["outcome"] == "done"
    events = _events(rehearsal)
    resumed = max(i for i, event in enumerate(events) if event["type"] == "run.resumed")
    types = [event["type"] for event in events[resumed:]]
    assert types.index("wait.started") < types.index("probe.asked") < types.index("probe.finished")
    assert types.count("wait.started") == 1
    (said,) = [event for event in events if event["type"] == "probe.asked"]
    assert said["applied"] is True
    probes = [r for r in rehearsal.requests() if r["kind"] == "probe"]
    assert len(probes) == 1  # the one asked for, not one at the reset
    turns = [r for r in rehearsal.requests() if r["kind"] == "turn" and r["answered"]]
    carrying = [r["turn"] for r in turns if NOTE_OPENING in (r["prompt"] or "")]
    # Turn 2, refused before the note, is sent again with it; turn 3 is not told again.
    assert sorted(set(carrying)) == [2]
    assert all(note in r["prompt"] for r in turns if r["turn"] == 2)
    # The report of the night says the wait, and what it was on.
    report = rehearsal.claudeloop("report")
    assert report.exit_code == 0, report.stderr
    (run,) = report.result["runs"]
    assert run["outcome"] == "done"
    assert run["refused"] >= 1
    (waited_on,) = run["waited_on"]
    assert waited_on.startswith("5-hour window closed")


def _events(rehearsal: Rehearsal) -> list[dict[str, object]]:
    (run,) = list((rehearsal.project / ".claudeloop" / "runs").iterdir())
    path = run / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]
