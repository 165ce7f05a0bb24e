"""Where a Messages API request stands in the played conversation.

The server keeps no session: the CLI resends the whole conversation every request, so
the turn and step are read from it. That also keeps the count right across `--resume`,
new CLI processes and the CLI's own retries of one request.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

STRUCTURED_OUTPUT_TOOL = "StructuredOutput"
# The tools that change the work. A session offered none of them is one that may only
# read: claudeloop's independent review (Read, Grep and Glob in plan mode). The review is
# known by what its request carries, not by the words of its prompt, so the rehearsal
# knows nothing of the prompts claudeloop writes.
_CHANGING_TOOLS = frozenset({"Bash", "Edit", "MultiEdit", "NotebookEdit", "Write"})

Credentials = Literal["oauth", "api_key", "none"]

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_CWD = re.compile(r"Primary working directory: *([^\n]+)")
# Text the CLI itself sends as a user message (CLI 2.1.332): when a structured-output
# turn ends without the StructuredOutput call, it demands one. That is the same turn.
_CLI_NUDGES = ("[structured-output-enforce]",)
# What the CLI (2.1.337) puts after a prompt a process ended before answering, when it
# resumes the session: its own words, as the model's. The prompt was never answered.
_UNANSWERED = "No response requested."


class BadRequest(ValueError):
    """A body the real API would refuse with 400 invalid_request_error."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """One request, read: a turn (with its number and step) or a probe."""

    kind: Literal["turn", "probe"]
    model: str
    stream: bool
    turn: int | None = None
    step: int | None = None
    cwd: str | None = None
    # The StructuredOutput schema's keys when it forbids others; None means any key.
    verdict_keys: frozenset[str] | None = None
    # A turn of claudeloop's independent review (a fresh session): played from the
    # scenario's reviews, not its turns.
    review: bool = False
    # The text of the turn's last prompt (what a test finds a note of claudeloop's in).
    prompt: str | None = None


def read_conversation(body: object, *, structured_output: bool = True) -> Conversation:
    """Read a /v1/messages body.

    With structured output a turn is a request offering the StructuredOutput tool;
    without, any request offering tools (the CLI always does, side requests never).
    """
    if not isinstance(body, Mapping):
        raise BadRequest("request body must be a JSON object")
    model = body.get("model")
    messages = body.get("messages")
    if not isinstance(model, str) or not model:
        raise BadRequest("model: Field required")
    if not isinstance(messages, list):
        raise BadRequest("messages: Field required")
    stream = body.get("stream") is True
    tools = [tool for tool in _list(body.get("tools")) if isinstance(tool, Mapping)]
    names = {tool.get("name") for tool in tools}
    is_turn = STRUCTURED_OUTPUT_TOOL in names if structured_output else bool(tools)
    if not is_turn:
        return Conversation(kind="probe", model=model, stream=stream)
    turn, step = turn_and_step(messages)
    return Conversation(
        kind="turn",
        model=model,
        stream=stream,
        turn=turn,
        step=step,
        cwd=working_directory(body),
        verdict_keys=_verdict_keys(tools),
        review=_is_review(names),
        prompt=last_prompt(messages),
    )


# The ledger keeps this much of a prompt: enough to find what a test looks for.
PROMPT_CHARS = 4000


def last_prompt(messages: list[object]) -> str | None:
    """The text of the last user message that is a prompt (see `turn_and_step`)."""
    for message in reversed(messages):
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        if _has_prompt_text(content):
            texts = [_REMINDER.sub("", text).strip() for text in _texts(content)]
            return "\n".join(text for text in texts if text)[-PROMPT_CHARS:]
    return None


def turn_and_step(messages: list[object]) -> tuple[int, int]:
    """The turn is the number of prompts so far; the step, the assistant answers since
    the last prompt.

    A prompt is a user message with text of its own. Tool results are not prompts, nor
    is text made only of `<system-reminder>` blocks, which the CLI adds around prompts
    and tool results, nor the CLI's own demand for the StructuredOutput call. A resumed
    turn's prompt shares its message with the previous turn's last tool result (the CLI
    merges adjacent user messages), so a tool result does not disqualify a message that
    also carries real text. A turn the service refused and that is resumed later keeps
    its number: the CLI merges the refused prompt with the new one (measured, 2.1.332).
    So does a turn whose process was ended before its first answer (a kill, a watchdog)
    and that is sent again on the resumed session: the CLI's own "No response requested."
    stands between the two prompts, and answers neither (measured, 2.1.337).
    """
    turn = 0
    step = 0
    unanswered = False
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if role == "user" and _has_prompt_text(message.get("content")):
            turn += 0 if unanswered else 1
            step = 0
            unanswered = False
        elif role == "assistant" and step == 0 and _texts_are(message, _UNANSWERED):
            unanswered = True
        elif role == "assistant":
            step += 1
            unanswered = False
    return max(turn, 1), step


def _texts_are(message: Mapping[object, object], words: str) -> bool:
    """Whether the message's text is `words` and nothing else."""
    return "".join(_texts(message.get("content"))).strip() == words


def _is_review(tool_names: set[object]) -> bool:
    """Whether the turn's session may only read: it is offered tools, none that change
    anything."""
    return bool(tool_names - {STRUCTURED_OUTPUT_TOOL}) and not tool_names & _CHANGING_TOOLS


def _has_prompt_text(content: object) -> bool:
    if isinstance(content, str):
        return _is_prompt(content)
    for block in _list(content):
        if isinstance(block, Mapping) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str) and _is_prompt(text):
                return True
    return False


def _is_prompt(text: str) -> bool:
    words = _REMINDER.sub("", text).strip()
    return bool(words) and not words.startswith(_CLI_NUDGES)


def working_directory(body: Mapping[str, object]) -> str | None:
    """The directory the CLI runs in, from its environment description.

    CLI 2.1.332 sends that description as a `system` role message inside `messages`;
    older CLIs put it in the top-level `system` prompt. Both are searched.
    """
    for text in _texts(body.get("system")):
        found = _CWD.search(text)
        if found:
            return found.group(1).strip()
    for message in _list(body.get("messages")):
        if isinstance(message, Mapping):
            for text in _texts(message.get("content")):
                found = _CWD.search(text)
                if found:
                    return found.group(1).strip()
    return None


def credentials_kind(headers: Mapping[str, str]) -> Credentials:
    """How the caller authenticated: a subscription token sends only a Bearer token."""
    if headers.get("x-api-key"):
        return "api_key"
    if headers.get("authorization", "").lower().startswith("bearer "):
        return "oauth"
    return "none"


def _verdict_keys(tools: list[Mapping[str, object]]) -> frozenset[str] | None:
    for tool in tools:
        if tool.get("name") != STRUCTURED_OUTPUT_TOOL:
            continue
        schema = tool.get("input_schema")
        if isinstance(schema, Mapping) and schema.get("additionalProperties") is False:
            properties = schema.get("properties")
            if isinstance(properties, Mapping):
                return frozenset(str(key) for key in properties)
    return None


def _texts(content: object) -> Iterator[str]:
    if isinstance(content, str):
        yield content
        return
    for block in _list(content):
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            yield str(block["text"])


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
