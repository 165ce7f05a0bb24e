"""What `claudeloop doctor` checks on this machine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from claudeloop.application.ports.run import Advice
from claudeloop.domain.capacity import CapacityState
from claudeloop.domain.confinement import Posture
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.tested_cli import Standing

CheckStatus = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True, slots=True)
class CliFound:
    """The Claude Code CLI a run starts: its version, its path, how it was found
    (bundled with claude-agent-sdk, on PATH, CLAUDELOOP_CLI_PATH) and where it stands
    to the version this claudeloop was tested with."""

    version: str
    path: Path
    found: str
    standing: Standing


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    """One line of `doctor`: what was checked, how it went, and the fix when it failed;
    `facts`: what a script reads of it as fields (the CLI found, the sandbox's posture)."""

    name: str
    status: CheckStatus
    detail: str
    fix: str = ""
    # The exit code this check's failure calls for.
    exit_code: int = 1
    facts: CliFound | Posture | None = None


@dataclass(frozen=True, slots=True)
class ModelAnswered:
    """A model probe through Claude Code came back: its signals, and the last line
    Claude Code wrote on stderr (why it ended without an answer, when it says)."""

    signals: TurnSignals
    last_words: str = ""


@dataclass(frozen=True, slots=True)
class ModelSilent:
    """Nothing came back to the probe within `seconds`."""

    seconds: float


@dataclass(frozen=True, slots=True)
class ModelProbe:
    """The probe of the profile's model: which model (None: Claude Code's default),
    whether the backend is a local server, and what came back. What it means is the use
    case's (application/model_check.py)."""

    model: str | None
    local: bool
    answer: ModelAnswered | ModelSilent


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

    def model(self) -> ModelProbe:
        """A probe through Claude Code, and what came back of it."""
        ...

    def advice(self, capacity: CapacityState, said: str) -> Advice | None:
        """The profile's problem and fix for a state the backend or the credentials
        explain (`said`: the server's words), as a run that ended in it says them; None
        for a state no profile changes the words of."""
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
