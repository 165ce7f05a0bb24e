"""A gateway that shares what it learns about capacity with the account's other loops.

It wraps the real gateway and keeps the runner none the wiser: the runner asks for a
turn or a probe and reads the signals it gets back, as ever. Behind that:

- After every real probe the signals are published on the account's board, and after
  every real turn whose signals are news to the record (`domain.sightings.is_news`: a
  window closed or opened, a reset moved), not after each turn of the same capacity.
- A turn is not sent into a window another loop found closed: the loop gets that loop's
  signals back (a refused turn that cost nothing), so it classifies the same limit and
  waits for the same instant. Once an announced reset has passed, or a closed record
  without one is older than a probe interval, one shared probe decides first.
- Who wrote the record decides how much it is worth (`domain.sightings.trust_in_record`): a run's
  own earlier record (a driver of it that was stopped or crashed) holds nothing back;
  another run's, whose process is gone or that is older than this run's own last
  request, is checked with one probe at once instead of being waited out.
- Only one loop probes at a time. The others wait for its result and take it as their
  own; a result another loop published less than a probe interval ago is taken as it
  is. When the prober dies its lock dies with it and a waiting loop probes instead.
- A loop waiting for capacity wakes as soon as another loop finds it open (`waking`
  wraps its sleeper): it takes that result as its probe's and sends its next turn,
  instead of sleeping on to a probe instant of its own. News is what was published
  since the loop was told capacity is closed, so every sleep of one wait hears it (the
  runner sleeps to the instant it gets ready, then to its probe's).
- The resets other runs' records announce (their answers' windows) go back with every
  outcome (`announced`): a refusal of this run that names its window but no reset waits
  for the one another run heard last (domain.waiting.remembered_reset).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import assert_never

import anyio
import anyio.to_thread

from claudeloop.adapters.shared_capacity.record import (
    LOCK_PATIENCE_SECONDS,
    BoardBusy,
)
from claudeloop.application.ports import (
    CapacityBoard,
    Gateway,
    ProbeHold,
    ProbeOutcome,
    Sighting,
    Sleeper,
    Source,
    Standing,
    TurnOutcome,
)
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.classify import classify
from claudeloop.domain.sightings import RecordTrust, is_news, trust_in_record
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.text import first_line
from claudeloop.domain.waiting import (
    AnnouncedReset,
    WaitPolicyConfig,
    announced_in,
    remember_resets,
)

# A closed record older than this says nothing about now (no loop is watching it).
MAX_AGE = timedelta(hours=6)
# How long a loop waits for another's probe before probing itself: far longer than a
# probe (a CLI start and one tiny request) takes, so only a hung prober runs into it.
FOLLOW_LIMIT_SECONDS = 120.0
POLL_SECONDS = 0.2
# How long one look for news lasts (a thread waits on the board meanwhile): the longest
# a finished wait leaves that thread behind, which a run stopped in its wait waits for
# as it exits (1 s made `claudeloop stop` take 2 s on a loaded machine).
WATCH_SECONDS = 0.25
_LOCK_RETRY_SECONDS = 0.02
# A record stamped this far in the future was written under another clock: ignored.
_CLOCK_SLACK = timedelta(minutes=1)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def standing_of(capacity: CapacityState) -> Standing:
    match capacity:
        case WindowExhausted() | CreditsExhausted():
            return "closed"
        case Available():
            return "open"
        case AuthenticationFailed() | BackendMisconfigured():
            return "other"  # this loop's credentials or configuration, not the account's
        case _:
            assert_never(capacity)


class SharedCapacityGateway:
    """The `Gateway` port over another gateway, sharing capacity through `board`.

    `run_id`: the run whose turns it carries, so that the run's own earlier records are
    told from other runs' (None: a gateway of its own, as no other run). `known_at`:
    when the run last asked the service itself before this process (its last turn's
    start), so that a record older than that is checked rather than trusted."""

    def __init__(
        self,
        inner: Gateway,
        board: CapacityBoard,
        *,
        run_id: str | None = None,
        known_at: datetime | None = None,
        policy: WaitPolicyConfig | None = None,
        now: Callable[[], datetime] = _utc_now,
        note: Callable[[str], None] = lambda _line: None,
        max_age: timedelta = MAX_AGE,
        follow_limit: float = FOLLOW_LIMIT_SECONDS,
        poll: float = POLL_SECONDS,
        lock_patience: float = LOCK_PATIENCE_SECONDS,
    ) -> None:
        self._inner = inner
        self._board = board
        self._policy = policy or WaitPolicyConfig()
        self._now = now
        self._note = note
        self._max_age = max_age
        self._follow_limit = follow_limit
        self._poll = poll
        self._lock_patience = lock_patience
        self.writer = f"{os.getpid()}:{secrets.token_hex(4)}"
        self.run_id = run_id if run_id is not None else self.writer
        self._known_at = known_at
        # Whether the runner was last told capacity is closed: only such a wait is one
        # that news of capacity open ends (not a pause before the wall, say); and the
        # board's record then, after which a record is news.
        self._told_closed = False
        self._closed_seen: int | None = None
        # The resets other runs' records announced, per window, as this loop read them.
        self._heard: tuple[AnnouncedReset, ...] = ()

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        outcome = await self._run_turn(
            prompt, session_id=session_id, interrupted_at=interrupted_at, on_session=on_session
        )
        return replace(outcome, announced=self._heard)

    async def _run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None,
        on_session: Callable[[str], None] | None,
    ) -> TurnOutcome:
        sighting = self._read()
        if sighting is not None and self._closed_now(sighting):
            trusted = self._trust_in(sighting)
            match trusted:
                case RecordTrust.IGNORE:
                    pass  # the run's own news, weighed when it decided to send this turn
                case RecordTrust.TRUST | RecordTrust.CHECK:
                    if trusted is RecordTrust.TRUST and self._still_closed(sighting):
                        return self._not_sent(sighting.signals, sighting.pid, session_id)
                    if trusted is RecordTrust.CHECK:
                        self._note(
                            f"turn: process {sighting.pid}'s record of capacity closed "
                            "may be stale (its process is gone, or this run asked the "
                            "service since); one probe decides, at once"
                        )
                    # The record may be out of date: one probe (whoever makes it) decides.
                    probe = await self.probe()
                    if standing_of(classify(probe.signals)) == "closed":
                        return self._not_sent(probe.signals, None, session_id, cost=probe.cost_usd)
                case _:
                    assert_never(trusted)
        started = self._now()
        outcome = await self._inner.run_turn(
            prompt, session_id=session_id, interrupted_at=interrupted_at, on_session=on_session
        )
        if outcome.failure is None:
            self._known_at = started
            await self._publish_turn(outcome.signals, started)
        self._tell_closed(standing_of(classify(outcome.signals)) == "closed")
        return outcome

    async def probe(self) -> ProbeOutcome:
        outcome = await self._probe()
        self._tell_closed(standing_of(classify(outcome.signals)) == "closed")
        return replace(outcome, announced=self._heard)

    async def _probe(self) -> ProbeOutcome:
        seen = self._read()
        if seen is not None and self._recent_news(seen):
            self._note(f"probe: took what process {seen.pid} learned at {seen.at:%H:%M:%S}")
            return ProbeOutcome(signals=seen.signals)
        deadline = time.monotonic() + self._follow_limit
        while True:
            lock = self._try_probe_lock()
            if lock is not None:
                try:
                    latest = self._read()
                    if latest is not None and latest != seen:
                        return ProbeOutcome(signals=latest.signals)
                    return await self._probe_and_publish()
                finally:
                    lock.release()
            if time.monotonic() >= deadline:
                self._note("probe: another loop's probe took too long; probing alongside it")
                return await self._probe_and_publish()
            await anyio.sleep(self._poll)
            latest = self._read()
            if latest is not None and latest != seen:
                self._note(f"probe: took the result of process {latest.pid}'s probe")
                return ProbeOutcome(signals=latest.signals)

    async def get_ready(self, session_id: str | None) -> None:
        # Started whatever the board says at the instant: a probe that takes another
        # loop's result leaves its process to the next probe, or to `stand_down`.
        await self._inner.get_ready(session_id)

    async def stand_down(self) -> None:
        await self._inner.stand_down()

    async def close(self) -> tuple[str, ...]:
        return await self._inner.close()

    def waking(self, sleeper: Sleeper, *, watch: float = WATCH_SECONDS) -> Sleeper:
        """`sleeper`, woken early when another loop of the account finds capacity open."""
        return WokenByNews(
            sleeper,
            self._board,
            wakes=self.wakes,
            note=self._note,
            watch=watch,
            news_after=self.news_after,
        )

    def news_after(self) -> int | None:
        """The board's record as this loop was told capacity is closed: a record after
        it is news to the wait that began then (None: not told closed)."""
        return self._closed_seen if self._told_closed else None

    def _tell_closed(self, closed: bool) -> None:
        if closed and not self._told_closed:
            try:
                seen = self._board.read()
            except OSError:
                seen = None  # news is then what comes as each sleep begins, as before
            self._closed_seen = seen.seq if seen is not None else 0
        self._told_closed = closed

    def wakes(self, sighting: Sighting) -> bool:
        """Whether news ends a wait: this loop waits for capacity it was told is closed,
        and another loop found it open, recently enough that `probe` takes its result
        instead of probing."""
        return self._told_closed and sighting.standing == "open" and self._recent_news(sighting)

    def _closed_now(self, sighting: Sighting) -> bool:
        """Whether the record says closed and is young enough to matter."""
        age = self._now() - sighting.at
        return sighting.standing == "closed" and -_CLOCK_SLACK <= age <= self._max_age

    def _still_closed(self, sighting: Sighting) -> bool:
        """A closed record no one needs to check yet: its reset is still ahead, or it
        has none and is younger than a probe interval."""
        capacity = classify(sighting.signals)
        now = self._now()
        if isinstance(capacity, WindowExhausted) and capacity.resets_at is not None:
            return now < capacity.resets_at
        return now - sighting.at < self._interval(capacity)

    def _recent_news(self, sighting: Sighting) -> bool:
        """Whether another loop's record answers a probe made now as well as a probe
        would: younger than the interval this loop would probe at, and not a closed
        window whose announced reset came after it was written."""
        if self._trust_in(sighting) is not RecordTrust.TRUST:
            return False  # the run's own, or news that may be stale: a probe is made
        now = self._now()
        age = now - sighting.at
        if age < -_CLOCK_SLACK:
            return False
        capacity = classify(sighting.signals)
        if standing_of(capacity) == "other":
            return False
        reset = capacity.resets_at if isinstance(capacity, WindowExhausted) else None
        if reset is not None and reset <= now:
            return sighting.at >= reset and age < self._policy.reset_retry_interval
        return age < self._interval(capacity)

    def _interval(self, capacity: CapacityState) -> timedelta:
        if isinstance(capacity, CreditsExhausted):
            return self._policy.credits_probe_interval
        return self._policy.window_probe_interval

    def _trust_in(self, sighting: Sighting) -> RecordTrust:
        """What the record is worth to this run (see `domain.sightings`)."""
        by_this_run = self._by_this_run(sighting)
        return trust_in_record(
            by_this_run=by_this_run,
            writer_alive=None if by_this_run else self._board.writer_alive(sighting),
            seen_at=sighting.at,
            known_at=self._known_at,
        )

    async def _probe_and_publish(self) -> ProbeOutcome:
        started = self._now()
        outcome = await self._inner.probe()
        self._known_at = started
        await self._publish(outcome.signals, standing_of(classify(outcome.signals)), "probe")
        return outcome

    async def _publish_turn(self, signals: TurnSignals, started: datetime) -> None:
        standing = standing_of(classify(signals))
        if standing == "other":
            return  # credentials or configuration: this loop's trouble, not the account's
        current = self._read()
        if current is not None and not is_news(current.signals, signals):
            return  # the record says it already: one row every loop would rewrite

        def older_news(current: Sighting | None) -> bool:
            # A turn that began before another loop saw the window close says nothing
            # about after: its success must not reopen the window for everyone.
            return (
                standing == "open"
                and current is not None
                and current.standing == "closed"
                and current.at > started
            )

        await self._publish(signals, standing, "turn", unless=older_news)

    async def _publish(
        self,
        signals: TurnSignals,
        standing: Standing,
        source: Source,
        unless: Callable[[Sighting | None], bool] = lambda _current: False,
    ) -> None:
        # One attempt at a time with the event loop's sleeps between: a process stuck
        # holding the record's lock delays this loop a bounded time, and Ctrl-C and
        # SIGTERM are answered meanwhile.
        deadline = time.monotonic() + self._lock_patience
        while True:
            try:
                self._board.publish(
                    signals=signals,
                    standing=standing,
                    source=source,
                    writer=self.writer,
                    now=self._now(),
                    run_id=self.run_id,
                    unless=unless,
                    patience=0,
                )
                return
            except BoardBusy as error:
                if time.monotonic() < deadline:
                    await anyio.sleep(_LOCK_RETRY_SECONDS)
                    continue
                self._note(f"going on without sharing this {source}'s news: {error}")
                return
            except OSError as error:
                # Sharing is a courtesy between loops: this loop goes on without it.
                self._note(f"could not update the shared capacity record: {error}")
                return

    def _read(self) -> Sighting | None:
        sighting = self._board.read()
        if sighting is not None and not self._by_this_run(sighting):
            self._heard = remember_resets(self._heard, announced_in(sighting.signals))
        return sighting

    def _by_this_run(self, sighting: Sighting) -> bool:
        return sighting.writer == self.writer or sighting.run_id == self.run_id

    def _try_probe_lock(self) -> ProbeHold | None:
        try:
            return self._board.try_probe_lock()
        except OSError as error:
            self._note(f"no shared probe lock ({error}); probing alone")
            return _ALONE

    def _not_sent(
        self,
        signals: TurnSignals,
        pid: int | None,
        session_id: str | None,
        *,
        cost: float = 0.0,
    ) -> TurnOutcome:
        """The turn as the runner sees it when it was not sent: refused, for the reason
        the record gives, at no cost, on the session it was meant for."""
        who = f"process {pid}" if pid is not None else "a probe"
        detail = first_line(
            signals.result_text, longest=300, empty="the account's capacity is closed"
        )
        text = f"not sent: {who} found this account's capacity closed: {detail}"
        self._note(f"turn {text}")
        self._tell_closed(True)
        return TurnOutcome(
            signals=replace(signals, is_error=True, result_text=text),
            structured=None,
            final_text="",
            cost_usd=cost,
            session_id=session_id,
            sent=False,
        )


def woken_by_the_board(gateway: Gateway, sleeper: Sleeper) -> Sleeper:
    """`sleeper`, woken by the board's news when `gateway` shares capacity."""
    return gateway.waking(sleeper) if isinstance(gateway, SharedCapacityGateway) else sleeper


class WokenByNews:
    """A `Sleeper` that ends a wait early, as if its instant had come, when the board
    brings news that `wakes` says ends it (the runner then probes, and the probe takes
    that news). Otherwise it is `inner`'s wait: to its instant, or to a control command.

    The board's `wait_for_news` blocks (a LISTEN, a file looked at), so it runs in a
    worker thread, `watch` seconds at a time; a wait that ends first leaves that thread
    to finish its look by itself."""

    def __init__(
        self,
        inner: Sleeper,
        board: CapacityBoard,
        *,
        wakes: Callable[[Sighting], bool],
        note: Callable[[str], None],
        watch: float,
        news_after: Callable[[], int | None] = lambda: None,
    ) -> None:
        self._inner = inner
        self._board = board
        self._wakes = wakes
        self._note = note
        self._watch = watch
        self._news_after = news_after

    async def sleep_until(
        self, instant: datetime, *, progress: Callable[[float], None] | None = None
    ) -> bool:
        # News is what was published since the loop was told capacity is closed (the
        # wait began then), else from now on: a record already there was known (or was
        # this loop's own) when the wait was decided.
        after = self._news_after()
        seen = self._board.read()
        if after is None:
            after = seen.seq if seen is not None else 0
        woke: list[bool] = []
        async with anyio.create_task_group() as group:

            async def sleep() -> None:
                woke.append(await self._inner.sleep_until(instant, progress=progress))
                group.cancel_scope.cancel()

            async def watch(after: int) -> None:
                while True:
                    began = time.monotonic()
                    try:
                        news = await anyio.to_thread.run_sync(
                            self._board.wait_for_news, after, self._watch, abandon_on_cancel=True
                        )
                    except OSError as error:  # the news is a courtesy: sleep on without it
                        self._note(f"wait: no news from the shared capacity record: {error}")
                        return
                    if news is None:
                        # A board that cannot be read answers at once: not a busy loop.
                        await anyio.sleep(max(0.0, began + self._watch - time.monotonic()))
                        continue
                    after = news.seq
                    if self._wakes(news):
                        self._note(f"wait: process {news.pid} found capacity open; waking")
                        woke.append(True)
                        group.cancel_scope.cancel()
                        return

            group.start_soon(sleep)
            group.start_soon(watch, after)
        return woke[0]


class _Alone:
    """No lock could be had at all (the state directory is not writable): probe as if
    no other loop existed."""

    def release(self) -> None:
        return


_ALONE = _Alone()
