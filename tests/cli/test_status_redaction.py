"""status masks the secrets it knows even in a state.json an older claudeloop wrote in
clear."""

from __future__ import annotations

import json
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
