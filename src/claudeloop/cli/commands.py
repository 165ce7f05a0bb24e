"""`run` and `resume`: their flags read, the use cases called, the end rendered."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from claudeloop.application.driving import drive_run
from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.records import RunRecord
from claudeloop.application.run_spec import (
    new_spec,
    profile_to_resume_with,
    refuse_unwritable,
    refuse_unwritable_run_files,
    resumed_model,
    resumed_record,
)
from claudeloop.application.settings import MODEL, PROFILE, WORKTREE, WORKTREE_FROM
from claudeloop.cli.bootstrap import (
    Backend,
    backend_for,
    checked_run_id,
    create_directory,
    find_run,
    load_record,
    login_ends,
    new_record,
    refuse_beside_a_live_run,
    refuse_checkpoint_outside_git,
    take_lock,
    tell_missing_end,
    why_no_runs_root,
    why_not_writable,
    wire_run,
    with_worktree,
    write_missing_summary,
)
from claudeloop.cli.bootstrap.configuration import (
    backend_profile,
    configuration,
    detours,
    notify_targets,
    profile_check,
    refuse_no_base_url,
    shared_capacity_dir,
)
from claudeloop.cli.login import refuse_no_credentials
from claudeloop.cli.output import finish
from claudeloop.cli.params import working_directory
from claudeloop.cli.prompt_source import task_from_options
from claudeloop.domain.login import login_standing, login_warning, run_could_end_by
from claudeloop.domain.loop import Outcome

if TYPE_CHECKING:
    from claudeloop.cli.bootstrap import DriverLock, RunDirectory
    from claudeloop.cli.bootstrap.configuration import Configuration, NotifyTargets


@dataclass(frozen=True, slots=True)
class Output:
    """The options of `run` and `resume` that are no setting: where, and what is shown."""

    cwd: Path | None = None
    as_json: bool = False
    verbose: int = 0
    quiet: bool = False


def run(
    *,
    plan: Path | None,
    prompt: str | None,
    run_id: str | None,
    output: Output,
    flags: Mapping[str, object],
    seat: FleetSeat,
    backend: Backend | None = None,
    prompt_file: Path | None = None,
) -> None:
    """`flags`: the settings' flags by key, as `loop_options` parsed them. `seat`: what a
    fleet's worker told this process, taken from its environment as it started."""
    if run_id is not None:
        checked_run_id(run_id)
    cwd = working_directory(output.cwd)
    plan_path, task = task_from_options(plan, prompt, prompt_file, cwd=cwd)
    config = configuration(cwd, flags)
    worktree = config.get(WORKTREE)
    if run_id is None and not worktree:
        # Runs in worktrees of their own edit no file of each other's.
        refuse_beside_a_live_run(cwd)
    chosen = backend or backend_for(backend_profile(config, config.get(MODEL)))
    refuse_no_base_url(chosen)
    spec = new_spec(
        config,
        cwd=cwd,
        task=task,
        plan_path=plan_path,
        marker_fallback=chosen.marker_fallback,
        check_profile=profile_check(cwd),
    )
    notify = notify_targets(config)
    refuse_unwritable(spec, run_files=why_no_runs_root(cwd), why_not_writable=why_not_writable)
    refuse_no_credentials(chosen, cwd)
    refuse_checkpoint_outside_git(spec)
    record = new_record(spec, run_id)
    directory = create_directory(record)
    if worktree:
        carry = config.get(WORKTREE_FROM) == "working-tree"
        record, left_behind = with_worktree(directory, record, carry=carry)
        click.echo(
            f"claudeloop: run {record.run_id} works in {record.spec.work_dir} on branch "
            f"claudeloop/{record.run_id}",
            err=True,
        )
        if left_behind:
            click.echo(
                "claudeloop: note: the checkout's uncommitted changes stay where they are "
                "and are not in the worktree (--worktree-from working-tree copies them)",
                err=True,
            )
    _drive(
        directory,
        record,
        chosen,
        config=config,
        notify=notify,
        output=output,
        resumed=False,
        seat=seat,
    )


def resume(
    *,
    run_id: str | None,
    session_id: str | None,
    output: Output,
    flags: Mapping[str, object],
    seat: FleetSeat,
    backend: Backend | None = None,
) -> None:
    """Continue a run with the settings it started with; flags and CLAUDELOOP_*
    variables change them (the files were read when it started). Its profile changes
    only when --profile names the new one."""
    cwd = working_directory(output.cwd)
    directory = find_run(cwd, run_id, session_id)
    # The record is read with the lock held: a driver that ended while this resume
    # started has saved its last turn by then, so no finished turn is sent again and the
    # ledger never goes back.
    refuse_unwritable_run_files(why_not_writable(directory.path))
    lock = take_lock(directory)
    try:
        _resume(directory, lock, backend=backend, output=output, flags=flags, seat=seat)
    except BaseException:
        lock.release()
        raise


def _resume(
    directory: RunDirectory,
    lock: DriverLock,
    *,
    backend: Backend | None,
    output: Output,
    flags: Mapping[str, object],
    seat: FleetSeat,
) -> None:
    cwd = working_directory(output.cwd)
    record = load_record(directory)
    write_missing_summary(directory, record, locked=True)
    if record.state.outcome is Outcome.DONE:
        tell_missing_end(directory, record)
        click.echo(f"claudeloop: run {record.run_id} already finished: done", err=True)
        finish(record, as_json=output.as_json)
    config = configuration(cwd, flags)
    profile = profile_to_resume_with(record, config)
    if profile is not None:
        config = configuration(cwd, {**flags, PROFILE.key: profile})
    chosen = backend or backend_for(backend_profile(config, resumed_model(record.spec, config)))
    refuse_no_base_url(chosen)
    notify = notify_targets(config)
    record = resumed_record(
        record, config, marker_fallback=chosen.marker_fallback, check_profile=profile_check(cwd)
    )
    refuse_unwritable(
        record.spec, run_files=why_not_writable(directory.path), why_not_writable=why_not_writable
    )
    refuse_no_credentials(chosen, record.spec.cwd)
    _drive(
        directory,
        record,
        chosen,
        config=config,
        notify=notify,
        output=output,
        resumed=True,
        lock=lock,
        seat=seat,
    )


def _drive(
    directory: RunDirectory,
    record: RunRecord,
    backend: Backend,
    *,
    config: Configuration,
    notify: NotifyTargets | None,
    output: Output,
    resumed: bool,
    seat: FleetSeat,
    lock: DriverLock | None = None,
) -> None:
    as_json = output.as_json
    # Warned before the first turn when the login ends before the run could.
    login_ends_at, now = login_ends(backend), datetime.now(UTC)
    could_end_by = run_could_end_by(now, record.spec.wait_policy.max_wait)
    warning = login_warning(login_standing(login_ends_at, now=now, could_end_by=could_end_by))
    if warning is not None:
        click.echo(f"claudeloop: warning: {warning}", err=True)
    ended = drive_run(
        wire_run(
            directory,
            record,
            backend=backend,
            quiet=output.quiet or as_json,
            verbose=bool(output.verbose),
            notify=notify,
            detours=detours(record.spec.cwd),
            capacity_dir=shared_capacity_dir(config),
            lock=lock,
            login_ends_at=login_ends_at,
            seat=seat,
        ),
        record,
        resumed=resumed,
    )
    finish(ended, as_json=as_json)
