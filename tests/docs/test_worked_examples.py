"""The worked examples in the docs are what the domain computes today.

Each story is replayed through the real decision functions with the default
`WaitPolicyConfig`; every instant the page shows must be one the domain returns. When a
default changes, these fail and name the page to rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.capacity import Available, CapacityState, CreditsExhausted, WindowExhausted
from claudeloop.domain.completion import Continue
from claudeloop.domain.loop import (
    Finish,
    Outcome,
    Phase,
    RunState,
    ScheduleProbe,
    SendTurn,
    Transition,
    begin_probe,
    decide_after_probe,
    decide_after_turn,
    decide_preflight,
)
from claudeloop.domain.waiting import WaitPolicyConfig

ROOT = Path(__file__).resolve().parents[2]
STATE_MACHINE = ROOT / "docs" / "architecture" / "run-loop-state-machine.md"
RATE_LIMITS = ROOT / "docs" / "guides" / "rate-limits-and-credits.md"
PROBE_TAKES = timedelta(seconds=2)
EMPTY = CreditsExhausted("Credit balance is too low")


@dataclass(frozen=True)
class Probe:
    sent: datetime
    answered: datetime
    found: CapacityState
    transition: Transition


def clock(instant: datetime) -> str:
    """As the pages write an instant: 21:12:46.5 for a half second, else 21:12:46."""
    text = f"{instant:%H:%M:%S}"
    return f"{text}.{instant.microsecond // 100_000}" if instant.microsecond else text


def probes_until(
    transition: Transition, *, lift: datetime, closed: CapacityState, config: WaitPolicyConfig
) -> list[Probe]:
    """Sleep to each scheduled instant, probe (answered PROBE_TAKES later), until the
    decision is no longer a scheduled probe."""
    probes = []
    while isinstance(transition.decision, ScheduleProbe):
        sent = transition.decision.at
        answered = sent + PROBE_TAKES
        found = Available() if answered >= lift else closed
        transition = decide_after_probe(
            begin_probe(transition.state).state, found, now=answered, config=config
        )
        probes.append(Probe(sent, answered, found, transition))
    return probes


def credits_run_out(config: WaitPolicyConfig) -> Transition:
    """Turn 1 answered at 21:04:30, turn 2 refused for credits at 21:04:33."""
    start = datetime(2026, 11, 30, 21, 0, tzinfo=UTC)
    state = RunState(ledger=BudgetLedger(budget=Budget(max_dollars=20.0)))
    first = decide_preflight(state, Available(), now=start, config=config)
    assert isinstance(first.decision, SendTurn)
    answered = decide_after_turn(
        first.state,
        capacity=Available(),
        verdict=Continue(remaining_work=("Write step2.txt", "Write step3.txt")),
        now=start + timedelta(minutes=4, seconds=30),
        config=config,
        cost_usd=0.42,
    )
    return decide_after_turn(
        answered.state,
        capacity=EMPTY,
        verdict=Continue(summary="Credit balance is too low"),
        now=start + timedelta(minutes=4, seconds=33),
        config=config,
    )


def test_the_credits_top_up_example_is_what_the_domain_computes() -> None:
    page = STATE_MACHINE.read_text(encoding="utf-8")
    refused = credits_run_out(WaitPolicyConfig())
    assert isinstance(refused.decision, ScheduleProbe)
    assert refused.state.ledger.turns == 1
    assert refused.state.ledger.attempts == 2
    assert f"`ScheduleProbe({clock(refused.decision.at)})`" in page
    top_up = datetime(2026, 11, 30, 21, 20, tzinfo=UTC)
    probes = probes_until(refused, lift=top_up, closed=EMPTY, config=WaitPolicyConfig())
    *waiting, last = probes
    for number, probe in enumerate(waiting, start=1):
        assert isinstance(probe.transition.decision, ScheduleProbe)
        row = (
            f"| {number} | {clock(probe.sent)} | {clock(probe.answered)} | credits exhausted "
            f"| {number} | {clock(probe.transition.decision.at)} ("
        )
        assert row in page, f"{STATE_MACHINE.name} lacks the row starting {row!r}"
    assert isinstance(last.found, Available)
    assert isinstance(last.transition.decision, SendTurn)
    assert f"**{clock(last.sent)}** probe {len(probes)} is answered at {clock(last.answered)}" in (
        " ".join(page.split())
    )


def test_the_max_wait_variant_is_what_the_domain_computes() -> None:
    page = " ".join(STATE_MACHINE.read_text(encoding="utf-8").split())
    config = WaitPolicyConfig(max_wait=timedelta(minutes=10))
    never = datetime(2027, 1, 1, tzinfo=UTC)
    probes = probes_until(credits_run_out(config), lift=never, closed=EMPTY, config=config)
    clamped, final = probes[-2], probes[-1]
    assert isinstance(clamped.transition.decision, ScheduleProbe)
    assert f"| {clock(clamped.transition.decision.at)} (clamped;" in page
    assert isinstance(final.transition.decision, Finish)
    assert final.transition.decision.outcome is Outcome.MAX_WAIT_EXCEEDED
    assert f"| {len(probes)} | {clock(final.sent)} | {clock(final.answered)} | none:" in page


def test_the_window_example_is_what_the_domain_computes() -> None:
    page = RATE_LIMITS.read_text(encoding="utf-8")
    reset = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
    closed = WindowExhausted("five_hour", reset)
    refused_at = datetime(2026, 12, 1, 1, 48, 20, tzinfo=UTC)
    refused = decide_after_turn(
        RunState(phase=Phase.RUNNING),
        capacity=closed,
        verdict=Continue(),
        now=refused_at,
        config=WaitPolicyConfig(),
    )
    assert isinstance(refused.decision, ScheduleProbe)
    assert f"| (refused turn) | {clock(refused_at)} | closed until " in page
    assert f"| {clock(refused.decision.at)} (5 min) |" in page
    probes = probes_until(
        refused, lift=reset + timedelta(seconds=10), closed=closed, config=WaitPolicyConfig()
    )
    for probe in probes:
        assert f"| {clock(probe.sent)} | {clock(probe.answered)} |" in page
        if isinstance(probe.transition.decision, ScheduleProbe):
            assert f"| {clock(probe.transition.decision.at)} (" in page
    assert isinstance(probes[-1].transition.decision, SendTurn)
