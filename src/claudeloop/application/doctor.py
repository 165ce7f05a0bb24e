"""What `claudeloop doctor` does between parsing and rendering: which checks it asks of
the machine (the `DoctorChecks` port), which it skips because an earlier one failed,
and the exit code the failures call for.

Exit 0 when every check passes (a closed usage window is a warning, not a failure),
78 when the backend or the model is misconfigured (unreachable, model missing, ...),
77 when there are no credentials or they are refused (the code a run ends with then),
2 when a configuration file or variable is invalid, 1 for anything else (no Claude
Code CLI, credits out, a run directory that cannot be written).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from claudeloop.application.ports import DoctorCheck, DoctorChecks

# The exit codes a failure may call for, the first found winning.
_RANKED_CODES = (2, 78, 77)


@dataclass(frozen=True)
class Diagnosis:
    """Every check in the order asked, the profile's name, and the exit code."""

    checks: tuple[DoctorCheck, ...]
    profile: str | None

    @property
    def failed(self) -> list[DoctorCheck]:
        return [check for check in self.checks if check.status == "fail"]

    @property
    def exit_code(self) -> int:
        codes = {check.exit_code for check in self.failed}
        return next((code for code in _RANKED_CODES if code in codes), 1 if self.failed else 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "profile": self.profile,
            "checks": [
                {k: v for k, v in asdict(check).items() if k != "exit_code"}
                for check in self.checks
            ],
        }


def diagnose(machine: DoctorChecks, *, probe: bool) -> Diagnosis:
    """Each check in turn; one that needs what a failed one would have found is a skip
    saying why. `probe`: whether the model is asked (a request, seconds)."""
    cli = machine.cli()
    checks = [cli, machine.sdk()]
    configuration = machine.configuration()
    checks.append(configuration)
    profile: str | None = None
    if configuration.status == "fail":
        checks.append(DoctorCheck("profile", "skip", "the configuration is invalid"))
    else:
        resolved, profile = machine.profile()
        checks.append(resolved)
    if profile is None:
        checks += [
            DoctorCheck("credentials", "skip", "the profile did not resolve"),
            DoctorCheck("backend", "skip", "the profile did not resolve"),
            DoctorCheck("model", "skip", "the profile did not resolve"),
        ]
    else:
        checks += _backend_checks(machine, cli_found=cli.status != "fail", probe=probe)
    checks.append(machine.sandbox())
    checks.append(machine.run_directory())
    return Diagnosis(tuple(checks), profile)


def _backend_checks(machine: DoctorChecks, *, cli_found: bool, probe: bool) -> list[DoctorCheck]:
    """The checks of a resolved profile: its credentials, login, backend and model."""
    credentials = machine.credentials()
    login = machine.login()
    backend = machine.backend()
    checks = [credentials, login, backend]
    reachable = backend.status == "ok"
    if not probe:
        checks.append(DoctorCheck("model", "skip", "not probed (--no-probe)"))
    elif not reachable:
        checks.append(DoctorCheck("model", "skip", "not probed: the backend is unreachable"))
    elif not cli_found:
        checks.append(DoctorCheck("model", "skip", "not probed: no Claude Code CLI"))
    elif credentials.status == "fail":
        checks.append(DoctorCheck("model", "skip", "not probed: no credentials"))
    else:
        checks.append(machine.model())
    context = machine.context() if reachable else None
    if context is not None:
        checks.append(context)
    return checks
