"""The composition root: wires the real adapters into the runner and drives a run.

Tests wire fakes into the same runner; this is the one place that knows both sides.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.layout import EventLog, new_run_id
from claudeloop.adapters.run_directory.lock import RunLocked, acquire, release
from claudeloop.adapters.run_directory.redact import Redactor
from claudeloop.adapters.system_clock import SystemClock, WallClockSleeper
from claudeloop.application.ports import Gateway
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.runner import Runner
from claudeloop.application.summary import summary_markdown
from claudeloop.cli.display import ConsoleView, Tee
from claudeloop.cli.errors import UserError
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.loop import ControlCommand, Outcome, RunState


@dataclass(frozen=True)
class Backend:
    """How the Claude Code CLI is reached: the environment it gets and where it is."""

    env: Mapping[str, str]
    local: bool = False
    cli_path: Path | None = None
    structured_output: bool = True


def default_backend() -> Backend:
    """Claude Code as the user's own `claude` reaches it: the inherited environment.

    CLAUDELOOP_CLI_PATH names another Claude Code executable (default: the one bundled
    with claude-agent-sdk)."""
    cli_path = os.environ.get("CLAUDELOOP_CLI_PATH")
    return Backend(env={}, cli_path=Path(cli_path) if cli_path else None)


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


def make_gateway(directory: RunDirectory, spec: RunSpec, backend: Backend) -> Gateway:
    # The SDK is imported only where a turn runs: --help and status stay fast.
    from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings

    return ClaudeCodeGateway(
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
        )
    )


def drive(
    directory: RunDirectory,
    record: RunRecord,
    *,
    backend: Backend,
    resumed: bool,
    quiet: bool,
    gateway: Gateway | None = None,
) -> RunRecord:
    """Drive the run to its end under the run's lock; write summary.md; return the record."""
    try:
        acquire(directory.lock_path)
    except RunLocked as locked:
        raise UserError(
            f"run {directory.run_id} is already being driven by process {locked.pid}; "
            "use `claudeloop status` to watch it or `claudeloop stop` to end it"
        ) from None
    clock = SystemClock()
    directory.clear_control()
    redactor = Redactor.from_environment(extra=tuple(v for v in backend.env.values() if v))
    log = EventLog(directory, clock, redactor)
    view = ConsoleView(quiet=quiet)
    chosen_gateway = gateway or make_gateway(directory, record.spec, backend)
    runner = Runner(
        gateway=chosen_gateway,
        clock=clock,
        sleeper=WallClockSleeper(directory, clock),
        events=Tee(log, view),
        store=directory,
        control=directory,
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
        log.close()
        release(directory.lock_path)
        directory.clear_control()
    # No final record means a second Ctrl-C ended it at once; state.json is the truth.
    ended = final[0] if final else _stopped(directory, record)
    directory.summary_path.write_text(redactor.text(summary_markdown(ended)), encoding="utf-8")
    os.chmod(directory.summary_path, 0o600)
    return ended


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
