"""The composition root: wires the real adapters into the runner and drives a run.

Tests wire fakes into the same runner; this is the one place that knows both sides.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from claudeloop.adapters.plan_file import PlanFileOnDisk
from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.layout import EventLog, new_run_id
from claudeloop.adapters.run_directory.lock import RunLocked, acquire, release
from claudeloop.adapters.system_clock import SystemClock, WallClockSleeper
from claudeloop.application.ports import EventSink, Gateway, ProbeOutcome, TurnOutcome
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.runner import Runner
from claudeloop.application.summary import summary_markdown
from claudeloop.cli.display import ConsoleView, Tee
from claudeloop.cli.errors import UserError
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.loop import ControlCommand, Outcome, RunState

if TYPE_CHECKING:
    from claudeloop.adapters.config.profiles import BackendProfile
    from claudeloop.adapters.notify.sender import Notifier, NotifyTargets


@dataclass(frozen=True)
class Backend:
    """How the Claude Code CLI is reached: the environment it gets and where it is.

    `zero_cost`: the backend's costs are not money (a model on the user's machine), so
    the ledger counts none. `profile`: the backend profile it was resolved from, for
    the one-line fix when the backend turns out misconfigured."""

    env: Mapping[str, str]
    local: bool = False
    cli_path: Path | None = None
    structured_output: bool = True
    marker_fallback: bool = True
    zero_cost: bool = False
    profile: BackendProfile | None = None


def cli_path_from_environment() -> Path | None:
    """CLAUDELOOP_CLI_PATH names another Claude Code executable (default: the one
    bundled with claude-agent-sdk)."""
    cli_path = os.environ.get("CLAUDELOOP_CLI_PATH")
    return Path(cli_path).expanduser() if cli_path else None


def backend_for(profile: BackendProfile) -> Backend:
    return Backend(
        env=dict(profile.env),
        local=profile.local,
        cli_path=cli_path_from_environment(),
        marker_fallback=profile.marker_fallback,
        zero_cost=profile.zero_cost,
        profile=profile,
    )


def default_backend() -> Backend:
    """Claude Code as the user's own `claude` reaches it: the inherited environment."""
    from claudeloop.adapters.config.profiles import DEFAULT_BACKEND

    return backend_for(DEFAULT_BACKEND)


def new_record(spec: RunSpec, run_id: str | None) -> RunRecord:
    clock = SystemClock()
    now = clock.now()
    state = RunState(ledger=BudgetLedger(budget=spec.budget))
    return RunRecord(run_id=run_id or new_run_id(now), spec=spec, state=state, started_at=now)


def create_directory(record: RunRecord) -> RunDirectory:
    try:
        return RunDirectory.create(record.spec.cwd, record.run_id)
    except FileExistsError:
        raise UserError(
            f"run id {record.run_id!r} is already used in {record.spec.cwd}; "
            "pick another --run-id or resume it"
        ) from None


def make_gateway(
    directory: RunDirectory,
    spec: RunSpec,
    backend: Backend,
    capacity_dir: Path | None = None,
    events: EventSink | None = None,
) -> Gateway:
    # The SDK is imported only where a turn runs: --help and status stay fast.
    from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings

    # The run directory's control file: a stop ends a turn stuck in the CLI's retries.
    gateway = ClaudeCodeGateway(
        GatewaySettings(
            cwd=spec.cwd,
            model=spec.model,
            permission_mode=spec.permission_mode,
            env=dict(backend.env),
            local_backend=backend.local,
            structured_output=backend.structured_output,
            done_marker=spec.done_marker,
            cli_path=backend.cli_path,
            stderr_log=directory.debug_log_path,
        ),
        control=directory,
        events=events,
    )
    chosen: Gateway = Unbilled(gateway) if backend.zero_cost else gateway
    if capacity_dir is None:
        return chosen
    return _sharing(chosen, directory, spec, backend, capacity_dir)


def _sharing(
    inner: Gateway, directory: RunDirectory, spec: RunSpec, backend: Backend, capacity_dir: Path
) -> Gateway:
    """`inner`, sharing what it learns about capacity with the loops on the same account
    (the CLI's environment is ours with the backend's over it) and model."""
    from claudeloop.adapters.claude_code.stderr_log import StderrLog
    from claudeloop.adapters.shared_capacity import (
        CapacityBoard,
        SharedCapacityGateway,
        account_key,
    )

    board = CapacityBoard(capacity_dir, account_key({**os.environ, **backend.env}, spec.model))
    debug_log = StderrLog(directory.debug_log_path)
    return SharedCapacityGateway(inner, board, policy=spec.wait_policy, note=debug_log.note)


def _detour_gateways(
    directory: RunDirectory,
    spec: RunSpec,
    detours: Callable[[str], Backend] | None,
    capacity_dir: Path | None = None,
) -> Callable[[str], Gateway] | None:
    """Gateways for the profiles a limit policy switches to; each uses its own model."""
    if detours is None:
        return None

    def gateway_of(name: str) -> Gateway:
        backend = detours(name)
        model = backend.profile.model if backend.profile is not None else None
        return make_gateway(directory, replace(spec, model=model), backend, capacity_dir)

    return gateway_of


class Unbilled:
    """A gateway whose turns and probes cost nothing: the CLI prices a local model with
    Anthropic's price table, which says nothing true about the user's own machine."""

    def __init__(self, inner: Gateway) -> None:
        self._inner = inner

    async def run_turn(self, prompt: str, *, session_id: str | None) -> TurnOutcome:
        outcome = await self._inner.run_turn(prompt, session_id=session_id)
        # The session's running total stays as the CLI reports it: a detour's local turns
        # are in it, and the run's own backend, back on the session, must not bill them.
        return replace(outcome, cost_usd=0.0, billed=False)

    async def probe(self) -> ProbeOutcome:
        return replace(await self._inner.probe(), cost_usd=0.0)

    async def close(self) -> None:
        await self._inner.close()


class Advised:
    """Passes events on; a misconfigured backend's reason gains its one-line fix, and so
    do refused credentials when the profile sends a token of its own (`refused`)."""

    def __init__(
        self,
        sink: EventSink,
        advise: Callable[[str], str],
        refused: Callable[[str], str] | None = None,
    ) -> None:
        self._sink = sink
        self._advise = advise
        self._refused = refused
        self.reason: str | None = None

    def emit(self, event_type: str, **fields: Any) -> None:
        outcome = fields.get("outcome") if event_type == "run.finished" else None
        reason = str(fields.get("reason") or "")
        if outcome == Outcome.BACKEND_MISCONFIGURED.value:
            self.reason = fields["reason"] = self._advise(reason)
        elif outcome == Outcome.AUTH_FAILED.value and self._refused is not None:
            self.reason = fields["reason"] = self._refused(reason)
        self._sink.emit(event_type, **fields)


def _advice(backend: Backend) -> Callable[[str], str]:
    profile = backend.profile
    if profile is None:
        return lambda reason: reason

    def advise(reason: str) -> str:
        from claudeloop.cli.backend_advice import advise as advise_on

        return advise_on(reason, profile).line

    return advise


def _refusal(backend: Backend) -> Callable[[str], str] | None:
    from claudeloop.cli.backend_advice import refused

    fix = refused(backend.profile) if backend.profile is not None else None
    return None if fix is None else lambda reason: f"{reason}: {fix}"


def drive(
    directory: RunDirectory,
    record: RunRecord,
    *,
    backend: Backend,
    resumed: bool,
    quiet: bool,
    verbose: bool = False,
    gateway: Gateway | None = None,
    notify: NotifyTargets | None = None,
    detours: Callable[[str], Backend] | None = None,
    capacity_dir: Path | None = None,
) -> RunRecord:
    """Drive the run to its end under the run's lock; write summary.md; return the record.

    `capacity_dir`: where loops on one account share capacity (None: this loop alone)."""
    try:
        acquire(directory.lock_path)
    except RunLocked as locked:
        raise UserError(
            f"run {directory.run_id} is already being driven by process {locked.pid}; "
            "use `claudeloop status` to watch it or `claudeloop stop` to end it"
        ) from None
    clock = SystemClock()
    directory.clear_control()
    # The backend's credentials (a profile's token) are secrets; its URL and models not.
    redactor = Redactor.from_environment({**os.environ, **backend.env})
    log = EventLog(directory, clock, redactor)
    view = ConsoleView(quiet=quiet, verbose=verbose)
    notifier = _notifier(notify, directory, record, log, redactor)
    sinks: tuple[EventSink, ...] = (log, view) if notifier is None else (log, view, notifier)
    events = Advised(Tee(*sinks), _advice(backend), _refusal(backend))
    chosen_gateway = gateway or make_gateway(
        directory, record.spec, backend, capacity_dir, events=events
    )
    runner = Runner(
        gateway=chosen_gateway,
        clock=clock,
        sleeper=WallClockSleeper(directory, clock),
        events=events,
        store=directory,
        control=directory,
        plans=PlanFileOnDisk(),
        profiles=_detour_gateways(directory, record.spec, detours, capacity_dir),
    )
    final: list[RunRecord] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(_interrupts, directory, group.cancel_scope)
            try:
                final.append(await runner.drive(record, resumed=resumed))
            finally:
                await chosen_gateway.close()
                group.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        view.close()
        if notifier is not None:
            notifier.close()
        log.close()
        release(directory.lock_path)
        directory.clear_control()
    # No final record means a second Ctrl-C ended it at once; state.json is the truth.
    ended = final[0] if final else _stopped(directory, record)
    if events.reason is not None and ended.state.reason != events.reason:
        ended = replace(ended, state=replace(ended.state, reason=events.reason))
        directory.save(ended)
    directory.summary_path.write_text(redactor.text(summary_markdown(ended)), encoding="utf-8")
    os.chmod(directory.summary_path, 0o600)
    return ended


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
    from claudeloop.adapters.notify.decide import RunSoFar
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


async def _interrupts(directory: RunDirectory, scope: anyio.CancelScope) -> None:
    """First Ctrl-C: stop at the next safe point. Second: end at once."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        count = 0
        async for _ in signals:
            count += 1
            if count == 1:
                directory.send(ControlCommand.STOP)
            else:
                scope.cancel()
                return


def _stopped(directory: RunDirectory, record: RunRecord) -> RunRecord:
    try:
        latest = directory.load()
    except (OSError, ValueError):
        latest = record
    state = replace(
        latest.state, outcome=Outcome.STOPPED, reason="stopped at once by a second interrupt"
    )
    return replace(latest, state=state)
