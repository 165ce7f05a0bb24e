"""The files a claudeloop of 2026-12-02 (commit 7bc4336) wrote still load, resume and
read back as they were written (tests/fixtures/README.md says how each was made): a
run directory mid-wait, one done after checks and a review, one of a fleet with its
queue orders, an events.jsonl with a line of every event type, and the capacity
board's records. Written again, each is the same bytes: the format did not move."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.queue import Order
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.shared_capacity.board import sighting_from_json, sighting_to_json
from claudeloop.application.events import (
    EVENT_TYPES,
    OverageStarted,
    RunFinished,
    RunStarted,
    TurnFinished,
    VerifyFinished,
    WaitStarted,
    event_fields,
    event_from,
)
from claudeloop.domain.capacity import Available, WindowExhausted
from claudeloop.domain.loop import Outcome, Phase
from claudeloop.domain.signals import WindowUsage
from claudeloop.domain.verification import ChecksPassed
from tests.cli.conftest import Invocation
from tests.cli.old_runs import resumed_to_its_end

FIXTURES = Path(__file__).parents[1] / "fixtures"
# Where each run was made; its state.json and events name it.
WRITTEN_IN = {
    "run_waiting": "/tmp/pytest-of-root/pytest-160/test_mid_wait0/project",
    "run_done_with_checks": "/tmp/pytest-of-root/pytest-160/test_done_with_checks0/project",
    "run_of_a_fleet": "/tmp/one-codec-fleet/test_one_account_runs_one_at_a0/fleet/alpha",
}
RUN_IDS = {
    "run_waiting": "20261202-142538-b3ebcd",
    "run_done_with_checks": "20261202-142547-0c766e",
    "run_of_a_fleet": "20261202-142409-4e822e",
}


def copied(name: str, tmp_path: Path) -> RunDirectory:
    """The fixture's project under `tmp_path`, its paths there."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / name / "project", project)
    run = project / ".claudeloop" / "runs" / RUN_IDS[name]
    for file in (run / "state.json", run / "events.jsonl"):
        file.write_text(file.read_text().replace(WRITTEN_IN[name], str(project)))
    return RunDirectory(run)


@pytest.mark.parametrize("name", sorted(RUN_IDS))
def test_a_record_saved_again_is_the_same_bytes(name: str, tmp_path: Path) -> None:
    directory = copied(name, tmp_path)
    written = directory.state_path.read_text()
    record = directory.load()
    directory.save(record)
    assert directory.state_path.read_text() == written


def test_a_run_killed_while_waiting_resumes_to_its_end(tmp_path: Path) -> None:
    directory = copied("run_waiting", tmp_path)
    record = directory.load()
    assert record.state.phase is Phase.WAITING
    assert record.state.capacity == WindowExhausted("five_hour", None)
    assert record.state.next_probe_at == datetime.fromisoformat("2026-12-02T14:25:53.030625+00:00")
    assert record.state.ledger.turns == 1
    assert record.plan is not None
    assert (record.plan.done_count, record.plan.total) == (1, 3)
    resumed = resumed_to_its_end(directory, record)
    ended, gateway, before = resumed.ended, resumed.gateway, resumed.before
    assert ended.state.outcome is Outcome.DONE
    assert ended.state.ledger.turns == 3
    assert gateway.sessions == [record.session_id] * 2
    after = resumed.after
    assert after.startswith(before)
    added = [json.loads(line)["type"] for line in after[len(before) :].splitlines()]
    # Each start says where the commands run (sandbox.set), then the wait goes on.
    assert added[:4] == ["run.resumed", "sandbox.set", "wait.started", "probe.finished"]
    assert added[-1] == "run.finished"
    waits = [event_from(json.loads(line)) for line in after.splitlines()]
    assert all(waits)
    assert [e.probe_at for e in waits if isinstance(e, WaitStarted)] == [
        record.state.next_probe_at
    ] * 2  # the persisted probe instant, waited for again


def test_a_run_done_after_checks_and_a_review_reads_as_it_ended(
    claudeloop: Callable[..., Invocation], tmp_path: Path
) -> None:
    directory = copied("run_done_with_checks", tmp_path)
    record = directory.load()
    assert record.state.outcome is Outcome.DONE
    assert record.state.ledger.turns == 4
    assert record.spec.verify.review
    assert [check.text for check in record.spec.verify.checks] == ["test -f step-1.txt"]
    (check,) = record.state.last_checks
    assert (check.command.text, check.exit_code, check.timed_out) == (
        "test -f step-1.txt",
        0,
        False,
    )
    assert check.output_path == directory.path / "checks" / "turn-3-check-1.log"
    assert record.state.stagnation.verification == ChecksPassed()
    assert record.state.capacity == Available()
    shown = claudeloop("status", "--json", "--cwd", directory.path.parents[2])
    assert shown.exit_code == 0, shown.err
    status = json.loads(shown.out)
    assert (status["phase"], status["outcome"], status["turns"]) == ("complete", "done", 4)
    lines = [json.loads(line) for line in directory.events_path.read_text().splitlines()]
    events = [event_from(line) for line in lines]
    assert all(events)
    checks = [e for e in events if isinstance(e, VerifyFinished)]
    assert [(e.turn, e.passed) for e in checks] == [(1, True), (3, True)]
    reviews = [line["verdict"] for line in lines if line["type"] == "review.finished"]
    assert reviews == ["continue", "done"]


def test_a_run_of_a_fleet_and_its_orders_read_as_written(tmp_path: Path) -> None:
    directory = copied("run_of_a_fleet", tmp_path)
    record = directory.load()
    assert record.state.outcome is Outcome.DONE
    assert record.spec.permission_mode == "bypassPermissions"
    assert record.spec.wait_policy.max_wait is not None
    assert record.spec.wait_policy.max_wait.total_seconds() == 120.0
    written = json.loads((FIXTURES / "run_of_a_fleet" / "orders.json").read_text())
    orders = [Order.from_json(order) for order in written]
    assert orders == [
        Order("/srv/api", ["PLAN.md", "--max-turns", "5"], "8844ea658dc61db7"),
        Order(
            "api",
            ["--prompt", "Fix the tests."],
            "8844ea658dc61db7",
            repo="git@example.com:acme/api.git",
            branch="main",
        ),
    ]
    assert [order.to_json() for order in orders] == written


def test_every_event_type_reads_back_and_writes_the_same_fields() -> None:
    lines = (FIXTURES / "events_every_type" / "events.jsonl").read_text().splitlines()
    events = [event_from(json.loads(line)) for line in lines]
    # Every type there was on 2026-12-02 (an event added since has no line here).
    assert len({type(event) for event in events}) == len(lines) - 2 == 26
    assert {type(event) for event in events} <= set(EVENT_TYPES.values())
    for line, event in zip(lines, events, strict=True):
        assert event is not None
        data = json.loads(line)
        again = {**event_fields(event), "ts": data["ts"], "run_id": data["run_id"]}
        assert json.dumps({**again, "type": event.type}, ensure_ascii=False) == line
    at = datetime(2026, 12, 2, 14, 30, tzinfo=UTC)
    # The log says its own run's id, whatever the event held.
    started = RunStarted(
        "20261202-143000-abcdef", "/p", "/p/PLAN.md", "default", "m", "acceptEdits"
    )
    assert started in events
    assert (
        TurnFinished(
            1, "available", "continue", "did", 0.01, "s1", ("Bash",), True, None, "90% used"
        )
        in events
    )
    assert OverageStarted(4, at, "continue") in events
    assert OverageStarted(5, None, "stop") in events
    assert VerifyFinished(6, "slow", False, None, 600.0, None, True, None) in events
    assert RunFinished(Outcome.DONE, 0, "all done") in events


def test_the_capacity_boards_records_read_and_write_as_they_were() -> None:
    for name in ("open.json", "closed.json"):
        text = (FIXTURES / "capacity_board" / name).read_text()
        sighting = sighting_from_json(text)
        assert sighting is not None
        assert sighting_to_json(sighting) == text
    closed = sighting_from_json((FIXTURES / "capacity_board" / "closed.json").read_text())
    assert closed is not None
    assert (closed.seq, closed.source, closed.standing, closed.host) == (1, "probe", "closed", "vm")
    assert closed.run_id == "20261202-143000-abcdef"
    signals = closed.signals
    assert signals.api_error_status == 429
    assert signals.is_error
    assert signals.result_text == "Claude AI usage limit reached|1764925200"
    assert signals.overage_resets_at == datetime(2026, 12, 3, tzinfo=UTC)
    assert signals.windows[1] == WindowUsage(
        "seven_day_opus", 1.0, datetime(2026, 12, 5, 9, 0, tzinfo=UTC), "rejected"
    )
    assert signals.windows[2] == WindowUsage("seven_day", None, None, None)


def test_a_damaged_count_beyond_64_bits_is_refused_naming_the_file_and_key(
    tmp_path: Path, claudeloop: Callable[..., Invocation]
) -> None:
    directory = copied("run_waiting", tmp_path)
    data = json.loads(directory.state_path.read_text())
    data["state"]["attempts"] = 10**300
    directory.state_path.write_text(json.dumps(data))
    result = claudeloop("resume", "--cwd", directory.path.parents[2])
    assert result.exit_code == 2
    (line,) = result.err.strip().splitlines()
    assert line.startswith(f"claudeloop: error: {directory.state_path}: unreadable (")
    assert "state.attempts is 1000" in line
    assert line.endswith("not a whole number from -(2^63-1) to 2^63-1)")
    assert len(line) < 300
