"""Done means verified, end to end: a check that fails sends the run back to work, a
run that changes nothing stops, a reviewer on a fresh session has the last word."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.test_verification_commands import live_in_group, once_running, until_gone
from tests.e2e.conftest import Rehearsal, wait_for
from tests.e2e.preloaded import Running
from tests.e2e.test_run_directory import kill_hard

pytestmark = pytest.mark.e2e

# A check that notes its process group (the shell leads it) and leaves a child in it;
# once `go` exists it passes at once. Thirty seconds is far longer than a stop takes to
# be noticed, and short enough that a check that ignores the stop ends the run first.
LONG_CHECK = "sh -c 'echo $$ >> groups; test -f go && exit 0; sleep 30 & sleep 30'"


def check_groups(project: Path) -> list[int]:
    path = project / "groups"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def events_of(project: Path) -> list[dict[str, Any]]:
    logs = list((project / ".claudeloop" / "runs").glob("*/events.jsonl"))
    return [json.loads(line) for log in logs for line in log.read_text().splitlines() if line]


def stop_by(how: str, process: Running, rehearsal: Rehearsal) -> None:
    if how == "stop":
        asked = rehearsal.claudeloop("stop")
        assert asked.exit_code == 0, asked.stderr
    else:
        process.send_signal(getattr(signal, how))  # the driver alone, as `kill` would


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


def _groups_are(project: Path, count: int) -> bool:
    return len(check_groups(project)) == count


# Each way a person or a supervisor stops a run, and the exit code it ends with.
STOPS = (("stop", 130), ("SIGTERM", 143), ("SIGINT", 130), ("SIGHUP", 130))


@pytest.mark.skipif(sys.platform != "linux", reason="reads process groups in /proc")
@pytest.mark.scenario("one_step")
def test_each_stop_during_a_check_ends_its_group_and_the_run_and_resume_runs_it_again(
    rehearsal: Rehearsal,
) -> None:
    """One run, stopped during its check each way in turn: by `claudeloop stop`, then,
    each time it is resumed, by SIGTERM, SIGINT and SIGHUP; the last resume passes."""
    process = rehearsal.start("run", "--prompt", "Write step1.txt.", "--verify", LONG_CHECK)
    for stopped, (how, code) in enumerate(STOPS, start=1):
        wait_for(partial(_groups_are, rehearsal.project, stopped), f"check {stopped} to start")
        stop_by(how, process, rehearsal)
        out, err = process.communicate(timeout=120)

        assert process.returncode == code, (how, err)
        assert json.loads(out)["outcome"] == "stopped", how
        types = [e["type"] for e in events_of(rehearsal.project)]
        # The check was ended, not waited for: it never finished, the run did.
        assert types[-2:] == ["verify.started", "run.finished"], how
        assert "verify.finished" not in types, how
        group = check_groups(rehearsal.project)[-1]
        assert until_gone(group) == [], how
        (run,) = list((rehearsal.project / ".claudeloop" / "runs").iterdir())
        assert "stopped" in (run / "summary.md").read_text(), how
        if stopped < len(STOPS):
            process = rehearsal.start("resume")

    (rehearsal.project / "go").write_text("")
    finished = rehearsal.claudeloop("resume")
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    types = finished.event_types()
    assert types.count("turn.started") == 1  # the Done was verified again, not redone
    assert types.count("verify.started") == len(STOPS) + 1
    checks = [e for e in finished.events() if e["type"] == "verify.finished"]
    assert [(e["passed"], e["exit_code"]) for e in checks] == [(True, 0)]
    assert len(check_groups(rehearsal.project)) == len(STOPS) + 1


@pytest.mark.skipif(sys.platform != "linux", reason="reads process groups in /proc")
@pytest.mark.scenario("one_step")
def test_a_check_dies_with_its_killed_driver_and_the_resume_runs_one_copy(
    rehearsal: Rehearsal,
) -> None:
    # Long enough that a check left behind is still there when the resume ends.
    check = "sh -c 'echo $$ >> groups; test -f go && exit 0; sleep 300 & sleep 300'"
    # Unconfined, so the check's $$ is its pid on this machine (in the sandbox it has
    # pids of its own: the next test).
    process = rehearsal.start(
        "run", "--prompt", "Write step1.txt.", "--verify", check, "--sandbox", "off"
    )
    wait_for(lambda: len(check_groups(rehearsal.project)) == 1, "the check to start")
    (first,) = check_groups(rehearsal.project)
    try:
        assert len(once_running(first, 3)) == 3  # the shell and its two sleeps
        kill_hard(process)  # claudeloop's process group, as a crash or a reboot would
        assert until_gone(first) == []

        (rehearsal.project / "go").write_text("")
        finished = rehearsal.claudeloop("resume")
        assert finished.exit_code == 0, finished.stderr
        assert finished.result["outcome"] == "done"
        groups = check_groups(rehearsal.project)
        assert len(groups) == 2  # the resume started exactly one copy
        assert [live_in_group(group) for group in groups] == [[], []]
        types = finished.event_types()
        assert types.count("verify.started") == 2
        assert types.count("verify.finished") == 1
    finally:
        for group in check_groups(rehearsal.project):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


def sleeping(marker: str) -> list[int]:
    """The processes of this machine running `sleep MARKER`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", marker.encode()]:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="reads processes in /proc")
@pytest.mark.scenario("one_step")
def test_a_confined_check_dies_with_its_killed_driver_and_the_resume_runs_one_copy_and_no_turn(
    rehearsal: Rehearsal,
) -> None:
    # The check waits for a file the test writes once the driver is dead.
    marker = f"301.{os.getpid()}"  # a sleep no other test runs
    check = f"sh -c 'echo started >> starts; test -f go && exit 0; sleep {marker} & sleep {marker}'"
    process = rehearsal.start("run", "--prompt", "Write step1.txt.", "--verify", check)
    wait_for(lambda: len(sleeping(marker)) == 2, "the check to start")
    try:
        kill_hard(process)  # claudeloop's process group, as a crash or a reboot would
        wait_for(lambda: sleeping(marker) == [], "the check to end with its driver")

        (rehearsal.project / "go").write_text("")
        finished = rehearsal.claudeloop("resume")
        assert finished.exit_code == 0, finished.stderr
        assert finished.result["outcome"] == "done"
        assert finished.result["turns"] == 1
        starts = (rehearsal.project / "starts").read_text().split()
        assert len(starts) == 2  # the resume started exactly one copy
        assert sleeping(marker) == []
        types = finished.event_types()
        assert types.count("turn.started") == 1  # the turn was not sent again
        assert "turn.interrupted" not in types
        assert types.count("verify.started") == 2  # the check ran again after the resume
        assert types.count("verify.finished") == 1
        turns = [r for r in rehearsal.requests() if r["kind"] == "turn" and r["verdict"]]
        assert len(turns) == 1
    finally:
        for pid in sleeping(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
