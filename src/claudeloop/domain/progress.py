"""A plan's progress after a turn's verdict."""

from __future__ import annotations

from typing import assert_never

from claudeloop.domain.completion import Blocked, CompletionVerdict, Continue, Done
from claudeloop.domain.plan import WorkPlan


def plan_after_verdict(
    plan: WorkPlan, verdict: CompletionVerdict, *, accepted: bool = True
) -> WorkPlan:
    """Done checks every item once it is accepted (a Done still to be verified, or
    rejected, checks none by itself); Continue checks the items no longer listed as
    remaining; Blocked says nothing about progress."""
    match verdict:
        case Done() if not accepted:
            return plan
        case Done():
            return plan.with_items_marked_done(frozenset(item.key for item in plan.items))
        case Continue(remaining_work=remaining):
            return plan.reconciled_with(remaining)
        case Blocked():
            return plan
        case _:
            assert_never(verdict)
