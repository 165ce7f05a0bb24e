"""The played model: which answer a scenario gives at a turn and step.

Steps are grouped into answers the way a real model talks: text steps ride in the same
message as the tool call that follows them, and each tool call ends a message (the CLI
runs it and sends the result back, which is the next step). A message with text only
ends the model's turn, so text is never sent alone unless nothing follows it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue

from claudeloop.rehearsal.conversation import STRUCTURED_OUTPUT_TOOL, Conversation
from claudeloop.rehearsal.scenario import (
    MarkerStep,
    Scenario,
    Step,
    TextStep,
    ToolStep,
    VerdictStep,
)

# The input keys through which Claude Code's tools take a file; they must be absolute.
_PATH_KEYS = frozenset({"file_path", "notebook_path"})


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    name: str
    input: dict[str, JsonValue]
    id: str = field(default_factory=lambda: f"toolu_rh{uuid.uuid4().hex[:22]}")


Block = TextBlock | ToolUseBlock


@dataclass(frozen=True, slots=True)
class Reply:
    blocks: tuple[Block, ...]
    stop_reason: Literal["end_turn", "tool_use", "max_tokens", "refusal"]
    # True when this answer is the turn's verdict, i.e. the claudeloop turn is over.
    verdict: bool = False
    # With a refusal: the API's `stop_details` ({"category": ..., "explanation": ...}).
    stop_details: dict[str, str] | None = None


PROBE_REPLY = Reply(blocks=(TextBlock("ok"),), stop_reason="end_turn")


AGREED = VerdictStep(kind="verdict", complete=True, summary="Reviewed: the task is complete.")


def play(scenario: Scenario, conversation: Conversation, *, reviews_done: int = 0) -> Reply:
    """The answer to a turn request: the step's message, or the verdict once the
    turn's steps are spent. Turns beyond the scenario repeat its last verdict. A review
    plays the scenario's review after the `reviews_done` already answered."""
    if conversation.kind == "probe" or conversation.turn is None:
        return PROBE_REPLY
    if conversation.review:
        return _review(scenario, conversation, reviews_done)
    turn = conversation.turn
    step = conversation.step or 0
    if turn <= len(scenario.turns):
        answers = _answers(scenario.turns[turn - 1].steps)
        if step < len(answers):
            return _render(answers[step], scenario, conversation)
        verdict = _verdict_of(scenario, turn)
    else:
        verdict = _verdict_of(scenario, len(scenario.turns))
    return _render([verdict], scenario, conversation)


def _review(scenario: Scenario, conversation: Conversation, reviews_done: int) -> Reply:
    if not scenario.reviews:
        return _render([AGREED], scenario, conversation)
    steps = scenario.reviews[min(reviews_done, len(scenario.reviews) - 1)].steps
    answers = _answers(steps)
    step = conversation.step or 0
    if step < len(answers):
        return _render(answers[step], scenario, conversation)
    verdicts = [s for s in steps if isinstance(s, VerdictStep)]
    return _render([verdicts[-1] if verdicts else AGREED], scenario, conversation)


def _answers(steps: Sequence[Step]) -> list[list[Step]]:
    answers: list[list[Step]] = []
    pending: list[Step] = []
    for step in steps:
        pending.append(step)
        if isinstance(step, ToolStep | VerdictStep):
            answers.append(pending)
            pending = []
            if isinstance(step, VerdictStep):
                # Nothing after a verdict is ever asked for: the CLI ends the turn.
                return answers
    if pending:
        answers.append(pending)
    return answers


def _verdict_of(scenario: Scenario, turn: int) -> VerdictStep:
    """The turn's own verdict step, else one that is complete on the last turn."""
    if 1 <= turn <= len(scenario.turns):
        for step in reversed(scenario.turns[turn - 1].steps):
            if isinstance(step, VerdictStep):
                return step
    last = turn >= len(scenario.turns)
    return VerdictStep(
        kind="verdict",
        complete=last,
        remaining_work=[] if last else ["the next turn of the scenario"],
        summary=f"Turn {max(turn, 1)} done.",
    )


def _render(steps: Sequence[Step], scenario: Scenario, conversation: Conversation) -> Reply:
    blocks: list[Block] = []
    verdict = False
    for step in steps:
        match step:
            case TextStep(text=text):
                blocks.append(TextBlock(text))
            case MarkerStep(text=text):
                blocks.append(TextBlock(f"{text}\n\n{scenario.done_marker}".strip()))
            case ToolStep(name=name, input=tool_input):
                blocks.append(ToolUseBlock(name, _tool_input(tool_input, conversation.cwd)))
            case VerdictStep():
                verdict = True
                blocks.append(_verdict_block(step, scenario, conversation))
    calls = any(isinstance(block, ToolUseBlock) for block in blocks)
    return Reply(
        blocks=tuple(blocks), stop_reason="tool_use" if calls else "end_turn", verdict=verdict
    )


def _verdict_block(step: VerdictStep, scenario: Scenario, conversation: Conversation) -> Block:
    if not scenario.structured_output:
        # The fallback path: the verdict is words, and only the marker says "done".
        words = step.summary or ("Done." if step.complete else "More to do.")
        return TextBlock(f"{words}\n\n{scenario.done_marker}" if step.complete else words)
    verdict: dict[str, JsonValue] = {
        "complete": step.complete,
        "remaining_work": list(step.remaining_work),
        # Always a string: "" reads as "not blocked" and validates against a
        # string-typed schema, where null might not.
        "blocked_on": step.blocked_on,
        "summary": step.summary,
    }
    if conversation.verdict_keys is not None:
        verdict = {k: v for k, v in verdict.items() if k in conversation.verdict_keys}
    return ToolUseBlock(STRUCTURED_OUTPUT_TOOL, verdict)


def _tool_input(value: dict[str, JsonValue], cwd: str | None) -> dict[str, JsonValue]:
    filled = {key: _fill(item, cwd) for key, item in value.items()}
    if cwd is not None:
        for key in _PATH_KEYS & filled.keys():
            path = filled[key]
            if isinstance(path, str) and not os.path.isabs(path):
                filled[key] = os.path.join(cwd, path)
    return filled


def _fill(value: JsonValue, cwd: str | None) -> JsonValue:
    if isinstance(value, str):
        return value.replace("{cwd}", cwd if cwd is not None else ".")
    if isinstance(value, list):
        return [_fill(item, cwd) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, cwd) for key, item in value.items()}
    return value
