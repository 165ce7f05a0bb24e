"""The words claudeloop says to the model: the first prompt and each continue prompt."""

from __future__ import annotations

from claudeloop.domain.plan import WorkPlan


def first_prompt(
    task: str, *, plan: WorkPlan | None, plan_name: str | None, marker: str | None
) -> str:
    """The prompt of the run's first turn."""
    parts = [task.strip()]
    if plan is not None and plan_name is not None and plan.total:
        parts.append(
            f"The plan is in {plan_name}; its checklist has {plan.total} items "
            f"({plan.done_count} already checked). Work through the open ones in order and "
            "check each off in the file when it is done."
        )
    if marker:
        parts.append(_marker_instruction(marker))
    return "\n\n".join(parts)


def continue_prompt(
    *,
    plan: WorkPlan | None,
    remaining_work: tuple[str, ...],
    custom: str | None,
    marker: str | None,
) -> str:
    """The prompt of every later turn: what is left, not only 'continue'."""
    parts = [custom.strip() if custom else "Continue the task where you left off."]
    if plan is not None and plan.open_items:
        items = "\n".join(f"- {item.text}" for item in plan.open_items)
        parts.append(f"Plan items still open ({plan.done_count}/{plan.total} done):\n{items}")
    if remaining_work:
        listed = "\n".join(f"- {entry}" for entry in remaining_work)
        parts.append(f"Remaining work you listed last turn:\n{listed}")
    if marker:
        parts.append(_marker_instruction(marker))
    return "\n\n".join(parts)


def _marker_instruction(marker: str) -> str:
    return (
        "When, and only when, the whole task is complete, end your final answer with this "
        f"line on its own: {marker}"
    )
