"""Sending a turn, and a probe: to the run's own gateway or a detour's, read, and billed.

A turn is saved as in flight before it is sent, and its session as soon as Claude Code
names it, so a kill mid-turn resumes that session and bills what it served. What came
back is read into the capacity it met, its verdict and its error; what it cost is the
turn's own report (the gateway never bills a running total across processes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from claudeloop.application.events import (
    CostGuessed,
    Event,
    PauseIgnored,
    SandboxBlocked,
    ToolsDenied,
    TurnFinished,
    TurnStarted,
)
from claudeloop.application.ports import (
    Clock,
    EventSink,
    Gateway,
    ProbeOutcome,
    RunStore,
    TurnOutcome,
)
from claudeloop.application.records import RunRecord
from claudeloop.domain.budget import in_flight_estimate
from claudeloop.domain.capacity import CapacityState, capacity_kind, describe
from claudeloop.domain.classify import turn_warning, unreachable_reading
from claudeloop.domain.completion import CompletionVerdict, evaluate
from claudeloop.domain.pause import capacity_of
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.text import first_line
from claudeloop.domain.turn_end import is_error_turn


@dataclass(frozen=True, slots=True)
class Read:
    """What a turn's or a review's outcome says: the capacity it met, its verdict, and
    the error it ended in (None: none)."""

    capacity: CapacityState
    verdict: CompletionVerdict
    error: str | None


@dataclass(slots=True)
class Turns:
    gateway: Gateway
    clock: Clock
    store: RunStore
    events: EventSink
    # Gateways of other profiles, for a limit policy that switches profile.
    profiles: Callable[[str], Gateway] | None = None
    # Gateways of the run's own backend on another model, for a switch-model policy.
    models: Callable[[str], Gateway] | None = None
    # A probe a crash cut off: the service may have answered it, nobody recorded it; it
    # is billed at an estimate with the probe sent again.
    probe_cut_off: bool = False
    _others: dict[str, Gateway] = field(default_factory=dict)
    _on_model: dict[str, Gateway] = field(default_factory=dict)
    # Windows whose pause threshold was already reported as ignored: say it once.
    _noticed: set[str] = field(default_factory=set)
    # Models whose price the CLI guessed, already reported: say it once.
    _guessed: set[str] = field(default_factory=set)

    async def send(
        self, record: RunRecord, prompt: str, turn: int
    ) -> tuple[RunRecord, TurnOutcome]:
        """Turn `turn` sent on the record's session, saved in flight first; returns the
        record on the session Claude Code named, and what came back."""
        # A turn sent again after a crash keeps the instant the cut-off one began, so a
        # second crash still finds everything unbilled since then.
        started = record.interrupted_at or self.clock.now()
        record = replace(record, last_turn_started_at=started, turn_in_flight=turn)
        self.store.save(record)
        self.events.emit(TurnStarted(turn=turn, session_id=record.session_id))

        def session_named(session_id: str) -> None:
            # Saved at once: a kill before the turn ends resumes this session, and what
            # it served is billed then, instead of a new session leaving it unbilled.
            nonlocal record
            if session_id != record.session_id:
                record = replace(record, session_id=session_id)
                self.store.save(record)

        gateway = self._gateway_for(record)
        if gateway is not self.gateway:
            # A detour's turn: what the run's own gateway made ready for it goes unused.
            await self.gateway.stand_down()
        outcome = await gateway.run_turn(
            prompt,
            session_id=record.session_id,
            interrupted_at=record.interrupted_at,
            on_session=session_named,
        )
        if outcome.sent and outcome.failure is None and not outcome.cut_off_owed:
            record = replace(record, interrupted_at=None)  # billed with this turn
        return record, outcome

    def billed(self, record: RunRecord, outcome: TurnOutcome) -> tuple[RunRecord, float, float]:
        """The record on the turn's session, what the turn cost (what it reported
        itself), and the part of that estimated for a turn a crash cut off."""
        if outcome.session_id and outcome.session_id != record.session_id:
            record = replace(record, session_id=outcome.session_id)
        cost = outcome.cost_usd if outcome.billed else 0.0
        estimated = min(outcome.estimated_cost_usd, cost) if outcome.billed else 0.0
        return record, cost, estimated

    async def probe(self) -> tuple[ProbeOutcome, float, float]:
        """A probe of the run's own gateway, what it cost with a probe a crash cut off
        (billed at an estimate, once), and that estimate."""
        probe = await self.gateway.probe()
        cut_off, self.probe_cut_off = self.probe_cut_off, False
        estimated = in_flight_estimate(int(cut_off), before=None, after=probe.cost_usd)
        return probe, probe.cost_usd + estimated, estimated

    def read(
        self, record: RunRecord, outcome: TurnOutcome, prompt: str, announce: list[Event]
    ) -> Read:
        """What a turn's or a review's outcome says."""
        self.note_guess(outcome.guessed_models, outcome.guessed_cost_usd, announce)
        capacity = self.capacity(record, outcome.signals, announce)
        verdict = evaluate(
            outcome.structured,
            final_text=outcome.final_text,
            prompt=prompt,
            marker=record.spec.done_marker,
            marker_fallback=record.spec.marker_fallback,
            stopped_by_hook=outcome.stopped_by_hook,
            refused_by_model=outcome.refused_by_model,
        )
        error = (
            first_line(outcome.signals.result_text, longest=300, empty="no detail")
            if is_error_turn(outcome.signals)
            else None
        )
        return Read(capacity, verdict, error)

    def capacity(
        self, record: RunRecord, signals: TurnSignals, announce: list[Event]
    ) -> CapacityState:
        """The capacity the signals say, with the pause thresholds; a window with a
        threshold the service reports nothing of is said once."""
        thresholds = record.spec.pause_at
        unreported = thresholds.unreported(signals.windows) if signals.windows else ()
        fresh = [window for window in unreported if window not in self._noticed]
        if fresh:
            self._noticed.update(fresh)
            announce.append(
                PauseIgnored(
                    windows=tuple(fresh),
                    reason="the service reports no utilization for these windows; "
                    "their pause thresholds are ignored",
                )
            )
        # A server that cannot be reached is an outage unless the evidence says the
        # address is wrong (domain.classify.unreachable_reading).
        return unreachable_reading(
            capacity_of(signals, thresholds),
            signals,
            answered_before=record.state.ledger.turns > 0,
        )

    def note_guess(
        self, models: tuple[str, ...], guessed_usd: float, announce: list[Event]
    ) -> None:
        """Models Claude Code priced at a guess, said once each."""
        fresh = [model for model in models if model not in self._guessed]
        if not fresh:
            return
        self._guessed.update(fresh)
        announce.append(
            CostGuessed(
                models=tuple(fresh),
                guessed_usd=guessed_usd,
                reason="Claude Code does not know the price of these models and "
                "guesses it; the guess is not counted in the run's dollars nor "
                "against --max-dollars",
            )
        )

    def _gateway_for(self, record: RunRecord) -> Gateway:
        """The run's own gateway, or the other profile's (or model's) while on a detour."""
        detour = record.state.detour
        if detour is not None and detour.model is not None and self.models is not None:
            if detour.model not in self._on_model:
                self._on_model[detour.model] = self.models(detour.model)
            return self._on_model[detour.model]
        if detour is None or detour.profile is None or self.profiles is None:
            return self.gateway
        if detour.profile not in self._others:
            self._others[detour.profile] = self.profiles(detour.profile)
        return self._others[detour.profile]

    async def close_detours(self) -> tuple[str, ...]:
        """Closes the other profiles' and models' gateways (the run's own belongs to its
        owner); returns the sessions whose transcripts their processes said they could
        not save (a detour's process is on the run's session)."""
        others, self._others = self._others, {}
        on_model, self._on_model = self._on_model, {}
        heard: list[str] = []
        for gateway in (*others.values(), *on_model.values()):
            heard += await gateway.close()
        return tuple(heard)


def turn_said(
    turn: int,
    record: RunRecord,
    outcome: TurnOutcome,
    read: Read,
    *,
    answered: bool,
    cost: float,
) -> tuple[RunRecord, list[Event]]:
    """What is said of an answered or refused turn, in order, and the record counting
    what the sandbox blocked in it."""
    said: list[Event] = [
        TurnFinished(
            turn=turn,
            capacity=describe(read.capacity),
            # A refused turn's verdict means nothing (the limit may have cut it short).
            verdict=type(read.verdict).__name__.lower() if answered else "refused",
            summary=read.verdict.summary,
            cost_usd=cost,
            session_id=record.session_id,
            denied_tools=tuple(outcome.denied_tools),
            sent=outcome.sent,
            error=read.error,
            usage_warning=turn_warning(outcome.signals),
            capacity_kind=capacity_kind(read.capacity),
        )
    ]
    if outcome.denied_tools:
        said.append(ToolsDenied(tools=tuple(outcome.denied_tools)))
    said.extend(
        SandboxBlocked(turn=turn, kind=each.kind, target=each.target) for each in outcome.blocked
    )
    if outcome.blocked:
        record = replace(record, blocked=record.blocked + len(outcome.blocked))
    return record, said
