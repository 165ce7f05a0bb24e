"""A loop waiting for capacity wakes as soon as another loop of the account finds it
open, takes that result as its probe's and sends its turn: with a fake clock where the
logic is ours (the file board), and through PostgreSQL's LISTEN/NOTIFY where it is the
database's."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio

from claudeloop.adapters.shared_capacity import FileCapacityBoard, SharedCapacityGateway
from claudeloop.adapters.shared_capacity.sharing_gateway import woken_by_the_board
from claudeloop.adapters.system_clock import WallClockSleeper
from claudeloop.application.ports import CapacityBoard, Sighting, Sleeper
from claudeloop.domain.capacity import Available
from claudeloop.domain.classify import classify
from tests.adapters.shared_capacity.test_sharing_gateway import (
    OPEN,
    POLICY,
    SILENT,
    Clock,
    FakeInner,
)
from tests.application.fakes import FakeControl
from tests.fleet_boards import FleetBoards

HOUR = timedelta(hours=1)


class Endless:
    """The wall-clock sleeper's stand-in: its instant never comes; the test ends the
    wait as a control command would (False)."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.ended = anyio.Event()
        self.cut_short = False

    async def sleep_until(
        self, instant: datetime, *, progress: Callable[[float], None] | None = None
    ) -> bool:
        self.entered.set()
        try:
            await self.ended.wait()
        except anyio.get_cancelled_exc_class():
            self.cut_short = True
            raise
        return False


class Watched(FileCapacityBoard):
    """The file board, saying which news its waiter was given."""

    def __init__(self, directory: Path, account: str) -> None:
        super().__init__(directory, account)
        self.heard: list[int] = []
        self._lock = threading.Lock()

    def wait_for_news(self, after_seq: int, timeout: float) -> Sighting | None:
        news = super().wait_for_news(after_seq, timeout)
        if news is not None:
            with self._lock:
                self.heard.append(news.seq)
        return news


def sharing(board: CapacityBoard, inner: FakeInner, clock: Clock) -> SharedCapacityGateway:
    return SharedCapacityGateway(inner, board, policy=POLICY, now=clock, poll=0.01)


@asynccontextmanager
async def waiting_an_hour(
    sleeper: Sleeper, endless: Endless, clock: Clock, woke: list[bool]
) -> AsyncIterator[None]:
    """`sleeper` sleeps until an hour from now in the background; the body runs once
    the wait has begun, and the block ends with the wait (30 s at the most)."""
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:

            async def wait() -> None:
                woke.append(await sleeper.sleep_until(clock() + HOUR))

            group.start_soon(wait)
            await endless.entered.wait()
            yield


def test_a_wait_ends_when_another_loop_finds_capacity_open_and_its_result_is_taken(
    tmp_path: Path,
) -> None:
    clock = Clock()
    board = Watched(tmp_path, "acct")
    waiter_inner, prober_inner = FakeInner(turn=SILENT), FakeInner(probe=OPEN)
    waiter = sharing(board, waiter_inner, clock)
    prober = sharing(FileCapacityBoard(tmp_path, "acct"), prober_inner, clock)
    endless = Endless()
    woke: list[bool] = []

    async def main() -> None:
        refused = await waiter.run_turn("go", session_id=None)  # the window closes
        assert refused.signals.is_error
        async with waiting_an_hour(woken_by_the_board(waiter, endless), endless, clock, woke):
            clock.advance(minutes=6)  # the waiter's record is no news by now
            await prober.probe()  # finds it open
        probe = await waiter.probe()
        assert classify(probe.signals) == Available()
        await waiter.run_turn("go on", session_id="s1")

    anyio.run(main)
    assert woke == [True]  # as if its instant had come, an hour early
    assert endless.cut_short
    assert prober_inner.probes == 1
    assert waiter_inner.probes == 0  # it took the prober's result
    assert [prompt for prompt, _ in waiter_inner.prompts] == ["go", "go on"]


def test_news_since_the_loop_was_told_closed_wakes_each_sleep_of_the_wait(
    tmp_path: Path,
) -> None:
    # The runner sleeps to the instant it gets ready, then to its probe's: news that
    # came before a sleep began, and after the window closed, is news to it.
    clock = Clock()
    board = Watched(tmp_path, "acct")
    waiter_inner = FakeInner(turn=SILENT)
    waiter = sharing(board, waiter_inner, clock)
    prober = sharing(FileCapacityBoard(tmp_path, "acct"), FakeInner(probe=OPEN), clock)
    woke: list[bool] = []

    async def main() -> None:
        await waiter.run_turn("go", session_id=None)  # the window closes
        clock.advance(minutes=6)
        await prober.probe()  # finds it open, between two sleeps of the waiter's wait
        sleeper = waiter.waking(Endless(), watch=0.05)
        with anyio.fail_after(30):
            woke.append(await sleeper.sleep_until(clock() + HOUR))
            woke.append(await sleeper.sleep_until(clock() + HOUR))
        probe = await waiter.probe()
        assert classify(probe.signals) == Available()

    anyio.run(main)
    assert woke == [True, True]
    assert waiter_inner.probes == 0  # it took the prober's result


def test_news_of_a_closed_window_or_of_the_loops_own_does_not_end_the_wait(
    tmp_path: Path,
) -> None:
    clock = Clock()
    board = Watched(tmp_path, "acct")
    waiter = sharing(board, FakeInner(turn=SILENT), clock)
    prober_inner = FakeInner(probe=SILENT)
    prober = sharing(FileCapacityBoard(tmp_path, "acct"), prober_inner, clock)
    endless = Endless()
    woke: list[bool] = []

    async def main() -> None:
        await waiter.run_turn("go", session_id=None)
        async with waiting_an_hour(waiter.waking(endless, watch=0.05), endless, clock, woke):
            clock.advance(minutes=6)
            await prober.probe()  # still closed: seq 2
            board.publish(  # the waiter's own word that it is open: seq 3
                signals=OPEN, standing="open", source="turn", writer=waiter.writer, now=clock()
            )
            while 3 not in board.heard:
                await anyio.sleep(0.01)
            assert woke == []
            endless.ended.set()  # a control command ends it

    anyio.run(main)
    assert prober_inner.probes == 1
    assert woke == [False]
    assert not endless.cut_short


def test_a_pause_before_the_wall_is_not_ended_by_another_loops_news(tmp_path: Path) -> None:
    # The turn was answered (capacity open) and its window is past the run's threshold:
    # the run waits for the reset however open the others find the account.
    clock = Clock()
    board = Watched(tmp_path, "acct")
    waiter = sharing(board, FakeInner(turn=OPEN), clock)
    prober = sharing(FileCapacityBoard(tmp_path, "acct"), FakeInner(probe=OPEN), clock)
    endless = Endless()
    woke: list[bool] = []

    async def main() -> None:
        await waiter.run_turn("go", session_id=None)
        async with waiting_an_hour(waiter.waking(endless, watch=0.05), endless, clock, woke):
            clock.advance(minutes=6)
            await prober.probe()  # open: seq 2
            while 2 not in board.heard:
                await anyio.sleep(0.01)
            assert woke == []
            endless.ended.set()

    anyio.run(main)
    assert woke == [False]


def test_a_run_of_one_machine_without_sharing_sleeps_as_ever() -> None:
    endless = Endless()
    assert woken_by_the_board(FakeInner(), endless) is endless


def test_runs_of_one_worker_wake_on_a_probe_another_worker_published_in_postgresql(
    fleet_boards: FleetBoards,
) -> None:
    # The database stamps records with its own clock: the loops read the real one.
    def now() -> datetime:
        return datetime.now(UTC)

    # Two runs of one worker (its one LISTEN wakes both), a prober on another worker.
    waiters_inner = [FakeInner(turn=SILENT), FakeInner()]
    run_of_the_worker = fleet_boards.worker()
    waiters = [
        SharedCapacityGateway(inner, run_of_the_worker("acct"), policy=POLICY)
        for inner in waiters_inner
    ]
    prober = fleet_boards.board("acct")
    woke: list[bool] = []

    async def main() -> None:
        await waiters[0].run_turn("go", session_id=None)  # refused: the window closes
        held = await waiters[1].run_turn("go", session_id=None)
        assert not held.sent  # the other took that as its own
        entered = 0

        class Counted(WallClockSleeper):
            async def sleep_until(
                self, instant: datetime, *, progress: Callable[[float], None] | None = None
            ) -> bool:
                nonlocal entered
                entered += 1
                return await super().sleep_until(instant, progress=progress)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for waiter in waiters:

                    async def wait(gateway: SharedCapacityGateway = waiter) -> None:
                        sleeper = gateway.waking(Counted(FakeControl()), watch=30)
                        woke.append(await sleeper.sleep_until(now() + HOUR))

                    group.start_soon(wait)
                while entered < len(waiters):
                    await anyio.sleep(0.01)
                # Another machine's probe finds the window open.
                prober.publish(
                    signals=OPEN, standing="open", source="probe", writer="prober", now=now()
                )
        for waiter in waiters:
            probe = await waiter.probe()
            assert classify(probe.signals) == Available()

    anyio.run(main)
    # Woken by the NOTIFY (a look lasts 30 s, the wait an hour), neither probed.
    assert woke == [True, True]
    assert [inner.probes for inner in waiters_inner] == [0, 0]
