"""Did the task finish, or only the turn? The structured verdict first, the marker last."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_DONE_MARKER = "CLAUDELOOP_TASK_FULLY_COMPLETE"


@dataclass(frozen=True, slots=True)
class StructuredVerdict:
    """The typed verdict the model returns through `output_format` every turn."""

    complete: bool
    remaining_work: tuple[str, ...] = ()
    blocked_on: str | None = None
    summary: str = ""


@dataclass(frozen=True, slots=True)
class Done:
    summary: str = ""


@dataclass(frozen=True, slots=True)
class Continue:
    remaining_work: tuple[str, ...] = ()
    summary: str = ""


@dataclass(frozen=True, slots=True)
class Blocked:
    reason: str
    summary: str = ""
    # Said by Claude Code itself (a hook stopped it, the model refused), not the model's
    # verdict: it stands even when the turn ended in an error, which it explains (the
    # CLI ends a refused turn with an error result; retrying it is refused again).
    by_claude_code: bool = False


CompletionVerdict = Done | Continue | Blocked


def evaluate(
    structured: StructuredVerdict | None,
    *,
    final_text: str,
    prompt: str = "",
    marker: str = DEFAULT_DONE_MARKER,
    marker_fallback: bool = True,
    stopped_by_hook: str | None = None,
    refused_by_model: str | None = None,
) -> CompletionVerdict:
    """The verdict of one turn.

    A hook of the user's that stopped Claude Code (`stopped_by_hook`, its reason) outranks
    every verdict: the user's own rule says the work must not go on, and the next turn
    would be stopped the same way, so the run is Blocked on it until a person acts.
    A refusal of the model's (`refused_by_model`: the CLI's `model_refusal_no_fallback`,
    a stop_reason "refusal" with no fallback model to retry on; its category) comes next:
    the turn's answer is a refusal, not a verdict, and the same prompt would be refused
    again, so the run is Blocked on it too.
    A structured verdict decides alone: `blocked_on` outranks `complete`, since a turn
    cannot be both done and blocked. Only without one does the marker count, and only when
    the fallback is on and the marker stands in the turn's own words (see `marker_in`).
    """
    if stopped_by_hook is not None:
        return Blocked(reason=f"a hook stopped Claude Code: {stopped_by_hook}", by_claude_code=True)
    if refused_by_model is not None:
        return Blocked(
            reason=f"the model refused to answer: {refused_by_model}", by_claude_code=True
        )
    if structured is not None:
        blocker = (structured.blocked_on or "").strip()
        if blocker:
            return Blocked(reason=blocker, summary=structured.summary)
        if structured.complete:
            return Done(summary=structured.summary)
        return Continue(remaining_work=structured.remaining_work, summary=structured.summary)
    if marker_fallback and marker_in(final_text, marker=marker, prompt=prompt):
        return Done(summary=_without(final_text, marker).strip())
    return Continue(summary=final_text.strip())


# Text the model quotes rather than says: fenced blocks, inline code, block quotes and
# anything between double quotation marks (single quotes are apostrophes too often).
_QUOTED = re.compile(
    r"```.*?```|~~~.*?~~~|`[^`\n]*`|^[ \t]*>.*?$|\"[^\"\n]*\"|“[^”\n]*”",
    re.DOTALL | re.MULTILINE,
)


def marker_in(final_text: str, *, marker: str, prompt: str = "") -> bool:
    """Whether the marker stands in the answer's own words.

    An echo of the prompt (which carries the marker instruction) and quoted text do not
    count: those are the collision failures of a bare substring match.
    """
    if not marker:
        return False
    own_words = final_text
    if prompt.strip():
        own_words = own_words.replace(prompt.strip(), "")
    own_words = _QUOTED.sub("", own_words)
    return marker in own_words


def _without(text: str, marker: str) -> str:
    return text.replace(marker, "")
