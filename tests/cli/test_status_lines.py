"""`status` as lines: how a check ended is said as the live line and the summary say it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path, PurePath

import pytest

from claudeloop.application.run_status import Commit, GitFacts, run_status_of
from claudeloop.application.summary import check_line
from claudeloop.cli.inspect import show_status
from claudeloop.domain.verification import CheckCommand, CheckResult
from tests.cli.test_run_directory_commands import waiting_run


def test_status_says_each_check_as_the_summary_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = waiting_run(tmp_path)
    record = directory.load()
    checks = (
        CheckResult(
            command=CheckCommand.parse("make test"),
            exit_code=2,
            seconds=1.25,
            output_path=PurePath("/logs/turn-2-check-1.log"),
        ),
        CheckResult(
            command=CheckCommand.parse("ruff check"),
            exit_code=None,
            seconds=0.0,
            start_error="No such file: ruff",
        ),
    )
    record = replace(record, state=replace(record.state, last_checks=checks))
    show_status(run_status_of(record, now=datetime.now(UTC), driver_pid=None), "no driver")
    out = capsys.readouterr().out
    assert "verify: make test: failed: exit 2 (1s); output in /logs/turn-2-check-1.log" in out
    assert "verify: ruff check: failed: could not start (No such file: ruff) (0s)\n" in out
    assert "failed: exit 2 (1s); output in /logs/turn-2-check-1.log" in check_line(checks[0])


def test_status_and_the_summary_name_the_branch_its_commits_and_the_diffstat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from claudeloop.application.summary import summary_markdown

    directory = waiting_run(tmp_path)
    record = directory.load()
    spec = replace(record.spec, worktree=tmp_path / "wt", base_branch="main", checkpoint=True)
    record = replace(record, spec=spec, checkpointed_turn=3)
    data = run_status_of(record, now=datetime.now(UTC), driver_pid=None)
    branch = data.branch
    assert branch is not None
    assert branch.name == f"claudeloop/{record.run_id}"
    assert branch.last_committed_turn == 3
    # What git says, as `status` adds it.
    commits = (Commit(1, "a" * 40, "x"), Commit(3, "b" * 40, "y"))
    git = GitFacts(commits, "2 files changed, 2 insertions(+)")
    show_status(replace(data, branch=replace(branch, git=git)), "no driver")
    out = capsys.readouterr().out
    assert f"branch: claudeloop/{record.run_id} · 2 commits (turns 1, 3)" in out
    assert f"worktree: {tmp_path / 'wt'}" in out
    assert "changed: 2 files changed, 2 insertions(+)" in out
    summary = summary_markdown(record)
    assert f"- Branch: claudeloop/{record.run_id} in the worktree {tmp_path / 'wt'}" in summary
    assert f"`claudeloop merge {record.run_id}`" in summary
    plain = replace(record, spec=replace(record.spec, worktree=None, checkpoint=False))
    assert run_status_of(plain, now=datetime.now(UTC), driver_pid=None).branch is None
    assert "Branch" not in summary_markdown(plain)


def test_status_says_a_note_waits_for_the_next_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = waiting_run(tmp_path).load()
    notes = ("use the staging database", "and\nmind the flaky test")
    record = replace(record, state=replace(record.state, notes=notes))
    show_status(run_status_of(record, now=datetime.now(UTC), driver_pid=None), "no driver")
    out = capsys.readouterr().out
    assert "note waiting for the next turn: use the staging database\n" in out
    assert "note waiting for the next turn: and\n" in out  # its first line


def test_status_and_the_summary_mark_a_spend_that_includes_an_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from claudeloop.application.summary import summary_markdown
    from claudeloop.domain.budget import BudgetLedger

    record = waiting_run(tmp_path).load()
    # A turn cut off by a kill -9, sent again: $0.0004 of what it billed an estimate;
    # and probes since.
    ledger = BudgetLedger(
        turns=2, attempts=2, dollars=0.0056, estimated_dollars=0.0004, probe_dollars=0.0008
    )
    record = replace(record, state=replace(record.state, ledger=ledger))
    data = run_status_of(record, now=datetime.now(UTC), driver_pid=None)
    said = (
        "$0.0056 (turns $0.0048 + probes $0.0008; ≈, includes $0.0004 estimated for a turn cut off)"
    )
    assert data.facts.dollars_said == said
    assert data.to_json()["estimated_dollars"] == 0.0004
    show_status(data, "no driver")
    assert said in capsys.readouterr().out
    assert f"- Spend: {said}" in summary_markdown(record)


def test_a_spend_with_no_estimate_is_said_plainly(tmp_path: Path) -> None:
    from claudeloop.domain.budget import BudgetLedger

    record = waiting_run(tmp_path).load()
    ledger = BudgetLedger(turns=1, attempts=1, dollars=0.0048)
    record = replace(record, state=replace(record.state, ledger=ledger))
    data = run_status_of(record, now=datetime.now(UTC), driver_pid=None)
    assert data.facts.dollars_said == "$0.0048"
