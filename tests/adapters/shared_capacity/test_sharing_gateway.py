"""The decorator around a fake gateway: turns not sent into a closed window, one prober
per account, followers that send nothing and take the prober's result."""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from claudeloop.adapters.shared_capacity import FileCapacityBoard, SharedCapacityGateway
from claudeloop.application.ports import ProbeOutcome, TurnOutcome
from claudeloop.domain.capacity import (
    Available,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.classify import classify
from claudeloop.domain.signals import TurnSignals, WindowUsage
from claudeloop.domain.waiting import AnnouncedReset, WaitPolicyConfig

T = TypeVar("T")
START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
RESET = START + timedelta(hours=1)
OPEN = TurnSignals(rate_limit_status="allowed", result_text="ok")
SILENT = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    api_error_status=429,
    is_error=True,
    result_text="API Error: 429 you have hit your limit",
)
WITH_RESET = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    resets_at=RESET,
    api_error_status=429,
    is_error=True,
    result_text="API Error: 429 limit reached",
)
CREDITS = TurnSignals(
    assistant_error="billing_error", is_error=True, result_text="Credit balance is too low"
)
AUTH = TurnSignals(assistant_error="authentication_failed", is_error=True, result_text="401")
POLICY = WaitPolicyConfig(
    window_probe_interval=timedelta(minutes=5),
    credits_probe_interval=timedelta(minutes=1),
    reset_retry_interval=timedelta(seconds=10),
)


class Clock:
    def __init__(self) -> None:
        self.instant = START

    def __call__(self) -> datetime:
        return self.instant

    def advance(self, **delta: float) -> None:
        self.instant += timedelta(**delta)


class FakeInner:
    """The real gateway's stand-in: scripted turn signals and probe signals."""

    def __init__(self, *, turn: TurnSignals = OPEN, probe: TurnSignals = OPEN) -> None:
        self.turn = turn
        self.probe_signals = probe
        self.prompts: list[tuple[str, str | None]] = []
        self.probes = 0
        self.probing = anyio.Event()
        self.hold: anyio.Event | None = None
        self.failure: str | None = None
        self.closed = False
        self.readied: list[str | None] = []
        self.stood_down = 0

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        self.prompts.append((prompt, session_id))
        return TurnOutcome(
            signals=self.turn,
            structured=None,
            final_text="done",
            cost_usd=0.25,
            session_id=session_id or "new-session",
            failure=self.failure,
        )

    async def probe(self) -> ProbeOutcome:
        self.probes += 1
        self.probing.set()
        if self.hold is not None:
            await self.hold.wait()
        return ProbeOutcome(signals=self.probe_signals, cost_usd=0.001)

    async def get_ready(self, session_id: str | None) -> None:
        self.readied.append(session_id)

    async def stand_down(self) -> None:
        self.stood_down += 1

    async def close(self) -> tuple[str, ...]:
        self.closed = True
        return ()


def loop(tmp_path: Path, inner: FakeInner, clock: Clock, **options: Any) -> SharedCapacityGateway:
    return SharedCapacityGateway(
        inner,
        FileCapacityBoard(tmp_path / "capacity", "acct"),
        policy=POLICY,
        now=clock,
        poll=0.01,
        **options,
    )


def run(function: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(function)


def published(tmp_path: Path) -> tuple[int, str, str] | None:
    sighting = FileCapacityBoard(tmp_path / "capacity", "acct").read()
    if sighting is None:
        return None
    return sighting.seq, sighting.source, sighting.standing


def test_a_turn_goes_through_and_its_success_is_published_as_open(tmp_path: Path) -> None:
    inner = FakeInner()
    gateway = loop(tmp_path, inner, Clock())
    outcome = run(lambda: gateway.run_turn("go", session_id=None))
    assert outcome.final_text == "done"
    assert inner.prompts == [("go", None)]
    assert published(tmp_path) == (1, "turn", "open")
    run(gateway.close)
    assert inner.closed


def test_getting_ready_and_standing_down_reach_the_real_gateway(tmp_path: Path) -> None:
    inner = FakeInner()
    gateway = loop(tmp_path, inner, Clock())
    run(lambda: gateway.get_ready("s"))
    run(gateway.stand_down)
    assert (inner.readied, inner.stood_down) == (["s"], 1)
    assert published(tmp_path) is None  # nothing was asked of the service


def test_turns_of_the_same_capacity_write_the_record_once_and_a_moved_reset_again(
    tmp_path: Path,
) -> None:
    inner = FakeInner()
    gateway = loop(tmp_path, inner, Clock())
    for number in range(3):
        inner.turn = replace(OPEN, result_text=f"turn {number}")
        run(lambda: gateway.run_turn("go", session_id="s"))
    assert published(tmp_path) == (1, "turn", "open")
    inner.turn = replace(OPEN, rate_limit_type="five_hour", resets_at=datetime.now(UTC))
    run(lambda: gateway.run_turn("go", session_id="s"))
    assert published(tmp_path) == (2, "turn", "open")


def test_a_refused_turn_is_published_as_closed(tmp_path: Path) -> None:
    gateway = loop(tmp_path, FakeInner(turn=SILENT), Clock())
    run(lambda: gateway.run_turn("go", session_id="s"))
    assert published(tmp_path) == (1, "turn", "closed")


@pytest.mark.parametrize("signals", [AUTH, TurnSignals(api_error_status=404, local_backend=True)])
def test_a_loops_own_trouble_is_not_published(tmp_path: Path, signals: TurnSignals) -> None:
    gateway = loop(tmp_path, FakeInner(turn=signals), Clock())
    run(lambda: gateway.run_turn("go", session_id="s"))
    assert published(tmp_path) is None


def test_a_turn_that_failed_says_nothing_about_capacity(tmp_path: Path) -> None:
    inner = FakeInner()
    inner.failure = "Claude Code ended the turn without a result"
    gateway = loop(tmp_path, inner, Clock())
    run(lambda: gateway.run_turn("go", session_id="s"))
    assert published(tmp_path) is None


@pytest.mark.parametrize(
    ("signals", "expected"),
    [
        (SILENT, WindowExhausted("five_hour", None)),
        (WITH_RESET, WindowExhausted("five_hour", RESET)),
        (CREDITS, CreditsExhausted),
    ],
)
def test_no_turn_is_sent_into_capacity_another_loop_found_closed(
    tmp_path: Path, signals: TurnSignals, expected: object
) -> None:
    clock = Clock()
    first = loop(tmp_path, FakeInner(turn=signals), clock)
    run(lambda: first.run_turn("go", session_id="a"))
    clock.advance(seconds=30)
    inner = FakeInner()
    second = loop(tmp_path, inner, clock)
    outcome = run(lambda: second.run_turn("continue", session_id="b-session"))
    assert inner.prompts == []
    assert inner.probes == 0
    capacity = classify(outcome.signals)
    if isinstance(expected, type):
        assert isinstance(capacity, expected)
    else:
        assert capacity == expected  # the same limit, waited for until the same instant
    assert outcome.signals.is_error
    assert outcome.cost_usd == 0
    assert outcome.session_id == "b-session"
    assert outcome.structured is None
    assert outcome.final_text == ""
    assert outcome.failure is None
    assert outcome.signals.result_text.startswith("not sent: process ")
    assert outcome.sent is False  # counts as no attempt


def test_after_the_announced_reset_one_probe_decides_before_the_turn(tmp_path: Path) -> None:
    clock = Clock()
    run(lambda: loop(tmp_path, FakeInner(turn=WITH_RESET), clock).run_turn("go", session_id="a"))
    clock.instant = RESET + timedelta(seconds=3)
    inner = FakeInner(probe=OPEN)
    outcome = run(lambda: loop(tmp_path, inner, clock).run_turn("go on", session_id="b"))
    assert inner.probes == 1
    assert inner.prompts == [("go on", "b")]
    assert outcome.final_text == "done"


def test_after_the_reset_a_probe_that_still_finds_it_closed_keeps_the_turn_back(
    tmp_path: Path,
) -> None:
    clock = Clock()
    run(lambda: loop(tmp_path, FakeInner(turn=WITH_RESET), clock).run_turn("go", session_id="a"))
    clock.instant = RESET + timedelta(seconds=3)
    later = WindowExhausted("five_hour", RESET + timedelta(hours=5))
    inner = FakeInner(probe=replace(WITH_RESET, resets_at=later.resets_at))
    outcome = run(lambda: loop(tmp_path, inner, clock).run_turn("go on", session_id="b"))
    assert inner.probes == 1
    assert inner.prompts == []
    assert classify(outcome.signals) == later
    assert outcome.cost_usd == 0.001  # the probe's


def test_a_closed_record_without_reset_older_than_an_interval_is_probed_first(
    tmp_path: Path,
) -> None:
    clock = Clock()
    run(lambda: loop(tmp_path, FakeInner(turn=SILENT), clock).run_turn("go", session_id="a"))
    clock.advance(minutes=6)
    inner = FakeInner(probe=OPEN)
    run(lambda: loop(tmp_path, inner, clock).run_turn("go on", session_id="b"))
    assert (inner.probes, len(inner.prompts)) == (1, 1)


def test_a_closed_record_hours_old_is_ignored(tmp_path: Path) -> None:
    clock = Clock()
    run(lambda: loop(tmp_path, FakeInner(turn=SILENT), clock).run_turn("go", session_id="a"))
    clock.advance(hours=7)
    inner = FakeInner()
    run(lambda: loop(tmp_path, inner, clock).run_turn("go on", session_id="b"))
    assert (inner.probes, len(inner.prompts)) == (0, 1)


def test_a_success_of_a_turn_begun_before_the_window_closed_does_not_reopen_it(
    tmp_path: Path,
) -> None:
    clock = Clock()
    slow_inner = FakeInner()
    slow = loop(tmp_path, slow_inner, clock)
    refused = loop(tmp_path, FakeInner(turn=SILENT), clock)

    async def both() -> None:
        # The slow loop's turn begins; meanwhile another loop meets the closed window.
        original = slow_inner.run_turn

        async def slow_turn(
            prompt: str,
            *,
            session_id: str | None,
            interrupted_at: datetime | None = None,
            on_session: Callable[[str], None] | None = None,
        ) -> TurnOutcome:
            clock.advance(seconds=10)
            await refused.run_turn("go", session_id="r")
            clock.advance(seconds=10)
            return await original(prompt, session_id=session_id)

        slow_inner.run_turn = slow_turn  # type: ignore[method-assign]
        await slow.run_turn("long work", session_id="s")

    run(both)
    assert published(tmp_path) == (1, "turn", "closed")


def test_a_probe_takes_what_another_loop_learned_within_a_probe_interval(tmp_path: Path) -> None:
    clock = Clock()
    run(lambda: loop(tmp_path, FakeInner(turn=SILENT), clock).run_turn("go", session_id="a"))
    clock.advance(minutes=4)
    inner = FakeInner()
    probe = run(loop(tmp_path, inner, clock).probe)
    assert inner.probes == 0
    assert classify(probe.signals) == WindowExhausted("five_hour", None)
    assert probe.cost_usd == 0


def test_a_loop_does_not_take_its_own_record_as_news(tmp_path: Path) -> None:
    clock = Clock()
    inner = FakeInner(turn=SILENT, probe=OPEN)
    gateway = loop(tmp_path, inner, clock)
    run(lambda: gateway.run_turn("go", session_id="a"))
    clock.advance(seconds=5)
    probe = run(gateway.probe)
    assert inner.probes == 1
    assert classify(probe.signals) == Available()
    assert published(tmp_path) == (2, "probe", "open")


def test_a_closed_record_written_before_its_reset_is_no_news_after_it(tmp_path: Path) -> None:
    clock = Clock()
    run(lambda: loop(tmp_path, FakeInner(turn=WITH_RESET), clock).run_turn("go", session_id="a"))
    clock.instant = RESET + timedelta(seconds=2)
    inner = FakeInner(probe=OPEN)
    run(loop(tmp_path, inner, clock).probe)
    assert inner.probes == 1


def test_a_closed_probe_after_the_reset_is_news_for_a_retry_interval(tmp_path: Path) -> None:
    clock = Clock()
    clock.instant = RESET + timedelta(seconds=2)
    run(loop(tmp_path, FakeInner(probe=WITH_RESET), clock).probe)  # the service is late
    clock.advance(seconds=5)
    inner = FakeInner()
    run(loop(tmp_path, inner, clock).probe)
    assert inner.probes == 0
    clock.advance(seconds=10)
    run(loop(tmp_path, inner, clock).probe)
    assert inner.probes == 1


def test_credits_news_lasts_a_credits_interval(tmp_path: Path) -> None:
    clock = Clock()
    run(lambda: loop(tmp_path, FakeInner(turn=CREDITS), clock).run_turn("go", session_id="a"))
    clock.advance(seconds=90)
    inner = FakeInner()
    run(loop(tmp_path, inner, clock).probe)
    assert inner.probes == 1


def test_followers_send_nothing_and_take_the_probers_result(tmp_path: Path) -> None:
    clock = Clock()
    leader_inner = FakeInner(probe=OPEN)
    leader_inner.hold = anyio.Event()
    followers_inner = [FakeInner(), FakeInner()]
    leader = loop(tmp_path, leader_inner, clock)
    followers = [loop(tmp_path, inner, clock) for inner in followers_inner]
    results: dict[str, ProbeOutcome] = {}

    async def probe(name: str, gateway: SharedCapacityGateway) -> None:
        results[name] = await gateway.probe()

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(probe, "leader", leader)
            await leader_inner.probing.wait()
            for number, follower in enumerate(followers):
                group.start_soon(probe, f"follower{number}", follower)
            await anyio.sleep(0.1)  # the followers poll a held lock meanwhile
            assert len(results) == 0
            leader_inner.hold.set()  # type: ignore[union-attr]

    run(main)
    assert leader_inner.probes == 1
    assert [inner.probes for inner in followers_inner] == [0, 0]
    assert all(inner.prompts == [] for inner in followers_inner)
    assert all(classify(result.signals) == Available() for result in results.values())
    assert results["leader"].cost_usd == 0.001
    assert results["follower0"].cost_usd == results["follower1"].cost_usd == 0
    assert published(tmp_path) == (1, "probe", "open")


def test_a_prober_that_hangs_is_given_up_on_after_the_follow_limit(tmp_path: Path) -> None:
    clock = Clock()
    stuck = FakeInner()
    stuck.hold = anyio.Event()
    follower_inner = FakeInner(probe=SILENT)
    follower = loop(tmp_path, follower_inner, clock, follow_limit=0.05)
    results: list[ProbeOutcome] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(loop(tmp_path, stuck, clock).probe)
            await stuck.probing.wait()
            results.append(await follower.probe())
            stuck.hold.set()  # type: ignore[union-attr]

    run(main)
    assert follower_inner.probes == 1
    assert classify(results[0].signals) == WindowExhausted("five_hour", None)


def _hold_probe_lock(directory: str, ready: multiprocessing.synchronize.Event) -> None:
    lock = FileCapacityBoard(Path(directory), "acct").try_probe_lock()
    assert lock is not None
    ready.set()
    signal.pause()


def test_when_the_prober_dies_a_follower_probes_instead(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    holder = context.Process(target=_hold_probe_lock, args=(str(tmp_path / "capacity"), ready))
    holder.start()
    assert ready.wait(10)
    inner = FakeInner(probe=OPEN)
    follower = loop(tmp_path, inner, Clock())
    results: list[ProbeOutcome] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:

            async def follow() -> None:
                results.append(await follower.probe())

            group.start_soon(follow)
            await anyio.sleep(0.1)
            assert (inner.probes, results) == (0, [])  # following a live prober
            holder.kill()

    try:
        run(main)
    finally:
        holder.kill()
        holder.join(10)
    assert inner.probes == 1
    assert classify(results[0].signals) == Available()
    assert published(tmp_path) == (1, "probe", "open")


def test_without_a_usable_state_directory_the_loop_goes_on_alone(tmp_path: Path) -> None:
    blocker = tmp_path / "capacity"
    blocker.write_text("a file where the directory should be")
    lines: list[str] = []
    inner = FakeInner(turn=SILENT, probe=OPEN)
    gateway = SharedCapacityGateway(
        inner, FileCapacityBoard(blocker, "acct"), policy=POLICY, note=lines.append
    )
    outcome = run(lambda: gateway.run_turn("go", session_id="a"))
    assert classify(outcome.signals) == WindowExhausted("five_hour", None)
    probe = run(gateway.probe)
    assert classify(probe.signals) == Available()
    assert inner.probes == 1
    assert any("could not update the shared capacity record" in line for line in lines)
    assert any("probing alone" in line for line in lines)


@contextlib.contextmanager
def record_lock_held(tmp_path: Path, *, at_most: float = 15) -> Iterator[None]:
    """Another holder of the account record's lock (a stuck process), let go after
    `at_most` seconds so that a loop that waits for it unbounded is caught, not hung."""
    directory = tmp_path / "capacity"
    directory.mkdir(exist_ok=True)
    descriptor = os.open(directory / "acct.lock", os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    safety = threading.Timer(at_most, fcntl.flock, (descriptor, fcntl.LOCK_UN))
    safety.start()
    try:
        yield
    finally:
        safety.cancel()
        os.close(descriptor)


def test_a_turn_goes_on_without_sharing_when_the_record_stays_locked(tmp_path: Path) -> None:
    lines: list[str] = []
    inner = FakeInner(turn=SILENT)
    gateway = loop(tmp_path, inner, Clock(), lock_patience=0.05, note=lines.append)
    with record_lock_held(tmp_path):
        outcome = run(lambda: gateway.run_turn("go", session_id="s"))
        assert published(tmp_path) is None
    assert classify(outcome.signals) == WindowExhausted("five_hour", None)
    assert inner.prompts == [("go", "s")]
    assert any("going on without sharing this turn's news" in line for line in lines)
    assert any("acct.lock: held by another process" in line for line in lines)


def test_waiting_for_the_record_lock_leaves_the_loop_free_to_be_stopped(tmp_path: Path) -> None:
    # While another process holds the lock, the event loop still runs: what a second
    # Ctrl-C or SIGTERM does (cancel the run) happens at once.
    inner = FakeInner(turn=SILENT)
    gateway = loop(tmp_path, inner, Clock())
    cancelled: list[bool] = []

    async def turn_then_stop() -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: gateway.run_turn("go", session_id="s"))
                while not inner.prompts:
                    await anyio.sleep(0.001)
                await anyio.sleep(0.01)
                scope.cancel()
        cancelled.append(scope.cancelled_caught)

    with record_lock_held(tmp_path):
        run(turn_then_stop)
        assert published(tmp_path) is None
    assert cancelled == [True]


def _meet_the_window_and_exit(directory: str, run_id: str | None, at: datetime) -> None:
    """A driver that met the closed window, published it, and is gone (stopped)."""
    clock = Clock()
    clock.instant = at
    gateway = SharedCapacityGateway(
        FakeInner(turn=SILENT), FileCapacityBoard(Path(directory), "acct"), run_id=run_id, now=clock
    )
    run(lambda: gateway.run_turn("go", session_id="a"))


def gone_driver_met_the_window(tmp_path: Path, run_id: str | None, at: datetime = START) -> None:
    context = multiprocessing.get_context("fork")
    driver = context.Process(
        target=_meet_the_window_and_exit, args=(str(tmp_path / "capacity"), run_id, at)
    )
    driver.start()
    driver.join(30)
    assert driver.exitcode == 0
    assert published(tmp_path) == (1, "turn", "closed")


def test_a_resumed_run_sends_its_turn_past_its_own_stopped_drivers_record(
    tmp_path: Path,
) -> None:
    gone_driver_met_the_window(tmp_path, "run-a")
    clock = Clock()
    clock.advance(seconds=30)  # well within a probe interval: the record looks fresh
    inner = FakeInner()
    resumed = loop(tmp_path, inner, clock, run_id="run-a")
    outcome = run(lambda: resumed.run_turn("go on", session_id="a"))
    assert (inner.probes, inner.prompts) == (0, [("go on", "a")])
    assert outcome.sent is True
    assert published(tmp_path) == (2, "turn", "open")


def test_a_runs_own_record_from_a_live_driver_of_before_holds_nothing_back(
    tmp_path: Path,
) -> None:
    clock = Clock()
    run(
        lambda: loop(tmp_path, FakeInner(turn=SILENT), clock, run_id="run-a").run_turn(
            "go", session_id="a"
        )
    )
    clock.advance(seconds=30)
    inner = FakeInner()
    again = loop(tmp_path, inner, clock, run_id="run-a")
    run(lambda: again.run_turn("go on", session_id="a"))
    assert (inner.probes, len(inner.prompts)) == (0, 1)
    # Nor is it taken as the answer of a probe: the run asks the service itself.
    probe = run(loop(tmp_path, inner, clock, run_id="run-a").probe)
    assert inner.probes == 1
    assert classify(probe.signals) == Available()


@pytest.mark.parametrize("probe_finds", [OPEN, SILENT])
def test_another_runs_record_whose_process_is_gone_is_checked_with_one_probe_at_once(
    tmp_path: Path, probe_finds: TurnSignals
) -> None:
    gone_driver_met_the_window(tmp_path, "run-a")
    clock = Clock()
    clock.advance(seconds=30)
    inner = FakeInner(probe=probe_finds)
    other = loop(tmp_path, inner, clock, run_id="run-b")
    outcome = run(lambda: other.run_turn("go", session_id="b"))
    assert inner.probes == 1
    if probe_finds is OPEN:
        assert inner.prompts == [("go", "b")]
        assert outcome.sent is True
        # The turn's answer says what the probe's record says: not written again.
        assert published(tmp_path) == (2, "probe", "open")
    else:
        assert inner.prompts == []
        assert outcome.sent is False
        assert outcome.signals.result_text.startswith("not sent: a probe found")
        assert published(tmp_path) == (2, "probe", "closed")


def test_a_probe_does_not_take_a_gone_processs_record_as_its_answer(tmp_path: Path) -> None:
    gone_driver_met_the_window(tmp_path, "run-a")
    clock = Clock()
    clock.advance(seconds=30)
    inner = FakeInner(probe=OPEN)
    probe = run(loop(tmp_path, inner, clock, run_id="run-b").probe)
    assert inner.probes == 1
    assert classify(probe.signals) == Available()


def test_a_record_older_than_the_runs_own_last_request_is_checked_at_once(
    tmp_path: Path,
) -> None:
    clock = Clock()
    run(
        lambda: loop(tmp_path, FakeInner(turn=SILENT), clock, run_id="run-a").run_turn(
            "go", session_id="a"
        )
    )
    clock.advance(seconds=30)
    inner = FakeInner(probe=OPEN)
    # This run's last turn began after that record was written (its own news of it was
    # never shared: the board was busy, say).
    known = START + timedelta(seconds=10)
    other = loop(tmp_path, inner, clock, run_id="run-b", known_at=known)
    run(lambda: other.run_turn("go", session_id="b"))
    assert (inner.probes, len(inner.prompts)) == (1, 1)


def test_a_live_runs_record_written_before_records_named_their_run_still_holds_back(
    tmp_path: Path,
) -> None:
    clock = Clock()
    run(lambda: loop(tmp_path, FakeInner(turn=SILENT), clock).run_turn("go", session_id="a"))
    board = FileCapacityBoard(tmp_path / "capacity", "acct")
    data = json.loads(board.path.read_text())
    del data["run_id"], data["host"]  # as an older claudeloop writes it
    board.path.write_text(json.dumps(data))
    clock.advance(seconds=30)
    inner = FakeInner()
    outcome = run(
        lambda: loop(tmp_path, inner, clock, run_id="run-b").run_turn("go", session_id="b")
    )
    assert (inner.probes, inner.prompts, outcome.sent) == (0, [], False)


def test_the_resets_another_run_heard_announced_come_back_with_a_silent_refusal(
    tmp_path: Path,
) -> None:
    clock = Clock()
    announcing = replace(OPEN, windows=(WindowUsage("five_hour", 0.97, RESET),))
    run(lambda: loop(tmp_path, FakeInner(turn=announcing), clock).run_turn("go", session_id="a"))
    clock.advance(seconds=30)
    refused = run(
        lambda: loop(tmp_path, FakeInner(turn=SILENT), clock).run_turn("go", session_id="b")
    )
    assert classify(refused.signals) == WindowExhausted("five_hour", None)
    assert refused.announced == (AnnouncedReset("five_hour", RESET),)


def test_a_runs_own_record_is_no_other_runs_announcement(tmp_path: Path) -> None:
    clock = Clock()
    announcing = replace(OPEN, windows=(WindowUsage("five_hour", 0.5, RESET),))
    inner = FakeInner(turn=announcing)
    gateway = loop(tmp_path, inner, clock)
    run(lambda: gateway.run_turn("go", session_id="a"))
    inner.turn = SILENT
    refused = run(lambda: gateway.run_turn("go", session_id="a"))
    assert refused.announced == ()
    probe = run(gateway.probe)
    assert probe.announced == ()
