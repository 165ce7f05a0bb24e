"""What `claudeloop doctor` does between parsing and rendering: which checks it asks of
the machine (the `DoctorChecks` port), which it skips because an earlier one failed,
and the exit code the failures call for.

Exit 0 when every check passes (a closed usage window is a warning, not a failure),
77 when there are no credentials or they are refused (the code a run ends with then),
78 when the backend or the model is misconfigured (unreachable, model missing, ...),
2 when a configuration file or variable is invalid, 1 for anything else (no Claude
Code CLI, credits out, a run directory that cannot be written). When several fail, the
first of 2, 77, 78: the code a run started here would end with, as a run refuses a
machine without credentials before it asks the backend anything (exit 77).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from claudeloop.application.json_form import JsonObject
from claudeloop.application.model_check import model_check
from claudeloop.application.ports import CliFound, DoctorCheck, DoctorChecks
from claudeloop.domain.confinement import (
    CommandsRefused,
    Confined,
    Posture,
    Unconfined,
    posture_name,
)
from claudeloop.domain.tested_cli import TESTED_CLAUDE_CODE

# The exit codes a failure may call for, the first found winning.
_RANKED_CODES = (2, 77, 78)
POSTURES = (Confined, CommandsRefused, Unconfined)


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

    @property
    def cli(self) -> CliFound | None:
        """The Claude Code CLI found and run (None: none runs)."""
        return next((c.facts for c in self.checks if isinstance(c.facts, CliFound)), None)

    @property
    def sandbox(self) -> Posture | None:
        """What a run started here gets: confined, commands refused, or off."""
        found = (c.facts for c in self.checks if isinstance(c.facts, POSTURES))
        return next(found, None)

    def to_json(self) -> JsonObject:
        return {
            "exit_code": self.exit_code,
            "profile": self.profile,
            "checks": [
                {k: v for k, v in asdict(check).items() if k not in ("exit_code", "facts")}
                for check in self.checks
            ],
            "cli": _cli_json(self.cli),
            "sandbox": _sandbox_json(self.sandbox),
        }


def _cli_json(cli: CliFound | None) -> JsonObject | None:
    if cli is None:
        return None
    return {
        "version": cli.version,
        "path": str(cli.path),
        "found": cli.found,
        "standing": cli.standing,
        "tested_version": TESTED_CLAUDE_CODE,
    }


def _sandbox_json(chosen: Posture | None) -> JsonObject | None:
    if chosen is None:
        return None
    refused = chosen if isinstance(chosen, CommandsRefused) else None
    return {
        "posture": posture_name(chosen),
        "why": refused.why if refused is not None else None,
        "fix": refused.fix if refused is not None else None,
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
        checks.append(model_check(machine.model(), machine.advice))
    context = machine.context() if reachable else None
    if context is not None:
        checks.append(context)
    return checks
