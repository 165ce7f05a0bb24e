"""Doctor's model check: what a probe that came back (or did not) means, each state a
verdict, the exit code a run meeting it ends with, and the profile's words for it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from claudeloop.application.model_check import model_check
from claudeloop.application.ports import (
    Advice,
    DoctorCheck,
    ModelAnswered,
    ModelProbe,
    ModelSilent,
)
from claudeloop.domain.capacity import CapacityState
from claudeloop.domain.signals import TurnSignals


@dataclass
class Profile:
    """The profile's words: `given` for every state asked, and what was asked."""

    given: Advice | None = None
    asked: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, capacity: CapacityState, said: str) -> Advice | None:
        self.asked.append((type(capacity).__name__, said))
        return self.given


def _check(
    signals: TurnSignals, profile: Profile | None = None, *, local: bool = False
) -> DoctorCheck:
    probe = ModelProbe("qwen3", local, ModelAnswered(signals, last_words="boom"))
    return model_check(probe, profile or Profile())


@pytest.mark.parametrize(("local", "code"), [(True, 78), (False, 1)])
def test_no_answer_in_time_fails_78_on_a_local_server_else_1(local: bool, code: int) -> None:
    check = model_check(ModelProbe(None, local, ModelSilent(90)), Profile())
    assert (check.status, check.exit_code) == ("fail", code)
    assert check.detail == "no answer to a probe within 90 s"


def test_an_answer_passes_naming_the_model() -> None:
    check = _check(TurnSignals(result_text="hi"))
    assert (check.status, check.detail) == ("ok", "'qwen3' answered a probe")
    default = model_check(
        ModelProbe(None, False, ModelAnswered(TurnSignals(result_text="hi"))), Profile()
    )
    assert default.detail == "the default model answered a probe"


def test_an_error_no_rule_names_or_no_answer_at_all_fails_with_the_way_to_see_why() -> None:
    errored = _check(TurnSignals(is_error=True, result_text="a 418 of its own"))
    assert (errored.status, errored.exit_code) == ("fail", 1)
    assert errored.detail == "the probe ended in an error: a 418 of its own"
    silent = _check(TurnSignals())
    assert silent.detail == "Claude Code ended the probe without an answer: boom"
    assert "claudeloop claude -p hi" in silent.fix


def test_a_misconfigured_backend_fails_78_in_the_profiles_words() -> None:
    profile = Profile(Advice("the model 'qwen3' was not found on http://h", "pull it"))
    missing = TurnSignals(api_error_status=404, result_text="not found", local_backend=True)
    check = _check(missing, profile, local=True)
    assert (check.status, check.exit_code) == ("fail", 78)
    assert (check.detail, check.fix) == ("the model 'qwen3' was not found on http://h", "pull it")
    assert profile.asked == [
        ("BackendMisconfigured", "the endpoint or model was not found (not found)")
    ]


def test_refused_credentials_fail_77_with_the_profiles_fix() -> None:
    profile = Profile(Advice("refused", "replace `auth_token` in [profiles.local]"))
    check = _check(TurnSignals(api_error_status=401, result_text="no"), profile)
    assert (check.status, check.exit_code) == ("fail", 77)
    assert (check.detail, check.fix) == (
        "the credentials were refused (401)",
        "replace `auth_token` in [profiles.local]",
    )
    on_hold = _check(TurnSignals(assistant_error="account_on_hold"), profile)
    assert (on_hold.exit_code, on_hold.detail) == (77, "the account is on hold")


def test_credits_out_fail_1_and_a_proxys_budget_in_the_profiles_words() -> None:
    out = _check(TurnSignals(assistant_error="billing_error"))
    assert (out.status, out.exit_code, out.detail) == ("fail", 1, "the account is out of credits")
    budget = Profile(Advice("the proxy says the budget is spent", "raise it"))
    spent = TurnSignals(api_error_status=429, result_text="Budget has been exceeded!")
    check = _check(spent, budget, local=True)
    assert (check.status, check.exit_code, check.detail) == (
        "fail",
        1,
        "the proxy says the budget is spent",
    )


def test_a_closed_window_is_a_warning_and_a_proxys_upstream_in_its_words() -> None:
    closed = _check(TurnSignals(rate_limit_status="rejected", rate_limit_type="five_hour"))
    assert (closed.status, closed.exit_code) == ("warn", 1)
    assert closed.fix == "nothing to configure: a run waits for it and probes"
    upstream = Profile(Advice("the proxy cannot connect to the upstream", "start it"))
    unreachable = TurnSignals(
        api_error_status=500,
        assistant_error="server_error",
        result_text="Cannot connect to host 127.0.0.1:9",
        local_backend=True,
    )
    check = _check(unreachable, upstream, local=True)
    assert (check.status, check.exit_code, check.fix) == ("fail", 78, "start it")
    timed_out = TurnSignals(
        api_error_status=408, assistant_error="server_error", local_backend=True
    )
    slow = _check(timed_out, upstream, local=True)
    assert (slow.status, slow.detail) == ("warn", "the proxy cannot connect to the upstream")
