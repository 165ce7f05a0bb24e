"""Driving a run to its end: interrupts, a failing disk, and what is told last."""

from __future__ import annotations

import errno
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

import anyio
import pytest

from claudeloop.application.driving import WiredRun, drive_run
from claudeloop.application.events import RunFinished
from claudeloop.application.ports import TurnOutcome
from claudeloop.application.records import RunRecord
from claudeloop.application.runner import Runner
from claudeloop.domain.loop import Interrupt, Outcome, Phase
from tests.application.fakes import (
    FakeClock,
    FakeControl,
    FakeGateway,
    FakeSleeper,
    MemoryEvents,
    MemoryPlans,
    verdict_turn,
)
from tests.application.test_runner import record


@dataclass
class Files:
    """The run's state.json and control inbox; `interrupt` reaches the runner's inbox."""

    control: FakeControl
    saved: list[RunRecord] = field(default_factory=list)
    sent: list[Interrupt] = field(default_factory=list)

    def load(self) -> RunRecord:
        if not self.saved:
            raise FileNotFoundError("state.json")
        return self.saved[-1]

    def save(self, record: RunRecord) -> None:
        self.saved.append(record)

    def interrupt(self, interrupt: Interrupt) -> None:
        self.sent.append(interrupt)
        self.control.signal(interrupt)


@dataclass
class Interrupts:
    """Sends `count` interrupts, each `signal`, once `go` is set."""

    count: int
    signal: Interrupt = Interrupt.CTRL_C
    go: anyio.Event = field(default_factory=anyio.Event)

    yielded: int = 0

    async def each(self) -> AsyncIterator[Interrupt]:
        await self.go.wait()
        for _ in range(self.count):
            self.yielded += 1
            yield self.signal
        await anyio.sleep_forever()


@dataclass
class Parts:
    gateway: FakeGateway
    files: Files
    events: MemoryEvents
    told: MemoryEvents
    summaries: list[RunRecord] = field(default_factory=list)
    closed: int = 0


def wired(parts: Parts, interrupts: Interrupts) -> WiredRun:
    clock = FakeClock()
    runner = Runner(
        gateway=parts.gateway,
        clock=clock,
        sleeper=FakeSleeper(clock=clock, control=parts.files.control),
        events=parts.events,
        store=parts.files,
        control=parts.files.control,
        plans=MemoryPlans(),
    )

    def close() -> None:
        parts.closed += 1

    return WiredRun(
        runner=runner,
        gateway=parts.gateway,
        files=parts.files,
        interrupts=interrupts,
        failure_sinks=(parts.told,),
        write_summary=parts.summaries.append,
        mask_secrets=lambda ended: replace(ended, state=replace(ended.state, summary="masked")),
        close=close,
    )


def parts(*turns: TurnOutcome) -> Parts:
    gateway = FakeGateway(turns=deque(turns))
    return Parts(gateway, Files(FakeControl()), MemoryEvents(), MemoryEvents())


def test_a_run_driven_to_done_is_told_masked_and_everything_is_closed() -> None:
    p = parts(verdict_turn(complete=True, summary="secret"))
    ended = drive_run(wired(p, Interrupts(0)), record(), resumed=False)
    assert ended.state.outcome is Outcome.DONE
    assert ended.state.summary == "masked"
    assert p.summaries == [ended]
    assert (p.closed, p.gateway.closed) == (1, True)


@pytest.mark.parametrize(
    ("signal", "code"),
    [(Interrupt.CTRL_C, 130), (Interrupt.HANGUP, 130), (Interrupt.TERMINATE, 143)],
)
def test_the_first_interrupt_stops_the_run_with_the_signals_exit_code(
    signal: Interrupt, code: int
) -> None:
    # This gateway answers the turn whatever the signal (the real one cuts it off: see
    # test_runner): the run stops at the next safe point, before any other turn.
    p = parts(verdict_turn(), verdict_turn())
    interrupts = Interrupts(1, signal)
    answer = p.gateway.run_turn

    async def interrupted_mid_turn(
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        interrupts.go.set()
        while not p.files.sent:  # the person's Ctrl-C arrives while the turn runs
            await anyio.sleep(0)
        return await answer(
            prompt, session_id=session_id, interrupted_at=interrupted_at, on_session=on_session
        )

    p.gateway.run_turn = interrupted_mid_turn  # type: ignore[method-assign]
    ended = drive_run(wired(p, interrupts), record(), resumed=False)
    assert p.files.sent == [signal]
    assert len(p.gateway.prompts) == 1  # the turn in progress finished, no other began
    assert ended.state.outcome is Outcome.STOPPED
    assert ended.state.exit_code == code
    assert ended.state.reason == f"stopped by {signal.words}"
    assert ended.state.ledger.turns == 1
    finished = [e for e in p.events.emitted if isinstance(e, RunFinished)]
    assert [(e.outcome, e.exit_code) for e in finished] == [(Outcome.STOPPED, code)]


@pytest.mark.parametrize(("signal", "code"), [(Interrupt.CTRL_C, 130), (Interrupt.TERMINATE, 143)])
def test_a_second_interrupt_ends_the_run_at_once_with_the_saved_state_kept(
    signal: Interrupt, code: int
) -> None:
    p = parts()
    interrupts = Interrupts(2, signal)
    stuck = anyio.Event()

    async def never_answers(
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        interrupts.go.set()
        await stuck.wait()
        raise AssertionError("a turn cut off never answers")

    p.gateway.run_turn = never_answers  # type: ignore[method-assign]
    ended = drive_run(wired(p, interrupts), record(), resumed=False)
    assert ended.state.outcome is Outcome.STOPPED
    assert ended.state.reason == "stopped at once by a second interrupt"
    assert ended.state.exit_code == code  # the first signal's
    # Nothing is saved over the last record: a resume goes on from the turn in flight.
    assert p.files.saved[-1].turn_in_flight == 1
    assert p.files.saved[-1].state.outcome is None
    assert p.summaries == [ended]
    assert (p.closed, p.gateway.closed) == (1, True)


def test_a_second_interrupt_while_the_processes_are_ended_lets_them_be_ended() -> None:
    # A worker's stop reaches its run twice as the run closes: the gateway still ends
    # its Claude Code processes (inside the event loop that started them), and the run
    # that was done stays done.
    p = parts(verdict_turn(complete=True))
    interrupts = Interrupts(2)

    async def close() -> tuple[str, ...]:
        interrupts.go.set()
        while interrupts.yielded < 2:  # the second came: the drive is cancelled
            await anyio.sleep(0)
        await anyio.sleep(0)  # ending a process takes a moment
        p.gateway.closed = True
        return ()

    p.gateway.close = close  # type: ignore[method-assign]
    ended = drive_run(wired(p, interrupts), record(), resumed=False)
    assert p.gateway.closed
    assert (ended.state.outcome, ended.state.exit_code) == (Outcome.DONE, 0)
    assert p.summaries == [ended]


def test_a_full_disk_ends_the_run_failed_and_says_so_where_it_can() -> None:
    p = parts()

    async def disk_full(
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        raise OSError(errno.ENOSPC, "No space left on device")

    p.gateway.run_turn = disk_full  # type: ignore[method-assign]
    ended = drive_run(wired(p, Interrupts(0)), record(), resumed=False)
    assert ended.state.outcome is Outcome.FAILED
    assert ended.state.phase is Phase.FAILED
    assert "No space left on device" in ended.state.reason
    finished = [e for e in p.told.emitted if isinstance(e, RunFinished)]
    assert [(e.outcome, e.exit_code) for e in finished] == [(Outcome.FAILED, 1)]
    assert p.files.saved[-1].state.outcome is Outcome.FAILED
    assert p.closed == 1
