"""Why Claude Code ended a turn (`terminal_reason` on its result), and what that means for
the loop, apart from any limit.

The CLI (2.1.332) names 19 reasons, in two lists of its own: those of its query loop and
those a result can carry from around it. Each means one of four things here:

- the turn ended and the loop goes on: it finished, or the CLI cut it short for a reason
  of its own that the next turn does not repeat (`max_turns`, its inner agent-turn cap;
  a hook; a tool deferred; no structured verdict); an answer it could not use
  (`image_error`, `model_error`, `malformed_tool_use_exhausted`) is an errored turn;
- the conversation is too big for the model's context window (`prompt_too_long`, or the
  CLI refused to send it: `blocking_limit`, compaction could not shrink it, and
  `rapid_refill_breaker`, it refilled at once after each compaction): the same prompt
  fails the same way however often it is sent, so the run ends 78 with the fix;
- the API refused it (`api_error`): the error signals decide (a limit, credentials...);
- the CLI could not set the turn up (`turn_setup_failed`) or its own budget cap ran out
  (`budget_exhausted`): a stop of the CLI's own, which fails the turn.

A value a later CLI adds is read deliberately as `UnknownEnd`: the error signals decide,
as for an API error, so a new reason never ends a run by itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, assert_never, get_args

from claudeloop.domain.signals import TurnSignals

TerminalReason = Literal[
    # The query loop's (the CLI's `PG`).
    "blocking_limit",
    "rapid_refill_breaker",
    "prompt_too_long",
    "image_error",
    "model_error",
    "api_error",
    "malformed_tool_use_exhausted",
    "aborted_streaming",
    "aborted_tools",
    "stop_hook_prevented",
    "hook_stopped",
    "tool_deferred",
    "max_turns",
    "background_requested",
    "completed",
    # Around it (the CLI's `NG`).
    "budget_exhausted",
    "structured_output_retry_exhausted",
    "tool_deferred_unavailable",
    "turn_setup_failed",
]
TERMINAL_REASONS: tuple[TerminalReason, ...] = get_args(TerminalReason)
ContextStop = Literal["prompt_too_long", "blocking_limit", "rapid_refill_breaker"]
CONTEXT_STOPS: tuple[ContextStop, ...] = get_args(ContextStop)


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn ended; the next one continues the work. `early` when the CLI cut it
    short (its reason, e.g. `max_turns`), so a missing verdict is no surprise."""

    reason: TerminalReason
    early: bool = False


@dataclass(frozen=True, slots=True)
class Errored:
    """The model's answer could not be used (an image it refused, a model error, tool
    calls it kept malforming): another turn may fare better, and the run counts it
    toward the errored turns in a row that end it."""

    reason: Literal["image_error", "model_error", "malformed_tool_use_exhausted"]


@dataclass(frozen=True, slots=True)
class ContextFull:
    """The conversation does not fit the model's context window, and will not next time."""

    reason: ContextStop


@dataclass(frozen=True, slots=True)
class ApiRefused:
    """The API refused a request: the error signals say what that means."""


@dataclass(frozen=True, slots=True)
class CliStopped:
    """The CLI stopped the turn for a reason of its own that fails it."""

    reason: Literal["budget_exhausted", "turn_setup_failed"]


@dataclass(frozen=True, slots=True)
class UnknownEnd:
    """A reason this claudeloop does not know (a later CLI's), or none (an older CLI's)."""

    value: str | None


TurnEnd = TurnEnded | Errored | ContextFull | ApiRefused | CliStopped | UnknownEnd


def turn_end(terminal_reason: str | None) -> TurnEnd:
    """What the result's `terminal_reason` means for the loop."""
    reason = _known(terminal_reason)
    if reason is None:
        return UnknownEnd(terminal_reason)
    match reason:
        case "completed" | "background_requested":
            return TurnEnded(reason)
        case (
            "max_turns"
            | "aborted_streaming"
            | "aborted_tools"
            | "stop_hook_prevented"
            | "hook_stopped"
            | "tool_deferred"
            | "tool_deferred_unavailable"
            | "structured_output_retry_exhausted"
        ):
            return TurnEnded(reason, early=True)
        case "image_error" | "model_error" | "malformed_tool_use_exhausted":
            return Errored(reason)
        case "prompt_too_long" | "blocking_limit" | "rapid_refill_breaker":
            return ContextFull(reason)
        case "api_error":
            return ApiRefused()
        case "budget_exhausted" | "turn_setup_failed":
            return CliStopped(reason)
        case _:
            assert_never(reason)


def _known(value: str | None) -> TerminalReason | None:
    for reason in TERMINAL_REASONS:
        if reason == value:
            return reason
    return None


def context_full_reason(stop: ContextStop) -> str:
    """What each context stop means, in the words a person reads (the CLI's own sense)."""
    match stop:
        case "prompt_too_long":
            return "the prompt is too long for the model's context window"
        case "blocking_limit":
            return (
                "the prompt is too long for the model's context window: the conversation "
                "reached it and Claude Code could not compact it"
            )
        case "rapid_refill_breaker":
            return (
                "the prompt is too long for the model's context window: it refilled to the "
                "limit right after each automatic compaction, so Claude Code stopped"
            )
        case _:
            assert_never(stop)


def is_error_turn(signals: TurnSignals) -> bool:
    """Whether a turn that hit no limit ended in an error: the verdict is then not
    trusted and the turn counts toward the errored turns in a row that end the run.

    An answer cut at the output-token cap (`max_output_tokens`) is no error: the work it
    did stands and the next turn goes on from it. Nor is a turn the CLI cut short for a
    reason of its own (`max_turns`...), whatever `is_error` says.
    """
    if not signals.is_error or signals.assistant_error == "max_output_tokens":
        return False
    end = turn_end(signals.terminal_reason)
    match end:
        case TurnEnded():
            return False
        case Errored() | ContextFull() | ApiRefused() | CliStopped() | UnknownEnd():
            return True
        case _:
            assert_never(end)
