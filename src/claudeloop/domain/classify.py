"""TurnSignals -> CapacityState. The order of the rules is the point of this module.

1. authentication failed outranks everything: no other reading matters if every request
   will be refused (a LiteLLM proxy without a database says so with a 400 "No connected
   db."; a cooldown after a refused attempt says it with the attempt's error; the CLI
   names an account on hold, one to verify, an organization that allows no subscription
   login, cloud credentials it could not load: each its own kind, for its own fix);
2. a billing error is credits, before any window path could claim it;
3. a misconfigured backend (model missing or unknown anywhere, a model a router will
   not load by itself, the server unreachable anywhere, a prompt too long for the context
   anywhere, which the CLI's `terminal_reason` says typed (domain.turn_end); on a local
   backend also 404, a 500 whose body says the model failed to load) needs a real error
   signal, never text alone;
4. a full local queue (503 on a local backend) is the one local error a clock fixes;
5. a proxy's spent budget (LiteLLM's 422 "Budget has been exceeded!" of a key, 429 in
   older proxies; its 429 "No deployments available - crossed budget" of a deployment) is
   credits out, the proxy's, before the cooldown rule could read its words as a cooldown:
   no clock the proxy announces refills it, so it is backed off like credits;
6. a proxy's cooldown (LiteLLM's 429 "No deployments available" for a few seconds after
   an upstream error) is a short wait, never an end nor a window a policy acts on: the
   probe after it meets the real error;
7. `allowed_warning` is Available: a warning is not a rejection (though it does not mask
   one that another source reports: a 429, a `rate_limit` error, a 5xx or 529); so is an
   answer served in a grace period (the CLI's `rateLimitGraceActive` on a served answer
   with no error anywhere), though the window it reports is past its limit and called
   rejected: the service still answers, and the usage warning says so (an answer past
   the window on paid overage is still the paid-overage limit: domain.overage);
8. a rejection while the organization's usage is paused for the day (the CLI's
   `dailyCapPaused`) is a closed window of its own, `daily_cap`, until the overage reset
   when one is announced, else probed: its `overageDisabledReason` reads as at the
   organization's monthly cap, which would otherwise make it credits, and the day's end
   lifts it (only a typed credit error, or the CLI's credit words, still say credits);
   a rejection with any credit signal is credits, even when a reset time came with it (a
   window the event calls rejected while overage is allowed and the turn was served, with
   no error anywhere, is no rejection: the account is running on extra usage, which
   `domain.overage` makes a limit of its own); the overage claim refused with a spend cap
   that lifts at an instant (`org_level_disabled_until`) is a window until the overage
   reset;
9. any other rejection is a closed window, `unknown` with no reset when the signals are thin
   (a rejection is also the CLI's usage-limit words beside a typed error, never alone:
   domain.limit_text; its credit words are a credit signal);
10. (ours) a 5xx or 529 from the service itself, or through a proxy (an upstream outage),
   is a short closed window with no reset: resending at once would hammer an overloaded
   service and giving up would lose a night over a blip, so we wait and probe like any
   window. A 408 (LiteLLM's "litellm.Timeout": its upstream did not answer in time) is
   such an outage too, and so is a proxy's 5xx saying it cannot connect to its upstream
   ("Cannot connect to host"), each said in its own words.
"""

from __future__ import annotations

import re

from claudeloop.domain.capacity import (
    DAILY_CAP,
    AuthenticationFailed,
    AuthFailureKind,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WaitKind,
    WindowExhausted,
    grace_warning,
    usage_warning,
)
from claudeloop.domain.limit_text import LimitText, usage_limit_text
from claudeloop.domain.overage import overage_refusal, overage_reset_of
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.text import first_line
from claudeloop.domain.turn_end import ContextFull, context_full_reason, turn_end

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
# An unknown model name in LiteLLM's words (1.108) and llama-server's router's (a 400
# "model 'x' not found"); LiteLLM's key it cannot check without a database, and the
# cooldown it puts a model group in after an upstream error.
_UNKNOWN_MODEL = re.compile(r"invalid model name|model '[^']*' not found", re.IGNORECASE)
# llama-server's router started with --no-models-autoload, asked for a model nobody
# loaded: no wait loads it.
_NOT_LOADED = re.compile(r"model is not loaded", re.IGNORECASE)
_NO_DATABASE = re.compile(r"no connected db", re.IGNORECASE)
_COOLDOWN = re.compile(r"no deployments available|in cooldown", re.IGNORECASE)
# A spent budget, of a key, user or team ("Budget has been exceeded! Current cost: 1.25,
# Max budget: 1.0") or of a deployment or provider ("crossed budget: Exceeded budget
# for deployment ..."), and the upstream the proxy could not connect to (aiohttp's words).
_PROXY_BUDGET = re.compile(r"budget has been exceeded|crossed budget", re.IGNORECASE)
_UPSTREAM_UNREACHABLE = re.compile(r"cannot connect to host|connect call failed", re.IGNORECASE)
_SERVER_ERRORS = frozenset({"server_error", "overloaded", "api_error"})
_CREDIT_ERROR_CODES = frozenset({"credits_required", "billing_error", "credit_balance_too_low"})
# The CLI's assistant errors that say the account, not the credentials, is what refuses.
_ACCOUNT_ERRORS: dict[str, AuthFailureKind] = {
    "account_on_hold": "account_on_hold",
    "verification_required": "verification_required",
    "oauth_org_not_allowed": "org_not_allowed",
    "cloud_credential_error": "cloud_credentials",
}


def classify(signals: TurnSignals) -> CapacityState:
    """The capacity a turn's signals reveal. See the module docstring for the order."""
    account = _ACCOUNT_ERRORS.get(signals.assistant_error or "")
    if account is not None:
        return AuthenticationFailed(detail=signals.result_text, kind=account)
    if _refused(signals):
        return AuthenticationFailed(detail=signals.result_text)
    if signals.assistant_error == "billing_error":
        return CreditsExhausted(detail=signals.result_text)
    misconfiguration = backend_misconfiguration(signals)
    if misconfiguration is not None:
        return misconfiguration
    if signals.local_backend and signals.api_error_status == 503:
        return WindowExhausted(rate_limit_type="local", resets_at=None)
    if _proxy_budget_spent(signals):
        return CreditsExhausted(detail=signals.result_text, source="proxy_budget")
    if _cooldown(signals):
        return WindowExhausted(rate_limit_type="cooldown", resets_at=None)
    if signals.rate_limit_status == "allowed_warning" and not (
        _rejected(signals) or _service_failed(signals)
    ):
        return Available()
    if in_grace(signals):
        return Available()
    if _rejected(signals):
        if signals.daily_cap_paused and not _typed_credit_signal(signals):
            return WindowExhausted(rate_limit_type=DAILY_CAP, resets_at=signals.overage_resets_at)
        if _credit_signal(signals):
            return CreditsExhausted(detail=signals.result_text)
        if signals.rate_limit_type == "overage":  # a spend cap that lifts at an instant
            return WindowExhausted(rate_limit_type="overage", resets_at=overage_reset_of(signals))
        return WindowExhausted(
            rate_limit_type=signals.rate_limit_type or "unknown", resets_at=signals.resets_at
        )
    if _service_failed(signals):
        return WindowExhausted(rate_limit_type=_outage(signals), resets_at=None)
    return Available()


def in_grace(signals: TurnSignals) -> bool:
    """Whether the turn was answered in the service's grace period: the CLI says so
    (`rateLimitGraceActive`, set only from a served answer) and nothing in the turn
    failed. The window it reports may be past its limit and called rejected."""
    return (
        signals.grace_active
        and signals.api_error_status is None
        and signals.assistant_error is None
        and not signals.is_error
    )


def turn_warning(signals: TurnSignals) -> str | None:
    """The usage warning a turn's answer carried, in words: a grace period's, or the
    service's `allowed_warning`; None when it carried none."""
    if in_grace(signals):
        return grace_warning(signals.rate_limit_type, signals.utilization, signals.resets_at)
    return usage_warning(
        signals.rate_limit_status, signals.rate_limit_type, signals.utilization, signals.resets_at
    )


def backend_misconfiguration(signals: TurnSignals) -> BackendMisconfigured | None:
    """Why the backend cannot serve the run, or None. Needs a typed error signal."""
    status = signals.api_error_status
    error = signals.assistant_error
    text = signals.result_text
    detail = first_line(text, longest=200, empty="no detail")
    end = turn_end(signals.terminal_reason)
    if isinstance(end, ContextFull):
        return BackendMisconfigured(
            f"{context_full_reason(end.reason)} ({detail})", "prompt_too_long"
        )
    if error is None and status is None:
        return None
    if (
        error == "model_not_found"
        or (status == 400 and _UNKNOWN_MODEL.search(text))
        or (_cooldown(signals) and signals.error_code == "model_not_found")
    ):
        return BackendMisconfigured(f"the model was not found ({detail})", "not_found")
    if status == 400 and _NOT_LOADED.search(text):
        return BackendMisconfigured(f"the model is not loaded ({detail})", "not_loaded")
    # The CLI reports a connection that failed with an error and no HTTP status.
    if error is not None and status is None and _CONNECTION_REFUSED.search(text):
        return BackendMisconfigured(f"the server is unreachable ({detail})", "unreachable")
    # An older CLI, with no terminal_reason, says so in words once it could not compact
    # (a single exchange cannot be), whether the server refused it (400) or the CLI
    # would not send it at all: the same prompt fails the same way however often it is
    # sent, on any backend. A 429 or a 5xx is the service refusing or failing, whatever
    # the text says: a wait.
    turned_away = status is not None and (status == 429 or status >= 500)
    if (
        _PROMPT_TOO_LONG.search(text)
        and (error == "invalid_request" or status == 400)
        and not turned_away
    ):
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


def _proxy_budget_spent(signals: TurnSignals) -> bool:
    # A typed status and the proxy's words: text alone could be a model quoting them.
    return signals.api_error_status in (422, 429) and bool(
        _PROXY_BUDGET.search(signals.result_text)
    )


def _outage(signals: TurnSignals) -> WaitKind:
    if signals.api_error_status == 408:
        return "timeout"
    if _UPSTREAM_UNREACHABLE.search(signals.result_text):
        return "upstream_unreachable"
    return "overloaded"


def _rejected(signals: TurnSignals) -> bool:
    return (
        (signals.rate_limit_status == "rejected" and not _served_on_overage(signals))
        or signals.api_error_status == 429
        or signals.assistant_error == "rate_limit"
        or _limit_words(signals) is not None
    )


def _limit_words(signals: TurnSignals) -> LimitText | None:
    # The CLI's usage-limit words count only beside a typed error of the same turn.
    typed = signals.assistant_error is not None or signals.api_error_status is not None
    return usage_limit_text(signals.result_text) if signals.is_error and typed else None


def _served_on_overage(signals: TurnSignals) -> bool:
    # A window used up while extra usage (overage) is allowed still answers: the event
    # says "rejected" for the window, but with no error anywhere the turn was served.
    return (
        signals.overage_status in ("allowed", "allowed_warning")
        and signals.api_error_status is None
        and signals.assistant_error is None
        and not signals.is_error
    )


def _typed_credit_signal(signals: TurnSignals) -> bool:
    # Credits said by an error code or the CLI's credit words, not by an overage reason.
    return signals.error_code in _CREDIT_ERROR_CODES or _limit_words(signals) == "credits"


def _credit_signal(signals: TurnSignals) -> bool:
    # An overage that is disabled only matters as credits when the overage itself was the
    # rejected claim or the reason is an empty balance; a five-hour rejection of an
    # account that never enabled overage is still a window a clock fixes.
    return (
        signals.error_code in _CREDIT_ERROR_CODES
        or signals.overage_disabled_reason == "out_of_credits"
        or _limit_words(signals) == "credits"
        # The overage claim refused for a reason no clock fixes (see domain.overage).
        or (
            signals.rate_limit_type == "overage"
            and overage_refusal(signals.overage_disabled_reason) not in (None, "until")
        )
    )


def _service_failed(signals: TurnSignals) -> bool:
    status = signals.api_error_status
    return (status is not None and (status >= 500 or status == 408)) or (
        signals.assistant_error in _SERVER_ERRORS
    )


# Anthropic's API, where no address of the user's is named.
ANTHROPIC_HOST = "api.anthropic.com"
_DOES_NOT_RESOLVE = re.compile(r"enotfound|getaddrinfo|eai_again|name resolution", re.IGNORECASE)


def unreachable_reading(
    capacity: CapacityState, signals: TurnSignals, *, answered_before: bool
) -> CapacityState:
    """What a server that cannot be reached means: a misconfiguration only on evidence,
    an address of the user's (a profile's `base_url`, ANTHROPIC_BASE_URL) that has not
    once answered this run (a typo, a server never started: no wait fixes it). Anything
    else is the network or the server gone for a while (Wi-Fi dropped, a server
    restarting, a host that does not resolve now): an outage, `offline`, waited out and
    probed like any wait, saying what is wrong."""
    if not (isinstance(capacity, BackendMisconfigured) and capacity.kind == "unreachable"):
        return capacity
    address = signals.custom_address
    if address is not None and not answered_before:
        return capacity
    host = _host(address) if address is not None else ANTHROPIC_HOST
    what = (
        f"{host} does not resolve"
        if _DOES_NOT_RESOLVE.search(signals.result_text)
        else f"{host} cannot be reached"
    )
    return WindowExhausted(rate_limit_type="offline", resets_at=None, detail=what)


def _host(address: str) -> str:
    """The host (and port) of a base URL, as a person names it."""
    rest = address.split("://", 1)[-1]
    return rest.split("/", 1)[0] or address
