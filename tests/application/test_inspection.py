"""status, runs, stop and wind-down of a project's own runs, on runs in memory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from claudeloop.application.errors import UsageError
from claudeloop.application.inspection import (
    claude_sessions,
    control,
    run_events,
    run_rows,
    run_status,
    takes_effect,
)
from claudeloop.application.ports import ClaudeSession
from claudeloop.domain.loop import ControlCommand, Outcome, Phase
from tests.application.fakes import START, MemoryRuns
from tests.application.test_fleet import waiting_record
from tests.json_view import plain


def _masked(view: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v.replace("SECRET", "***").replace("s3cret", "***") if isinstance(v, str) else v
        for k, v in view.items()
    }


def two_runs() -> MemoryRuns:
    ended = waiting_record("r1")
    ended = replace(ended, state=replace(ended.state, phase=Phase.COMPLETE, outcome=Outcome.DONE))
    return MemoryRuns(waiting_record("r2"), ended)


def test_status_is_of_the_live_run_masked_and_says_its_driver() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 4242
    view = plain(run_status(runs, None, now=START, mask=_masked).to_json())
    assert (view["run_id"], view["phase"], view["driver_pid"]) == ("r2", "waiting", 4242)
    assert view["summary"] == "wrote a; the key is ***"
    assert runs.summaries == []  # not ended: no summary to finish


def test_status_of_a_run_that_ended_without_its_summary_writes_it() -> None:
    runs = two_runs()
    view = run_status(runs, "r1", now=START, mask=_masked)
    assert (view.facts.outcome, view.driver_alive) == ("done", False)
    assert runs.summaries == ["r1"]


def test_the_rows_are_newest_first_and_an_unreadable_record_is_a_row_saying_so() -> None:
    runs = two_runs()
    runs.unreadable.add("r2")
    runs.drivers["r1"] = 7
    rows = [plain(row.to_json()) for row in run_rows(runs, now=START, mask=_masked)]
    assert rows[0]["run_id"] == "r2"
    assert rows[0]["phase"] == "unreadable"
    assert "unreadable" in rows[0]["problem"]
    assert {key: rows[1][key] for key in _ROW_KEYS} == {
        "run_id": "r1",
        "started_at": START.isoformat(),
        "phase": "complete",
        "outcome": "done",
        "answered": 2,
        "dollars": 0.42,
        "session_id": None,
        "driver_alive": True,
    }
    # The read model's words beside them (application.run_facts).
    assert rows[1]["said"]["turns"] == "3 sent, 2 answered, 1 refused"
    assert rows[1]["said"]["dollars"] == "$0.42"
    assert run_rows(MemoryRuns(), now=START, mask=_masked) == []


# The keys `runs --json` had before the read model, which scripts may read; `turns`
# is `answered` now, named for what it counts.
_ROW_KEYS = (
    "run_id",
    "started_at",
    "phase",
    "outcome",
    "answered",
    "dollars",
    "session_id",
    "driver_alive",
)


def test_only_a_run_with_a_live_driver_is_asked_and_the_words_say_when() -> None:
    runs = two_runs()
    with pytest.raises(UsageError, match=r"run r2 has no live driver; nothing to stop"):
        control(runs, None, ControlCommand.STOP)
    runs.drivers["r2"] = 99
    asked = control(runs, None, ControlCommand.WIND_DOWN)
    assert (asked.run_id, asked.pid) == ("r2", 99)
    assert runs.sent == [("r2", ControlCommand.WIND_DOWN)]
    assert takes_effect(ControlCommand.WIND_DOWN) == (
        "after the current turn, with a handoff summary"
    )
    assert takes_effect(ControlCommand.STOP).startswith("at once if waiting")


def test_a_control_file_that_cannot_be_written_names_it_and_the_way_out() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 99
    runs.refuse_writes = True
    with pytest.raises(UsageError) as refused:
        control(runs, "r2", ControlCommand.STOP)
    assert str(refused.value) == (
        "/src/app/.claudeloop/runs/r2/control: cannot be written (Permission denied); "
        "end the run with kill -TERM 99"
    )


def test_logs_are_the_whole_lines_written_so_far_of_the_watched_run() -> None:
    runs = two_runs()
    runs.events["r2"] = b'{"type": "run.started"}\n{"type": "turn.st'
    stream = run_events(runs, None, follow=False, sleep=_never)
    assert list(stream.lines) == [b'{"type": "run.started"}\n']
    assert stream.source == "/src/app/.claudeloop/runs/r2/events.jsonl"


def test_logs_of_a_run_with_no_events_yet_are_none() -> None:
    assert list(run_events(two_runs(), "r1", follow=False, sleep=_never).lines) == []


def test_following_logs_reads_each_line_as_it_comes_until_the_run_ends() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 4242
    runs.events["r2"] = b"1\n"
    writes = iter([b"2\n3", b"\n", b"4\n"])

    def the_run_goes_on(runs: MemoryRuns) -> None:
        more = next(writes, None)
        if more is None:
            record = runs.records["r2"]
            runs.records["r2"] = replace(record, state=replace(record.state, phase=Phase.COMPLETE))
        else:
            runs.events["r2"] += more

    runs.on_read = the_run_goes_on
    slept: list[float] = []
    lines = list(run_events(runs, None, follow=True, sleep=slept.append).lines)
    assert lines == [b"1\n", b"2\n", b"3\n", b"4\n"]
    assert len(slept) == 3


def test_following_the_logs_of_a_run_without_a_driver_ends_at_once() -> None:
    runs = two_runs()
    runs.events["r2"] = b"1\n"
    assert list(run_events(runs, "r2", follow=True, sleep=_never).lines) == [b"1\n"]


def test_following_the_logs_of_an_unreadable_run_waits_on_its_driver() -> None:
    runs = two_runs()
    runs.unreadable.add("r2")
    runs.drivers["r2"] = 1
    slept: list[float] = []

    def driver_gone(runs: MemoryRuns) -> None:
        if slept:
            runs.drivers.clear()

    runs.on_read = driver_gone
    assert list(run_events(runs, "r2", follow=True, sleep=slept.append).lines) == []
    assert len(slept) == 1


def _unmasked(view: dict[str, Any]) -> dict[str, Any]:
    return view


def test_sessions_are_claude_codes_own_newest_first_up_to_the_limit() -> None:
    runs = two_runs()
    runs.sessions = [
        ClaudeSession("s2", "the second", START),
        ClaudeSession("s1", "the first", START),
    ]
    assert [s.session_id for s in claude_sessions(runs, 1, mask=_unmasked)] == ["s2"]
    assert claude_sessions(runs, 5, mask=_unmasked)[1].to_json() == {
        "session_id": "s1",
        "summary": "the first",
        "last_modified": START.isoformat(),
    }


def test_a_sessions_summary_is_masked_it_is_a_prompt_the_run_sent() -> None:
    runs = two_runs()
    runs.sessions = [ClaudeSession("s1", "Remaining work: rotate s3cret", START)]
    (shown,) = claude_sessions(runs, 5, mask=_masked)
    assert (shown.session_id, shown.summary) == ("s1", "Remaining work: rotate ***")


def _never(_seconds: float) -> None:
    raise AssertionError("no wait without --follow and a live driver")


def _committing(run_id: str) -> Any:
    record = waiting_record(run_id)
    spec = replace(record.spec, checkpoint=True, worktree=Path("/src/app-wt"))
    return replace(record, spec=spec, checkpointed_turn=2)


def test_status_of_a_committing_run_says_its_commits_as_git_has_them_masked() -> None:
    runs = MemoryRuns(_committing("r1"))
    asked: list[tuple[Path, str]] = []

    def git_facts(work_dir: Path, run_id: str) -> dict[str, object]:
        asked.append((work_dir, run_id))
        commits = [{"turn": 1, "sha": "a" * 40, "subject": "uses the key SECRET"}]
        return {"branch": "claudeloop/r1", "commits": commits, "diffstat": "1 file changed"}

    found = run_status(runs, "r1", now=START, mask=_masked, git_facts=git_facts)
    assert asked == [(Path("/src/app-wt"), "r1")]
    assert found.branch is not None
    assert found.branch.git is not None
    assert [(c.turn, c.subject) for c in found.branch.git.commits] == [(1, "uses the key ***")]
    shown = plain(found.to_json())["branch"]
    assert (shown["commits"][0]["sha"], shown["diffstat"]) == ("a" * 40, "1 file changed")


def test_status_of_a_committing_run_whose_worktree_is_gone_keeps_the_records_facts() -> None:
    runs = MemoryRuns(_committing("r1"))

    def gone(_work_dir: Path, _run_id: str) -> dict[str, object]:
        raise FileNotFoundError("no worktree")

    found = run_status(runs, "r1", now=START, mask=_masked, git_facts=gone)
    assert found.branch is not None
    assert (found.branch.name, found.branch.git) == ("claudeloop/r1", None)
    # Without git, status --json says what it always did: no commits key to read.
    assert "commits" not in plain(found.to_json())["branch"]
