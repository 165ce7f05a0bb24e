"""The words claudeloop says to the model: the first prompt and each continue prompt."""

from __future__ import annotations

from typing import assert_never

from claudeloop.application.records import RunRecord
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
    gone: bool = False,
) -> str:
    """The prompt of a new session that takes over from one whose transcript Claude Code
    could not save (domain.lost_writes), or no longer has (`gone`): the task said again,
    and that the earlier conversation is gone but its work is in the files."""
    why = (
        "its conversation is no longer available"
        if gone
        else "Claude Code could not save its conversation (a full disk or a quota)"
    )
    parts = [
        f"An earlier session worked on this task in this directory, but {why}, so you do "
        "not remember it. What it did is in the files: look at them before you go on, and "
        "do not redo work that is already there.",
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


def resolve_task(branch: str, base: str, conflicts: tuple[str, ...]) -> str:
    """The task of a run `claudeloop merge --resolve` starts."""
    files = "\n".join(f"- {name}" for name in conflicts)
    return (
        f"The branch {branch} is being merged into {base}, in this working tree, and the "
        f"merge stopped on conflicts in these files:\n\n{files}\n\nEach holds git's "
        "conflict markers (<<<<<<<, =======, >>>>>>>) around the two sides. Resolve every "
        "conflict so that the result keeps what each side meant to do, remove every "
        "marker, and make the project's checks pass. Change nothing else."
    )


def rewound_prompt(to_turn: int, undone: tuple[int, ...], reason: str | None) -> str:
    """What a person undid with `claudeloop rewind`, said first in the next prompt."""
    turns = ", ".join(str(turn) for turn in undone)
    where = f"the end of turn {to_turn}" if to_turn else "where this run began"
    why = f" They said why: {reason.strip()}" if reason and reason.strip() else ""
    return (
        f"The person reviewing this run undid turn{'s' if len(undone) != 1 else ''} "
        f"{turns}: those commits and their changes are gone, and the files are back at "
        f"{where}.{why} Look at the files as they are now before you go on; do not "
        "assume the undone work is there, and do not simply redo it the same way."
    )


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


def next_prompt(record: RunRecord, plan: WorkPlan | None) -> str:
    """The prompt of the run's next turn: the first, a handoff, or a continue prompt,
    after what a rejection or a rewind has to say."""
    spec = record.spec
    marker = spec.done_marker if spec.marker_fallback else None
    plan_name = spec.plan_path.name if spec.plan_path else None
    # A session whose transcript Claude Code could not save is never resumed: a new one
    # takes over, told the task again and what the lost one left to do.
    handed = record.lost_sessions or record.gone_sessions
    if record.session_id is None and handed and record.state.ledger.attempts:
        prompt = handoff_prompt(
            spec.task,
            gone=bool(record.gone_sessions),
            plan=plan,
            plan_name=plan_name,
            remaining_work=record.state.remaining_work,
            marker=marker,
        )
    # No turn recorded yet: a session saved mid-turn by a first turn a crash cut off
    # holds at most part of the task, so the task is said again.
    elif record.session_id is None or record.state.ledger.attempts == 0:
        prompt = first_prompt(spec.task, plan=plan, plan_name=plan_name, marker=marker)
    else:
        rejection = record.state.rejection
        prompt = continue_prompt(
            plan=plan,
            # A reviewer's remaining work is said with its rejection.
            remaining_work=()
            if isinstance(rejection, ReviewDisagreed)
            else record.state.remaining_work,
            custom=spec.continue_prompt,
            marker=marker,
        )
        if rejection is not None:
            prompt = f"{rejection_prompt(rejection)}\n\n{prompt}"
    prompt = with_notes(prompt, record.state.notes)
    if record.rewound:
        prompt = f"{record.rewound}\n\n{prompt}"
    return prompt
