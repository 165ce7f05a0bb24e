"""Which checks `doctor` asks, which it skips and why, and the exit code the failures
call for, on a machine of fakes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from claudeloop.application.doctor import diagnose
from claudeloop.application.ports import (
    Advice,
    CheckStatus,
    DoctorCheck,
    ModelAnswered,
    ModelProbe,
    ModelSilent,
)
from claudeloop.domain.capacity import CapacityState
from claudeloop.domain.signals import TurnSignals
from tests.json_view import plain


@dataclass
class FakeMachine:
    """Every check passes but those named in `fail` (with the exit code given)."""

    fail: dict[str, int] = field(default_factory=dict)
    llama_server: bool = False
    asked: list[str] = field(default_factory=list)

    def _check(self, name: str) -> DoctorCheck:
        self.asked.append(name)
        if name in self.fail:
            return DoctorCheck(name, "fail", f"{name} failed", "fix it", self.fail[name])
        return DoctorCheck(name, "ok", f"{name} fine")

    def cli(self) -> DoctorCheck:
        return self._check("cli")

    def sdk(self) -> DoctorCheck:
        return self._check("sdk")

    def configuration(self) -> DoctorCheck:
        return self._check("config")

    def profile(self) -> tuple[DoctorCheck, str | None]:
        check = self._check("profile")
        return check, None if check.status == "fail" else "local"

    def credentials(self) -> DoctorCheck:
        return self._check("credentials")

    def login(self) -> DoctorCheck:
        return self._check("login")

    def backend(self) -> DoctorCheck:
        return self._check("backend")

    def model(self) -> ModelProbe:
        # A model that failed is one that did not answer within the probe's time.
        failed = self._check("model").status == "fail"
        said = ModelSilent(90) if failed else ModelAnswered(TurnSignals(result_text="hi"))
        return ModelProbe("qwen3", self.fail.get("model") == 78, said)

    def advice(self, capacity: CapacityState, said: str) -> Advice | None:
        return None

    def context(self) -> DoctorCheck | None:
        return self._check("context") if self.llama_server else None

    def sandbox(self) -> DoctorCheck:
        return self._check("sandbox")

    def run_directory(self) -> DoctorCheck:
        return self._check("run dir")


def _statuses(machine: FakeMachine, *, probe: bool = True) -> list[tuple[str, CheckStatus]]:
    return [(check.name, check.status) for check in diagnose(machine, probe=probe).checks]


def test_a_healthy_machine_passes_every_check_in_order_with_exit_0() -> None:
    machine = FakeMachine(llama_server=True)
    diagnosis = diagnose(machine, probe=True)
    names = ["cli", "sdk", "config", "profile", "credentials", "login", "backend", "model"]
    assert machine.asked == [*names, "context", "sandbox", "run dir"]
    assert (diagnosis.exit_code, diagnosis.profile) == (0, "local")


def test_an_invalid_configuration_skips_the_profile_and_what_needs_it_with_exit_2() -> None:
    machine = FakeMachine(fail={"config": 2})
    assert _statuses(machine) == [
        ("cli", "ok"),
        ("sdk", "ok"),
        ("config", "fail"),
        ("profile", "skip"),
        ("credentials", "skip"),
        ("backend", "skip"),
        ("model", "skip"),
        ("sandbox", "ok"),
        ("run dir", "ok"),
    ]
    diagnosis = diagnose(FakeMachine(fail={"config": 2}), probe=True)
    assert (diagnosis.exit_code, diagnosis.profile) == (2, None)
    assert len(diagnosis.failed) == 1


def test_a_profile_that_does_not_resolve_skips_the_backends_checks() -> None:
    machine = FakeMachine(fail={"profile": 2})
    assert _statuses(machine)[3:] == [
        ("profile", "fail"),
        ("credentials", "skip"),
        ("backend", "skip"),
        ("model", "skip"),
        ("sandbox", "ok"),
        ("run dir", "ok"),
    ]
    assert "login" not in machine.asked


@pytest.mark.parametrize(
    ("fail", "probe", "why"),
    [
        ({}, False, "not probed (--no-probe)"),
        ({"backend": 78}, True, "not probed: the backend is unreachable"),
        ({"cli": 1}, True, "not probed: no Claude Code CLI"),
        ({"credentials": 77}, True, "not probed: no credentials"),
    ],
)
def test_the_model_is_probed_only_when_it_can_answer(
    fail: dict[str, int], probe: bool, why: str
) -> None:
    machine = FakeMachine(fail=fail)
    model = next(c for c in diagnose(machine, probe=probe).checks if c.name == "model")
    assert (model.status, model.detail) == ("skip", why)
    assert "model" not in machine.asked


def test_an_unreachable_llama_server_is_not_asked_its_context() -> None:
    machine = FakeMachine(fail={"backend": 78}, llama_server=True)
    diagnose(machine, probe=True)
    assert "context" not in machine.asked


@pytest.mark.parametrize(
    ("fail", "code"),
    [
        ({"run dir": 1}, 1),
        ({"credentials": 77, "run dir": 1}, 77),
        ({"model": 78, "login": 77}, 77),
        ({"model": 78, "run dir": 1}, 78),
        ({"backend": 78, "credentials": 77}, 77),
        ({"backend": 78, "config": 2}, 2),
    ],
)
def test_the_exit_code_is_the_first_of_2_77_78_any_failure_calls_for_else_1(
    fail: dict[str, int], code: int
) -> None:
    assert diagnose(FakeMachine(fail=fail), probe=True).exit_code == code


def test_a_warning_is_no_failure() -> None:
    class Warned(FakeMachine):
        def model(self) -> ModelProbe:
            closed = TurnSignals(rate_limit_status="rejected", rate_limit_type="five_hour")
            return ModelProbe(None, False, ModelAnswered(closed))

    diagnosis = diagnose(Warned(), probe=True)
    assert diagnosis.exit_code == 0
    assert plain(diagnosis.to_json())["checks"][7] == {
        "name": "model",
        "status": "warn",
        "detail": "the default model is reachable but 5-hour window closed, no reset announced",
        "fix": "nothing to configure: a run waits for it and probes",
    }
