"""The composition root of a run: wires the real adapters into the runner and hands the
wired run to the use case that drives it (application/driving.py); fills the ports of
doctor's checks; and masks what a command shows of a run with the run's secrets.

Tests wire fakes into the same runner.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.adapters.atomic_file import remove_leftovers
from claudeloop.adapters.backend_advice import ProfileAdvisor, profile_in_use
from claudeloop.adapters.claude_code.backend import (
    Backend,
    backend_for,
    cli_path_from_environment,
)
from claudeloop.adapters.fleet.lease_file import fenced_by_lease
from claudeloop.adapters.git_checkpoint import (
    GitCheckpoints,
    repository_top,
    restore_worktree,
)
from claudeloop.adapters.interrupts import SignalInterrupts
from claudeloop.adapters.plan_file import PlanFileOnDisk
from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.finding import (
    take_lock,
)
from claudeloop.adapters.run_directory.layout import EventLog, new_run_id
from claudeloop.adapters.run_directory.redacted import RedactedEvents, redacted_record
from claudeloop.adapters.run_secrets import run_redactor
from claudeloop.adapters.system_clock import SystemClock, WallClockSleeper
from claudeloop.adapters.verification_commands import VerificationCommands
from claudeloop.adapters.working_tree import WorkingTreeOnDisk
from claudeloop.application.billing import UnbilledGateway
from claudeloop.application.driving import WiredRun
from claudeloop.application.errors import UsageError
from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.launching import RunLock
from claudeloop.application.ports import (
    ControlInbox,
    DoctorChecks,
    EventSink,
    Gateway,
    IndexedRun,
)
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.runner import Runner
from claudeloop.cli.bootstrap.boundary import (
    TurnBoundary,
    check_wrapper,
    start_posture,
    turn_boundary,
)
from claudeloop.cli.display import ConsoleView, Screen, Tee
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.completion import DEFAULT_DONE_MARKER
from claudeloop.domain.loop import RunState

if TYPE_CHECKING:
    from claudeloop.adapters.notify.sender import Notifier, NotifyTargets


def new_record(spec: RunSpec, run_id: str | None) -> RunRecord:
    clock = SystemClock()
    now = clock.now()
    state = RunState(ledger=BudgetLedger(budget=spec.budget))
    return RunRecord(run_id=run_id or new_run_id(now), spec=spec, state=state, started_at=now)


def create_directory(record: RunRecord) -> RunDirectory:
    """The run's directory, with its record in it at once: a run killed during the slow
    start of the CLI is one `resume` can continue."""
    try:
        directory = RunDirectory.create(record.spec.cwd, record.run_id)
    except FileExistsError:
        raise UsageError(
            f"run id {record.run_id!r} is already used in {record.spec.cwd}; "
            "pick another --run-id or resume it"
        ) from None
    except OSError as error:
        raise UsageError(f"cannot make the run's directory: {error}") from None
    try:
        directory.save(record)
    except OSError as error:
        with contextlib.suppress(OSError):
            directory.path.rmdir()  # no run without a record, for resume to refuse
        raise UsageError(f"cannot save the run's record: {error}") from None
    return directory


def with_worktree(
    directory: RunDirectory, record: RunRecord, *, carry: bool, merging: str | None = None
) -> tuple[RunRecord, bool]:
    """The record of a --worktree run, its worktree made (on claudeloop/RUN_ID from
    HEAD, under the user state directory) and saved in it; a plan file inside the
    repository is read from the worktree's copy. Also whether uncommitted changes of
    the checkout were left behind. A worktree that cannot be made leaves no run."""
    import shutil

    from claudeloop.adapters.git_checkpoint import make_worktree, worktrees_root

    spec = record.spec
    try:
        made = make_worktree(
            spec.cwd,
            record.run_id,
            root=worktrees_root(os.environ),
            carry=carry,
            merging=merging,
        )
    except BaseException:
        shutil.rmtree(directory.path, ignore_errors=True)
        raise
    plan_path = spec.plan_path
    top = repository_top(spec.cwd)
    if plan_path is not None and top is not None and plan_path.is_relative_to(top):
        # The worktree's copy, when HEAD has one; else the checkout's (never committed).
        copy = made.top / plan_path.relative_to(top)
        plan_path = copy if copy.is_file() else plan_path
    spec = replace(
        spec,
        worktree=made.work_dir,
        base_branch=made.base_branch,
        checkpoint=True,
        plan_path=plan_path,
    )
    record = replace(record, spec=spec)
    directory.save(record)
    return record, made.left_behind


def refuse_checkpoint_outside_git(spec: RunSpec) -> None:
    """--checkpoint commits on the current branch: the directory must be in a repository."""
    if spec.checkpoint and spec.worktree is None and repository_top(spec.cwd) is None:
        raise UsageError(
            f"--checkpoint: {spec.cwd} is not in a git repository (or git is not "
            "installed); run it in a repository, or leave out --checkpoint"
        )


def claude_code(
    backend: Backend,
    *,
    cwd: Path,
    model: str | None,
    permission_mode: str,
    stderr_log: Path,
    done_marker: str = DEFAULT_DONE_MARKER,
    redactor: Redactor | None = None,
    control: ControlInbox | None = None,
    events: EventSink | None = None,
    read_only: bool = False,
    boundary: TurnBoundary | None = None,
    silence_seconds: float | None = None,
    responses_log: Path | None = None,
) -> Gateway:
    """The gateway to the Claude Code CLI of `backend`, unbilled on a backend whose costs
    are not money; `doctor` probes through it too. `read_only`: an independent
    reviewer's (read-only tools, plan mode, no session kept). `boundary`: the run's
    sandbox (None: the user's own settings alone, as a probe has). `silence_seconds`:
    how long Claude Code may say nothing in a turn (None: the backend's default).
    `responses_log`: where each answer's usage is kept as it streams in, for a turn a
    crash cuts off (None: nowhere)."""
    # The SDK is imported only where a turn runs: --help and status stay fast.
    from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings

    settings = GatewaySettings(
        cwd=cwd,
        model=model,
        permission_mode=permission_mode,
        env=dict(backend.env),
        local_backend=backend.local,
        structured_output=backend.structured_output,
        done_marker=done_marker,
        cli_path=backend.cli_path,
        stderr_log=stderr_log,
        responses_log=responses_log,
        redactor=redactor,
        read_only=read_only,
        sandbox_settings=boundary.settings if boundary is not None else None,
        lines=boundary.lines if boundary is not None else None,
        address={**os.environ, **backend.env}.get("ANTHROPIC_BASE_URL") or None,
        silence_seconds=silence_seconds,
    )
    gateway = ClaudeCodeGateway(settings, control=control, events=events)
    return UnbilledGateway(gateway) if backend.zero_cost else gateway


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
    `known_at`: when the run last asked the service (its last turn's start), so that a
    shared record older than that is checked, not trusted. `seat`: the run's seat in a
    fleet, whose board it shares capacity on (the empty seat: the machine's file)."""
    # The run directory's control file: a stop ends a turn stuck in the CLI's retries.
    chosen = claude_code(
        backend,
        cwd=spec.work_dir,
        model=spec.model,
        permission_mode=spec.permission_mode,
        done_marker=spec.done_marker,
        stderr_log=directory.debug_log_path,
        redactor=directory.redactor,
        read_only=read_only,
        control=directory,
        events=events,
        boundary=turn_boundary(spec, start_posture(spec), [os.environ, backend.env]),
        silence_seconds=spec.silence_seconds,
        # A review's session is never billed from a cut: nothing of it is kept.
        responses_log=None if read_only else directory.responses_log_path,
    )
    if capacity_dir is None:
        return chosen
    return _sharing(
        chosen, directory, spec, backend, capacity_dir, known_at=known_at, board=seat.board
    )


def _sharing(
    inner: Gateway,
    directory: RunDirectory,
    spec: RunSpec,
    backend: Backend,
    capacity_dir: Path,
    *,
    known_at: datetime | None,
    board: int | None,
) -> Gateway:
    """`inner`, sharing what it learns about capacity with the loops on the same account
    (the CLI's environment is ours with the backend's over it) and model."""
    from claudeloop.adapters.claude_code.stderr_log import StderrLog
    from claudeloop.adapters.shared_capacity import SharedCapacityGateway, account_key, board_for

    # A fleet's worker on PostgreSQL links the run to the fleet's board; else the
    # machine's file.
    account = account_key({**os.environ, **backend.env}, spec.model)
    debug_log = StderrLog(directory.debug_log_path, redactor=directory.redactor)
    # The run id tells this run's own earlier records (a driver stopped or crashed) from
    # other runs': its own never hold it back.
    return SharedCapacityGateway(
        inner,
        board_for(capacity_dir, account, board),
        run_id=directory.run_id,
        known_at=known_at,
        policy=spec.wait_policy,
        note=debug_log.note,
    )


def _detour_gateways(
    directory: RunDirectory,
    spec: RunSpec,
    detours: Callable[[str], Backend] | None,
    capacity_dir: Path | None,
    seat: FleetSeat,
) -> Callable[[str], Gateway] | None:
    """Gateways for the profiles a limit policy switches to; each uses its own model."""
    if detours is None:
        return None

    def gateway_of(name: str) -> Gateway:
        backend = detours(name)
        model = backend.profile.model if backend.profile is not None else None
        return make_gateway(directory, replace(spec, model=model), backend, capacity_dir, seat=seat)

    return gateway_of


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
    stored claude.ai login ends (see `login_ends`). `seat`: the run's seat in a fleet,
    taken from the environment at the process's entry (`take_fleet_seat`): a worker's
    run saves while its lease holds and shares the fleet's board."""
    held: RunLock = lock or take_lock(directory)
    worktree = record.spec.worktree
    if worktree is not None:
        try:
            restore_worktree(worktree, record.run_id, repository=record.spec.cwd)
        except BaseException:
            held.release()
            raise
    clock = SystemClock()
    register_run(directory, record, backend, shares_capacity=capacity_dir is not None)
    directory.clear_control()
    remove_temporaries(directory, record)
    # The backend's credentials (a profile's token) are secrets; its URL and models not.
    redactor = run_redactor(record.spec, backend, notify, detours)
    # From here on every file of the run masks them: state.json, debug.log, events.
    directory = replace(directory, redactor=redactor)
    try:
        log = EventLog(directory, clock, redactor)
    except OSError as error:
        held.release()
        raise UsageError(
            f"{directory.events_path}: cannot be written ({error.strerror or error}); "
            "claudeloop writes only a regular file of its own there"
        ) from None
    view = Screen(ConsoleView(quiet=quiet, verbose=verbose))
    notifier = _notifier(notify, directory, record, log, redactor)
    sinks: tuple[EventSink, ...] = (log, view) if notifier is None else (log, view, notifier)
    events = RedactedEvents(Tee(*sinks), redactor)
    chosen_gateway = gateway or make_gateway(
        directory,
        record.spec,
        backend,
        capacity_dir,
        events=events,
        known_at=record.last_turn_started_at,
        seat=seat,
    )
    # A wait shared with the account's other loops ends when one of them finds it open.
    from claudeloop.adapters.shared_capacity.sharing_gateway import woken_by_the_board

    # A commit per answered turn, on the worktree's branch or the current one.
    checkpoints = (
        GitCheckpoints(
            record.spec.work_dir,
            record.run_id,
            holds_secret=redactor.knows_one_in,
            redact=redactor.text,
            own=worktree is not None,
        )
        if record.spec.checkpoint
        else None
    )
    runner = Runner(
        gateway=chosen_gateway,
        clock=clock,
        sleeper=woken_by_the_board(chosen_gateway, WallClockSleeper(directory, clock)),
        events=events,
        store=fenced_by_lease(directory, seat),  # a worker's run: saved while its lease holds
        control=directory,
        plans=PlanFileOnDisk(),
        profiles=_detour_gateways(directory, record.spec, detours, capacity_dir, seat),
        # A switch-model detour: the run's own backend and session, another model.
        models=lambda model: make_gateway(
            directory, replace(record.spec, model=model), backend, capacity_dir, seat=seat
        ),
        advisor=ProfileAdvisor(profile_in_use(backend, detours)),
        checks=VerificationCommands(
            record.spec.work_dir,
            timeout_seconds=record.spec.verify_timeout_seconds,
            redact=redactor.text,
            note=directory.path / "checks" / "running.json",
            boundary=check_wrapper(record.spec, start_posture(record.spec)),
        ),
        check_logs=directory.path / "checks",
        reviewer=make_gateway(
            directory, record.spec, backend, events=events, read_only=True, seat=seat
        )
        if record.spec.verify.review
        else None,
        tree=WorkingTreeOnDisk(record.spec.work_dir),
        login_ends_at=login_ends_at,
        checkpoints=checkpoints,
        # A worker's run has nobody at hand: taken over where its transcript is not, it
        # goes on in a new session.
        new_session_if_gone=seat.lease is not None,
        posture=start_posture(record.spec),
    )

    def close() -> None:
        try:
            if checkpoints is not None:
                checkpoints.close()
            view.close()
            if notifier is not None:
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


def register_run(
    directory: RunDirectory, record: RunRecord, backend: Backend, *, shares_capacity: bool
) -> None:
    """The run into the machine's index of runs (`runs --all`, the dashboard), with the
    account whose capacity board it shares; an index that cannot be written costs the
    run nothing."""
    from claudeloop.adapters.run_index import RunIndexDirectory
    from claudeloop.adapters.shared_capacity.board import account_key
    from claudeloop.adapters.shared_capacity.record import this_host

    account = (
        account_key({**os.environ, **backend.env}, record.spec.model) if shares_capacity else None
    )
    entry = IndexedRun(
        run_id=record.run_id,
        directory=directory.path.absolute(),
        cwd=record.spec.cwd.absolute(),
        account=account,
        host=this_host(),
        registered_at=record.started_at,
    )
    with contextlib.suppress(OSError):
        RunIndexDirectory.of_environment().register(entry)


def unregister_run(directory: RunDirectory) -> None:
    """The run out of the machine's index again, its folder removed on purpose."""
    from claudeloop.adapters.run_index import RunIndexDirectory

    with contextlib.suppress(OSError):
        RunIndexDirectory.of_environment().forget(directory.run_id, directory.path.absolute())


def _notifier(
    notify: NotifyTargets | None,
    directory: RunDirectory,
    record: RunRecord,
    log: EventSink,
    redactor: Redactor,
) -> Notifier | None:
    """A notifier when notifications are configured; what failed to go is logged."""
    if notify is None or not notify.urls:
        return None
    from claudeloop.adapters.notify.messages import RunSoFar
    from claudeloop.adapters.notify.sender import Notifier

    so_far = RunSoFar(
        run_id=record.run_id,
        cwd=str(record.spec.cwd),
        dollars=record.state.ledger.dollars,
        plan=record.plan_progress,
    )
    return Notifier(
        notify, so_far, failures=log, redactor=redactor, debug_log=directory.debug_log_path
    )


def remove_temporaries(directory: RunDirectory, record: RunRecord) -> None:
    """What a kill mid-write left: state.json's at once (the lock is ours, so no one else
    writes it), the control inbox's and the plan's once a minute old (a `stop`, another
    run on the same plan may be writing them now)."""
    remove_leftovers(directory.state_path, unmarked=True)
    remove_leftovers(directory.control_path, older_than=60, unmarked=True)
    if record.spec.plan_path is not None:
        remove_leftovers(record.spec.plan_path, older_than=60)


# doctor -------------------------------------------------------------------------------


def doctor_checks(cwd: Path, profile: str | None) -> DoctorChecks:
    """The checks of `doctor` on this machine; its model probe goes through the gateway
    a run's turns go through."""
    from claudeloop.adapters.doctor_checks import MachineChecks, ProbeSetup

    def probe_gateway(setup: ProbeSetup) -> Gateway:
        # The probe sets the CLI's retries low itself, so a doctor answers in seconds.
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
