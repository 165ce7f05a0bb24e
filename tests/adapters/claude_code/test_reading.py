"""Reading one turn's SDK messages, built by hand in the shapes CLI 2.1.332 emitted.

The contract tests (tests/contract/) prove these shapes against the real CLI; here each
source and each normalisation is pinned on its own.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast

from claude_agent_sdk import (
    AssistantMessage,
    Message,
    RateLimitEvent,
    RateLimitInfo,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
)
from claude_agent_sdk.types import AssistantMessageError

from claudeloop.adapters.claude_code.reading import read_turn
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CreditsExhausted,
    UnknownWindow,
    WindowExhausted,
    capacity_kind,
    describe,
)
from claudeloop.domain.classify import classify, turn_warning
from claudeloop.domain.completion import StructuredVerdict
from claudeloop.domain.limits import LimitPolicies, WindDown, limit_kind
from claudeloop.domain.pause import PauseThresholds, capacity_of
from claudeloop.domain.signals import WindowUsage

SESSION = "8f2ba0f9-e66a-4382-9199-b6e286b32481"
RESET = 1796043541
RESET_INSTANT = datetime.fromtimestamp(RESET, tz=UTC)


def rate_limit(raw: dict[str, Any]) -> RateLimitEvent:
    """The event as the SDK's parser builds it from the CLI's `rate_limit_info`."""
    return RateLimitEvent(
        rate_limit_info=RateLimitInfo(
            status=raw["status"],
            resets_at=raw.get("resetsAt"),
            rate_limit_type=raw.get("rateLimitType"),
            utilization=raw.get("utilization"),
            overage_status=raw.get("overageStatus"),
            overage_resets_at=raw.get("overageResetsAt"),
            overage_disabled_reason=raw.get("overageDisabledReason"),
            raw=raw,
        ),
        uuid="e1",
        session_id=SESSION,
    )


def synthetic_error(error: str, text: str) -> AssistantMessage:
    # The SDK's literal lists six errors; its parser passes the CLI's others
    # (model_not_found, ...) through unchanged, as here.
    return AssistantMessage(
        content=[TextBlock(text=text)],
        model="<synthetic>",
        error=cast(AssistantMessageError, error),
        session_id=SESSION,
    )


def result(
    *,
    is_error: bool = False,
    status: int | None = None,
    text: str | None = None,
    subtype: str = "success",
    cost: float | None = 0.0,
    structured: Any = None,
    denials: list[Any] | None = None,
    errors: list[str] | None = None,
    session_id: str = SESSION,
    terminal_reason: str | None = None,
) -> ResultMessage:
    return ResultMessage(
        subtype=subtype,
        duration_ms=80,
        duration_api_ms=0,
        is_error=is_error,
        num_turns=1,
        session_id=session_id,
        total_cost_usd=cost,
        usage={"input_tokens": 100, "output_tokens": 20},
        result=text,
        structured_output=structured,
        permission_denials=denials if denials is not None else [],
        errors=errors,
        api_error_status=status,
        terminal_reason=terminal_reason or ("api_error" if is_error else "completed"),
    )


def api_failure(error: str, status: int, text: str) -> list[Message]:
    return [
        synthetic_error(error, text),
        result(is_error=True, status=status, text=text),
    ]


def test_a_five_hour_rejection_with_oauth_reads_as_a_window_with_its_reset() -> None:
    text = "You've hit your 5-hour limit · resets 12:59pm (UTC)"
    event = rate_limit(
        {
            "status": "rejected",
            "resetsAt": RESET,
            "rateLimitType": "five_hour",
            "isUsingOverage": False,
            "unifiedWindows": {
                "five_hour": {"utilization": 1, "resetsAt": RESET, "status": "rejected"}
            },
        }
    )
    reading = read_turn([event, *api_failure("rate_limit", 429, text)], local_backend=False)

    signals = reading.signals
    assert signals.rate_limit_status == "rejected"
    assert signals.rate_limit_type == "five_hour"
    assert signals.resets_at == RESET_INSTANT
    assert signals.utilization == 1.0
    assert signals.assistant_error == "rate_limit"
    assert signals.api_error_status == 429
    assert signals.result_text == text
    assert reading.failed
    assert reading.cli_stop is None
    assert classify(signals) == WindowExhausted("five_hour", resets_at=RESET_INSTANT)


def test_a_reset_in_milliseconds_is_the_same_instant() -> None:
    event = rate_limit(
        {"status": "rejected", "resetsAt": RESET * 1000, "rateLimitType": "seven_day"}
    )
    reading = read_turn([event], local_backend=False)
    assert reading.signals.resets_at == RESET_INSTANT
    assert reading.signals.rate_limit_type == "seven_day"


def test_a_reset_that_is_no_number_or_no_date_is_no_reset() -> None:
    for bad in ("soon", True, 10**30):
        event = rate_limit({"status": "rejected", "resetsAt": bad})
        assert read_turn([event], local_backend=False).signals.resets_at is None


def test_a_warning_hidden_in_unified_windows_surfaces_as_allowed_warning() -> None:
    # The CLI turns the header's allowed_warning into a top-level "allowed".
    event = rate_limit(
        {
            "status": "allowed",
            "resetsAt": RESET,
            "rateLimitType": "five_hour",
            "overageStatus": "rejected",
            "overageDisabledReason": "out_of_credits",
            "isUsingOverage": False,
            "unifiedWindows": {
                "five_hour": {"utilization": 0.92, "resetsAt": RESET, "status": "allowed_warning"}
            },
        }
    )
    reading = read_turn([event, result(cost=0.0004)], local_backend=False)

    signals = reading.signals
    assert signals.rate_limit_status == "allowed_warning"
    assert signals.rate_limit_type == "five_hour"
    assert signals.utilization == 0.92
    assert signals.overage_status == "rejected"
    assert signals.overage_disabled_reason == "out_of_credits"
    assert classify(signals) == Available()


def test_the_warned_window_names_the_type_reset_and_utilization() -> None:
    event = rate_limit(
        {
            "status": "allowed",
            "resetsAt": 1,
            "rateLimitType": "five_hour",
            "utilization": 0.1,
            "unifiedWindows": {
                "five_hour": {"utilization": 0.1, "resetsAt": 1, "status": "allowed"},
                "seven_day": {"utilization": 0.95, "resetsAt": RESET, "status": "allowed_warning"},
            },
        }
    )
    signals = read_turn([event], local_backend=False).signals
    assert signals.rate_limit_status == "allowed_warning"
    assert signals.rate_limit_type == "seven_day"
    assert signals.resets_at == RESET_INSTANT
    assert signals.utilization == 0.95


def test_malformed_unified_windows_are_ignored() -> None:
    event = rate_limit(
        {
            "status": "allowed",
            "unifiedWindows": {"five_hour": "full", "seven_day": {"status": 3}},
        }
    )
    assert read_turn([event], local_backend=False).signals.rate_limit_status == "allowed"
    listless = rate_limit({"status": "allowed", "unifiedWindows": ["five_hour"]})
    assert read_turn([listless], local_backend=False).signals.rate_limit_status == "allowed"


def test_utilization_comes_from_the_window_when_the_event_has_none() -> None:
    event = rate_limit(
        {
            "status": "rejected",
            "rateLimitType": "five_hour",
            "unifiedWindows": {"five_hour": {"utilization": 1, "status": "rejected"}},
        }
    )
    assert read_turn([event], local_backend=False).signals.utilization == 1.0


def test_the_worst_rate_limit_event_of_a_turn_describes_it() -> None:
    allowed = rate_limit({"status": "allowed"})
    rejected = rate_limit({"status": "rejected", "rateLimitType": "five_hour"})
    weekly = rate_limit({"status": "rejected", "rateLimitType": "seven_day"})

    worst = read_turn([allowed, rejected, allowed], local_backend=False).signals
    assert worst.rate_limit_status == "rejected"
    assert worst.rate_limit_type == "five_hour"
    latest = read_turn([rejected, weekly], local_backend=False).signals
    assert latest.rate_limit_type == "seven_day"


def test_an_out_of_credits_rejection_reads_as_credits() -> None:
    event = rate_limit(
        {
            "status": "rejected",
            "resetsAt": RESET,
            "rateLimitType": "five_hour",
            "overageStatus": "rejected",
            "overageDisabledReason": "out_of_credits",
        }
    )
    text = "You've hit your 5-hour limit · resets 12:59pm (UTC)"
    reading = read_turn([event, *api_failure("rate_limit", 429, text)], local_backend=False)
    assert isinstance(classify(reading.signals), CreditsExhausted)


def test_a_window_claudeloop_does_not_know_is_read_as_unknown_keeping_its_name() -> None:
    """A newer CLI names a window this claudeloop does not know: it is the limit
    `unknown` (a policy for `unknown` acts on it), said by the service's own name."""
    text = "You've hit your Cowork limit · resets 12:59pm (UTC)"
    event = rate_limit(
        {
            "status": "rejected",
            "resetsAt": RESET,
            "rateLimitType": "seven_day_cowork",
            "unifiedWindows": {
                "seven_day_cowork": {"utilization": 1, "resetsAt": RESET, "status": "rejected"}
            },
        }
    )
    reading = read_turn([event, *api_failure("rate_limit", 429, text)], local_backend=False)

    cowork = UnknownWindow("seven_day_cowork")
    assert reading.signals.rate_limit_type == cowork
    assert [usage.window for usage in reading.signals.windows] == [cowork]
    capacity = classify(reading.signals)
    assert capacity == WindowExhausted(cowork, resets_at=RESET_INSTANT)
    assert isinstance(capacity, WindowExhausted)
    assert capacity_kind(capacity) == limit_kind(capacity) == "unknown"
    assert describe(capacity).startswith("seven_day_cowork window closed until ")
    policies = LimitPolicies((("unknown", WindDown()),))
    assert policies.action_for(capacity) == WindDown()


def test_an_api_key_429_without_event_reads_as_an_unknown_window() -> None:
    text = "API Error: Request rejected (429) · Rate limited"
    reading = read_turn(api_failure("rate_limit", 429, text), local_backend=False)
    assert reading.signals.rate_limit_status is None
    assert classify(reading.signals) == WindowExhausted("unknown", resets_at=None)


def test_a_low_credit_balance_reads_as_credits() -> None:
    reading = read_turn(
        api_failure("billing_error", 400, "Credit balance is too low"), local_backend=False
    )
    assert reading.signals.assistant_error == "billing_error"
    assert reading.signals.api_error_status == 400
    assert classify(reading.signals) == CreditsExhausted(detail="Credit balance is too low")


def test_bad_credentials_read_as_authentication_with_the_retry_error_code() -> None:
    retry = SystemMessage(
        subtype="api_retry",
        data={"attempt": 0, "error_status": 401, "error": "authentication_failed"},
    )
    text = "Not logged in · Please run /login"
    reading = read_turn(
        [retry, *api_failure("authentication_failed", 401, text)], local_backend=False
    )
    assert reading.signals.error_code == "authentication_failed"
    assert classify(reading.signals) == AuthenticationFailed(detail=text)


def test_a_retry_that_then_succeeded_leaves_no_error_code() -> None:
    retry = SystemMessage(subtype="api_retry", data={"error": "overloaded"})
    reading = read_turn([retry, result(text="done")], local_backend=False)
    assert reading.signals.error_code is None


def test_a_missing_model_on_a_local_backend_is_misconfiguration() -> None:
    text = "There's an issue with the selected model (qwen3). It may not exist."
    reading = read_turn(api_failure("model_not_found", 404, text), local_backend=True)
    assert reading.signals.local_backend
    assert isinstance(classify(reading.signals), BackendMisconfigured)


def test_a_full_local_queue_is_a_local_window() -> None:
    text = "API Error: 503 server busy, please try again."
    reading = read_turn(api_failure("server_error", 503, text), local_backend=True)
    assert classify(reading.signals) == WindowExhausted("local", resets_at=None)


def test_an_overloaded_service_is_a_short_window() -> None:
    text = "API Error: 529 Overloaded."
    reading = read_turn(api_failure("server_error", 529, text), local_backend=False)
    assert classify(reading.signals) == WindowExhausted("overloaded", resets_at=None)


def test_the_verdict_cost_usage_session_and_text_come_from_the_result() -> None:
    verdict = {
        "complete": False,
        "remaining_work": ["step 2"],
        "blocked_on": None,
        "summary": "Wrote step1.txt.",
    }
    reading = read_turn(
        [
            SystemMessage(subtype="init", data={"session_id": SESSION}),
            AssistantMessage(
                content=[ToolUseBlock(id="t1", name="StructuredOutput", input=verdict)],
                model="claude-sonnet",
            ),
            result(text='{"complete":false}', cost=0.0016, structured=verdict),
        ],
        local_backend=False,
    )
    assert reading.answered
    assert not reading.failed
    assert reading.structured == StructuredVerdict(
        complete=False, remaining_work=("step 2",), summary="Wrote step1.txt."
    )
    assert reading.process_cost_usd == 0.0016
    assert reading.usage == {"input_tokens": 100, "output_tokens": 20}
    assert reading.served_by == ("claude-sonnet",)
    assert reading.session_id == SESSION
    assert reading.final_text == '{"complete":false}'
    assert classify(reading.signals) == Available()


def test_the_models_that_answered_leave_out_the_clis_own_error_message() -> None:
    model_usage = {
        "claude-sonnet-5-5": {"inputTokens": 400, "outputTokens": 80, "costUSD": 0.0016,
                              "costBasis": "list"},
        "qwen3": {"inputTokens": 400, "outputTokens": 80, "costUSD": 0.0032,
                  "costBasis": "unknown"},
    }  # fmt: skip
    answered = AssistantMessage(content=[TextBlock(text="ok")], model="qwen3")
    synthetic = AssistantMessage(content=[], model="<synthetic>", error="rate_limit")
    reading = read_turn(
        [answered, synthetic, replace(result(cost=0.0048), model_usage=cast(Any, model_usage))],
        local_backend=False,
    )
    assert reading.served_by == ("qwen3",)
    assert [(s.model, s.guessed) for s in reading.spends] == [
        ("claude-sonnet-5-5", False),
        ("qwen3", True),
    ]


def test_without_a_result_the_session_comes_from_init_and_nothing_is_answered() -> None:
    reading = read_turn(
        [
            SystemMessage(subtype="init", data={"session_id": SESSION}),
            AssistantMessage(content=[TextBlock(text="half an answer")], model="m"),
        ],
        local_backend=False,
    )
    assert not reading.answered
    assert reading.session_id == SESSION
    assert reading.final_text == "half an answer"
    assert reading.signals.result_text == "half an answer"
    assert reading.process_cost_usd == 0.0


def test_the_final_text_falls_back_to_the_last_top_level_assistant_text() -> None:
    reading = read_turn(
        [
            AssistantMessage(content=[TextBlock(text="All done. MARKER")], model="m"),
            AssistantMessage(
                content=[TextBlock(text="a subagent speaks")], model="m", parent_tool_use_id="t"
            ),
            AssistantMessage(content=[ToolUseBlock(id="t2", name="Read", input={})], model="m"),
            result(text=None, cost=None),
        ],
        local_backend=False,
    )
    assert reading.final_text == "All done. MARKER"
    assert reading.process_cost_usd == 0.0


def test_denied_tools_are_named_once_each_in_order() -> None:
    denials = [
        {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "make"}},
        {"tool_name": "WebFetch", "tool_use_id": "t2", "tool_input": {}},
        {"tool_name": "Bash", "tool_use_id": "t3", "tool_input": {"command": "ls"}},
        {"tool_use_id": "t4"},
        "Edit",
    ]
    reading = read_turn([result(denials=denials)], local_backend=False)
    assert reading.denied_tools == ("Bash", "WebFetch")


def test_a_stop_of_the_cli_own_without_an_api_error_is_named() -> None:
    stopped = result(
        is_error=True,
        subtype="error_during_execution",
        errors=["Tool crashed\nstack trace"],
    )
    assert read_turn([stopped], local_backend=False).cli_stop == (
        "error_during_execution: Tool crashed"
    )
    wordless = result(is_error=True, subtype="error_max_budget_usd", terminal_reason="none")
    assert read_turn([wordless], local_backend=False).cli_stop == (
        "error_max_budget_usd: no detail"
    )


def test_the_clis_inner_turn_cap_is_no_stop_the_turn_ended_early() -> None:
    # Measured (CLI 2.1.332, CLAUDE_CODE_MAX_TURNS=1): subtype error_max_turns, is_error,
    # terminal_reason max_turns, errors "Reached maximum number of turns (1)".
    capped = result(
        is_error=True,
        subtype="error_max_turns",
        errors=["Reached maximum number of turns (1)"],
        terminal_reason="max_turns",
    )
    reading = read_turn([capped], local_backend=False)
    assert reading.cli_stop is None
    assert reading.signals.terminal_reason == "max_turns"


def test_a_stop_the_domain_names_fails_the_turn_whatever_the_subtype() -> None:
    setup = result(
        is_error=True, subtype="success", errors=["policy"], terminal_reason="turn_setup_failed"
    )
    assert read_turn([setup], local_backend=False).cli_stop == "success: policy"
    # An older CLI's (or a later one's) reason: the subtype says, and success is no stop.
    unknown = result(is_error=True, subtype="success", terminal_reason="a_later_reason")
    assert read_turn([unknown], local_backend=False).cli_stop is None


def test_an_api_error_or_a_missing_verdict_is_no_stop_of_the_cli() -> None:
    api = result(is_error=True, subtype="error_during_execution", status=500, text="API Error")
    assert read_turn([api], local_backend=False).cli_stop is None
    no_verdict = result(is_error=True, subtype="error_max_structured_output_retries")
    assert read_turn([no_verdict], local_backend=False).cli_stop is None


def test_every_reported_window_reaches_the_pause_thresholds() -> None:
    older = rate_limit({"status": "allowed", "rateLimitType": "five_hour"})
    latest = rate_limit(
        {
            "status": "allowed",
            "rateLimitType": "five_hour",
            "unifiedWindows": {
                "five_hour": {"utilization": 0.92, "resetsAt": RESET, "status": "allowed_warning"},
                "seven_day": {"utilization": 0.3, "resetsAt": RESET * 1000, "status": "allowed"},
            },
        }
    )
    windows = read_turn([older, latest], local_backend=False).signals.windows
    assert windows == (
        WindowUsage("five_hour", 0.92, RESET_INSTANT, "allowed_warning"),
        WindowUsage("seven_day", 0.3, RESET_INSTANT, "allowed"),
    )


def test_no_rate_limit_event_reports_no_windows() -> None:
    assert read_turn(api_failure("rate_limit", 429, "x"), local_backend=False).signals.windows == ()


def hook_stopped(**data: Any) -> SystemMessage:
    """What CLI 2.1.332 sent when a UserPromptSubmit hook answered
    `{"continue": false, "stopReason": "the build is red: fix it by hand"}`."""
    frame = {
        "content": "Operation stopped by hook: the build is red: fix it by hand",
        "level": "warning",
        "prevent_continuation": True,
        "prompt_submit_outcome": {
            "kind": "stopped_by_hook",
            "prompt_kept": True,
            "reason": "the build is red: fix it by hand",
        },
    }
    return SystemMessage(subtype="informational", data={**frame, **data})


def test_a_hook_that_prevents_continuation_is_read_with_its_reason() -> None:
    said = "Operation stopped by hook: the build is red: fix it by hand"
    reading = read_turn([hook_stopped(), result(text=said)], local_backend=False)
    assert reading.stopped_by_hook == "the build is red: fix it by hand"
    assert classify(reading.signals) == Available()
    # Without the outcome's reason, the message's own words are the reason.
    bare = hook_stopped(prompt_submit_outcome=None)
    assert read_turn([bare, result()], local_backend=False).stopped_by_hook == said
    blank = hook_stopped(prompt_submit_outcome={"reason": " "}, content=None)
    reading = read_turn([blank, result()], local_backend=False)
    assert reading.stopped_by_hook == "no reason given"


def test_an_informational_message_that_lets_the_turn_go_on_stops_nothing() -> None:
    notice = hook_stopped(prevent_continuation=False)
    info = SystemMessage(subtype="informational", data={"content": "hi", "level": "info"})
    for message in (notice, info):
        assert read_turn([message, result()], local_backend=False).stopped_by_hook is None


def test_an_answer_on_paid_overage_reads_as_overage_in_use_either_way() -> None:
    # The two shapes the CLI 2.1.332 emits (measured): the overage-in-use header on an
    # allowed answer, and a rejected window served because overage is allowed.
    in_use = {
        "status": "allowed_warning", "resetsAt": RESET, "rateLimitType": "five_hour",
        "utilization": 1, "overageStatus": "allowed", "isUsingOverage": False,
        "overageInUse": True,
    }  # fmt: skip
    rejected_window = {
        "status": "rejected", "resetsAt": RESET, "rateLimitType": "five_hour",
        "overageStatus": "allowed", "isUsingOverage": True,
    }  # fmt: skip
    for raw in (in_use, rejected_window):
        reading = read_turn([rate_limit(raw), result(text="hi")], local_backend=False)
        assert reading.signals.overage_in_use
        capacity = capacity_of(reading.signals, PauseThresholds())
        assert capacity == WindowExhausted(
            "overage_in_use", datetime.fromtimestamp(RESET, tz=UTC), paused_at=1.0
        )
    quiet = read_turn([rate_limit({"status": "allowed"}), result(text="hi")], local_backend=False)
    assert not quiet.signals.overage_in_use


def test_a_spend_cap_until_an_instant_reads_as_the_overage_window_until_it() -> None:
    until = RESET + 86400
    event = rate_limit(
        {
            "status": "rejected", "resetsAt": RESET, "rateLimitType": "overage",
            "overageStatus": "rejected", "overageResetsAt": until,
            "overageDisabledReason": "org_level_disabled_until",
        }
    )  # fmt: skip
    text = "You've hit your org's monthly spend limit · ask your admin to raise it"
    reading = read_turn([event, *api_failure("rate_limit", 429, text)], local_backend=False)
    assert classify(reading.signals) == WindowExhausted(
        "overage", datetime.fromtimestamp(until, tz=UTC)
    )


# A `model_refusal_no_fallback` line as the bundled CLI's types (2.1.332) describe it:
# the API ended the stream with stop_reason "refusal" and no fallback model retried.
REFUSAL_LINE: dict[str, Any] = {
    "type": "system",
    "subtype": "model_refusal_no_fallback",
    "original_model": "claude-sonnet-4-5",
    "request_id": "req_1",
    "api_refusal_category": "cyber",
    "api_refusal_explanation": "the request asked for malware",
    "refused_user_message_uuid": None,
    "content": "",
    "uuid": "0000",
    "session_id": SESSION,
}


def test_a_refusal_with_no_fallback_is_read_with_its_category_and_explanation() -> None:
    refused = SystemMessage(subtype="model_refusal_no_fallback", data=REFUSAL_LINE)
    reading = read_turn([refused, result(text="")], local_backend=False)
    assert reading.refused_by_model == "cyber: the request asked for malware"
    bare = SystemMessage(
        subtype="model_refusal_no_fallback",
        data={**REFUSAL_LINE, "api_refusal_category": None, "api_refusal_explanation": None},
    )
    assert read_turn([bare], local_backend=False).refused_by_model == "no category given"


def test_a_refusal_a_fallback_model_answered_and_session_states_change_nothing() -> None:
    fallback = SystemMessage(
        subtype="model_refusal_fallback",
        data={"trigger": "refusal", "original_model": "a", "fallback_model": "b"},
    )
    idle = SystemMessage(subtype="session_state_changed", data={"state": "idle"})
    reading = read_turn([fallback, idle, result(text="")], local_backend=False)
    assert reading.refused_by_model is None
    assert reading.stopped_by_hook is None


# The end of a turn the CLI's automatic compaction thrashed on (2.1.332): a synthetic
# `invalid_request` error with its own words, and a result whose terminal_reason is
# `rapid_refill_breaker`. The rehearsal API cannot play it: the breaker trips only after
# three compactions in a row refilled the context within 3 requests, in one CLI process,
# and every compaction rewrites the history the rehearsal counts turns and steps from.
THRASHING = (
    "Autocompact is thrashing: the context refilled to the limit within 3 turns of the "
    "previous compact, 3 times in a row. A file being read or a tool output is likely too "
    "large for the context window. Try reading in smaller chunks, or use /clear to start "
    "fresh."
)


def test_a_turn_the_rapid_refill_breaker_stopped_is_a_context_too_small() -> None:
    stream: list[Message] = [
        synthetic_error("invalid_request", THRASHING),
        result(is_error=True, text=THRASHING, terminal_reason="rapid_refill_breaker"),
    ]
    reading = read_turn(stream, local_backend=False)
    assert reading.signals.terminal_reason == "rapid_refill_breaker"
    state = classify(reading.signals)
    assert isinstance(state, BackendMisconfigured)
    assert "refilled to the limit right after each automatic compaction" in state.reason


# An account on hold as the CLI (2.1.332) says it: a synthetic `account_on_hold` error.
# The rehearsal API cannot play it: the CLI names it only on an OAuth token refresh
# refused with a body naming `account_on_hold` (its OAuthAccountOnHoldError), and only
# while its feature flag `tengu_lively_beaver` is on; no Messages API answer is mapped
# to it (a 403 from the API is `authentication_failed`).
ON_HOLD = (
    "Your account is on hold and can't use Claude Code. View details or appeal: "
    "https://claude.ai/restricted"
)


def test_an_account_on_hold_reads_as_its_own_authentication_failure() -> None:
    reading = read_turn(
        [synthetic_error("account_on_hold", ON_HOLD), result(is_error=True, text=ON_HOLD)],
        local_backend=False,
    )
    state = classify(reading.signals)
    assert isinstance(state, AuthenticationFailed)
    assert state.kind == "account_on_hold"


# The rate_limit_info lines CLI 2.1.332 emitted for the other headers it reads (measured
# with bench/headers_probe.py; docs/architecture/claude-code-signals.md).
GRACE_LINE: dict[str, Any] = {
    "status": "allowed", "resetsAt": RESET, "rateLimitType": "five_hour",
    "isUsingOverage": False, "rateLimitGraceActive": True,
    "unifiedWindows": {
        "five_hour": {"utilization": 1.1, "resetsAt": RESET, "status": "rejected"},
        "seven_day": {"utilization": 0.05, "resetsAt": RESET + 518400, "status": "allowed"},
    },
}  # fmt: skip
DAILY_CAP_LINE: dict[str, Any] = {
    "status": "rejected", "resetsAt": RESET, "rateLimitType": "overage",
    "overageStatus": "rejected", "overageDisabledReason": "org_level_disabled",
    "isUsingOverage": False, "dailyCapPaused": True,
}  # fmt: skip
DAILY_CAP_TEXT = "Usage is paused for your organization. For help, please contact support."


def test_an_answer_in_a_grace_period_is_capacity_with_a_warning() -> None:
    reading = read_turn([rate_limit(GRACE_LINE), result(text="hi")], local_backend=False)
    assert reading.signals.grace_active
    # The window it reports is past its limit and called rejected: no refusal all the same.
    assert reading.signals.rate_limit_status == "rejected"
    assert capacity_of(reading.signals, PauseThresholds()) == Available()
    assert turn_warning(reading.signals) == (
        "the 5-hour window is past its limit (110% used), answered in a grace period; "
        f"it resets {RESET_INSTANT:%Y-%m-%d %H:%M} UTC"
    )
    # Without the CLI's flag the same window is a closed one, as before.
    plain = {k: v for k, v in GRACE_LINE.items() if k != "rateLimitGraceActive"}
    reading = read_turn([rate_limit(plain), result(text="hi")], local_backend=False)
    assert not reading.signals.grace_active
    assert isinstance(classify(reading.signals), WindowExhausted)


def test_an_organizations_daily_cap_is_a_wait_never_credits() -> None:
    failure = api_failure("rate_limit", 429, DAILY_CAP_TEXT)
    reading = read_turn([rate_limit(DAILY_CAP_LINE), *failure], local_backend=False)
    assert reading.signals.daily_cap_paused
    assert classify(reading.signals) == WindowExhausted("daily_cap", None)
    until = RESET + 3600
    announced = DAILY_CAP_LINE | {
        "overageDisabledReason": "org_level_disabled_until",
        "overageResetsAt": until,
    }
    reading = read_turn([rate_limit(announced), *failure], local_backend=False)
    assert classify(reading.signals) == WindowExhausted(
        "daily_cap", datetime.fromtimestamp(until, tz=UTC)
    )
    # Without the flag the same refusal reads as before: the overage turned off is credits.
    plain = {k: v for k, v in DAILY_CAP_LINE.items() if k != "dailyCapPaused"}
    reading = read_turn([rate_limit(plain), *failure], local_backend=False)
    assert isinstance(classify(reading.signals), CreditsExhausted)
