"""The composition root of a run: the real adapters wired into the runner, the wired run
handed to the use case that drives it (application/driving.py, called by
application/launching.py); and the ports of doctor's checks. Tests wire fakes into the
same runner.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.adapters import run_index
from claudeloop.adapters.backend_advice import ProfileAdvisor, profile_in_use
from claudeloop.adapters.claude_code.backend import (
    Backend,
    account,
    backend_for,
    claude_code,
    cli_path_from_environment,
)
from claudeloop.adapters.claude_code.stderr_log import StderrLog
from claudeloop.adapters.fleet.lease_file import fenced_by_lease
from claudeloop.adapters.git_checkpoint import GitCheckpoints
from claudeloop.adapters.interrupts import SignalInterrupts
from claudeloop.adapters.notify.sender import notifier_for
from claudeloop.adapters.plan_file import PlanFileOnDisk
from claudeloop.adapters.run_boundary import check_wrapper, start_posture, turn_boundary
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.finding import take_lock
from claudeloop.adapters.run_directory.redacted import RedactedEvents, redacted_record
from claudeloop.adapters.run_directory.starting import ready_to_drive
from claudeloop.adapters.run_secrets import run_redactor
from claudeloop.adapters.shared_capacity import shared
from claudeloop.adapters.shared_capacity.sharing_gateway import woken_by_the_board
from claudeloop.adapters.system_clock import SystemClock, WallClockSleeper
from claudeloop.adapters.verification_commands import VerificationCommands
from claudeloop.adapters.working_tree import WorkingTreeOnDisk
from claudeloop.application.driving import WiredRun
from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.launching import RunLock
from claudeloop.application.ports import DoctorChecks, EventSink, Gateway
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.runner import Runner
from claudeloop.cli.display import ConsoleView, Screen, Tee

if TYPE_CHECKING:
    from claudeloop.adapters.notify.sender import NotifyTargets


def make_gateway(
    directory: RunDirectory,
    spec: RunSpec,
    backend: Backend,
    capacity_dir: Path | None = None,
    events: EventSink | None = None,
    *,
    read_only: bool = False,
    known_at: datetime | None = None,
    seat: FleetSeat,
) -> Gateway:
    """The gateway of the run's turns; `read_only`: of its independent reviews.
    `capacity_dir`: where it shares capacity with the loops on its account (None: this
    loop alone). `known_at`: when the run last asked the service (its last turn's
    start). `seat`: the run's seat in a fleet, whose board it shares capacity on."""
    chosen = claude_code(
        backend,
        cwd=spec.work_dir,
        model=spec.model,
        permission_mode=spec.permission_mode,
        done_marker=spec.done_marker,
        stderr_log=directory.debug_log_path,
        redactor=directory.redactor,
        read_only=read_only,
        # The run directory's control file: a stop ends a turn stuck in the CLI's retries.
        control=directory,
        events=events,
        boundary=turn_boundary(spec, start_posture(spec), [os.environ, backend.env]),
        silence_seconds=spec.silence_seconds,
        # A review's session is never billed from a cut: nothing of it is kept.
        responses_log=None if read_only else directory.responses_log_path,
    )
    return shared(
        chosen,
        capacity_dir,
        account=lambda: account(backend, spec.model),
        fleet_board=seat.board,
        run_id=directory.run_id,
        known_at=known_at,
        policy=spec.wait_policy,
        note=StderrLog(directory.debug_log_path, redactor=directory.redactor).note,
    )


def wire_run(
    directory: RunDirectory,
    record: RunRecord,
    *,
    backend: Backend,
    quiet: bool,
    verbose: bool = False,
    gateway: Gateway | None = None,
    notify: NotifyTargets | None = None,
    detours: Callable[[str], Backend] | None = None,
    capacity_dir: Path | None = None,
    lock: RunLock | None = None,
    login_ends_at: datetime | None = None,
    seat: FleetSeat,
) -> WiredRun:
    """The run's parts, its lock taken: the event log, the screen and notifications, the
    gateway stack, the runner. `capacity_dir`: where loops on one account share
    capacity (None: this loop alone). `lock`: the run's lock, when the caller took it
    before it read the record (a resume), else taken here. `login_ends_at`: when the
    stored claude.ai login ends. `seat`: the run's seat in a fleet, taken from the
    environment at the process's entry (`take_fleet_seat`): a worker's run saves while
    its lease holds and shares the fleet's board."""
    spec = record.spec
    held: RunLock = lock or take_lock(directory)
    clock = SystemClock()
    # The backend's credentials (a profile's token) are secrets; its URL and models not.
    redactor = run_redactor(spec, backend, notify, detours)
    # From here on every file of the run masks them: state.json, debug.log, events.
    directory, log = ready_to_drive(directory, record, held, redactor=redactor, clock=clock)
    run_index.register_run(
        directory.path, record, account=account(backend, spec.model) if capacity_dir else None
    )
    view = Screen(ConsoleView(quiet=quiet, verbose=verbose))
    notifier = notifier_for(
        notify, record, failures=log, redactor=redactor, debug_log=directory.debug_log_path
    )
    events = RedactedEvents(Tee(log, view, notifier), redactor)
    chosen_gateway = gateway or make_gateway(
        directory,
        spec,
        backend,
        capacity_dir,
        events=events,
        known_at=record.last_turn_started_at,
        seat=seat,
    )
    # A commit per answered turn, on the worktree's branch or the current one.
    checkpoints = (
        GitCheckpoints(
            spec.work_dir,
            record.run_id,
            holds_secret=redactor.knows_one_in,
            redact=redactor.text,
            own=spec.worktree is not None,
        )
        if spec.checkpoint
        else None
    )

    runner = Runner(
        gateway=chosen_gateway,
        clock=clock,
        # A wait shared with the account's other loops ends when one of them finds it open.
        sleeper=woken_by_the_board(chosen_gateway, WallClockSleeper(directory, clock)),
        events=events,
        store=fenced_by_lease(directory, seat),  # a worker's run: saved while its lease holds
        control=directory,
        plans=PlanFileOnDisk(),
        # A switch-profile detour: the profile's backend, with its own model.
        profiles=(lambda name: _detour(directory, spec, detours(name), capacity_dir, seat))
        if detours is not None
        else None,
        # A switch-model detour: the run's own backend and session, another model.
        models=lambda model: make_gateway(
            directory, replace(spec, model=model), backend, capacity_dir, seat=seat
        ),
        advisor=ProfileAdvisor(profile_in_use(backend, detours)),
        checks=VerificationCommands(
            spec.work_dir,
            timeout_seconds=spec.verify_timeout_seconds,
            redact=redactor.text,
            note=directory.path / "checks" / "running.json",
            boundary=check_wrapper(spec, start_posture(spec)),
        ),
        check_logs=directory.path / "checks",
        reviewer=make_gateway(directory, spec, backend, events=events, read_only=True, seat=seat)
        if spec.verify.review
        else None,
        tree=WorkingTreeOnDisk(spec.work_dir),
        login_ends_at=login_ends_at,
        checkpoints=checkpoints,
        # A worker's run has nobody at hand: taken over where its transcript is not, it
        # goes on in a new session.
        new_session_if_gone=seat.lease is not None,
        posture=start_posture(spec),
    )

    def close() -> None:
        try:
            if checkpoints is not None:
                checkpoints.close()
            view.close()
            notifier.close()
            log.close()
            directory.clear_control()
        finally:
            held.release()

    return WiredRun(
        runner=runner,
        gateway=chosen_gateway,
        files=directory,
        interrupts=SignalInterrupts(),
        failure_sinks=(log, view),
        write_summary=directory.write_summary,
        # What the run tells from here (summary.md, --json) is what state.json says.
        mask_secrets=lambda ended: redacted_record(ended, redactor),
        close=close,
    )


def _detour(
    directory: RunDirectory,
    spec: RunSpec,
    other: Backend,
    capacity_dir: Path | None,
    seat: FleetSeat,
) -> Gateway:
    model = other.profile.model if other.profile is not None else None
    return make_gateway(directory, replace(spec, model=model), other, capacity_dir, seat=seat)


def doctor_checks(cwd: Path, profile: str | None) -> DoctorChecks:
    """The checks of `doctor` on this machine; its model probe goes through the gateway
    a run's turns go through, its CLI's retries set low by the probe itself."""
    from claudeloop.adapters.doctor_checks import MachineChecks, ProbeSetup

    def probe_gateway(setup: ProbeSetup) -> Gateway:
        return claude_code(
            replace(backend_for(setup.profile), cli_path=setup.cli_path),
            cwd=setup.cwd,
            model=setup.model,
            permission_mode=setup.permission_mode,
            stderr_log=setup.stderr_log,
        )

    return MachineChecks(
        cwd, profile, configured_cli=cli_path_from_environment(), probe_gateway=probe_gateway
    )
