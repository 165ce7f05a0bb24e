"""The words claudeloop says to the model: the first prompt and each continue prompt."""

from __future__ import annotations

from typing import assert_never

from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.text import count
from claudeloop.domain.verification import CheckFailed, CheckResult, Rejected, ReviewDisagreed

# How the independent review's prompt opens (the rehearsal API knows a review by it).
REVIEW_OPENING = "You are reviewing another session's work in this directory; you did none of it."
# A few KB of a failing check's output: enough to act on, little enough to leave room.
REJECTION_TAIL_CHARS = 3000


def plan_task(plan_name: str) -> str:
    """The task of a run on a plan file. The plan's text is not in it: the record holds
    the plan once (`RunRecord.plan`), and the prompts say its text from there."""
    return f"Carry out the plan in {plan_name}."


def _plan_text(plan: WorkPlan) -> str:
    return plan.render().strip()


def first_prompt(
    task: str, *, plan: WorkPlan | None, plan_name: str | None, marker: str | None
) -> str:
    """The prompt of the run's first turn."""
    parts = [task.strip()]
    if plan is not None and plan_name is not None and _plan_text(plan):
        parts.append(f"Its text:\n\n{_plan_text(plan)}")
    if plan is not None and plan_name is not None and plan.total:
        parts.append(
            f"The plan is in {plan_name}; its checklist has {count(plan.total, 'item')} "
            f"({plan.done_count} already checked). Work through the open ones in order and "
            "check each off in the file when it is done."
        )
    if marker:
        parts.append(_marker_instruction(marker))
    return "\n\n".join(parts)


def handoff_prompt(
    task: str,
    *,
    plan: WorkPlan | None,
    plan_name: str | None,
    remaining_work: tuple[str, ...],
    marker: str | None,
) -> str:
    """The prompt of a new session that takes over from one whose transcript Claude Code
    could not save (domain.lost_writes): the task said again, and that the earlier
    conversation is gone but its work is in the files."""
    parts = [
        "An earlier session worked on this task in this directory, but Claude Code could "
        "not save its conversation (a full disk or a quota), so you do not remember it. "
        "What it did is in the files: look at them before you go on, and do not redo "
        "work that is already there.",
        first_prompt(task, plan=plan, plan_name=plan_name, marker=None),
    ]
    if remaining_work:
        listed = "\n".join(f"- {entry}" for entry in remaining_work)
        parts.append(f"Remaining work the earlier session listed:\n{listed}")
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


def rejection_prompt(rejected: Rejected, *, tail_chars: int = REJECTION_TAIL_CHARS) -> str:
    """Why a Done was not accepted, said first in the next continue prompt."""
    match rejected:
        case CheckFailed(result=result):
            parts = [
                "You said the task was complete, but a verification command failed: "
                f"`{result.command.text}` {how_it_failed(result)}."
            ]
            output = (result.start_error or result.output_tail).strip()
            if output:
                kept = output[-tail_chars:]
                cut = (
                    "(its last lines) " if len(kept) < len(output) or result.tail_is_partial else ""
                )
                parts.append(f"Its output {cut}was:\n{_fenced(kept)}")
            parts.append(
                "Fix what it reports and run the command yourself; say the task is complete "
                "only when it passes."
            )
        case ReviewDisagreed(remaining_work=remaining, blocked_on=blocked_on, summary=summary):
            parts = ["You said the task was complete, but an independent review found it is not."]
            if blocked_on:
                parts.append(f"The reviewer could not confirm it: {blocked_on}")
            if remaining:
                listed = "\n".join(f"- {entry}" for entry in remaining)
                parts.append(f"Work the reviewer found still to do:\n{listed}")
            if summary.strip():
                parts.append(f"The reviewer's summary: {summary.strip()}")
        case _:
            assert_never(rejected)
    return "\n\n".join(parts)


def review_prompt(task: str, *, plan: WorkPlan | None, summary: str, marker: str | None) -> str:
    """The prompt of the independent review: a fresh session that did none of the work,
    asked whether it is done, with tools that only read."""
    parts = [
        f"{REVIEW_OPENING} It says the task below is complete. Check that claim against "
        "the files themselves (you can only read them). Answer with the same structured "
        "verdict: complete only when the whole task is done, otherwise the work still to "
        "do as remaining_work, or blocked_on what you cannot check.",
        f"The task:\n{task.strip()}",
    ]
    if plan is not None and _plan_text(plan):
        checked = f" ({plan.done_count}/{plan.total} checked)" if plan.total else ""
        parts.append(f"The plan{checked}:\n{_plan_text(plan)}")
    if summary.strip():
        parts.append(f"The working session's summary of what it did:\n{summary.strip()}")
    if marker:
        parts.append(_marker_instruction(marker))
    return "\n\n".join(parts)


def how_it_failed(result: CheckResult) -> str:
    """How a failed check ended, in a few words: an exit code, a timeout or no start."""
    if result.timed_out:
        return f"timed out after {round(result.seconds)} s"
    if result.start_error is not None:
        return "could not start"
    return f"exited with code {result.exit_code}"


def _fenced(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def _marker_instruction(marker: str) -> str:
    return (
        "When, and only when, the whole task is complete, end your final answer with this "
        f"line on its own: {marker}"
    )


# How a person's note opens in a prompt (the rehearsal's ledger and the tests find it).
NOTE_OPENING = "A note from the person running this loop, for this turn:"


def with_notes(prompt: str, notes: tuple[str, ...]) -> str:
    """`prompt` with the notes a person left for the next turn (`claudeloop note`),
    after what the turn is asked: they come last, so they are read."""
    if not notes:
        return prompt
    said = "\n".join(f"- {note}" for note in notes)
    return f"{prompt}\n\n{NOTE_OPENING}\n{said}"
