"""The time a run waits: counted as it goes, and a probe instant saved before a crash
trusted on resume only within reason (domain.waiting)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from claudeloop.application.records import RunRecord
from claudeloop.domain.loop import Decision, RunState, ScheduleProbe, time_waited, wait_began
from claudeloop.domain.waiting import trusted_probe_instant


def with_time_waited(
    record: RunRecord, *, now: datetime, after: RunState | None = None, at_least: float = 0.0
) -> RunRecord:
    """`record` with the time waited up to now (`domain.loop.time_waited`, never less
    than it said nor than `at_least`); with `after`, the state it moves to: a wait that
    ends there, or begins, closes the count of the one before."""
    earlier = record.earlier_waits_seconds
    counted = time_waited(record.state, earlier=earlier, now=now)
    total = max(record.waited_seconds, counted, at_least)
    if after is not None and wait_began(after) != wait_began(record.state):
        earlier = total
    return replace(record, waited_seconds=total, earlier_waits_seconds=earlier)


def trusted(record: RunRecord, decision: Decision, *, now: datetime) -> Decision:
    """The decision a resume found, its probe instant kept only within reason."""
    if not isinstance(decision, ScheduleProbe):
        return decision
    state = record.state
    at = trusted_probe_instant(
        decision.at,
        decision.awaiting,
        now=now,
        started_waiting_at=state.waiting_since or now,
        probe_count=state.wait_probes,
        config=record.spec.wait_policy,
        announced=state.announced_resets,
    )
    return replace(decision, at=at)
