"""status, logs and a run's --json result mask the secrets they know, even in what an
older claudeloop wrote in clear (state.json, events.jsonl, a commit's message) and in a
check named as the user wrote it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.loop import Outcome, Phase, RunState
from tests.cli.conftest import Invocation

Invoke = Callable[..., Invocation]
CANARY = "canary-pat-5d1e2f9a"


def test_status_masks_a_secret_of_the_environment_found_in_the_state(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = RunDirectory.create(tmp_path, "r1")
    state = RunState(
        phase=Phase.FAILED,
        summary=f"pushed with {CANARY}",
        outcome=Outcome.BLOCKED,
        reason=f"blocked on: {CANARY} revoked",
    )
    record = RunRecord(
        run_id="r1", spec=RunSpec(cwd=tmp_path, task="t"), state=state, started_at=datetime.now(UTC)
    )
    directory.save(record)  # this redactor knows no variable: the canary stays in clear
    assert CANARY in directory.state_path.read_text()
    monkeypatch.setenv("MY_SERVICE_PAT", CANARY)
    shown = claudeloop("status", "--cwd", tmp_path)
    assert shown.exit_code == 0
    assert "[redacted] revoked" in shown.out
    assert CANARY not in shown.out + shown.err
    data = json.loads(claudeloop("status", "--cwd", tmp_path, "--json").out)
    assert data["summary"] == "pushed with [redacted]"
    assert CANARY not in json.dumps(data)


def test_status_masks_a_secret_in_the_subject_of_a_commit_of_the_run(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A commit an older claudeloop made, its message the model's summary as written.
    identity = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    identity |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for name, value in identity.items():
        monkeypatch.setenv(name, value)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=tmp_path, check=True
    )
    (tmp_path / "step1.txt").write_text("step 1\n")
    subprocess.run(["git", "add", "step1.txt"], cwd=tmp_path, check=True)
    said = f"Pushed with {CANARY}\n\nClaudeloop-Run: r1\nClaudeloop-Turn: 1\n"
    subprocess.run(["git", "commit", "-q", "-m", said], cwd=tmp_path, check=True)
    directory = RunDirectory.create(tmp_path, "r1")
    spec = RunSpec(cwd=tmp_path, task="t", checkpoint=True)
    record = RunRecord(run_id="r1", spec=spec, state=RunState(), started_at=datetime.now(UTC))
    directory.save(record)
    monkeypatch.setenv("MY_SERVICE_PAT", CANARY)
    data = json.loads(claudeloop("status", "--cwd", tmp_path, "--json").out)
    (commit,) = data["branch"]["commits"]
    assert commit["subject"] == "Pushed with [redacted]"
    shown = claudeloop("status", "--cwd", tmp_path)
    assert shown.exit_code == 0
    assert "1 commit (turns 1)" in shown.out
    assert CANARY not in json.dumps(data) + shown.out + shown.err


def test_logs_mask_a_secret_in_a_line_an_older_claudeloop_wrote_in_clear(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cli.test_run_directory_commands import waiting_run

    directory = waiting_run(tmp_path)
    untouched = directory.events_path.read_text().splitlines()
    said: dict[str, object] = {"ts": datetime.now(UTC).isoformat(), "run_id": "r"}
    said |= {"type": "turn.finished"}
    said |= {"turn": 2, "verdict": "continue", "summary": f"pushed with {CANARY}"}
    said |= {"cost_usd": 0.1, "remaining_work": ["sk-ant-api03-abcdefghijklmnop"]}
    with directory.events_path.open("a") as handle:
        handle.write(json.dumps(said) + "\n")
    monkeypatch.setenv("MY_SERVICE_PAT", CANARY)
    lines = claudeloop("logs", "--cwd", tmp_path, "--json").out.splitlines()
    assert lines[:2] == untouched  # a line with nothing to mask is printed as written
    masked = json.loads(lines[2])
    assert masked["summary"] == "pushed with [redacted]"
    assert masked["remaining_work"] == ["[redacted]"]
    shown = claudeloop("logs", "--cwd", tmp_path)
    assert shown.exit_code == 0
    assert "pushed with [redacted]" in shown.out
    for canary in (CANARY, "sk-ant-api03"):
        assert canary not in "\n".join(lines) + shown.out + shown.err


def test_the_json_result_names_a_check_with_its_token_masked(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    # The record keeps the command as the user wrote it (a resume runs it again).
    from pathlib import PurePath

    from claudeloop.domain.verification import CheckCommand, CheckResult

    token = "sk-ant-api03-abcdefghijklmnop"
    check = CheckResult(
        command=CheckCommand.parse(f"curl -H 'x-api-key: {token}' localhost"),
        exit_code=0,
        seconds=0.5,
        output_path=PurePath("/logs/turn-1-check-1.log"),
    )
    state = RunState(phase=Phase.COMPLETE, outcome=Outcome.DONE, last_checks=(check,))
    record = RunRecord(
        run_id="r1", spec=RunSpec(cwd=tmp_path, task="t"), state=state, started_at=datetime.now(UTC)
    )
    RunDirectory.create(tmp_path, "r1").save(record)
    ended = claudeloop("resume", "--cwd", tmp_path, "--json")
    assert ended.exit_code == 0, ended.err
    (shown,) = json.loads(ended.out)["verification"]
    assert shown["command"] == "curl -H '[redacted] localhost"
    assert token not in ended.out + ended.err
