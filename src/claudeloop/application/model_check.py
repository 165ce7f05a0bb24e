"""Doctor's model check: what a probe of the profile's model came back with means. The
domain's `classify` reads the probe's signals into a capacity state; each state is a
verdict (ok, a warning, a failure), the exit code a run that met it ends with, and the
words a run says of it, asked of the profile (`DoctorChecks.advice`: the same advice a
run's reason gives, adapters/backend_advice.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never

from claudeloop.application.ports import Advice, DoctorCheck, ModelAnswered, ModelProbe, ModelSilent
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
    auth_failure_reason,
    describe,
)
from claudeloop.domain.classify import classify
from claudeloop.domain.text import first_line

# The profile's words for a state: `DoctorChecks.advice`.
Advise = Callable[[CapacityState, str], Advice | None]

_SEE_WHY = "run `claudeloop claude -p hi` (the same environment) to see why"
_MODEL = "model"


def model_check(probe: ModelProbe, advise: Advise) -> DoctorCheck:
    """The line of `doctor` for the probe of the model."""
    match probe.answer:
        case ModelSilent(seconds=seconds):
            return DoctorCheck(
                _MODEL,
                "fail",
                f"no answer to a probe within {seconds:g} s",
                "check that the server is not stuck loading the model",
                78 if probe.local else 1,
            )
        case ModelAnswered() as answered:
            return _answered(probe, answered, advise)


def _answered(probe: ModelProbe, answered: ModelAnswered, advise: Advise) -> DoctorCheck:
    signals = answered.signals
    said = signals.result_text
    detail = first_line(said, longest=200, empty="no detail")
    name = f"'{probe.model}'" if probe.model else "the default model"
    capacity = classify(signals)
    match capacity:
        case Available() if signals.is_error:
            # An error no rule names (a 400 of the server's own, say) is still no answer.
            return DoctorCheck(_MODEL, "fail", f"the probe ended in an error: {detail}", _SEE_WHY)
        case Available() if said.strip():
            return DoctorCheck(_MODEL, "ok", f"{name} answered a probe")
        case Available():
            last = f": {answered.last_words}" if answered.last_words else ""
            return DoctorCheck(
                _MODEL, "fail", f"Claude Code ended the probe without an answer{last}", _SEE_WHY
            )
        case BackendMisconfigured(reason=reason):
            advice = advise(capacity, reason) or Advice(reason)
            return DoctorCheck(_MODEL, "fail", advice.problem, advice.fix, 78)
        case AuthenticationFailed(kind=kind):
            refused = "(401)" if signals.api_error_status == 401 else f"({detail})"
            reason = (
                f"the credentials were refused {refused}"
                if kind == "refused"
                else auth_failure_reason(kind).removeprefix("authentication failed: ")
            )
            return DoctorCheck(_MODEL, "fail", reason, _fix(advise(capacity, said)), 77)
        case CreditsExhausted() | WindowExhausted():
            return _waitable(capacity, name, advise(capacity, said))
        case _:
            assert_never(capacity)


def _waitable(
    capacity: CreditsExhausted | WindowExhausted, name: str, advice: Advice | None
) -> DoctorCheck:
    """A state a run waits out; the profile's words when it has some (a local proxy's
    budget spent, its upstream unreachable or timed out)."""
    match capacity:
        case CreditsExhausted() if advice is not None:
            # A proxy's own budget spent: its admin raises it, or its period resets it.
            return DoctorCheck(_MODEL, "fail", advice.problem, advice.fix)
        case CreditsExhausted():
            return DoctorCheck(
                _MODEL,
                "fail",
                "the account is out of credits",
                "top up at console.anthropic.com (Plans & Billing)",
            )
        case WindowExhausted(rate_limit_type="upstream_unreachable") if advice is not None:
            # A run waits it out (the upstream may come back), but nothing will answer a
            # run started now: the proxy's own configuration points where nothing listens.
            return DoctorCheck(_MODEL, "fail", advice.problem, advice.fix, 78)
        case WindowExhausted() if advice is not None:
            # A proxy's upstream that timed out: a passing outage, or a slow server.
            return DoctorCheck(_MODEL, "warn", advice.problem, advice.fix)
        case WindowExhausted():
            return DoctorCheck(
                _MODEL,
                "warn",
                f"{name} is reachable but {describe(capacity)}",
                "nothing to configure: a run waits for it and probes",
            )


def _fix(advice: Advice | None) -> str:
    return advice.fix if advice is not None else ""
