"""The real sleeper aims at a wall-clock instant: a machine that slept past it probes at
once on waking, and a control command wakes it early."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import anyio

from claudeloop.adapters.system_clock import WallClockSleeper
from claudeloop.application.ports import Request
from claudeloop.domain.loop import ControlCommand, Interrupt
from claudeloop.domain.steering import AddNote

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class JumpingClock:
    """Wall time that moves only when told: a suspend is a jump."""

    current: datetime = START
    reads: int = 0
    jump_after_reads: int | None = None
    jump: timedelta = timedelta(0)

    def now(self) -> datetime:
        self.reads += 1
        if self.jump_after_reads is not None and self.reads > self.jump_after_reads:
            self.current += self.jump
            self.jump_after_reads = None
        return self.current


@dataclass
class Inbox:
    command: ControlCommand | None = None
    checks: list[int] = field(default_factory=list)
    asked: tuple[Request, ...] = ()

    def pending(self) -> ControlCommand | None:
        return self.command

    async def stop_asked(self) -> None:
        raise AssertionError("a sleeper never waits for a stop")

    def interrupted(self) -> Interrupt | None:
        return None

    def requests(self) -> tuple[Request, ...]:
        return self.asked

    def consumed(self, through: int) -> None:
        raise AssertionError("a sleeper lets no request go")


def sleep_until(sleeper: WallClockSleeper, instant: datetime) -> bool:
    async def go() -> bool:
        with anyio.fail_after(5):
            return await sleeper.sleep_until(instant)

    return anyio.run(go)


def test_an_instant_already_passed_is_due_at_once() -> None:
    clock = JumpingClock(current=START + timedelta(hours=3))
    sleeper = WallClockSleeper(Inbox(), clock, slice_seconds=0.01)
    assert sleep_until(sleeper, START + timedelta(minutes=5)) is True
    assert clock.reads == 1  # no waiting at all


def test_waking_from_a_suspend_past_the_instant_ends_the_wait_at_the_next_slice() -> None:
    # A probe due in an hour; after two slices the machine "wakes" three hours later.
    clock = JumpingClock(jump_after_reads=2, jump=timedelta(hours=3))
    sleeper = WallClockSleeper(Inbox(), clock, slice_seconds=0.01)
    assert sleep_until(sleeper, START + timedelta(hours=1)) is True
    assert clock.reads == 3  # the read after the jump ended it: no fresh interval


def test_a_control_command_wakes_the_wait_early() -> None:
    sleeper = WallClockSleeper(
        Inbox(command=ControlCommand.STOP), JumpingClock(), slice_seconds=0.01
    )
    assert sleep_until(sleeper, START + timedelta(days=2)) is False


def test_a_request_sent_wakes_the_wait_early_to_be_applied() -> None:
    # A note or a probe now is applied at once: the runner goes back to sleep after.
    inbox = Inbox(asked=(Request(1, AddNote("look at the flaky test")),))
    sleeper = WallClockSleeper(inbox, JumpingClock(), slice_seconds=0.01)
    assert sleep_until(sleeper, START + timedelta(days=2)) is False


@dataclass
class Ticks:
    """A monotonic clock that moves `step` seconds at every read."""

    step: float
    current: float = 0.0

    def __call__(self) -> float:
        value = self.current
        self.current += self.step
        return value


def test_a_wall_clock_stepped_back_does_not_delay_the_probe_by_the_step() -> None:
    # A probe due in an hour; the wall clock steps back a day, then stands still. The
    # monotonic clock moves twenty minutes a slice: the hour is up on the fourth read.
    clock = JumpingClock(jump_after_reads=1, jump=-timedelta(days=1))
    ticks = Ticks(step=20 * 60)
    sleeper = WallClockSleeper(Inbox(), clock, slice_seconds=0.01, monotonic=ticks)
    assert sleep_until(sleeper, START + timedelta(hours=1)) is True
    assert clock.reads == 4


def test_a_long_wait_reports_the_time_waited_as_it_goes() -> None:
    ticks = Ticks(step=20)
    clock = JumpingClock()
    sleeper = WallClockSleeper(
        Inbox(), clock, slice_seconds=0.01, monotonic=ticks, progress_seconds=30
    )
    reported: list[float] = []

    async def go() -> bool:
        with anyio.fail_after(5):
            return await sleeper.sleep_until(START + timedelta(minutes=2), progress=reported.append)

    assert anyio.run(go) is True
    # Seven reads: 0, 20, ... 120 seconds; a report whenever 30 more have passed.
    assert reported == [40.0, 80.0, 120.0]
