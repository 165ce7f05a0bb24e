"""What a transition says by itself, beside what the step that led to it says: a turn
that showed no progress, a detour taken or ended, paid overage begun."""

from __future__ import annotations

from claudeloop.application.events import (
    Event,
    ModelRestored,
    ModelSwitched,
    NoProgress,
    OverageStarted,
    ProfileRestored,
    ProfileSwitched,
)
from claudeloop.application.records import RunRecord
from claudeloop.domain.capacity import describe
from claudeloop.domain.limits import render_action
from claudeloop.domain.loop import RunState
from claudeloop.domain.overage import is_paid_overage


def announced_by(record: RunRecord, after: RunState) -> list[Event]:
    """The events the move from `record`'s state to `after` says, in order."""
    said: list[Event] = []
    counted = after.stagnation.turns_without_progress
    if counted > record.state.stagnation.turns_without_progress:
        said.append(
            NoProgress(
                turn=after.ledger.attempts,
                turns_without_progress=counted,
                stall_turns=record.spec.verify.stagnation.stall_turns,
            )
        )
    detour_before, detour_after = record.state.detour, after.detour
    if detour_after is not None and detour_before is None:
        because = describe(detour_after.awaiting)
        if detour_after.model is not None:
            said.append(ModelSwitched(detour_after.model, because, detour_after.check_at))
        elif detour_after.profile is not None:
            said.append(ProfileSwitched(detour_after.profile, because, detour_after.check_at))
    elif detour_before is not None and detour_after is None:
        if detour_before.model is not None:
            said.append(ModelRestored(model=detour_before.model))
        elif detour_before.profile is not None:
            said.append(ProfileRestored(profile=detour_before.profile))
    if is_paid_overage(after.capacity) and not is_paid_overage(record.state.capacity):
        capacity = after.capacity
        said.append(
            OverageStarted(
                turn=after.ledger.attempts,
                resets_at=capacity.resets_at,
                action=render_action(record.spec.limits.action_for(capacity)),
            )
        )
    return said
