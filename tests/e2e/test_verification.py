"""Done means verified, end to end: a check that fails sends the run back to work, a
run that changes nothing stops, a reviewer on a fresh session has the last word."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Rehearsal, wait_for
from tests.e2e.test_run_directory import kill_hard

pytestmark = pytest.mark.e2e

TASK = "Write step-1.txt, step-2.txt and step-3.txt."


@pytest.mark.scenario("verify_done_too_early")
def test_a_done_claimed_while_its_check_fails_is_sent_back_and_finishes_next_turn(
    rehearsal: Rehearsal,
) -> None:
    finished = rehearsal.run("--prompt", TASK, "--verify", "test -f step-3.txt")
    assert finished.exit_code == 0, finished.stderr
    result = finished.result
    assert result["outcome"] == "done"
    assert result["turns"] == 3
    checks = [e for e in finished.events() if e["type"] == "verify.finished"]
    assert [(e["turn"], e["passed"], e["exit_code"]) for e in checks] == [
        (2, False, 1),
        (3, True, 0),
    ]
    for check in checks:
        assert (finished.run_directory() / "checks").is_dir()
        assert check["output"].startswith(str(finished.run_directory() / "checks"))
    sessions = {e["session_id"] for e in finished.events() if e["type"] == "turn.finished"}
    assert len(sessions) == 1  # the rejected Done went on in the same session
    (shown,) = result["verification"]
    assert shown["command"] == "test -f step-3.txt"
    assert shown["passed"]
    assert "## Verification" in (finished.run_directory() / "summary.md").read_text()


@pytest.mark.scenario("verify_no_progress")
def test_a_model_that_writes_nothing_stops_with_no_progress(rehearsal: Rehearsal) -> None:
    finished = rehearsal.run("--prompt", TASK)
    assert finished.exit_code == 1, finished.stderr
    result = finished.result
    assert result["outcome"] == "failed"
    assert result["reason"] == "no progress in 3 turns"
    # The first turn listed the work (a change from nothing); three more changed nothing.
    assert result["turns"] == 4
    counted = [
        e["turns_without_progress"] for e in finished.events() if e["type"] == "progress.none"
    ]
    assert counted == [1, 2, 3]


@pytest.mark.scenario("verify_review_disagrees_once")
def test_a_reviewer_who_disagrees_once_sends_the_work_back_then_agrees(
    rehearsal: Rehearsal,
) -> None:
    finished = rehearsal.run("--prompt", TASK, "--review", "--verify", "test -f step-1.txt")
    assert finished.exit_code == 0, finished.stderr
    result = finished.result
    assert result["outcome"] == "done"
    assert result["turns"] == 4  # two working turns and two reviews
    reviews = [e for e in finished.events() if e["type"] == "review.finished"]
    assert [e["verdict"] for e in reviews] == ["continue", "done"]
    assert reviews[0]["remaining_work"] == ["Write step-2.txt"]
    working = {e["session_id"] for e in finished.events() if e["type"] == "turn.finished"}
    assert len(working) == 1
    assert (rehearsal.project / "step-2.txt").is_file()
    review_requests = [r for r in rehearsal.requests() if r["kind"] == "turn" and r["turn"] == 1]
    assert len(review_requests) >= 3  # the first working turn and each fresh review session


@pytest.mark.scenario("one_step")
def test_a_kill_during_a_check_then_resume_runs_it_again_and_sends_no_turn_again(
    rehearsal: Rehearsal,
) -> None:
    # The check waits for a file the test writes once the driver is dead.
    check = "sh -c 'while [ ! -f go ]; do sleep 0.1; done'"
    process = rehearsal.start("run", "--prompt", "Write step1.txt.", "--verify", check)
    runs = rehearsal.project / ".claudeloop" / "runs"
    # The run's directory comes a moment before its event log: only logs that exist.
    wait_for(
        lambda: any("verify.started" in log.read_text() for log in runs.glob("*/events.jsonl")),
        "the check to start",
    )
    kill_hard(process)
    (rehearsal.project / "go").write_text("")
    finished = rehearsal.claudeloop("resume")
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert finished.result["turns"] == 1
    types = finished.event_types()
    assert types.count("turn.started") == 1  # the turn was not sent again
    assert "turn.interrupted" not in types
    assert types.count("verify.started") == 2  # the check ran again after the resume
    assert types.count("verify.finished") == 1
    turns = [r for r in rehearsal.requests() if r["kind"] == "turn" and r["verdict"]]
    assert len(turns) == 1
