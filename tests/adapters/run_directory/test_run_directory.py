"""The run directory writes no secret into state.json, keeps a resumable record, names
only directories under runs/, and never writes through a planted symbolic link."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from claudeloop.adapters.private_file import append_line
from claudeloop.adapters.redaction import MASK, Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.layout import EventLog, run_id_problem
from claudeloop.application.events import RunResumed
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import CreditsExhausted
from claudeloop.domain.loop import ControlCommand, Outcome, Phase, RunState
from claudeloop.domain.plan import WorkPlan

CANARY = "canary-pat-5d1e2f9a"
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


class FixedClock:
    def now(self) -> datetime:
        return NOW


@pytest.fixture
def open_umask() -> Iterator[None]:
    """Files made as under `umask 000`: readable by anyone unless claudeloop says not."""
    before = os.umask(0)
    try:
        yield
    finally:
        os.umask(before)


def record_with_the_canary(cwd: Path) -> RunRecord:
    return RunRecord(
        run_id="r1",
        spec=RunSpec(cwd=cwd, task="deploy with the token in $MY_SERVICE_PAT"),
        state=RunState(
            phase=Phase.FAILED,
            ledger=BudgetLedger(turns=2, attempts=2, dollars=0.5),
            capacity=CreditsExhausted(detail=f"key {CANARY} has no credits"),
            remaining_work=(f"rotate {CANARY}",),
            summary=f"Pushed with {CANARY}.",
            outcome=Outcome.BLOCKED,
            reason=f"blocked on: {CANARY} expired",
            blocked_on=f"{CANARY} expired",
        ),
        started_at=NOW,
        session_id="sess-1",
        plan=WorkPlan.parse(f"# Plan\n\n- [x] log in with {CANARY}\n- [ ] deploy\n"),
    )


def test_state_json_holds_no_secret_of_the_models_words(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r1")
    directory = RunDirectory(directory.path, redactor=Redactor((CANARY,)))
    directory.save(record_with_the_canary(tmp_path))
    text = directory.state_path.read_text()
    assert CANARY not in text
    state = json.loads(text)["state"]
    assert state["summary"] == f"Pushed with {MASK}."
    assert state["remaining_work"] == [f"rotate {MASK}"]
    assert state["reason"] == f"blocked on: {MASK} expired"
    assert state["blocked_on"] == f"{MASK} expired"


def test_a_redacted_record_resumes_where_it_was(tmp_path: Path) -> None:
    record = record_with_the_canary(tmp_path)
    directory = RunDirectory(RunDirectory.create(tmp_path, "r1").path, redactor=Redactor((CANARY,)))
    directory.save(record)
    loaded = directory.load()
    assert loaded.spec == record.spec  # the user's own task and settings are untouched
    assert loaded.session_id == record.session_id
    assert loaded.state.phase is record.state.phase
    assert loaded.state.ledger == record.state.ledger
    assert loaded.plan is not None
    assert loaded.plan_progress == record.plan_progress == (1, 2)
    assert loaded.plan.render() == f"# Plan\n\n- [x] log in with {MASK}\n- [ ] deploy\n"


def test_token_shapes_are_masked_even_without_the_runs_redactor(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r1")
    record = record_with_the_canary(tmp_path)
    token = "sk-ant-api03-abcdefghijklmnop"
    directory.save(
        RunRecord(
            run_id="r1",
            spec=record.spec,
            state=RunState(summary=f"found {token}"),
            started_at=NOW,
        )
    )
    assert token not in directory.state_path.read_text()


@pytest.mark.parametrize(
    "run_id",
    ["../../x", "/abs", "a/b", "", ".", "..", ".hidden", "x" * 101, "two\nlines", "a b", "a\\b"],
)
def test_a_run_id_that_is_not_one_plain_name_is_refused(tmp_path: Path, run_id: str) -> None:
    assert run_id_problem(run_id) is not None
    with pytest.raises(ValueError, match="run id"):
        RunDirectory.create(tmp_path / "project", run_id)
    assert not (tmp_path / "x").exists()
    assert list((tmp_path / "project" / ".claudeloop" / "runs").glob("**/*")) == []


@pytest.mark.parametrize("run_id", ["20261201-090000-a1b2c3", "nightly", "v1.2_b-3", "x" * 100])
def test_time_based_and_plain_names_are_run_ids(run_id: str) -> None:
    assert run_id_problem(run_id) is None


def test_events_jsonl_is_owner_only_whatever_the_umask(tmp_path: Path, open_umask: None) -> None:
    directory = RunDirectory.create(tmp_path, "r1")
    log = EventLog(directory, FixedClock(), Redactor())
    log.emit(RunResumed(phase="waiting"))
    log.close()
    assert directory.events_path.stat().st_mode & 0o777 == 0o600


def test_a_planted_events_link_is_neither_followed_nor_chmodded(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r1")
    target = tmp_path / "elsewhere.txt"
    target.write_text("mine\n")
    target.chmod(0o644)
    directory.events_path.symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        EventLog(directory, FixedClock(), Redactor())
    assert target.read_text() == "mine\n"
    assert target.stat().st_mode & 0o777 == 0o644


def test_an_appended_file_is_owner_only_even_when_it_was_not(
    tmp_path: Path, open_umask: None
) -> None:
    fresh = tmp_path / "debug.log"
    append_line(fresh, "one")
    old = tmp_path / "old.log"
    old.write_text("before\n")
    old.chmod(0o666)
    append_line(old, "two")
    assert fresh.stat().st_mode & 0o777 == 0o600
    assert old.stat().st_mode & 0o777 == 0o600
    assert old.read_text() == "before\ntwo\n"


def test_a_check_waiting_on_the_control_file_is_told_of_a_stop_not_of_a_wind_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    from claudeloop.adapters.run_directory import layout

    monkeypatch.setattr(layout, "STOP_POLL_SECONDS", 0)  # each look is a turn of the loop
    directory = RunDirectory.create(tmp_path, "r1")
    told: list[ControlCommand | None] = []

    async def go() -> None:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                await directory.stop_asked()
                told.append(directory.pending())

            group.start_soon(watch)
            directory.send(ControlCommand.WIND_DOWN)
            for _ in range(50):
                await anyio.sleep(0)
            assert told == []
            directory.send(ControlCommand.STOP)

    anyio.run(go)
    assert told == [ControlCommand.STOP]


def test_a_new_run_keeps_the_folder_out_of_git_and_leaves_an_ignore_file_there_alone(
    tmp_path: Path,
) -> None:
    RunDirectory.create(tmp_path, "first")
    ignore = tmp_path / ".claudeloop" / ".gitignore"
    assert ignore.read_text().splitlines()[-1] == "*"
    ignore.write_text("runs/\n")  # the user's own rule
    RunDirectory.create(tmp_path, "second")
    assert ignore.read_text() == "runs/\n"


def test_a_signal_is_a_stop_in_the_control_file_and_its_name_in_this_process_alone(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from claudeloop.adapters.redaction import Redactor
    from claudeloop.domain.loop import Interrupt

    directory = RunDirectory.create(tmp_path, "r1")
    # The run's parts hold copies of the directory, made with the run's redactor.
    copy = replace(directory, redactor=Redactor())
    directory.interrupt(Interrupt.TERMINATE)
    directory.interrupt(Interrupt.CTRL_C)  # the first one counts
    assert copy.interrupted() is Interrupt.TERMINATE
    assert copy.pending() is ControlCommand.STOP
    # Another process (`claudeloop status`, `stop`) sees a stop, and no signal.
    elsewhere = RunDirectory(directory.path)
    assert (elsewhere.pending(), elsewhere.interrupted()) == (ControlCommand.STOP, None)
