"""TurnSignals -> CapacityState. The order of the rules is the point of this module.

1. authentication failed outranks everything: no other reading matters if every request
   will be refused (a LiteLLM proxy without a database says so with a 400 "No connected
   db."; a cooldown after a refused attempt says it with the attempt's error);
2. a billing error is credits, before any window path could claim it;
3. a misconfigured backend (model missing or unknown anywhere, the server unreachable
   anywhere, a prompt too long for the context anywhere; on a local backend also 404, a
   500 whose body says the model failed to load) needs a real error signal, never text
   alone;
4. a full local queue (503 on a local backend) is the one local error a clock fixes;
5. a proxy's cooldown (LiteLLM's 429 "No deployments available" for a few seconds after
   an upstream error) is a short wait, never an end nor a window a policy acts on: the
   probe after it meets the real error;
6. `allowed_warning` is Available: a warning is not a rejection (though it does not mask
   one that another source reports: a 429, a `rate_limit` error, a 5xx or 529);
7. a rejection with any credit signal is credits, even when a reset time came with it (a
   window the event calls rejected while overage is allowed and the turn was served, with
   no error anywhere, is no rejection: the account is running on extra usage, which
   `domain.overage` makes a limit of its own); the overage claim refused with a spend cap
   that lifts at an instant (`org_level_disabled_until`) is a window until the overage
   reset;
8. any other rejection is a closed window, `unknown` with no reset when the signals are thin;
9. (ours) a 5xx or 529 from the service itself, or through a proxy (an upstream outage),
   is a short closed window with no reset: resending at once would hammer an overloaded
   service and giving up would lose a night over a blip, so we wait and probe like any
   window.
"""

from __future__ import annotations

import re

from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.overage import overage_refusal, overage_reset_of
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.text import first_line

_CONNECTION_REFUSED = re.compile(
    r"connection refused|econnrefused|unable to connect|connection error|could not connect"
    r"|unreachable|failed to connect|enotfound|getaddrinfo",
    re.IGNORECASE,
)
_PROMPT_TOO_LONG = re.compile(
    r"prompt is too long|context (?:size|length|window)|exceed_context_size", re.IGNORECASE
)
# A server that says the model did not load (Ollama, llama.cpp); any other 500 through a
# proxy is the upstream failing, which passes.
_LOAD_FAILED = re.compile(
    r"(?:failed|unable) to load|error loading model|loading model failed", re.IGNORECASE
)
# LiteLLM's words (1.108): an unknown model name, a key it cannot check without a
# database, and the cooldown it puts a model group in after an upstream error.
_UNKNOWN_MODEL = re.compile(r"invalid model name", re.IGNORECASE)
_NO_DATABASE = re.compile(r"no connected db", re.IGNORECASE)
_COOLDOWN = re.compile(r"no deployments available|in cooldown", re.IGNORECASE)
_SERVER_ERRORS = frozenset({"server_error", "overloaded", "api_error"})
_CREDIT_ERROR_CODES = frozenset({"credits_required", "billing_error", "credit_balance_too_low"})


def classify(signals: TurnSignals) -> CapacityState:
    """The capacity a turn's signals reveal. See the module docstring for the order."""
    if _refused(signals):
        return AuthenticationFailed(detail=signals.result_text)
    if signals.assistant_error == "billing_error":
        return CreditsExhausted(detail=signals.result_text)
    misconfiguration = backend_misconfiguration(signals)
    if misconfiguration is not None:
        return misconfiguration
    if signals.local_backend and signals.api_error_status == 503:
        return WindowExhausted(rate_limit_type="local", resets_at=None)
    if _cooldown(signals):
        return WindowExhausted(rate_limit_type="cooldown", resets_at=None)
    if signals.rate_limit_status == "allowed_warning" and not (
        _rejected(signals) or _service_failed(signals)
    ):
        return Available()
    if _rejected(signals):
        if _credit_signal(signals):
            return CreditsExhausted(detail=signals.result_text)
        if signals.rate_limit_type == "overage":  # a spend cap that lifts at an instant
            return WindowExhausted(rate_limit_type="overage", resets_at=overage_reset_of(signals))
        return WindowExhausted(
            rate_limit_type=signals.rate_limit_type or "unknown", resets_at=signals.resets_at
        )
    if _service_failed(signals):
        return WindowExhausted(rate_limit_type="overloaded", resets_at=None)
    return Available()


def backend_misconfiguration(signals: TurnSignals) -> BackendMisconfigured | None:
    """Why the backend cannot serve the run, or None. Needs a typed error signal."""
    status = signals.api_error_status
    error = signals.assistant_error
    if error is None and status is None:
        return None
    text = signals.result_text
    detail = first_line(text, longest=200, empty="no detail")
    if (
        error == "model_not_found"
        or (status == 400 and _UNKNOWN_MODEL.search(text))
        or (_cooldown(signals) and signals.error_code == "model_not_found")
    ):
        return BackendMisconfigured(f"the model was not found ({detail})", "not_found")
    # The CLI reports a connection that failed with an error and no HTTP status.
    if error is not None and status is None and _CONNECTION_REFUSED.search(text):
        return BackendMisconfigured(f"the server is unreachable ({detail})", "unreachable")
    # The CLI says so once it could not compact (a single exchange cannot be), whether
    # the server refused it (400) or the CLI would not send it at all: the same prompt
    # fails the same way however often it is sent, on any backend.
    if _PROMPT_TOO_LONG.search(text) and (error == "invalid_request" or status == 400):
        return BackendMisconfigured(
            f"the prompt is too long for the model's context window ({detail})",
            "prompt_too_long",
        )
    if not signals.local_backend:
        return None
    if status == 404:
        return BackendMisconfigured(f"the endpoint or model was not found ({detail})", "not_found")
    if status == 500 and _LOAD_FAILED.search(text):
        return BackendMisconfigured(f"the model failed to load ({detail})", "load_failed")
    return None


def _refused(signals: TurnSignals) -> bool:
    return (
        signals.assistant_error == "authentication_failed"
        or signals.api_error_status == 401
        or (signals.api_error_status == 400 and bool(_NO_DATABASE.search(signals.result_text)))
        # The attempt before a cooldown was refused: the cooldown only hides it.
        or (_cooldown(signals) and signals.error_code == "authentication_failed")
    )


def _cooldown(signals: TurnSignals) -> bool:
    return signals.api_error_status == 429 and bool(_COOLDOWN.search(signals.result_text))


def _rejected(signals: TurnSignals) -> bool:
    return (
        (signals.rate_limit_status == "rejected" and not _served_on_overage(signals))
        or signals.api_error_status == 429
        or signals.assistant_error == "rate_limit"
    )


def _served_on_overage(signals: TurnSignals) -> bool:
    # A window used up while extra usage (overage) is allowed still answers: the event
    # says "rejected" for the window, but with no error anywhere the turn was served.
    return (
        signals.overage_status in ("allowed", "allowed_warning")
        and signals.api_error_status is None
        and signals.assistant_error is None
        and not signals.is_error
    )


def _credit_signal(signals: TurnSignals) -> bool:
    # An overage that is disabled only matters as credits when the overage itself was the
    # rejected claim or the reason is an empty balance; a five-hour rejection of an
    # account that never enabled overage is still a window a clock fixes.
    return (
        signals.error_code in _CREDIT_ERROR_CODES
        or signals.overage_disabled_reason == "out_of_credits"
        # The overage claim refused for a reason no clock fixes (see domain.overage).
        or (
            signals.rate_limit_type == "overage"
            and overage_refusal(signals.overage_disabled_reason) not in (None, "until")
        )
    )


def _service_failed(signals: TurnSignals) -> bool:
    status = signals.api_error_status
    return (status is not None and (status >= 500 or status == 529)) or (
        signals.assistant_error in _SERVER_ERRORS
    )
