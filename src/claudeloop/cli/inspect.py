"""Seeing and steering a run from another terminal: status, logs, runs, stop, wind-down;
and the Claude sessions of a directory. Parsing and rendering: each command's work is
in application/inspection.py, on the project's runs the composition root gives.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from claudeloop.application.durations import duration_said, instant_said
from claudeloop.application.errors import NoRun
from claudeloop.application.summary import gone_sessions_line, lost_sessions_line
from claudeloop.cli.instants import local_instant
from claudeloop.cli.output import json_line, print_json
from claudeloop.cli.params import working_directory
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.text import count, first_line

if TYPE_CHECKING:
    from claudeloop.application.inspection import Mask
    from claudeloop.application.run_rows import RunRow
    from claudeloop.application.run_status import RunBranch, RunStatus


def status(*, cwd: Path | None, run_id: str | None, as_json: bool) -> None:
    from claudeloop.application.inspection import run_status
    from claudeloop.cli.bootstrap import project_runs, run_branches, shown_masked

    try:
        found = run_status(
            project_runs(working_directory(cwd)),
            run_id,
            now=datetime.now(UTC),
            mask=shown_masked(),
            git_facts=run_branches().facts,
        )
    except NoRun as none:
        _say_no_run(none, as_json=as_json)
        return
    if as_json:
        print_json(found.to_json())
        return
    alive = f"driver alive (pid {found.driver_pid})" if found.driver_alive else "no driver"
    show_status(found, alive)


def show_status(found: RunStatus, driver: str) -> None:
    """`status` as lines; `driver` says who drives the run (a pid here, a worker)."""
    facts = found.facts
    lines = [
        # An ended run by how it ended: a stop is no failure, whatever its phase.
        f"run {facts.run_id}: "
        + (f"{facts.outcome}: {facts.reason}" if facts.outcome else facts.phase)
        + f" · {driver}",
        f"task: {facts.title}",
        f"turns {facts.turns_said} · {count(facts.probes, 'probe')} · "
        f"{facts.dollars_said} · waited {facts.waited_said}",
        facts.times_said,
        f"capacity: {found.capacity}",
    ]
    if found.overage_turns:
        now = "in use now" if found.overage_in_use else "not in use now"
        lines.append(
            f"paid overage: {found.overage_turns} turns answered on it (extra usage "
            f"billed to the account); {now}"
        )
    if found.sandbox:
        lines.append(f"{found.sandbox} · blocked {found.blocked}")
    if found.lost_sessions:
        lines.append(lost_sessions_line(found.lost_sessions))
    if found.gone_sessions:
        lines.append(gone_sessions_line(found.gone_sessions))
    if found.next_probe_in_seconds is not None and found.next_probe_at is not None:
        in_ = duration_said(found.next_probe_in_seconds)
        at = local_instant(found.next_probe_at, now=datetime.now(UTC))
        lines.append(f"waiting; next probe in {in_} (at {at})")
    if found.detour is not None:
        detour = found.detour
        lines.append(
            f"on {detour.to} while the run's own backend waits: "
            f"{detour.awaiting}; next check in {duration_said(detour.check_in_seconds or 0.0)}"
        )
    if facts.plan_said:
        lines.append(f"plan: {facts.plan_said}")
    if facts.left:
        lines.append(f"left ({facts.left_from_said}): {'; '.join(facts.left)}")
    lines += [_note_line(note) for note in found.pending_notes]
    for check in found.verification:
        where = f"; output in {check.output}" if check.output else ""
        lines.append(
            f"verify: {check.command}: {check.ended} ({duration_said(check.seconds)}){where}"
        )
    if found.summary:
        lines.append(f"last summary: {first_line(found.summary, longest=200)}")
    lines += _branch_status(found.branch)
    click.echo("\n".join(lines))


def _note_line(note: str) -> str:
    """A note left for the run, said as what it is: waiting for the next turn."""
    return f"note waiting for the next turn: {first_line(note, longest=200)}"


def _branch_status(branch: RunBranch | None) -> list[str]:
    if branch is None:
        return []
    commits = branch.git.commits if branch.git is not None else ()
    turns = ", ".join(str(commit.turn) for commit in commits) or "none yet"
    lines = [f"branch: {branch.name or '-'} · {count(len(commits), 'commit')} (turns {turns})"]
    if branch.worktree:
        lines.append(f"worktree: {branch.worktree}")
    if branch.git is not None and branch.git.diffstat:
        lines.append(f"changed: {branch.git.diffstat}")
    return lines


def logs(*, cwd: Path | None, run_id: str | None, follow: bool, as_json: bool) -> None:
    from claudeloop.application.inspection import run_events
    from claudeloop.cli.bootstrap import project_runs, shown_masked

    stream = run_events(
        project_runs(working_directory(cwd)), run_id, follow=follow, sleep=time.sleep
    )
    print_event_lines(stream.lines, stream.source, as_json=as_json, mask=shown_masked())


def print_event_lines(lines: Iterable[bytes], source: str, *, as_json: bool, mask: Mask) -> None:
    """Each line of an events.jsonl as it is (--json) or as a readable line, masked (the
    driver masked what it wrote; a line of an older claudeloop it did not); a line that
    is no event is skipped with a warning naming `source`."""
    for raw in lines:
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            continue
        try:
            event = json.loads(text)
        except json.JSONDecodeError:
            click.echo(f"claudeloop: warning: {source}: skipped an unreadable line", err=True)
            continue
        if isinstance(event, dict):
            masked = dict(mask(event))
            # A line the mask left as it was is printed as written, byte for byte.
            text = text if masked == event else json_line(masked)
            event = masked
        if as_json:
            click.echo(text)
        elif isinstance(event, dict):
            # Here, not above: the screen's renderer loads rich's live display and every
            # event, which `status` and `runs` (this module's too) need not.
            from claudeloop.cli.display import log_line

            click.echo(log_line(event))
        else:
            click.echo(
                f"claudeloop: warning: {source}: skipped a line that is not an event object",
                err=True,
            )


def runs(*, cwd: Path | None, as_json: bool) -> None:
    from claudeloop.application.inspection import run_rows
    from claudeloop.cli.bootstrap import project_runs, run_mask

    directory = working_directory(cwd)
    rows = run_rows(project_runs(directory), now=datetime.now(UTC), mask=run_mask(directory))
    if as_json:
        print_json([row.to_json() for row in rows])
        return
    if not rows:
        # Runs of this directory may have been started with --cwd from elsewhere, and
        # a person may look for the machine's runs here.
        click.echo(
            f"no claudeloop runs in {directory}; every run of this machine: claudeloop runs --all"
        )
        return
    _echo_rows(rows, [_columns(row) for row in rows])


def _said(row: RunRow) -> str:
    """A row's turns, probes, money and title, in the words of the read model."""
    facts = row.facts
    if facts is None:
        return "-"
    probes = count(facts.probes, "probe")
    return f"turns {facts.turns_said} · {probes} · {facts.dollars_said} · {facts.title}"


def _echo_rows(rows: list[RunRow], columns: list[list[str]]) -> None:
    """Each run's line, aligned, and under it when it started and ended (or how long it
    has been running) and why it stopped."""
    for row, line in zip(rows, aligned(columns), strict=True):
        click.echo(line)
        facts = row.facts
        if facts is not None:
            why = f"; {facts.reason}" if facts.reason and facts.outcome else ""
            click.echo(f"  {facts.times_said}{why}")


def machine_runs(*, as_json: bool) -> None:
    from claudeloop.application.dashboard import machine_rows
    from claudeloop.cli.bootstrap import project_runs, run_index, run_masks

    rows = machine_rows(run_index(), project_runs, now=datetime.now(UTC), mask=run_masks())
    if as_json:
        print_json([row.to_json() for row in rows])
        return
    if not rows:
        click.echo("no claudeloop runs started on this machine")
        return
    _echo_rows(rows, [[*_columns(row), row.place.cwd if row.place else "-"] for row in rows])


def _columns(row: RunRow) -> list[str]:
    """A row of `runs`: its id, its outcome (or phase), its turns, money and title."""
    live = " (live)" if row.driver_alive else ""
    return [row.run_id, row.outcome or row.phase, f"{_said(row)}{live}"]


def aligned(rows: list[list[str]]) -> list[str]:
    """`rows` as lines whose columns start at the same place, each column as wide as its
    widest cell (a run id of any length, a gone run's short row), two spaces apart."""
    widths = [max(len(row[at]) for row in rows) for at in range(len(rows[0]))] if rows else []
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def control(
    *, cwd: Path | None, run_id: str | None, command: ControlCommand, as_json: bool = False
) -> None:
    from claudeloop.application.inspection import control as ask
    from claudeloop.application.inspection import takes_effect
    from claudeloop.cli.bootstrap import project_runs

    try:
        asked = ask(project_runs(working_directory(cwd)), run_id, command)
    except NoRun as none:
        _say_no_run(none, as_json=as_json, extra={"pid": None, "command": command.value})
        return
    if as_json:
        print_json({"run_id": asked.run_id, "pid": asked.pid, "command": command.value})
        return
    click.echo(
        f"claudeloop: asked run {asked.run_id} (pid {asked.pid}) to "
        f"{command.value.replace('-', ' ')}: "
        f"{takes_effect(command)}"
    )


def _say_no_run(none: NoRun, *, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """No run to show or end: said in a line, exit 0 (README, exit codes); with --json
    the object names no run and says why."""
    if as_json:
        print_json({"run_id": None, **(extra or {}), "reason": str(none)})
        return
    click.echo(f"claudeloop: {none}")


def sessions(*, cwd: Path | None, as_json: bool, limit: int) -> None:
    from claudeloop.application.inspection import claude_sessions
    from claudeloop.cli.bootstrap import project_runs, run_mask

    directory = working_directory(cwd)
    found = claude_sessions(project_runs(directory), limit, mask=run_mask(directory))
    if as_json:
        print_json([session.to_json() for session in found])
        return
    if not found:
        click.echo(f"no Claude sessions in {directory}")
        return
    for s in found:
        summary = first_line(s.summary, longest=100)
        click.echo(f"{instant_said(s.last_modified)}  {s.session_id}  {summary}")
