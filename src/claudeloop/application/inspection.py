"""What `status`, `logs`, `runs`, `stop`, `wind-down` and `sessions` of a project's
own runs do between parsing and rendering, on the `ProjectRuns` port.

Each reads a run's record only (state.json), or streams its events line by line
(`logs`), so it costs the same after 100,000 events as after ten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from claudeloop.application.errors import NoRun, UsageError
from claudeloop.application.masking import Mask, masked, masked_text
from claudeloop.application.ports import ClaudeSession, ProjectRuns
from claudeloop.application.run_rows import RunPlace, RunRow
from claudeloop.application.run_status import Commit, GitFacts, RunBranch, RunStatus, run_status_of
from claudeloop.domain.loop import ControlCommand

__all__ = ["Mask"]  # what a view masks, said in application.masking; named here too

# What git says of a run's branch in its working directory (the `RunBranches` port's
# `facts`): its name, its commits of the run, their diffstat.
GitFactsOf = Callable[[Path, str], Mapping[str, object]]
# How often `logs -f` looks for new events.
_FOLLOW_SECONDS = 0.3


def takes_effect(command: ControlCommand) -> str:
    """When a stop or wind-down asked of a live run takes effect, in words."""
    match command:
        case ControlCommand.STOP:
            return "at once if waiting, otherwise after the current turn"
        case ControlCommand.WIND_DOWN:
            return "after the current turn, with a handoff summary"


def run_status(
    runs: ProjectRuns,
    run_id: str | None,
    *,
    now: datetime,
    mask: Mask,
    git_facts: GitFactsOf | None = None,
) -> RunStatus:
    """`status`: where the run stands now, ended or not, masked; with `git_facts`, a run
    that commits its turns says its commits and their diffstat as git has them. A run
    that ended without its summary.md (killed after its last save) gets it now."""
    chosen = runs.watched(run_id)
    record = runs.record(chosen)
    runs.finish_summary(chosen, record)
    status = run_status_of(record, now=now, driver_pid=runs.driver(chosen))
    if git_facts is not None and status.branch is not None:
        status = replace(status, branch=_with_git(status, git_facts))
    # The driver masked what it saved; a state.json of an older claudeloop did not; and
    # the commits' subjects are the model's summaries.
    return masked(status, mask)


def _with_git(status: RunStatus, git_facts: GitFactsOf) -> RunBranch:
    branch = status.branch
    assert branch is not None
    try:
        facts = git_facts(Path(branch.work_dir), status.run_id)
    except OSError:
        return branch  # a worktree removed: the record's own facts stay
    listed = facts.get("commits")
    commits = tuple(
        Commit(int(str(each["turn"])), str(each["sha"]), str(each["subject"]))
        for each in (listed if isinstance(listed, list) else [])
        if isinstance(each, Mapping)
    )
    name = facts.get("branch")
    return replace(
        branch,
        name=branch.name or (str(name) if name else None),
        git=GitFacts(commits, str(facts.get("diffstat") or "")),
    )


def run_rows(runs: ProjectRuns, *, now: datetime, mask: Mask) -> list[RunRow]:
    """`runs`: each run of the directory, newest first, said by the read model
    (application.run_facts), masked (a title is a prompt's first line); one whose
    record cannot be read is a row that says so."""
    rows: list[RunRow] = []
    for run_id in runs.run_ids():
        try:
            record = runs.record(run_id)
        except UsageError as error:
            rows.append(masked(RunRow(run_id, None, None, "unreadable", str(error)), mask))
            continue
        status = run_status_of(record, now=now, driver_pid=runs.driver(run_id))
        row = RunRow(run_id, RunPlace(str(record.spec.cwd)), status, status.facts.phase)
        rows.append(masked(row, mask))
    return rows


@dataclass(frozen=True)
class Asked:
    """A stop or wind-down handed to a live run's driver."""

    run_id: str
    pid: int
    command: ControlCommand


def control(runs: ProjectRuns, run_id: str | None, command: ControlCommand) -> Asked:
    """`stop` or `wind-down`: into the control file of the run a live driver drives."""
    chosen = runs.watched(run_id)
    pid = runs.driver(chosen)
    if pid is None:
        doing = command.value.replace("-", " ")  # "nothing to wind down"
        raise NoRun(f"run {chosen} has no live driver; nothing to {doing}")
    try:
        runs.send(chosen, command)
    except OSError as error:
        raise UsageError(
            f"{runs.control_file(chosen)}: cannot be written ({error.strerror}); "
            f"end the run with kill -TERM {pid}"
        ) from None
    return Asked(chosen, pid, command)


@dataclass(frozen=True)
class EventStream:
    """The events of one run as `logs` shows them: where they are, and each line."""

    source: str
    lines: Iterator[bytes]


def run_events(
    runs: ProjectRuns, run_id: str | None, *, follow: bool, sleep: Callable[[float], None]
) -> EventStream:
    """`logs`: the run's events so far; with `follow`, each as it comes until the run
    ends or its driver is gone (a crashed run does not keep -f waiting)."""
    chosen = runs.watched(run_id)

    def lines() -> Iterator[bytes]:
        batch, offset = runs.event_lines(chosen, 0)
        yield from batch
        if not follow:
            return
        while not runs.ended(chosen) and runs.driver(chosen) is not None:
            sleep(_FOLLOW_SECONDS)
            batch, offset = runs.event_lines(chosen, offset)
            yield from batch
        batch, offset = runs.event_lines(chosen, offset)
        yield from batch

    return EventStream(str(runs.events_file(chosen)), lines())


def claude_sessions(runs: ProjectRuns, limit: int, *, mask: Mask) -> list[ClaudeSession]:
    """`sessions`: Claude Code's own sessions of the directory, newest first, masked: a
    session's summary is a prompt it was sent, and a run's prompt carries the model's
    remaining work, the output of a failing check, a note."""
    return [
        replace(session, summary=masked_text(mask, session.summary))
        for session in runs.claude_sessions(limit)
    ]
