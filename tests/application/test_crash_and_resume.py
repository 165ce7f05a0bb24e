"""The crash-and-resume property: for any sequence of turns, limits, switch-profile
detours and kills (the driver stopped at an arbitrary moment: during a turn, a probe, a
wait, an event, right after a save, at start-up), then resumed from the last saved
record, the ledger (turns, attempts, dollars) equals what the service served, the time
waited is the wall time from each wait's refusal to the capacity that ended it (probes and
restarts in it included, as --max-wait counts it), and no turn number is reported
finished twice.

A kill is modelled where it can land: before a request reaches the service (the turn or
probe is not served), in the middle of a wait (part of it slept), before an event is
written, or right after a save. The few instructions between a result arriving and the
save that records it are not a kill point: that moment is the CLI's to keep (see
RunRecord.turn_in_flight).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.application.events import Event, event_fields
from claudeloop.application.ports import ProbeOutcome, TurnOutcome
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.runner import Runner
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.limits import LimitPolicies, SwitchProfile
from claudeloop.domain.loop import Phase, RunState
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.waiting import WaitPolicyConfig
from tests.application.fakes import (
    START,
    FakeClock,
    FakeControl,
    FakeGateway,
    FakeSleeper,
    MemoryEvents,
    MemoryStore,
    verdict_turn,
)
from tests.examples import examples

WINDOW = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    api_error_status=429,
    assistant_error="rate_limit",
)
Answer = Literal["work", "window"]


class Killed(BaseException):
    """The driver's process ended here (kill -9): nothing after it runs."""


@dataclass
class Service:
    """What the service served, in the order it served it: the truth the ledger must
    equal. `answers` are the run's own backend's, consumed only when served."""

    answers: deque[Answer]
    probe_answers: deque[bool]  # True: the window is open again
    clock: FakeClock
    turns: int = 0
    attempts: int = 0
    dollars: float = 0.0
    # The waits, as the service saw them: the refusal that began the one going on, the
    # open probe that may have ended it (until the run goes on, a kill may undo that),
    # and the seconds of the waits that ended.
    refused_at: datetime | None = None
    opened_at: datetime | None = None
    waited: float = 0.0
    # Port calls in this drive, and the one at which the driver is killed.
    calls: int = 0
    kill_at: int | None = None

    def call(self) -> bool:
        """True when the driver dies at this call."""
        self.calls += 1
        return self.calls == self.kill_at

    def served_turn(self, refused: bool) -> None:
        # The runner sends no turn while it waits: one now means the probe that opened
        # the window was recorded (the wait ended), or the refusal was not (no wait).
        if self.refused_at is not None and self.opened_at is not None:
            self.waited += (self.opened_at - self.refused_at).total_seconds()
        self.refused_at = self.clock.now() if refused else None
        self.opened_at = None

    def served_probe(self, open_again: bool) -> None:
        # A probe after an open one: the open one was not recorded, the wait goes on.
        self.opened_at = self.clock.now() if open_again and self.refused_at else None

    def time_waited(self) -> float:
        self.served_turn(refused=False)
        return self.waited


@dataclass
class OwnBackend:
    """The run's own, paid backend. Each answered turn costs a different amount."""

    service: Service

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        if self.service.call():
            raise Killed
        answer = self.service.answers.popleft() if self.service.answers else "work"
        self.service.attempts += 1
        self.service.served_turn(refused=answer == "window")
        if answer == "window":
            return verdict_turn(signals=WINDOW, cost=0.0)
        cost = round(0.001 * (self.service.turns % 7 + 1), 6)
        self.service.turns += 1
        self.service.dollars += cost
        done = self.service.turns >= 6
        return verdict_turn(complete=done, remaining=() if done else ("more",), cost=cost)

    async def probe(self) -> ProbeOutcome:
        if self.service.call():
            raise Killed
        self.service.dollars += 0.0005
        open_again = self.service.probe_answers.popleft() if self.service.probe_answers else True
        self.service.served_probe(open_again)
        return ProbeOutcome(signals=TurnSignals() if open_again else WINDOW, cost_usd=0.0005)

    async def get_ready(self, session_id: str | None) -> None:
        return  # nothing to start ahead

    async def stand_down(self) -> None:
        return

    async def close(self) -> tuple[str, ...]:
        return ()


@dataclass
class LocalBackend:
    """A local model on a detour: the CLI prices its turns, none of it is money."""

    service: Service

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        if self.service.call():
            raise Killed
        self.service.attempts += 1
        self.service.turns += 1
        self.service.served_turn(refused=False)
        self.service.clock.advance(120)  # a slow local turn: detour checks come due
        return replace(verdict_turn(remaining=("more",), cost=0.25), billed=False)

    async def probe(self) -> ProbeOutcome:
        raise AssertionError("probes go to the run's own backend")

    async def get_ready(self, session_id: str | None) -> None:
        return  # nothing to start ahead

    async def stand_down(self) -> None:
        return

    async def close(self) -> tuple[str, ...]:
        return ()


@dataclass
class Sleeper:
    service: Service
    clock: FakeClock

    async def sleep_until(self, instant: Any, *, progress: Any = None) -> bool:
        waited = max((instant - self.clock.now()).total_seconds(), 0.0)
        if self.service.call():
            # Killed halfway through the wait, after saying how long it had waited.
            self.clock.advance(waited / 2)
            if progress is not None:
                progress(waited / 2)
            raise Killed
        self.clock.advance(waited)
        if progress is not None:
            progress(waited)
        return True


@dataclass
class Events:
    service: Service
    events: list[dict[str, Any]] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        if self.service.call():
            raise Killed
        self.events.append({"type": event.type, **event_fields(event)})


@dataclass
class Disk:
    """state.json: replaced whole, so a kill leaves the last save."""

    service: Service
    record: RunRecord | None = None
    # Every ledger saved, across every drive, in order.
    ledgers: list[BudgetLedger] = field(default_factory=list)

    def save(self, record: RunRecord) -> None:
        self.record = record
        self.ledgers.append(record.state.ledger)
        if self.service.call():
            raise Killed


def new_record(detours: bool) -> RunRecord:
    limits = LimitPolicies((("five_hour", SwitchProfile("local")),)) if detours else LimitPolicies()
    spec = RunSpec(
        cwd=Path("."),
        task="Build it.",
        wait_policy=WaitPolicyConfig(window_probe_interval=timedelta(minutes=5)),
        limits=limits,
    )
    return RunRecord(
        run_id="run-1",
        spec=spec,
        state=RunState(ledger=BudgetLedger(budget=spec.budget)),
        started_at=START,
    )


def run_with_kills(
    answers: list[Answer], probes: list[bool], kills: list[int], detours: bool
) -> tuple[RunRecord, Service, list[dict[str, Any]]]:
    final, service, events, _ = run_with_kills_on(answers, probes, kills, detours)
    return final, service, events


def run_with_kills_on(
    answers: list[Answer], probes: list[bool], kills: list[int], detours: bool
) -> tuple[RunRecord, Service, list[dict[str, Any]], Disk]:
    """`run_with_kills`, with the disk its records were saved on."""
    clock = FakeClock()
    service = Service(deque(answers), deque(probes), clock)
    disk = Disk(service)
    events = Events(service)
    record = new_record(detours)
    resumed = False
    for drive in range(len(kills) + 1):
        service.calls = 0
        service.kill_at = kills[drive] if drive < len(kills) else None
        runner = Runner(
            gateway=OwnBackend(service),
            clock=clock,
            sleeper=Sleeper(service, clock),
            events=events,
            store=disk,
            control=FakeControl(),
            profiles=lambda name: LocalBackend(service),
        )

        async def go(
            runner: Runner = runner, record: RunRecord = record, resumed: bool = resumed
        ) -> RunRecord:
            return await runner.drive(record, resumed=resumed)

        try:
            return anyio.run(go), service, events.events, disk
        except Killed:
            # `claudeloop resume`: the last saved record, or a fresh start when the
            # driver died before saving anything.
            record = disk.record or new_record(detours)
            resumed = record.state.phase is not Phase.PREFLIGHT
            clock.advance(30)  # the restart takes a while
    raise AssertionError("the last drive has no kill")


answers = st.lists(st.sampled_from(["work", "work", "window"]), max_size=8)


@settings(max_examples=examples(300), deadline=None)
@given(
    answers=answers,
    probes=st.lists(st.booleans(), max_size=4),
    kills=st.lists(st.integers(min_value=1, max_value=60), max_size=4),
    detours=st.booleans(),
)
def test_the_ledger_equals_what_was_served_across_any_kills_and_resumes(
    answers: list[Answer], probes: list[bool], kills: list[int], detours: bool
) -> None:
    final, served, events, disk = run_with_kills_on(answers, probes, kills, detours)
    ledger = final.state.ledger
    assert (ledger.turns, ledger.attempts) == (served.turns, served.attempts)
    # A probe a kill cut off may have been answered: billed at an estimate (here it never
    # reached the service, so the estimate is all the ledger holds beyond what was served).
    assert abs(ledger.dollars - ledger.estimated_dollars - served.dollars) < 1e-9
    assert ledger.estimated_dollars <= 0.0005 * len(kills) + 1e-9
    assert abs(final.waited_seconds - served.time_waited()) < 1e-6
    finished = [event["turn"] for event in events if event["type"] == "turn.finished"]
    assert len(finished) == len(set(finished)), f"a turn finished twice: {finished}"
    assert all(1 <= number <= ledger.attempts for number in finished)
    assert final.turn_in_flight is None
    # No save, of any drive, lowers a counter of the ledger (issue 20, item 1).
    for before, after in zip(disk.ledgers, disk.ledgers[1:], strict=False):
        assert after.turns >= before.turns
        assert after.attempts >= before.attempts
        assert after.dollars >= before.dollars - 1e-12


def test_a_turn_cut_off_by_a_kill_is_said_once_and_sent_again_under_its_number() -> None:
    cut_off = []
    for kill in range(1, 40):
        final, served, events = run_with_kills([], [], [kill], detours=False)
        if any(event["type"] == "turn.interrupted" for event in events):
            cut_off.append((final, served, events))
    assert cut_off, "some kill lands mid-turn"
    for final, served, events in cut_off:
        (said,) = [i for i, e in enumerate(events) if e["type"] == "turn.interrupted"]
        again = next(e for e in events[said:] if e["type"] == "turn.started")
        assert again["turn"] == events[said]["turn"]  # sent again under its number
        finished = [e["turn"] for e in events if e["type"] == "turn.finished"]
        assert finished == list(range(1, served.attempts + 1))  # each once, in order
        assert final.state.ledger.turns == served.turns


def test_a_first_turn_killed_after_claude_code_named_its_session_resumes_that_session() -> None:
    # The CLI names the new session at once; the driver dies before the turn's result.
    clock = FakeClock()
    turns = deque([verdict_turn(remaining=("more",)), verdict_turn(complete=True)])
    gateway = FakeGateway(turns=turns, clock=clock)
    store = MemoryStore()

    def killed(number: int) -> None:
        if number == 1:
            clock.advance(40)  # the service answered part of the turn meanwhile
            raise Killed

    gateway.on_turn = killed
    first = Runner(gateway, clock, FakeSleeper(clock, FakeControl()), MemoryEvents(), store,
                   FakeControl())  # fmt: skip
    record = new_record(detours=False)
    with pytest.raises(Killed):
        anyio.run(first.drive, record)
    saved = store.last
    assert (saved.session_id, saved.turn_in_flight) == ("session-1", 1)

    gateway.on_turn = None
    events = MemoryEvents()
    again = Runner(gateway, clock, FakeSleeper(clock, FakeControl()), events, store, FakeControl())
    final = anyio.run(partial(again.drive, saved, resumed=True))
    # One session throughout; the turn sent again bills what the cut-off one was served.
    assert gateway.sessions == [None, "session-1", "session-1"]
    assert gateway.interrupted[1] == START
    assert "Build it." in gateway.prompts[1]  # no turn was recorded: the task said again
    assert [e["session_id"] for e in events.of("turn.started")] == ["session-1", "session-1"]
    assert events.of("turn.interrupted")[0]["turn"] == 1
    assert final.session_id == "session-1"
