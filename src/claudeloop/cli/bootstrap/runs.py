"""The composition root of a run: the real adapters wired into the runner, for the use
cases of application/launching.py to drive; and doctor's checks. Tests wire fakes into
the same runner."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.adapters import run_index
from claudeloop.adapters.backend_advice import ProfileAdvisor, profile_in_use
from claudeloop.adapters.claude_code.backend import Backend, account, run_gateway
from claudeloop.adapters.claude_code.stderr_log import StderrLog
from claudeloop.adapters.fleet.lease_file import fenced_by_lease
from claudeloop.adapters.git_checkpoint import run_checkpoints
from claudeloop.adapters.interrupts import SignalInterrupts
from claudeloop.adapters.notify.sender import notifier_for
from claudeloop.adapters.plan_file import PlanFileOnDisk
from claudeloop.adapters.run_boundary import run_checks, start_posture
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.redacted import RedactedEvents, redacted_record
from claudeloop.adapters.run_directory.starting import lock as take_lock
from claudeloop.adapters.run_directory.starting import ready_to_drive
from claudeloop.adapters.run_secrets import run_redactor
from claudeloop.adapters.shared_capacity import shared
from claudeloop.adapters.shared_capacity.sharing_gateway import woken_by_the_board
from claudeloop.adapters.system_clock import SystemClock, WallClockSleeper
from claudeloop.adapters.working_tree import WorkingTreeOnDisk
from claudeloop.application.driving import WiredRun
from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.launching import RunLock
from claudeloop.application.ports import Advisor, EventSink, Gateway
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
    """The gateway of the run's turns (`read_only`: of its reviews), sharing capacity in
    `capacity_dir` (None: alone) or on the board of its `seat` in a fleet; `known_at`:
    when the run last asked the service."""
    return shared(
        run_gateway(backend, spec, directory, events=events, read_only=read_only),
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
    advisor: Advisor | None = None,
) -> WiredRun:
    """The run's parts, its lock held (`lock`, a resume's, or taken here): the event log,
    the screen and notifications, the gateway stack, the runner. `seat`: the run's seat
    in a fleet (`take_fleet_seat`): a worker's run saves while its lease holds."""
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
    notifier = notifier_for(notify, record, failures=log, redactor=redactor, directory=directory)
    events = RedactedEvents(Tee(log, view, notifier), redactor)
    gateway_of = functools.partial(make_gateway, directory, capacity_dir=capacity_dir, seat=seat)
    known_at = record.last_turn_started_at
    chosen_gateway = gateway or gateway_of(spec, backend, events=events, known_at=known_at)
    checkpoints = run_checkpoints(spec, record.run_id, redactor)
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
        profiles=(lambda name: _detour(gateway_of, spec, detours(name)))
        if detours is not None
        else None,
        # A switch-model detour: the run's own backend and session, another model.
        models=lambda model: gateway_of(replace(spec, model=model), backend),
        advisor=advisor or ProfileAdvisor(profile_in_use(backend, detours)),
        checks=run_checks(spec, directory.path / "checks", redactor.text),
        check_logs=directory.path / "checks",
        # A review's session shares no capacity record: it is read-only, never waits.
        reviewer=gateway_of(spec, backend, capacity_dir=None, events=events, read_only=True)
        if spec.verify.review
        else None,
        tree=WorkingTreeOnDisk(spec.work_dir),
        login_ends_at=login_ends_at,
        checkpoints=checkpoints,
        new_session_if_gone=seat.unattended,
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
        interrupts=SignalInterrupts(terminate_once=seat.unattended),
        failure_sinks=(log, view),
        write_summary=directory.write_summary,
        # What the run tells from here (summary.md, --json) is what state.json says.
        mask_secrets=lambda ended: redacted_record(ended, redactor),
        close=close,
    )


def _detour(gateway_of: Callable[..., Gateway], spec: RunSpec, other: Backend) -> Gateway:
    return gateway_of(replace(spec, model=other.model), other)
