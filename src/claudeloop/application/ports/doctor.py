"""What `claudeloop doctor` checks on this machine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

CheckStatus = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    """One line of `doctor`: what was checked, how it went, and the fix when it failed."""

    name: str
    status: CheckStatus
    detail: str
    fix: str = ""
    # The exit code this check's failure calls for.
    exit_code: int = 1


class DoctorChecks(Protocol):
    """The checks of `doctor` on one machine and working directory. Each is asked at
    most once, in this order, and a later one uses what an earlier one found: the
    model probe the CLI `cli` found, the profile the configuration `configuration`
    loaded. Which are asked is the use case's (application/doctor.py)."""

    def cli(self) -> DoctorCheck:
        """The Claude Code CLI a run starts, and that it answers --version."""
        ...

    def sdk(self) -> DoctorCheck:
        """claude-agent-sdk installed."""
        ...

    def configuration(self) -> DoctorCheck:
        """The configuration files and variables valid."""
        ...

    def profile(self) -> tuple[DoctorCheck, str | None]:
        """The backend profile resolved, and its name (None when it did not resolve)."""
        ...

    def credentials(self) -> DoctorCheck:
        """Credentials Claude Code will use; `fail` when it is known to have none."""
        ...

    def login(self) -> DoctorCheck:
        """When the stored claude.ai login ends, against how long a run could go on."""
        ...

    def backend(self) -> DoctorCheck:
        """The backend's URL answers."""
        ...

    def model(self) -> DoctorCheck:
        """A probe through Claude Code answered by the model."""
        ...

    def context(self) -> DoctorCheck | None:
        """Whether the server's context holds Claude Code's first turn; None for a
        backend that does not say it (only llama-server does)."""
        ...

    def sandbox(self) -> DoctorCheck:
        """Whether the model's commands and the checks can run confined here (a warning
        where they cannot: commands are then refused)."""
        ...

    def run_directory(self) -> DoctorCheck:
        """The run directory of the working directory can be written."""
        ...
