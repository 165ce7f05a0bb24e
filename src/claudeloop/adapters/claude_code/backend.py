"""How the Claude Code CLI is reached for a run: the environment it gets, where the
executable is, what the backend profile it came from says of it, whether it has
credentials, and the gateway of its turns. `refuse_no_credentials` and `login_ends` are
the `Login` of `run` and `resume` (application/launching.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.application.errors import NoCredentials
from claudeloop.domain.completion import DEFAULT_DONE_MARKER

if TYPE_CHECKING:
    from claudeloop.adapters.config.profiles import BackendProfile
    from claudeloop.adapters.redaction import Redactor
    from claudeloop.adapters.run_boundary import TurnBoundary
    from claudeloop.adapters.run_directory import RunDirectory
    from claudeloop.application.ports import ControlInbox, EventSink, Gateway
    from claudeloop.application.records import RunSpec


@dataclass(frozen=True)
class Backend:
    """How the Claude Code CLI is reached: the environment it gets and where it is.

    `zero_cost`: the backend's costs are not money (a model on the user's machine), so
    the ledger counts none. `profile`: the backend profile it was resolved from, for
    the one-line fix when the backend turns out misconfigured."""

    env: Mapping[str, str]
    local: bool = False
    cli_path: Path | None = None
    structured_output: bool = True
    marker_fallback: bool = True
    zero_cost: bool = False
    profile: BackendProfile | None = None

    @property
    def model(self) -> str | None:
        """The model its profile names (None: the CLI's own choice)."""
        return self.profile.model if self.profile is not None else None


def cli_path_from_environment() -> Path | None:
    """CLAUDELOOP_CLI_PATH names another Claude Code executable (default: the one
    bundled with claude-agent-sdk)."""
    cli_path = os.environ.get("CLAUDELOOP_CLI_PATH")
    return Path(cli_path).expanduser() if cli_path else None


def login_ends(backend: Backend) -> datetime | None:
    """When the stored claude.ai login the backend's CLI would use ends (None: none
    known), as the CLI reports it with the environment a run gives it."""
    from claudeloop.adapters import claude_cli
    from claudeloop.adapters.claude_code.login import login_ends_at

    return login_ends_at(backend.cli_path, claude_cli.environment(backend.env, os.environ))


def refuse_no_credentials(backend: Backend, cwd: Path) -> None:
    """Exit 77 before any turn when Claude Code would find no credentials: it would only
    answer "Not logged in" to the first turn, which no login could have refused. Any
    doubt lets the run start (a false "no credentials" is worse than none)."""
    from claudeloop.adapters import claude_cli
    from claudeloop.adapters.backend_advice import no_credentials
    from claudeloop.adapters.credentials import CREDENTIAL_VARIABLES, PROVIDER_VARIABLES

    if backend.local:
        return  # a local server gets the profile's token or a dummy: no Claude login
    env = claude_cli.environment(backend.env, os.environ)
    if any(env.get(name) for name in (*CREDENTIAL_VARIABLES, *PROVIDER_VARIABLES)):
        return  # the common case, told without starting the CLI
    cli = claude_cli.executable(backend.cli_path)
    if cli is None:
        return  # the run says there is no CLI, in its own words
    status = claude_cli.login_status(cli, env, cwd)
    if status.known and not status.logged_in:
        raise NoCredentials(no_credentials(status.config_directory))


def account(backend: Backend, model: str | None) -> str:
    """The account the backend's turns are sent on (the CLI's environment is ours with
    the backend's over it), with `model`: whose capacity loops on it share."""
    from claudeloop.adapters import claude_cli
    from claudeloop.adapters.shared_capacity.board import account_key

    return account_key(claude_cli.environment(backend.env, os.environ), model)


def backend_for(profile: BackendProfile) -> Backend:
    return Backend(
        env=dict(profile.env),
        local=profile.local,
        cli_path=cli_path_from_environment(),
        marker_fallback=profile.marker_fallback,
        zero_cost=profile.zero_cost,
        profile=profile,
    )


def claude_code(
    backend: Backend,
    *,
    cwd: Path,
    model: str | None,
    permission_mode: str,
    stderr_log: Path,
    done_marker: str = DEFAULT_DONE_MARKER,
    redactor: Redactor | None = None,
    control: ControlInbox | None = None,
    events: EventSink | None = None,
    read_only: bool = False,
    boundary: TurnBoundary | None = None,
    silence_seconds: float | None = None,
    responses_log: Path | None = None,
) -> Gateway:
    """The gateway to the Claude Code CLI of `backend`, unbilled on a backend whose costs
    are not money; `doctor` probes through it too. `read_only`: an independent
    reviewer's (read-only tools, plan mode, no session kept). `boundary`: the run's
    sandbox (None: the user's own settings alone, as a probe has). `silence_seconds`:
    how long Claude Code may say nothing in a turn (None: the backend's default).
    `responses_log`: where each answer's usage is kept as it streams in, for a turn a
    crash cuts off (None: nowhere)."""
    # The SDK is imported only where a turn runs: --help and status stay fast.
    from claudeloop.adapters import claude_cli
    from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings
    from claudeloop.application.billing import UnbilledGateway

    settings = GatewaySettings(
        cwd=cwd,
        model=model,
        permission_mode=permission_mode,
        env=dict(backend.env),
        local_backend=backend.local,
        structured_output=backend.structured_output,
        done_marker=done_marker,
        cli_path=backend.cli_path,
        stderr_log=stderr_log,
        responses_log=responses_log,
        redactor=redactor,
        read_only=read_only,
        sandbox_settings=boundary.settings if boundary is not None else None,
        lines=boundary.lines if boundary is not None else None,
        address=claude_cli.environment(backend.env, os.environ).get("ANTHROPIC_BASE_URL") or None,
        silence_seconds=silence_seconds,
    )
    gateway = ClaudeCodeGateway(settings, control=control, events=events)
    return UnbilledGateway(gateway) if backend.zero_cost else gateway


def run_gateway(
    backend: Backend,
    spec: RunSpec,
    directory: RunDirectory,
    *,
    events: EventSink | None = None,
    read_only: bool = False,
) -> Gateway:
    """The gateway of a run's turns on `backend`, inside the run's boundary; `read_only`:
    of its independent reviews."""
    from claudeloop.adapters.run_boundary import start_posture, turn_boundary

    return claude_code(
        backend,
        cwd=spec.work_dir,
        model=spec.model,
        permission_mode=spec.permission_mode,
        done_marker=spec.done_marker,
        stderr_log=directory.debug_log_path,
        redactor=directory.redactor,
        read_only=read_only,
        # The run directory's control file: a stop ends a turn stuck in the CLI's retries.
        control=directory,
        events=events,
        boundary=turn_boundary(spec, start_posture(spec), [os.environ, backend.env]),
        silence_seconds=spec.silence_seconds,
        # A review's session is never billed from a cut: nothing of it is kept.
        responses_log=None if read_only else directory.responses_log_path,
    )
