"""A run directory written by the claudeloop before events became dataclasses (killed
by kill -9 while it waited for the 5-hour window) still resumes to its end, and
`claudeloop logs` still reads it: events.jsonl kept its format.

The fixture is what `claudeloop run PLAN.md` of commit c4b6279 left in the rehearsal's
window_until_lift_at_2 scenario, killed with kill -9 once it waited (driver.pid left
out); logs.txt is what `claudeloop logs` shows of it, the run's id now in its first line
(the older `logs` dropped it)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.application.events import event_from
from claudeloop.domain.loop import Outcome
from tests.cli.conftest import Invocation
from tests.cli.old_runs import resumed_to_its_end

FIXTURE = Path(__file__).parents[1] / "fixtures" / "run_before_typed_events"
RUN_ID = "20261201-123006-bf3fcf"
# Where the fixture's run was made; state.json names it (cwd, plan_path).
WRITTEN_IN = "/tmp/ev_gen/work/project"
Invoke = Callable[..., Invocation]


def old_run(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(FIXTURE / "project", project)
    state = project / ".claudeloop" / "runs" / RUN_ID / "state.json"
    state.write_text(state.read_text().replace(WRITTEN_IN, str(project)))
    return project


def test_logs_of_an_older_run_read_as_they_did(claudeloop: Invoke, tmp_path: Path) -> None:
    project = old_run(tmp_path)
    events = project / ".claudeloop" / "runs" / RUN_ID / "events.jsonl"
    shown = claudeloop("logs", "--cwd", project)
    assert shown.exit_code == 0, shown.err
    assert shown.out == (FIXTURE / "logs.txt").read_text()
    as_json = claudeloop("logs", "--json", "--cwd", project)
    assert as_json.out == events.read_text()  # byte for byte


def test_an_older_run_killed_while_waiting_resumes_to_its_end(tmp_path: Path) -> None:
    project = old_run(tmp_path)
    directory = RunDirectory(project / ".claudeloop" / "runs" / RUN_ID)
    record = directory.load()
    resumed = resumed_to_its_end(directory, record)
    ended, gateway, before = resumed.ended, resumed.gateway, resumed.before
    assert ended.state.outcome is Outcome.DONE
    assert ended.state.ledger.turns == 3  # the one it had, and the two sent after the resume
    assert gateway.sessions == [record.session_id] * 2  # the same conversation goes on
    after = resumed.after
    assert after.startswith(before)  # what was said is kept as it was
    added = [json.loads(line)["type"] for line in after[len(before) :].splitlines()]
    assert added == [
        "run.resumed",
        "sandbox.set",  # where this start runs the model's commands
        "wait.started",  # the persisted probe instant, waited for again
        "probe.finished",
        "turn.started",
        "turn.finished",
        "turn.started",
        "turn.finished",
        "plan.updated",
        "run.finished",
    ]
    # The lines of before and of after read back as the same kinds of event, their keys
    # in the same order (a field added since is the only difference).
    assert all(event_from(json.loads(line)) for line in after.splitlines())
    keys_before = {e["type"]: list(e) for e in map(json.loads, before.splitlines())}
    keys_after = {e["type"]: list(e) for e in map(json.loads, after[len(before) :].splitlines())}
    shared = keys_before.keys() & keys_after.keys()
    assert shared == {"turn.started", "turn.finished", "plan.updated", "wait.started"}
    assert {t: keys_before[t] for t in shared} == {
        t: [key for key in keys_after[t] if key in keys_before[t]] for t in shared
    }
    # The ones added since: usage_warning, then capacity_kind (before ts, run_id, type).
    assert keys_after["turn.finished"][-5:-3] == ["usage_warning", "capacity_kind"]
