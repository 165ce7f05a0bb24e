"""Driving a run to its end: what a person's interrupts do, what a failing disk does,
and what the run tells last. The composition root wires the parts (cli/bootstrap/), the
use cases of `run`, `resume` and `rehearse` drive them; this says what happens with them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Protocol

import anyio

from claudeloop.application.events import RunFinished
from claudeloop.application.ports import EventSink, Gateway
from claudeloop.application.records import RunRecord
from claudeloop.domain.loop import (
    Interrupt,
    RunState,
    Transition,
    decide_on_failure,
    decide_on_second_interrupt,
)


class Drives(Protocol):
    """What drives a run's turns to its end (application/runner.py's `Runner`)."""

    async def drive(
        self, record: RunRecord, *, resumed: bool = False, new_session: bool = False
    ) -> RunRecord: ...


class Interrupts(Protocol):
    def each(self) -> AsyncIterator[Interrupt]:
        """Every interrupt a person sends the driver (Ctrl-C, a closed terminal, a kill)."""
        ...


class RunFiles(Protocol):
    """The run's saved record and its control inbox, as the driver sees them."""

    def load(self) -> RunRecord: ...

    def save(self, record: RunRecord) -> None: ...

    def interrupt(self, interrupt: Interrupt) -> None:
        """A signal the driver received: a stop, and what a turn in flight is cut off
        by at once (ControlInbox.interrupted)."""
        ...


@dataclass(frozen=True)
class WiredRun:
    """A run's parts, wired by the composition root with the run's lock held.

    `failure_sinks`: where the end of a run broken by I/O is told (the event log, the
    screen). `write_summary`: writes what the run tells of itself at its end
    (summary.md). `mask_secrets`: the record with every secret the run knows masked.
    `close`: closes what was opened for the run and releases its lock.
    """

    runner: Drives
    gateway: Gateway
    files: RunFiles
    interrupts: Interrupts
    failure_sinks: tuple[EventSink, ...]
    write_summary: Callable[[RunRecord], None]
    mask_secrets: Callable[[RunRecord], RunRecord]
    close: Callable[[], None]


def drive_run(
    run: WiredRun, record: RunRecord, *, resumed: bool, new_session: bool = False
) -> RunRecord:
    """Drive `record` to its end and return the final record, masked.

    The first interrupt stops the run: a turn in flight is cut off at once (a resume
    sends it again on its session), anything else stops at its next safe point, as
    `claudeloop stop` does; the exit code is the signal's. A second ends it at once. A
    disk that fails mid-run ends it FAILED with what state.json last held. summary.md is
    written last, whatever the end.
    """
    final: list[RunRecord] = []
    heard: list[Interrupt] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(_listen, run, group.cancel_scope, heard)
            try:
                final.append(
                    await run.runner.drive(record, resumed=resumed, new_session=new_session)
                )
            except OSError as error:
                final.append(_failed(run, record, error))
            finally:
                # Shielded from a second interrupt, which ends the drive at once: the
                # Claude Code processes are still ended (at once, or within the exit
                # grace the gateway gives them) inside this event loop. One left to the
                # loop's end is reaped by nobody, and its transport's finalizer prints
                # a traceback where the run's output goes.
                with anyio.CancelScope(shield=True):
                    await run.gateway.close()
                group.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        run.close()
    # No final record means a second interrupt ended it at once; state.json is the truth.
    first = heard[0] if heard else None
    ended = (
        final[0]
        if final
        else _ended(run, record, lambda state: decide_on_second_interrupt(state, first))
    )
    ended = run.mask_secrets(ended)
    with contextlib.suppress(OSError):  # a full disk: `status` writes it later
        run.write_summary(ended)
    return ended


async def _listen(run: WiredRun, scope: anyio.CancelScope, heard: list[Interrupt]) -> None:
    async for interrupt in run.interrupts.each():
        heard.append(interrupt)
        if len(heard) == 1:
            run.files.interrupt(interrupt)
        else:
            scope.cancel()
            return


def _failed(run: WiredRun, record: RunRecord, error: OSError) -> RunRecord:
    """The run ended by a disk that is full, a run directory gone: FAILED, saying why,
    with what state.json last held (saved again if the disk allows)."""
    reason = f"stopped by an I/O error: {error}"
    ended = _ended(run, record, lambda state: decide_on_failure(state, reason))
    outcome = ended.state.outcome
    assert outcome is not None
    for sink in run.failure_sinks:
        with contextlib.suppress(OSError):
            sink.emit(RunFinished(outcome=outcome, exit_code=outcome.exit_code, reason=reason))
    with contextlib.suppress(OSError):
        run.files.save(ended)
    return ended


def _ended(run: WiredRun, record: RunRecord, decide: Callable[[RunState], Transition]) -> RunRecord:
    try:
        latest = run.files.load()
    except (OSError, ValueError):
        latest = record
    return replace(latest, state=decide(latest.state).state)
