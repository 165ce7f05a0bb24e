"""`claudeloop rehearse`: the Quick start's first command, and the scenarios that show
the pause threshold and a limit policy switching profile."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.patience import COMMAND, STATE
from tests.e2e.preloaded import run_claudeloop

pytestmark = pytest.mark.e2e


def rehearsal_env(home: Path) -> dict[str, str]:
    # Nothing of the user's reaches a rehearsal; the command blanks credentials itself.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    env["HOME"] = str(home)
    return env


def rehearse(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_claudeloop(["rehearse", *args], rehearsal_env(tmp_path), timeout=COMMAND)


def resume(tmp_path: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`claudeloop resume` of a kept rehearsal's project, as its user would type it."""
    return run_claudeloop(
        ["resume", "--cwd", str(project), *args], rehearsal_env(tmp_path), timeout=COMMAND
    )


def test_the_default_rehearsal_waits_out_a_window_and_finishes(tmp_path: Path) -> None:
    finished = rehearse(tmp_path)
    assert finished.returncode == 0, finished.stderr
    lines = finished.stderr.splitlines()
    refused = next(i for i, line in enumerate(lines) if "refused: 5-hour window" in line)
    waiting = next(i for i, line in enumerate(lines) if line.startswith("waiting: 5-hour window"))
    resumed = next(i for i, line in enumerate(lines) if line == "probe: capacity is back")
    assert refused < waiting < resumed
    assert "claudeloop: done (exit 0)" in finished.stderr
    assert "plan: 3/3 items done" in finished.stderr


def test_the_warning_rehearsal_says_how_used_the_window_is_goes_on_and_is_not_listed(
    tmp_path: Path,
) -> None:
    finished = rehearse(tmp_path, "warning")
    assert finished.returncode == 0, finished.stderr
    lines = finished.stderr.splitlines()
    warned = [line for line in lines if ": warning: " in line and line.startswith("turn ")]
    # The service warns from turn 2 (92%): said under the turn it came with, never before.
    assert warned
    assert warned[0].startswith("turn 2: warning: the 5-hour window is 92% used; it resets ")
    assert lines.index(warned[0]) == 1 + next(
        i for i, line in enumerate(lines) if line.startswith("turn 2 answered")
    )
    assert "claudeloop: done (exit 0)" in finished.stderr
    # A rehearsal that removed its folder is not listed as gone: the machine's index
    # (runs --all, the dashboard) keeps only what is still there.
    started = next(line for line in lines if line.startswith("claudeloop: run "))
    run_id = started.split()[2]
    listed = subprocess.run(
        [sys.executable, "-m", "claudeloop", "runs", "--all", "--json"],
        env=rehearsal_env(tmp_path),  # as rehearse() runs it: the index under this HOME
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert run_id not in listed.stdout


def test_the_pause_rehearsal_pauses_at_the_threshold(tmp_path: Path) -> None:
    finished = rehearse(tmp_path, "pause", "--json", "--keep")
    assert finished.returncode == 0, finished.stderr
    result = json.loads(finished.stdout)
    assert result["outcome"] == "done"
    assert result["turns"] == 3
    assert result["probes"] == 1
    # --keep --json says where the kept folder is: the project and its run are there.
    kept = Path(result["kept"])
    try:
        assert (kept / "project" / "step3.txt").is_file()
        assert (kept / "project" / ".claudeloop" / "runs" / result["run_id"]).is_dir()
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_the_overage_rehearsal_waits_for_the_window_after_an_answer_on_overage(
    tmp_path: Path,
) -> None:
    finished = rehearse(tmp_path, "overage", "--json")
    assert finished.returncode == 0, finished.stderr
    result = json.loads(finished.stdout)
    assert result["outcome"] == "done"
    assert result["turns"] == 3
    assert result["overage_turns"] == 1
    assert result["probes"] == 1  # one probe, at the window's reset


def test_the_verify_rehearsal_sends_an_early_done_back_then_verifies_and_reviews(
    tmp_path: Path,
) -> None:
    finished = rehearse(tmp_path, "verify")
    assert finished.returncode == 0, finished.stderr
    assert "test -f step3.txt: failed: exit 1" in finished.stderr
    assert "test -f step3.txt: passed" in finished.stderr
    assert "the reviewer agrees the task is complete" in finished.stderr
    assert "rehearsal: done after turns 4 sent" in finished.stderr  # three working, one review


def test_the_switch_profile_rehearsal_switches_and_comes_back(tmp_path: Path) -> None:
    finished = rehearse(tmp_path, "switch-profile")
    assert finished.returncode == 0, finished.stderr
    assert "switched to profile rehearsal-local" in finished.stderr
    assert "back on the run's own profile" in finished.stderr


def test_an_unknown_scenario_is_one_line(tmp_path: Path) -> None:
    finished = rehearse(tmp_path, "monsoon")
    assert finished.returncode == 2
    assert len(finished.stderr.strip().splitlines()) == 1
    assert "monsoon" in finished.stderr


def test_the_list_names_each_scenario_with_what_it_shows(tmp_path: Path) -> None:
    listed = rehearse(tmp_path, "--list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    window = next(line for line in lines if line.startswith("window "))
    assert "The 5-hour window closes at turn 2" in window
    busy = next(line for line in lines if line.startswith("local-busy "))
    assert "queue is full (503)" in busy


def test_a_local_model_that_fails_to_load_ends_in_78_with_the_fix(tmp_path: Path) -> None:
    finished = rehearse(tmp_path, "local-load-failed")
    assert finished.returncode == 78, finished.stderr
    final = next(line for line in finished.stderr.splitlines() if "(exit 78)" in line)
    assert "the model 'qwen3' failed to load on http://127.0.0.1:" in final
    assert "pick a smaller `model` in [profiles.rehearsal-local]" in final
    # Stopped at once, as the local-models guide says: no probing a misconfiguration.
    assert "waiting:" not in finished.stderr
    # The folder is gone once the rehearsal ends: no resume command pointing into it.
    assert "claudeloop resume" not in finished.stderr
    gone = next(line for line in finished.stderr.splitlines() if " is removed as " in line)
    assert "`claudeloop rehearse --keep` keeps it" in gone
    assert not Path(gone.split()[1]).exists()


def test_a_full_local_queue_is_waited_out_and_a_kept_rehearsal_stopped_there_resumes(
    tmp_path: Path,
) -> None:
    """`rehearse --keep` says the kept run can be resumed: stopped by SIGTERM while it
    waits for a full local queue, `claudeloop resume` in the kept project goes on
    against a new rehearsal API of the same scenario (which plays again from its first
    request: the queue is full again at turn 2), waits the queue out, keeping its turns,
    and finishes the plan."""
    started = subprocess.Popen(
        [sys.executable, "-m", "claudeloop", "rehearse", "local-busy", "--keep"],
        env=rehearsal_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert started.stderr is not None
    said: list[str] = []
    try:
        for line in started.stderr:
            said.append(line.rstrip("\n"))
            if line.startswith("waiting: "):
                break
        assert any(line.startswith("waiting: ") for line in said), "\n".join(said)
        started.send_signal(signal.SIGTERM)
        _out, rest = started.communicate(timeout=STATE)
    finally:
        if started.poll() is None:
            started.kill()
            started.wait(10)
    assert started.returncode == 143, "\n".join(said) + rest
    assert any("refused: the local server is busy" in line for line in said)
    project = Path(
        next(line for line in said if "working in " in line).split("working in ")[1].strip()
    )
    workdir = project.parent
    try:
        assert f"claudeloop resume --cwd {project}" in rest
        # What a person sees: the resume's lines, as the rehearsal's own would be.
        resumed = resume(tmp_path, project)
        assert resumed.returncode == 0, resumed.stderr
        lines = resumed.stderr.splitlines()
        refused = next(
            i for i, line in enumerate(lines) if "refused: the local server is busy" in line
        )
        waiting = next(
            i
            for i, line in enumerate(lines)
            if line.startswith("waiting: the local server is busy")
        )
        back = next(i for i, line in enumerate(lines) if line == "probe: capacity is back")
        assert refused < waiting < back
        assert "claudeloop: done (exit 0)" in resumed.stderr
        assert "plan: 3/3 items done" in resumed.stderr
        assert (project / "step3.txt").is_file()
        (run,) = list((project / ".claudeloop" / "runs").iterdir())
        # The run went on where it stopped: turn 1's answer is kept, not sent again.
        assert json.loads((run / "state.json").read_text())["state"]["turns"] >= 3
        events = (run / "events.jsonl").read_text()
        assert events.count('"type": "run.started"') == 1
        assert events.count('"type": "run.resumed"') == 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_the_list_takes_no_scenario(tmp_path: Path) -> None:
    listed = rehearse(tmp_path, "--list", "extra")
    assert listed.returncode == 2
    assert listed.stdout == ""
    (line,) = listed.stderr.strip().splitlines()
    assert line == (
        "claudeloop: error: rehearse --list takes no scenario (got 'extra'); "
        "`claudeloop rehearse extra` plays it"
    )


def test_a_kept_rehearsal_of_refused_credentials_resumes_saying_it_plays_the_rehearsal(
    tmp_path: Path,
) -> None:
    """A kept `auth` rehearsal ends 77; its resume says, before the run goes on, that it
    plays against the rehearsal API, and the refusal it meets again is said as the
    scenario's, what a real one would need said after "in a real run"."""
    kept = rehearse(tmp_path, "auth", "--keep", "--json")
    assert kept.returncode == 77, kept.stderr
    result = json.loads(kept.stdout)
    project = Path(result["kept"]) / "project"
    try:
        # --json says what the text says of the rehearsal, as fields.
        played = result["rehearsal"]
        assert played["scenario"] == "auth"
        assert played["files"] == ["PLAN.md", "step1.txt"]
        assert played["requests_for_turns"] >= 2
        assert "the rehearsal API scripts this failure (scenario auth)" in result["reason"]
        resumed = resume(tmp_path, project)
        assert resumed.returncode == 77, resumed.stderr
        lines = resumed.stderr.splitlines()
        assert lines[0].startswith("rehearsal: resuming a kept rehearsal against the rehearsal API")
        assert "scenario auth" in lines[0]
        assert "not your account" in lines[0]
        final = next(line for line in lines if "(exit 77)" in line)
        scripted, _, real = final.partition("; in a real run, ")
        assert "the rehearsal API scripts this failure (scenario auth)" in scripted
        assert "claudeloop login" not in scripted
        assert real.startswith("log in again with `claudeloop login`")
    finally:
        shutil.rmtree(project.parent, ignore_errors=True)


def test_a_kept_rehearsal_of_a_missing_model_resumes_into_the_scenarios_failure_said_as_its(
    tmp_path: Path,
) -> None:
    """A kept `model-missing` rehearsal (a local profile the rehearsal made, not the
    user's) ends 78; its resume meets the scripted 404 again and says it as the
    rehearsal's: editing [profiles.rehearsal-local] is what a real run would need."""
    kept = rehearse(tmp_path, "model-missing", "--keep", "--json")
    assert kept.returncode == 78, kept.stderr
    project = Path(json.loads(kept.stdout)["kept"]) / "project"
    try:
        resumed = resume(tmp_path, project, "--json")
        assert resumed.returncode == 78, resumed.stderr
        reason = json.loads(resumed.stdout)["reason"]
        scripted, _, real = reason.partition("; in a real run, ")
        assert "the model 'qwen3' was not found on http://127.0.0.1:" in scripted
        assert "the rehearsal API scripts this failure (scenario model-missing)" in scripted
        assert "[profiles.rehearsal-local]" not in scripted
        assert real.startswith("pull it (`ollama pull qwen3`)")
    finally:
        shutil.rmtree(project.parent, ignore_errors=True)
