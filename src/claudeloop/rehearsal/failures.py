"""What each gate kind answers: the status, headers and error the real service sends.

Header names are the `anthropic-ratelimit-unified-*` family the CLI parses (CLI
2.1.332 reads `-status`, `-reset`, `-representative-claim`, `-overage-status`,
`-overage-disabled-reason`, `-fallback` and per window `-<5h|7d>-status|reset|utilization`;
the grace and daily-cap headers as docs/architecture/claude-code-signals.md measured).
Bodies are Anthropic's error envelope with the wording of the service being imitated
(Anthropic, Ollama for the local kinds, a LiteLLM 1.108 proxy for the litellm kinds, as
measured in front of this rehearsal: see the test that pins each in tests/rehearsal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from claudeloop.rehearsal.gates import Answering, Timeline
from claudeloop.rehearsal.scenario import (
    GraceGate,
    OverageGate,
    RateLimitGate,
    StallGate,
    WarningGate,
)

_PREFIX = "anthropic-ratelimit-unified-"
_FIVE_HOURS = 5 * 3600
_SEVEN_DAYS = 7 * 86400

RATE_LIMIT_MESSAGE = "This request would exceed your account's rate limit. Please try again later."
DAILY_CAP_MESSAGE = "Your organization has reached its daily usage cap."
CREDITS_MESSAGE = (
    "Your credit balance is too low to access the Anthropic API. "
    "Please go to Plans & Billing to upgrade or purchase credits."
)


@dataclass(frozen=True, slots=True)
class HttpFailure:
    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    # A body that is not Anthropic's envelope (LiteLLM's own errors are OpenAI-shaped).
    body: dict[str, object] | None = None


@dataclass(frozen=True, slots=True)
class BrokenStream:
    """A 200 whose body goes wrong: cut, stalled then cut, not JSON, or started and then
    silent until the client gives up (`hang`)."""

    how: Literal["drop", "stall", "malformed", "hang"]
    stall_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class NoFirstByte:
    """No answer at all: the request is read, then not even a status line, the
    connection held open until the client gives up."""


@dataclass(frozen=True, slots=True)
class Warned:
    """The normal answer, under headers that warn."""

    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class CutAtMaxTokens:
    """A 200 whose answer stops at the output-token cap (`stop_reason: max_tokens`)."""


@dataclass(frozen=True, slots=True)
class RefusedByModel:
    """A 200 whose answer the model refuses (`stop_reason: refusal`, with the category and
    explanation the API puts in `stop_details`)."""

    category: str = "cyber"
    explanation: str = "This request was declined by the rehearsal's safety classifier."


GateAnswer = HttpFailure | BrokenStream | NoFirstByte | Warned | CutAtMaxTokens | RefusedByModel


class Windows:
    """The nominal usage windows a healthy account is in, for the `allowed` headers:
    a 5-hour and a 7-day window opened when the server started (scaled). The 5-hour
    window lasts `five_hour_seconds` (a scenario may shorten it)."""

    def __init__(self, timeline: Timeline, *, five_hour_seconds: float = _FIVE_HOURS) -> None:
        self._timeline = timeline
        self._five_hour_seconds = five_hour_seconds

    def five_hour_reset(self) -> int:
        return self._reset(self._five_hour_seconds)

    def seven_day_reset(self) -> int:
        return self._reset(_SEVEN_DAYS)

    def allowed_headers(self) -> dict[str, str]:
        """Sent with every normal answer, so a subscription CLI emits `allowed` events."""
        return _unified(
            status="allowed",
            reset=self.five_hour_reset(),
            claim="five_hour",
            five_hour=("allowed", 0.12, self.five_hour_reset()),
            seven_day=("allowed", 0.05, self.seven_day_reset()),
        )

    def _reset(self, seconds: float) -> int:
        timeline = self._timeline
        return math.ceil(timeline.epoch(timeline.started + timeline.real(seconds)))


def gate_answer(answering: Answering, *, model: str, windows: Windows) -> GateAnswer:
    """What the gate answers, with the scenario's extra headers over its own."""
    answer = _gate_answer(answering, model=model, windows=windows)
    extra = answering.gate.headers
    if not extra:
        return answer
    match answer:
        case HttpFailure() | Warned():
            return replace(answer, headers=answer.headers | extra)
        case BrokenStream() | NoFirstByte() | CutAtMaxTokens() | RefusedByModel():
            return answer  # their headers are the healthy account's (app.py), or none


def _gate_answer(answering: Answering, *, model: str, windows: Windows) -> GateAnswer:
    gate = answering.gate
    reset = math.ceil(answering.reset_epoch) if answering.reset_epoch is not None else None
    match gate:
        case RateLimitGate():
            return _rate_limited(gate, reset, windows)
        case WarningGate():
            # The warned window resets at the nominal 5-hour reset, unless the gate
            # announces its own (a compressed window for a rehearsal of a pause).
            announced = gate.announce_reset_seconds is not None and reset is not None
            warned_reset = reset if announced and reset else windows.five_hour_reset()
            headers = _unified(
                status="allowed_warning",
                reset=warned_reset,
                claim="five_hour",
                five_hour=("allowed_warning", gate.utilization, warned_reset),
                seven_day=("allowed", 0.3, windows.seven_day_reset()),
            )
            if gate.overage_disabled_reason is not None:
                headers[_PREFIX + "overage-status"] = "rejected"
                headers[_PREFIX + "overage-disabled-reason"] = gate.overage_disabled_reason
            return Warned(headers)
        case OverageGate():
            return Warned(_on_overage(gate, reset or windows.five_hour_reset(), windows))
        case GraceGate():
            return Warned(_in_grace(gate, reset or windows.five_hour_reset(), windows))
        case StallGate():
            return BrokenStream("stall", stall_seconds=gate.stall_seconds)
        case _:
            pass
    message = gate.message
    match gate.kind:
        case "credits":
            return HttpFailure(400, "invalid_request_error", message or CREDITS_MESSAGE)
        case "auth":
            return HttpFailure(401, "authentication_error", message or "invalid x-api-key")
        case "model_missing":
            text = message or f'model "{model}" not found, try pulling it first'
            return HttpFailure(404, "not_found_error", text)
        case "local_load_failed":
            text = message or (
                "model failed to load, this may be due to resource limitations "
                "or an internal error, check ollama server logs for details"
            )
            return HttpFailure(500, "api_error", text)
        case "local_busy":
            text = message or "server busy, please try again.  maximum pending requests exceeded"
            return HttpFailure(503, "overloaded_error", text)
        case "overloaded":
            return HttpFailure(529, "overloaded_error", message or "Overloaded")
        case "prompt_too_long":
            text = message or "prompt is too long: 250000 tokens > 200000 maximum"
            return HttpFailure(400, "invalid_request_error", text)
        case "litellm_unknown_model":
            text = message or (
                f"anthropic_messages: Invalid model name passed in model={model}. "
                "Call `/v1/models` to view available models for your key."
            )
            return HttpFailure(400, "invalid_request_error", text)
        case "litellm_no_db":
            text = message or "No connected db."
            error = {"message": text, "type": "no_db_connection", "param": None, "code": "400"}
            return HttpFailure(400, "no_db_connection", text, body={"error": error})
        case "litellm_upstream_error":
            text = message or (
                "litellm.InternalServerError: AnthropicException - upstream failed. Handle "
                "with `litellm.InternalServerError`.\n\nLiteLLM: model group "
                f"'{model}' failed with the error above. No fallback was attempted."
            )
            return HttpFailure(500, "api_error", text)
        case "litellm_cooldown":
            text = message or (
                "No deployments available for selected model, Try again in 5 seconds. All "
                f"deployments for selected model are in cooldown. Passed model={model}. "
                "pre-call-checks=False, cooldown_list=['f25a10ab8ea30185']"
            )
            return HttpFailure(429, "rate_limit_error", text)
        case "org_not_allowed":
            # The words the CLI (2.1.332) looks for to call a refusal oauth_org_not_allowed.
            text = message or "OAuth authentication is currently not allowed for this organization."
            return HttpFailure(403, "permission_error", text)
        case "verification_required":
            # A 403 whose details name `verification_required`: the CLI's schema for it.
            text = message or (
                "Verify your account to keep using Claude Code: https://claude.ai/verify"
            )
            refusal: dict[str, object] = {
                "type": "permission_error",
                "message": text,
                "details": {
                    "error_code": "verification_required",
                    "wording": "verify_now",
                    "remediation_url": "https://claude.ai/verify",
                },
            }
            return HttpFailure(
                403, "permission_error", text, body={"type": "error", "error": refusal}
            )
        case "rate_limit_transient":
            # A 429 with no unified headers: a request rate limit, not a plan's window.
            return HttpFailure(429, "rate_limit_error", message or RATE_LIMIT_MESSAGE)
        case "max_tokens":
            return CutAtMaxTokens()
        case "model_refusal":
            return RefusedByModel()
        case "drop" | "malformed" | "hang" as how:
            return BrokenStream(how)
        case "no_first_byte":
            return NoFirstByte()
    raise AssertionError(f"unhandled gate kind {gate.kind}")


def _rate_limited(gate: RateLimitGate, reset: int | None, windows: Windows) -> HttpFailure:
    five_reset = windows.five_hour_reset()
    seven_reset = windows.seven_day_reset()
    match gate.kind:
        case "window":
            headers = _unified(
                status="rejected",
                reset=reset,
                claim="five_hour",
                five_hour=("rejected", 1.0, reset),
                seven_day=("allowed", 0.3, seven_reset),
            )
        case "window_silent":
            # The rejection without any reset: the client can only probe.
            headers = _unified(
                status="rejected",
                reset=None,
                claim="five_hour",
                five_hour=("rejected", 1.0, None),
                seven_day=("allowed", 0.3, None),
            )
        case "weekly":
            headers = _unified(
                status="rejected",
                reset=reset,
                claim="seven_day",
                five_hour=("allowed", 0.2, five_reset),
                seven_day=("rejected", 1.0, reset),
            )
        case "credits_overage":
            # A subscription past its window whose extra usage has no credits left.
            headers = _unified(
                status="rejected",
                reset=reset,
                claim="five_hour",
                five_hour=("rejected", 1.0, reset),
                seven_day=("allowed", 0.3, seven_reset),
            )
            headers[_PREFIX + "overage-status"] = "rejected"
            headers[_PREFIX + "overage-disabled-reason"] = "out_of_credits"
        case "model_weekly":
            # A model's own weekly window (the CLI names it from the claim alone).
            headers = _unified(
                status="rejected",
                reset=reset,
                claim=gate.window,
                five_hour=("allowed", 0.2, five_reset),
                seven_day=("allowed", 0.4, seven_reset),
            )
        case "overage_rejected":
            # Past the 5-hour window, extra usage refused for the gate's reason; a spend
            # cap that lifts at an instant announces it as the overage reset.
            headers = _unified(
                status="rejected",
                reset=reset,
                claim="overage",
                five_hour=("rejected", 1.0, reset),
                seven_day=("allowed", 0.3, seven_reset),
            )
            headers[_PREFIX + "overage-status"] = "rejected"
            headers[_PREFIX + "overage-disabled-reason"] = gate.overage_disabled_reason
            if reset is not None:
                headers[_PREFIX + "overage-reset"] = str(reset)
        case "daily_cap":
            # The organization's usage paused for the day: the overage claim refused with
            # the monthly cap's reason, and the flag that tells the two apart. The day's
            # reset is the overage reset, said only when the gate announces one.
            headers = _unified(
                status="rejected",
                reset=five_reset,
                claim="overage",
                five_hour=("rejected", 1.0, five_reset),
                seven_day=("allowed", 0.3, seven_reset),
            )
            headers[_PREFIX + "overage-status"] = "rejected"
            headers[_PREFIX + "overage-disabled-reason"] = "org_level_disabled"
            headers[_PREFIX + "overage-daily-cap-paused"] = "true"
            if gate.announce_reset_seconds is not None and reset is not None:
                headers[_PREFIX + "overage-reset"] = str(reset)
            message = gate.message or DAILY_CAP_MESSAGE
            return HttpFailure(429, "rate_limit_error", message, headers)
    return HttpFailure(429, "rate_limit_error", gate.message or RATE_LIMIT_MESSAGE, headers)


def _in_grace(gate: GraceGate, reset: int, windows: Windows) -> dict[str, str]:
    """Headers of an answer served in the grace period: the 5-hour window past its
    limit, the unified status still allowed."""
    headers = _unified(
        status="allowed",
        reset=reset,
        claim="five_hour",
        five_hour=("rejected", gate.utilization, reset),
        seven_day=("allowed", 0.3, windows.seven_day_reset()),
    )
    headers[_PREFIX + "grace-status"] = "active"
    headers[_PREFIX + "grace-5h-utilization"] = f"{max(gate.utilization - 1, 0.01):g}"
    headers[_PREFIX + "grace-7d-utilization"] = "0"
    return headers


def _on_overage(gate: OverageGate, reset: int, windows: Windows) -> dict[str, str]:
    """Headers of an answer served on paid overage, in either of the service's shapes."""
    in_use = gate.shape == "in_use"
    headers = _unified(
        status="allowed" if in_use else "rejected",
        reset=reset,
        claim="five_hour",
        five_hour=("rejected", 1.0, reset),
        seven_day=("allowed", 0.3, windows.seven_day_reset()),
    )
    headers[_PREFIX + "overage-status"] = "allowed"
    if in_use:
        headers[_PREFIX + "overage-in-use"] = "true"
    return headers


def _unified(
    *,
    status: str,
    reset: int | None,
    claim: str,
    five_hour: tuple[str, float, int | None],
    seven_day: tuple[str, float, int | None],
) -> dict[str, str]:
    headers = {
        _PREFIX + "status": status,
        _PREFIX + "representative-claim": claim,
        _PREFIX + "fallback-percentage": "0.5",
    }
    if reset is not None:
        headers[_PREFIX + "reset"] = str(reset)
    for window, (window_status, utilization, window_reset) in (
        ("5h", five_hour),
        ("7d", seven_day),
    ):
        headers[f"{_PREFIX}{window}-status"] = window_status
        headers[f"{_PREFIX}{window}-utilization"] = f"{utilization:g}"
        if window_reset is not None:
            headers[f"{_PREFIX}{window}-reset"] = str(window_reset)
    return headers
