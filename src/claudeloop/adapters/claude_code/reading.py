"""One turn's SDK messages -> what the domain reads: signals, verdict, cost, session, text.

The classifier needs signals from three sources that arrive as different messages: the
rate-limit event (subscription logins only), the error on the assistant message, and the
result. Everything here is pure so the shapes the CLI emits (see the contract tests) can
be pinned in unit tests with hand-built SDK dataclasses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    Message,
    RateLimitEvent,
    RateLimitInfo,
    ResultMessage,
    SystemMessage,
    TextBlock,
)

from claudeloop.adapters.claude_code.blocked import Lines, blocked_in
from claudeloop.adapters.claude_code.pricing import ModelSpend, model_spends
from claudeloop.adapters.claude_code.verdict import verdict_from
from claudeloop.domain.capacity import NamedWindow, window_named
from claudeloop.domain.completion import StructuredVerdict
from claudeloop.domain.confinement import BlockedAction
from claudeloop.domain.signals import TurnSignals, WindowUsage, instant_from_epoch
from claudeloop.domain.text import first_line
from claudeloop.domain.turn_end import (
    ApiRefused,
    CliStopped,
    ContextFull,
    Errored,
    TurnEnded,
    UnknownEnd,
    turn_end,
)

# A warning is worse than allowed and better than rejected; the worst status a turn saw
# is the one that describes it.
_SEVERITY = {"allowed": 0, "allowed_warning": 1, "rejected": 2}

# Result subtypes that say the CLI stopped the turn for a reason of its own, not because
# the API refused it. A missing verdict (error_max_structured_output_retries) is not one:
# the turn still did work and the loop goes on without a verdict.
_CLI_STOPS = frozenset({"error_during_execution", "error_max_turns", "error_max_budget_usd"})


# The model the CLI names on a message it made up itself (an API error's).
_SYNTHETIC_MODEL = "<synthetic>"


@dataclass(frozen=True, slots=True)
class TurnReading:
    """Everything one turn's messages said, before the gateway judges the turn."""

    signals: TurnSignals
    structured: StructuredVerdict | None = None
    final_text: str = ""
    # The CLI reports the session's running total, not the turn's cost (see pricing.py):
    # the gateway prices the turn from it, `usage` (this turn's tokens) and `spends`.
    process_cost_usd: float = 0.0
    session_id: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    # The running total per model (`modelUsage`), with whether its price is a guess,
    # and the models that answered this turn (a resumed session may hold others).
    spends: tuple[ModelSpend, ...] = ()
    served_by: tuple[str, ...] = ()
    denied_tools: tuple[str, ...] = ()
    # What the boundary stopped (blocked.py), where a boundary was set.
    blocked: tuple[BlockedAction, ...] = ()
    answered: bool = False
    # The result reported an error (an API failure or a stop of the CLI's own).
    failed: bool = False
    # Set when the CLI itself stopped the turn (see `_CLI_STOPS`) without any API error
    # the classifier could read: e.g. "error_during_execution: <errors>".
    cli_stop: str | None = None
    # A hook of the user's said Claude Code must not go on (`informational` with
    # `prevent_continuation`): its reason.
    stopped_by_hook: str | None = None
    # The model refused and no fallback retried (`model_refusal_no_fallback`): why.
    refused_by_model: str | None = None


def read_turn(
    messages: Iterable[Message],
    *,
    local_backend: bool,
    lines: Lines | None = None,
    address: str | None = None,
) -> TurnReading:
    """Read the messages of one turn, in the order the SDK yielded them. `lines`: where
    the boundary runs, when the turn ran inside one (None: nothing is read as blocked).
    `address`: the server the user named (None: Anthropic's API)."""
    messages = list(messages)
    blocked = blocked_in(messages, lines) if lines is not None else ()
    rate_limits: list[RateLimitInfo] = []
    assistant_error: str | None = None
    last_text = ""
    retry_error: str | None = None
    stopped_by_hook: str | None = None
    refused_by_model: str | None = None
    init_session: str | None = None
    result: ResultMessage | None = None
    served_by: dict[str, None] = {}
    for message in messages:
        if isinstance(message, RateLimitEvent):
            rate_limits.append(message.rate_limit_info)
        elif isinstance(message, AssistantMessage):
            if isinstance(message.error, str):
                assistant_error = message.error
            elif message.model and message.model != _SYNTHETIC_MODEL:
                served_by[message.model] = None
            if message.parent_tool_use_id is None:
                text = _text_of(message)
                last_text = text or last_text
        elif isinstance(message, SystemMessage):
            init_session = started_session(message) or init_session
            retry_error = _retry_error(message) or retry_error
            stopped_by_hook = hook_stop(message) or stopped_by_hook
            refused_by_model = model_refusal(message) or refused_by_model
        elif isinstance(message, ResultMessage):
            result = message
    window = _rate_limit_window(rate_limits)
    result_text = (result.result or "") if result is not None else ""
    api_error_status = result.api_error_status if result is not None else None
    failed = result is not None and result.is_error
    signals = TurnSignals(
        rate_limit_status=window.status,
        rate_limit_type=window.rate_limit_type,
        resets_at=window.resets_at,
        utilization=window.utilization,
        overage_status=window.overage_status,
        overage_disabled_reason=window.overage_disabled_reason,
        overage_resets_at=window.overage_resets_at,
        overage_in_use=any(_overage_in_use(info) for info in rate_limits),
        grace_active=any(_raw_true(info, "rateLimitGraceActive") for info in rate_limits),
        daily_cap_paused=any(_raw_true(info, "dailyCapPaused") for info in rate_limits),
        # The CLI's name for the last failed attempt (`api_retry`'s `error`) is the only
        # error code the SDK passes on; it means something only on a turn that failed.
        error_code=retry_error if failed else None,
        api_error_status=api_error_status if isinstance(api_error_status, int) else None,
        assistant_error=assistant_error,
        result_text=result_text or last_text,
        local_backend=local_backend,
        custom_address=address,
        is_error=failed,
        terminal_reason=result.terminal_reason if result is not None else None,
        windows=_window_usages(rate_limits),
    )
    if result is None:
        return TurnReading(
            signals=signals,
            final_text=last_text,
            session_id=init_session,
            blocked=blocked,
            stopped_by_hook=stopped_by_hook,
            refused_by_model=refused_by_model,
        )
    return TurnReading(
        signals=signals,
        structured=verdict_from(result.structured_output),
        final_text=result_text or last_text,
        process_cost_usd=_cost(result.total_cost_usd),
        session_id=result.session_id or init_session,
        usage=dict(result.usage or {}),
        spends=model_spends(result.model_usage),
        served_by=tuple(served_by),
        denied_tools=_denied_tools(result.permission_denials),
        blocked=blocked,
        answered=True,
        failed=result.is_error,
        cli_stop=_cli_stop(result, signals),
        stopped_by_hook=stopped_by_hook,
        refused_by_model=refused_by_model,
    )


@dataclass(frozen=True, slots=True)
class _Window:
    status: str | None = None
    rate_limit_type: NamedWindow | None = None
    resets_at: datetime | None = None
    utilization: float | None = None
    overage_status: str | None = None
    overage_disabled_reason: str | None = None
    overage_resets_at: datetime | None = None


def _overage_in_use(info: RateLimitInfo) -> bool:
    """The CLI's `overageInUse` (the overage-in-use header) or `isUsingOverage` (a window
    rejected while overage is allowed): the answer spent paid extra usage. Only `raw`
    holds them (the SDK's RateLimitInfo does not type them)."""
    return info.raw.get("overageInUse") is True or info.raw.get("isUsingOverage") is True


def _raw_true(info: RateLimitInfo, name: str) -> bool:
    """A flag of the CLI's event that only `raw` holds: `rateLimitGraceActive` (the answer
    was served in a grace period, past the window's limit) or `dailyCapPaused` (the
    organization's usage is paused for the day). Measured on CLI 2.1.332: see
    docs/architecture/claude-code-signals.md."""
    return info.raw.get(name) is True


def _rate_limit_window(events: list[RateLimitInfo]) -> _Window:
    """The worst rate-limit state the turn saw (the latest among equals)."""
    worst: _Window | None = None
    for info in events:
        window = _window_of(info)
        if worst is None or _severity(window.status) >= _severity(worst.status):
            worst = window
    return worst or _Window()


def _window_of(info: RateLimitInfo) -> _Window:
    """One event, with a warning hidden in `unifiedWindows` brought to the top.

    The CLI collapses a header `allowed_warning` into `status: "allowed"` and keeps the
    per-window status only in the raw `unifiedWindows`; the classifier's warning rule
    needs it back, with the warned window's own type, reset and utilization.
    """
    status: str | None = info.status if isinstance(info.status, str) else None
    # The service's names become windows here, once (a name this claudeloop does not
    # know is an UnknownWindow, never a kind of its own).
    named = info.rate_limit_type
    rate_limit_type = window_named(named) if isinstance(named, str) and named else None
    resets_at = info.resets_at
    utilization = info.utilization
    for name, detail in _unified_windows(info.raw).items():
        window_status = detail.get("status")
        if not isinstance(window_status, str):
            continue
        if _severity(window_status) > _severity(status):
            status = window_status
            rate_limit_type = window_named(name)
            resets_at = detail.get("resetsAt", resets_at)
            utilization = detail.get("utilization", utilization)
        elif (
            window_status == status
            and window_named(name) == rate_limit_type
            and utilization is None
        ):
            utilization = detail.get("utilization")
    return _Window(
        status=status,
        rate_limit_type=rate_limit_type,
        resets_at=_instant(resets_at),
        utilization=_number(utilization),
        overage_status=info.overage_status,
        overage_disabled_reason=info.overage_disabled_reason,
        overage_resets_at=_instant(info.overage_resets_at),
    )


def _unified_windows(raw: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    windows = raw.get("unifiedWindows")
    if not isinstance(windows, Mapping):
        return {}
    return {
        name: detail
        for name, detail in windows.items()
        if isinstance(name, str) and isinstance(detail, Mapping)
    }


def _severity(status: str | None) -> int:
    return _SEVERITY.get(status or "", -1)


def _window_usages(events: list[RateLimitInfo]) -> tuple[WindowUsage, ...]:
    """Every window the latest event that reported any (`unifiedWindows`) named, for the
    pause thresholds. The latest event is the freshest picture of the account."""
    for info in reversed(events):
        windows = _unified_windows(info.raw)
        if windows:
            return tuple(
                WindowUsage(
                    window=window_named(name),
                    utilization=_number(detail.get("utilization")),
                    resets_at=_instant(detail.get("resetsAt")),
                    status=status if isinstance(status := detail.get("status"), str) else None,
                )
                for name, detail in windows.items()
            )
    return ()


def _instant(value: object) -> datetime | None:
    epoch = _number(value)
    if epoch is None:
        return None
    try:
        return instant_from_epoch(epoch)
    except (OverflowError, OSError, ValueError):
        # A reset no calendar can hold is no reset: the waiting policy then probes.
        return None


def _number(value: object) -> float | None:
    # bool is an int to Python, never a number to the CLI.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _text_of(message: AssistantMessage) -> str:
    return "\n".join(block.text for block in message.content if isinstance(block, TextBlock))


def started_session(message: Message) -> str | None:
    """The session a message says the CLI is on: its `init`, the first message of a turn."""
    if not isinstance(message, SystemMessage) or message.subtype != "init":
        return None
    session = message.data.get("session_id")
    return session if isinstance(session, str) and session else None


def _retry_error(message: SystemMessage) -> str | None:
    if message.subtype != "api_retry":
        return None
    error = message.data.get("error")
    return error if isinstance(error, str) and error else None


def hook_stop(message: SystemMessage) -> str | None:
    """Why a hook stopped Claude Code, when this message says one did.

    Measured (CLI 2.1.332): a UserPromptSubmit hook answering `{"continue": false,
    "stopReason": R}` gives `informational` with `prevent_continuation: true`, `content`
    "Operation stopped by hook: R" and `prompt_submit_outcome.reason` R, then a success
    result with that text and no verdict; the prompt never reaches the model."""
    if message.subtype != "informational" or message.data.get("prevent_continuation") is not True:
        return None
    outcome = message.data.get("prompt_submit_outcome")
    reason = outcome.get("reason") if isinstance(outcome, Mapping) else None
    if not isinstance(reason, str) or not reason.strip():
        content = message.data.get("content")
        reason = content if isinstance(content, str) else ""
    return first_line(reason, longest=300, empty="no reason given")


def model_refusal(message: SystemMessage) -> str | None:
    """Why the model refused, when this message says it did and no fallback retried.

    Read from the bundled CLI's types (2.1.332): `model_refusal_no_fallback` comes when
    the API ends a stream with stop_reason "refusal" and no fallback model is configured
    (or the refusal's category maps to none); it carries `api_refusal_category` ('cyber',
    'bio', ..., or null) and `api_refusal_explanation`. `model_refusal_fallback` (the
    answer came from the fallback model) changes no decision and is not read."""
    if message.subtype != "model_refusal_no_fallback":
        return None
    words = [
        value
        for key in ("api_refusal_category", "api_refusal_explanation")
        if isinstance(value := message.data.get(key), str) and value.strip()
    ]
    return first_line(": ".join(words), longest=300, empty="no category given")


def _cost(value: object) -> float:
    return _number(value) or 0.0


def _denied_tools(denials: list[Any] | None) -> tuple[str, ...]:
    """Tool names from `permission_denials` (`{tool_name, tool_use_id, tool_input}`).

    Only the names leave this module: the inputs may hold anything the model wrote.
    """
    names: dict[str, None] = {}
    for denial in denials or []:
        name = denial.get("tool_name") if isinstance(denial, Mapping) else None
        if isinstance(name, str) and name:
            names[name] = None
    return tuple(names)


def _cli_stop(result: ResultMessage, signals: TurnSignals) -> str | None:
    if not result.is_error:
        return None
    # A reason the domain knows says whether the stop fails the turn (max_turns does
    # not: the turn ended early and the loop goes on); an older CLI's subtype otherwise.
    match turn_end(signals.terminal_reason):
        case CliStopped():
            pass
        case ApiRefused() | UnknownEnd():
            if result.subtype not in _CLI_STOPS:
                return None
        case TurnEnded() | Errored() | ContextFull():
            return None
    if signals.api_error_status is not None or signals.assistant_error is not None:
        return None
    errors = "; ".join(error for error in result.errors or [] if isinstance(error, str))
    detail = first_line(errors or signals.result_text, longest=300, empty="no detail")
    return f"{result.subtype}: {detail}"
