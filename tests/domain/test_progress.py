"""Plan progress follows the verdict: done checks all, continue what is no longer listed."""

from claudeloop.domain.completion import Blocked, Continue, Done
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.progress import plan_after_verdict

PLAN = WorkPlan.parse("- [ ] write a\n- [ ] write b\n- [ ] write c\n")


def test_done_checks_every_item() -> None:
    assert plan_after_verdict(PLAN, Done("ok")).done_count == 3


def test_continue_checks_the_items_no_longer_remaining() -> None:
    after = plan_after_verdict(PLAN, Continue(remaining_work=("Write C.",)))
    assert [item.done for item in after.items] == [True, True, False]


def test_blocked_leaves_progress_alone() -> None:
    assert plan_after_verdict(PLAN, Blocked("a key")) == PLAN


def test_a_done_not_accepted_yet_checks_nothing_by_itself() -> None:
    assert plan_after_verdict(PLAN, Done("ok"), accepted=False) == PLAN
