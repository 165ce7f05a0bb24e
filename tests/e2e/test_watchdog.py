"""A night that outlives a silent answer, a CLI that never exits and an interrupt
(issue 40, items 1 and 3), with the real CLI and the rehearsal API.

The watchdog's silence is compressed to seconds (`--silence-timeout`); the tests assert
what happened, in order and in counts, never how long it took.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    FAST_WAITS,
    Rehearsal,
    assert_ledger_is_what_was_served,
    wait_for,
    write_plan,
)
from tests.e2e.patience import COMMAND, STATE
from tests.e2e.preloaded import start_claudeloop

pytestmark = pytest.mark.e2e

# Long enough that a CLI starved of CPU on a loaded machine is not taken for silent
# between its messages; the gated answers are silent until the watchdog ends them.
SILENCE = ["--silence-timeout", "5s"]


def events_of(project: Path) -> list[dict[str, Any]]:
    (run,) = list((project / ".claudeloop" / "runs").iterdir())
    lines = (run / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def state_of(project: Path) -> dict[str, Any]:
    (run,) = list((project / ".claudeloop" / "runs").iterdir())
    return dict(json.loads((run / "state.json").read_text()))


def debug_of(project: Path) -> str:
    (run,) = list((project / ".claudeloop" / "runs").iterdir())
    return (run / "debug.log").read_text()


def turn_requests(rehearsal: Rehearsal, turn: int) -> list[dict[str, Any]]:
    return [r for r in rehearsal.requests() if r["kind"] == "turn" and r["turn"] == turn]


@pytest.mark.scenario("silent_at_2_and_3")
def test_a_silent_answer_is_ended_and_sent_again_on_the_same_session(
    rehearsal: Rehearsal,
) -> None:
    # Turn 2's answer starts, then goes silent (hang); turn 3's never starts, not even
    # its status line (no first byte). Each is ended and its turn sent again.
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, *SILENCE, timeout=COMMAND)

    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert all((rehearsal.project / f"step{n}.txt").exists() for n in (1, 2, 3))
    # The rehearsal saw each turn's first request twice: the one left silent, then the
    # same turn sent again (the CLI merges the unanswered prompt with the new one).
    for turn, gate in ((2, "hang"), (3, "no_first_byte")):
        first_requests = [r for r in turn_requests(rehearsal, turn) if r["step"] == 0]
        assert [r["gate"] for r in first_requests] == [gate, None], turn
    events = finished.events()
    silent = [e for e in events if e["type"] == "turn.silent"]
    # A turn that came back between them: neither is a silence in a row, each sent again.
    assert [(e["turn"], e["awaiting"], e["action"]) for e in silent] == [
        (2, "the model's answer", "sent_again"),
        (3, "the model's answer", "sent_again"),
    ]
    for each in silent:
        at = events.index(each)
        assert [e["type"] for e in events[at - 1 : at + 2]] == [
            "turn.started",
            "turn.silent",
            "turn.started",
        ]
        assert events[at + 1]["turn"] == each["turn"]
    # Not a failure of the run, and always the one session.
    types = [e["type"] for e in events]
    assert "turn.failed" not in types
    sessions = {e["session_id"] for e in events if e["type"] == "turn.finished"}
    assert sessions == {finished.result["session_id"]}
    # Each silent request is billed at an estimate with its turn sent again.
    assert_ledger_is_what_was_served(finished, rehearsal, in_flight=2)


@pytest.mark.scenario("hang_at_2")
def test_the_clis_own_idle_timeout_retries_a_stalled_stream_within_the_turn(
    rehearsal: Rehearsal,
) -> None:
    # The CLI's stream watchdog as claudeloop sets it, compressed: it drops the stalled
    # stream and asks again itself, before the turn's own watchdog would end the turn.
    rehearsal.env["CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS"] = "10000"
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, "--silence-timeout", "5m", timeout=COMMAND)

    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert [r["gate"] for r in turn_requests(rehearsal, 2) if r["step"] == 0] == ["hang", None]
    assert "turn.silent" not in finished.event_types()
    assert finished.result["turns"] == 3


@pytest.mark.scenario("window_reset_at_2")
def test_a_cli_that_never_exits_after_its_result_is_ended_and_the_run_goes_on(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    # A stand-in for the CLI that runs the real one, then lingers with its output open,
    # deaf to SIGTERM: a probe waits for such a CLI to exit, and so does a process ended
    # after a refusal or at the run's end.
    from claude_agent_sdk import __file__ as sdk_file

    real = Path(sdk_file).parent / "_bundled" / "claude"
    wrapper = tmp_path / "claude-that-lingers"
    wrapper.write_text(
        "#!/bin/bash\n"
        'case " $* " in *" stream-json "*) ;; *) exec "' + str(real) + '" "$@" ;; esac\n'
        f'"{real}" "$@"\n'
        "trap '' TERM\n"
        "exec sleep 600\n"
    )
    wrapper.chmod(0o755)
    rehearsal.env["CLAUDELOOP_CLI_PATH"] = str(wrapper)
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, timeout=COMMAND)

    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    types = finished.event_types()
    assert types.count("probe.finished") >= 1
    assert "turn.failed" not in types
    debug = (finished.run_directory() / "debug.log").read_text()
    # The probe's CLI, after its result (one started ahead of the probe's instant is
    # not waited for: it is ended once the turn is sent); the turns' CLI ended after the
    # refusal at turn 2 and at the run's end, each once its input closed.
    ahead = debug.count("probe: sent on the Claude Code process started ahead")
    waited_for = types.count("probe.finished") - ahead
    assert debug.count("probe: Claude Code had not exited") == waited_for
    assert debug.count("did not exit within") >= 2


def stopped_mid_turn(
    rehearsal: Rehearsal, command: tuple[str, ...], how: str, *, in_flight: int
) -> subprocess.CompletedProcess[str]:
    """`claudeloop COMMAND` on the screen a person sees (no --json), stopped by `how`
    once the rehearsal holds its `in_flight`-th request of turn 2 (its answer hangs)."""
    process = start_claudeloop(
        [*command, "--cwd", str(rehearsal.project)], rehearsal.env, cwd=rehearsal.project
    )
    try:
        wait_for(
            lambda: len(turn_requests(rehearsal, 2)) == in_flight,
            "turn 2 to be in flight",
            timeout=STATE,
        )
        match how:
            case "SIGINT":  # what a terminal's Ctrl-C sends: the CLI child gets it too
                os.killpg(process.pid, signal.SIGINT)
            case "SIGTERM":  # `kill PID`: claudeloop alone
                process.send_signal(signal.SIGTERM)
            case _:  # a supervisor stopping the whole group
                os.killpg(process.pid, signal.SIGTERM)
        out, err = process.communicate(timeout=STATE)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    return subprocess.CompletedProcess(list(command), process.wait(), out, err)


SIGNALS = [
    ("SIGINT", 130, "Ctrl-C (SIGINT)"),
    ("SIGTERM", 143, "SIGTERM"),
    ("SIGTERM to the group", 143, "SIGTERM"),
]


@pytest.mark.scenario("hang_at_2_thrice")
def test_a_signal_mid_turn_stops_the_run_in_one_line_and_resume_goes_on(
    rehearsal: Rehearsal,
) -> None:
    """Each signal while turn 2's answer hangs: the run, then each resume of it, stops
    in one line, keeps turn 2 in flight, and the next resume goes on in its session."""
    plan = write_plan(rehearsal.project)
    sessions: set[str] = set()
    for in_flight, (how, code, said) in enumerate(SIGNALS, start=1):
        command = ("run", str(plan), *FAST_WAITS) if in_flight == 1 else ("resume",)
        stopped = stopped_mid_turn(rehearsal, command, how, in_flight=in_flight)

        assert stopped.returncode == code, (how, stopped.stderr)
        lines = stopped.stderr.splitlines()
        # After the turn it cut off, one line: the run's end, and why.
        after = lines[lines.index("turn 2: started") + 1 :]
        assert after == [
            f"claudeloop: stopped (exit {code}): stopped by {said} in turn 2, "
            "which a resume sends again"
        ], how
        for noise in ("Fatal error in message reader", "Error output", "failed", "Traceback"):
            assert noise not in stopped.stderr, how
        state = state_of(rehearsal.project)
        assert state["turn_in_flight"] == 2
        assert state["session_id"] is not None
        sessions.add(state["session_id"])
        finished_turns = [e for e in events_of(rehearsal.project) if e["type"] == "turn.finished"]
        assert [e["turn"] for e in finished_turns] == [1], how
    (session,) = sessions  # each resume went on in the run's one session

    resumed = rehearsal.claudeloop("resume", timeout=COMMAND)
    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.result["outcome"] == "done"
    assert resumed.result["session_id"] == session
    events = resumed.events()
    # Each resume found turn 2 cut off, and sent it again.
    assert [e["turn"] for e in events if e["type"] == "turn.interrupted"] == [2, 2, 2]
    at = max(i for i, e in enumerate(events) if e["type"] == "run.resumed")
    after_resume = events[at:]
    assert [e["turn"] for e in after_resume if e["type"] == "turn.interrupted"] == [2]
    assert {e["session_id"] for e in after_resume if e["type"] == "turn.finished"} == {session}
    assert [e["turn"] for e in after_resume if e["type"] == "turn.finished"] == [2, 3]
