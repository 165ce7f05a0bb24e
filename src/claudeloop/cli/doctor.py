"""`claudeloop doctor`: is everything a run needs in place? One line per check, with the
fix when it fails. Which checks run and the exit code are application/doctor.py's; the
checks on this machine come from the composition root.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from claudeloop.application.doctor import diagnose
from claudeloop.application.ports import DoctorCheck
from claudeloop.cli.bootstrap import run_mask
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory
from claudeloop.domain.text import count


def doctor(*, cwd: Path | None, profile: str | None, as_json: bool, probe: bool) -> None:
    # The run's wiring (the SDK among it) is imported only once doctor runs its checks.
    from claudeloop.cli.bootstrap import doctor_checks

    directory = working_directory(cwd)
    diagnosis = diagnose(doctor_checks(directory, profile), probe=probe)
    # A check names a backend's URL (its password too) and says what the model answered.
    mask = run_mask(directory)
    if as_json:
        print_json(dict(mask(dict(diagnosis.to_json()))))
    else:
        for check in diagnosis.checks:
            click.echo(mask({"line": _line(check)})["line"])
        failed = len(diagnosis.failed)
        verdict = "all checks passed" if not failed else f"{count(failed, 'check')} failed"
        click.echo(f"claudeloop doctor: {verdict} (exit {diagnosis.exit_code})")
    sys.exit(diagnosis.exit_code)


def _line(check: DoctorCheck) -> str:
    mark = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "skip"}[check.status]
    fix = f" — fix: {check.fix}" if check.fix and check.status in ("fail", "warn") else ""
    return f"{mark}  {check.name:<12} {check.detail}{fix}"
