"""The checks of `claudeloop doctor` on this machine (the `DoctorChecks` port): the
Claude Code CLI, the SDK, the configuration and profile, credentials and login, the
backend, a model probe, llama-server's context and the run directory. Each is one line
with the fix when it fails; which are asked is application/doctor.py's, and what the
model probe's answer means is application/model_check.py's.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import assert_never

from claudeloop.adapters import claude_cli
from claudeloop.adapters.backend_advice import (
    PROVIDE_CREDENTIALS,
    advice_for,
    advise,
    no_credentials,
)
from claudeloop.adapters.backend_http import context_size, reach
from claudeloop.adapters.config.loading import Configuration, load_configuration
from claudeloop.adapters.config.profiles import BackendProfile, base_url_problem, resolve_profile
from claudeloop.adapters.credentials import CREDENTIALS, PROVIDERS
from claudeloop.adapters.run_directory import runs_root
from claudeloop.adapters.run_directory.writable import why_no_runs_root
from claudeloop.adapters.sandbox import unavailable
from claudeloop.application.errors import ConfigError, NotToml, ProfileNotDefined
from claudeloop.application.ports import (
    Advice,
    CliFound,
    Gateway,
    ModelAnswered,
    ModelProbe,
    ModelSilent,
    ProbeOutcome,
)
from claudeloop.application.ports import DoctorCheck as Check
from claudeloop.application.settings import MAX_WAIT, MODEL, PERMISSION_MODE, SANDBOX
from claudeloop.domain.capacity import CapacityState
from claudeloop.domain.confinement import CommandsRefused, Confined, Unconfined
from claudeloop.domain.tested_cli import (
    TESTED_CLAUDE_CODE,
    TESTED_SDK,
    cli_standing,
    standing_note,
)
from claudeloop.domain.text import first_line

ANTHROPIC_API = "https://api.anthropic.com"
_PROBE_TIMEOUT = 90.0
_CLI_TIMEOUT = 30.0
# Claude Code's first request, measured through llama-server (CLI 2.1.x, the tiny models
# of the tests): about 6,500 tokens, most of it the 33 KB of its tools' schemas. The
# probe is a tenth of that, so it passes where no real turn fits; the smallest context
# worth running is the first turn and room for the work after it.
_FIRST_TURN_TOKENS = 6_500
_SMALLEST_CONTEXT = 8_192


@dataclass(frozen=True)
class ProbeSetup:
    """What a model probe's gateway is made of: the profile, the CLI found, where it
    runs, its model and permission mode, and where the CLI's stderr goes."""

    profile: BackendProfile
    cli_path: Path
    cwd: Path
    model: str | None
    permission_mode: str
    stderr_log: Path


# The gateway a probe goes through (the composition root's, as a run's).
ProbeGateway = Callable[[ProbeSetup], Gateway]


def probe_through_claude_code(setup: ProbeSetup) -> Gateway:
    """The gateway a run's turns go through; the probe sets the CLI's retries low itself,
    so a doctor answers in seconds."""
    from claudeloop.adapters.claude_code.backend import backend_for, claude_code

    return claude_code(
        replace(backend_for(setup.profile), cli_path=setup.cli_path),
        cwd=setup.cwd,
        model=setup.model,
        permission_mode=setup.permission_mode,
        stderr_log=setup.stderr_log,
    )


class MachineChecks:
    """The `DoctorChecks` port on this machine, for the working directory `cwd` and the
    profile --profile names. `configured_cli`: CLAUDELOOP_CLI_PATH's."""

    def __init__(
        self,
        cwd: Path,
        profile: str | None,
        *,
        configured_cli: Path | None,
        probe_gateway: ProbeGateway,
    ) -> None:
        self._cwd = cwd
        self._asked_profile = profile
        self._configured_cli = configured_cli
        self._probe_gateway = probe_gateway
        self._cli_path: Path | None = None
        self._config: Configuration | None = None
        self._backend: BackendProfile | None = None

    def cli(self) -> Check:
        check, self._cli_path = _cli_check(self._configured_cli)
        return check

    def sdk(self) -> Check:
        return _sdk_check()

    def configuration(self) -> Check:
        check, self._config = _config_check(self._cwd, self._asked_profile)
        return check

    def profile(self) -> tuple[Check, str | None]:
        assert self._config is not None, "the configuration is checked first"
        check, self._backend = _profile_check(self._config)
        return check, self._backend.name if self._backend else None

    def credentials(self) -> Check:
        return _credentials_check(self._resolved, self._cli_path, self._cwd)

    def login(self) -> Check:
        assert self._config is not None
        return _login_check(self._config, self._resolved, self._cli_path)

    def backend(self) -> Check:
        return _backend_check(self._resolved)

    def model(self) -> ModelProbe:
        assert self._config is not None
        assert self._cli_path is not None
        return _model_probe(
            self._config, self._resolved, self._cwd, self._cli_path, self._probe_gateway
        )

    def advice(self, capacity: CapacityState, said: str) -> Advice | None:
        return advice_for(capacity, said, self._resolved)

    def context(self) -> Check | None:
        assert self._config is not None
        if self._resolved.preset != "llamacpp":
            return None
        return _context_check(self._resolved, self._config.get(MODEL))

    def sandbox(self) -> Check:
        return _sandbox_check(self._config)

    def run_directory(self) -> Check:
        return _run_directory_check(self._cwd)

    @property
    def _resolved(self) -> BackendProfile:
        assert self._backend is not None, "the profile is checked first"
        return self._backend


def _cli_check(configured: Path | None) -> tuple[Check, Path | None]:
    if configured is not None:
        path, how = configured, "CLAUDELOOP_CLI_PATH"
    else:
        bundled = claude_cli.bundled_executable()
        on_path = shutil.which("claude")
        if bundled is not None:
            path, how = bundled, "bundled with claude-agent-sdk"
        elif on_path is not None:
            path, how = Path(on_path), "on PATH"
        else:
            return Check(
                "cli",
                "fail",
                "no Claude Code CLI: none bundled with claude-agent-sdk, none on PATH",
                "reinstall claudeloop (its claude-agent-sdk wheel bundles the CLI) or "
                "set CLAUDELOOP_CLI_PATH",
            ), None
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=_CLI_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Check(
            "cli",
            "fail",
            f"{path} ({how}) does not run: {error}",
            "point CLAUDELOOP_CLI_PATH at a working Claude Code executable or unset it",
        ), None
    version = first_line(done.stdout, longest=200)
    version = version.removesuffix(" (Claude Code)")
    if done.returncode != 0 or not version:
        return Check(
            "cli",
            "fail",
            f"{path} ({how}) --version exited {done.returncode}",
            "point CLAUDELOOP_CLI_PATH at a working Claude Code executable or unset it",
        ), None
    found = f"Claude Code {version} at {path} ({how}): {standing_note(version)}"
    facts = CliFound(version, path, how, cli_standing(version))
    if facts.standing == "tested":
        return Check("cli", "ok", found, facts=facts), path
    # A note, not a failure: a newer CLI usually works, and nobody here has run it.
    return Check(
        "cli",
        "warn",
        found,
        f"if a run misreads what it says, install the tested one: `pip install "
        f"claude-agent-sdk=={TESTED_SDK}` (it bundles Claude Code {TESTED_CLAUDE_CODE})",
        facts=facts,
    ), path


def _sdk_check() -> Check:
    try:
        version = importlib.metadata.version("claude-agent-sdk")
    except importlib.metadata.PackageNotFoundError:
        return Check("sdk", "fail", "claude-agent-sdk is not installed", "reinstall claudeloop")
    return Check("sdk", "ok", f"claude-agent-sdk {version}")


def _config_check(cwd: Path, profile: str | None) -> tuple[Check, Configuration | None]:
    try:
        config = load_configuration(cwd=cwd, flags={"profile": profile}, environ=os.environ)
    except NotToml as error:
        # No key can be read from the file: what to correct is its syntax, there.
        return Check(
            "config",
            "fail",
            str(error),
            "correct the file's TOML at that line and column (quotes, brackets, "
            "one key = value a line; https://toml.io)",
            exit_code=2,
        ), None
    except ProfileNotDefined as error:
        return Check("config", "fail", str(error), _profiles_fix(error), exit_code=2), None
    except ConfigError as error:
        return Check(
            "config",
            "fail",
            str(error),
            "correct that key (`claudeloop config show` lists the settings)",
            exit_code=2,
        ), None
    files = ", ".join(str(path) for path in config.files) or "no configuration files"
    return Check("config", "ok", f"valid: {files}"), config


def _profiles_fix(error: ProfileNotDefined) -> str:
    """The profiles there are to select, or how to add the one named."""
    there = (
        f"select one that is defined ({', '.join(error.defined)}) or"
        if error.defined
        else "no profile is defined: select"
    )
    return (
        f"{there} `default` (Claude Code's own environment), or add a "
        f"[profiles.{error.name}] table with its base_url and model "
        "(docs/guides/local-models.md)"
    )


def _profile_check(config: Configuration) -> tuple[Check, BackendProfile | None]:
    try:
        backend = resolve_profile(config, os.environ)
    except ConfigError as error:
        return Check("profile", "fail", str(error), "set it as the message says", 2), None
    if backend.local:
        preset = f"preset {backend.preset}, " if backend.preset else ""
        detail = (
            f"{backend.name}: {preset}{backend.base_url}, model {backend.model} ({backend.where})"
        )
    elif backend.name != "default":
        detail = f"{backend.name}: Anthropic's service ({backend.where})"
    else:
        detail = "default: Claude Code's own environment (no profile)"
    return Check("profile", "ok", detail), backend


def _credentials_check(backend: BackendProfile, cli_path: Path | None, cwd: Path) -> Check:
    """A failure when Claude Code is known to have no credentials at all."""
    if backend.credentials != "inherited from the environment":
        return Check("credentials", "ok", backend.credentials)
    env = claude_cli.environment(backend.env, os.environ)
    kinds = [
        f"{label} ({name})" for name, label in {**CREDENTIALS, **PROVIDERS}.items() if env.get(name)
    ]
    if kinds:
        return Check("credentials", "ok", ", ".join(kinds))
    # Beyond the variables only the CLI knows them all: a login file or the keychain,
    # an apiKeyHelper in any settings file, the other cloud providers.
    status = claude_cli.login_status(cli_path, env, cwd) if cli_path else claude_cli.UNKNOWN
    if status.known and status.logged_in:
        return Check("credentials", "ok", f"Claude Code's own: {status.method}")
    if status.known:
        line = no_credentials(status.config_directory)
        found, _, fix = line.partition("): ")
        return Check("credentials", "fail", f"{found})", fix, 77)
    return Check(
        "credentials",
        "warn",
        "none in the environment; Claude Code did not say whether it has a login "
        "(the model probe will tell)",
        f"if the probe is refused: {PROVIDE_CREDENTIALS}",
    )


def _login_check(config: Configuration, backend: BackendProfile, cli_path: Path | None) -> Check:
    """When the stored claude.ai login ends, against the longest a run could go on with
    this configuration (domain.login: its max_wait, else a seven-day window)."""
    from datetime import UTC, datetime

    from claudeloop.adapters.claude_code.login import login_ends_at
    from claudeloop.domain.login import (
        LoginEnded,
        LoginEndsFirst,
        LoginLasts,
        login_standing,
        login_warning,
        run_could_end_by,
    )
    from claudeloop.domain.text import utc_instant

    env = claude_cli.environment(backend.env, os.environ)
    ends_at = login_ends_at(cli_path, env) if cli_path else None
    if ends_at is None:
        return Check("login", "skip", "no stored claude.ai login with a known end")
    now = datetime.now(UTC)
    max_wait = config.get(MAX_WAIT)
    standing = login_standing(ends_at, now=now, could_end_by=run_could_end_by(now, max_wait))
    said = f"the stored claude.ai login ends by {utc_instant(ends_at, seconds=False)}"
    fix = "log in again with `claudeloop login`"
    match standing:
        case LoginLasts():
            return Check("login", "ok", said)
        case LoginEndsFirst():
            return Check("login", "warn", login_warning(standing) or said, fix)
        case LoginEnded():
            return Check("login", "fail", login_warning(standing) or said, fix, 77)
        case _:
            assert_never(standing)


def _backend_url(backend: BackendProfile) -> tuple[str, str]:
    if backend.base_url is not None:
        return backend.base_url, f"`base_url` in [profiles.{backend.name}]"
    configured = os.environ.get("ANTHROPIC_BASE_URL")
    if configured:
        return configured, "ANTHROPIC_BASE_URL"
    return ANTHROPIC_API, "the network (a proxy needs HTTPS_PROXY)"


def _backend_check(backend: BackendProfile) -> Check:
    problem = base_url_problem(backend.env, backend, os.environ)
    if problem is not None:
        return Check("backend", "fail", problem, "set it to the server's URL or unset it", 2)
    url, what = _backend_url(backend)
    answer = reach(url)
    if answer.answered:
        return Check("backend", "ok", f"{url} answers (HTTP {answer.status})")
    if backend.local:
        fix = advise(f"the server is unreachable ({answer.problem})", backend).fix
    else:
        fix = f"check {what}"
    return Check("backend", "fail", f"nothing answers at {url} ({answer.problem})", fix, 78)


def _model_probe(
    config: Configuration,
    backend: BackendProfile,
    cwd: Path,
    cli_path: Path,
    probe_gateway: ProbeGateway,
) -> ModelProbe:
    """A probe through Claude Code, and what came back of it (what it means is
    application/model_check.py's)."""
    import anyio

    model = config.get(MODEL)
    # The probe sets the CLI's retries low itself, so a doctor answers in seconds.
    with tempfile.TemporaryDirectory(prefix="claudeloop-doctor-") as scratch:
        log = Path(scratch) / "claude-stderr.log"
        gateway = probe_gateway(
            ProbeSetup(
                profile=backend,
                cli_path=cli_path,
                cwd=cwd,
                model=model,
                permission_mode=config.get(PERMISSION_MODE),
                stderr_log=log,
            )
        )

        async def ask() -> ProbeOutcome:
            with anyio.fail_after(_PROBE_TIMEOUT):
                try:
                    return await gateway.probe()
                finally:
                    await gateway.close()

        try:
            outcome = anyio.run(ask)
        except TimeoutError:
            return ModelProbe(model, backend.local, ModelSilent(_PROBE_TIMEOUT))
        return ModelProbe(model, backend.local, ModelAnswered(outcome.signals, _last_line(log)))


def _context_check(backend: BackendProfile, model: str | None) -> Check:
    """A llama-server whose context cannot hold Claude Code's first turn fails every run
    at once (400 exceed_context_size_error), however well the short probe went."""
    assert backend.base_url is not None
    token = backend.env.get("ANTHROPIC_AUTH_TOKEN") or None
    n_ctx = context_size(backend.base_url, model or backend.model, token=token)
    if n_ctx is None:
        return Check("context", "skip", f"{backend.base_url}/props does not say the context size")
    if n_ctx < _SMALLEST_CONTEXT:
        return Check(
            "context",
            "fail",
            f"llama-server gives a request {n_ctx:,} tokens of context; Claude Code's first "
            f"turn alone is about {_FIRST_TURN_TOKENS:,} (its tools' schemas)",
            "restart llama-server with `-c 32768` (at least "
            f"`-c {_SMALLEST_CONTEXT}`) and set `context_window` in [profiles.{backend.name}]",
            78,
        )
    return Check(
        "context",
        "ok",
        f"llama-server gives a request {n_ctx:,} tokens (a first turn is about "
        f"{_FIRST_TURN_TOKENS:,})",
    )


def _last_line(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [line for line in lines if line]
    return lines[-1][:200] if lines else ""


def _sandbox_check(config: Configuration | None) -> Check:
    """Whether the model's commands and the checks run confined here."""
    if config is not None and config.of(SANDBOX).value == "off":
        where = config.of(SANDBOX).origin.describe()
        said = f"off ({where}): commands and checks run unconfined"
        return Check("sandbox", "warn", said, facts=Unconfined())
    missing = unavailable()
    if missing is None:
        said = "commands and checks run confined (the sandbox runs here)"
        return Check("sandbox", "ok", said, facts=Confined())
    return Check(
        "sandbox",
        "warn",
        f"{missing.why}: shell commands are refused and --verify cannot run",
        f"{missing.fix}; or --sandbox off to run them unconfined",
        facts=CommandsRefused(missing.why, missing.fix),
    )


def _run_directory_check(cwd: Path) -> Check:
    root = runs_root(cwd)
    problem = why_no_runs_root(cwd)
    if problem is None:
        return Check("run dir", "ok", f"{root} can be written")
    return Check(
        "run dir",
        "fail",
        problem,
        "run claudeloop in a directory you can write to, or fix what is named",
    )
