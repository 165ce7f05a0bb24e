"""`claudeloop doctor`: is everything a run needs in place? One line per check, with the
fix when it fails.

Exit 0 when every check passes (a closed usage window is a warning, not a failure),
78 when the backend or the model is misconfigured (unreachable, model missing, ...),
77 when there are no credentials or they are refused (the code a run ends with then),
2 when a configuration file or variable is invalid, 1 for anything else (no Claude
Code CLI, credits out, a run directory that cannot be written).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal, assert_never

import click

from claudeloop.adapters import claude_cli
from claudeloop.adapters.backend_http import context_size, reach
from claudeloop.adapters.config.loading import ConfigError, Configuration, load_configuration
from claudeloop.adapters.config.profiles import BackendProfile, base_url_problem, resolve_profile
from claudeloop.adapters.credentials import CREDENTIALS, PROVIDERS
from claudeloop.adapters.run_directory import runs_root
from claudeloop.adapters.run_directory.writable import why_no_runs_root
from claudeloop.application.ports import ProbeOutcome
from claudeloop.application.settings import MAX_WAIT, MODEL, PERMISSION_MODE
from claudeloop.cli.backend_advice import (
    PROVIDE_CREDENTIALS,
    advise,
    auth_fix,
    no_credentials,
    proxy_budget_advice,
    upstream_advice,
)
from claudeloop.cli.bootstrap import backend_for, claude_code, cli_path_from_environment
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory
from claudeloop.domain.text import first_line

Status = Literal["ok", "warn", "fail", "skip"]
ANTHROPIC_API = "https://api.anthropic.com"
_PROBE_TIMEOUT = 90.0
_CLI_TIMEOUT = 30.0
# Claude Code's first request, measured through llama-server (CLI 2.1.x, the tiny models
# of the tests): about 6,500 tokens, most of it the 33 KB of its tools' schemas. The
# probe is a tenth of that, so it passes where no real turn fits; the smallest context
# worth running is the first turn and room for the work after it.
_FIRST_TURN_TOKENS = 6_500
_SMALLEST_CONTEXT = 8_192


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""
    # The exit code this check's failure calls for.
    exit_code: int = 1

    def line(self) -> str:
        mark = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "skip"}[self.status]
        fix = f" — fix: {self.fix}" if self.fix and self.status in ("fail", "warn") else ""
        return f"{mark}  {self.name:<12} {self.detail}{fix}"


def doctor(*, cwd: Path | None, profile: str | None, as_json: bool, probe: bool) -> None:
    directory = working_directory(cwd)
    checks: list[Check] = []
    cli_path = _cli_check(checks)
    _sdk_check(checks)
    config = _config_check(checks, directory, profile)
    backend: BackendProfile | None = None
    if config is None:
        checks.append(Check("profile", "skip", "the configuration is invalid"))
    else:
        backend = _profile_check(checks, config)
    if backend is None:
        checks += [
            Check("credentials", "skip", "the profile did not resolve"),
            Check("backend", "skip", "the profile did not resolve"),
            Check("model", "skip", "the profile did not resolve"),
        ]
    else:
        credentials = _credentials_check(checks, backend, cli_path, directory)
        assert config is not None
        checks.append(_login_check(config, backend, cli_path))
        reachable = _backend_check(checks, backend)
        if not probe:
            checks.append(Check("model", "skip", "not probed (--no-probe)"))
        elif not reachable:
            checks.append(Check("model", "skip", "not probed: the backend is unreachable"))
        elif cli_path is None:
            checks.append(Check("model", "skip", "not probed: no Claude Code CLI"))
        elif not credentials:
            checks.append(Check("model", "skip", "not probed: no credentials"))
        else:
            assert config is not None
            checks.append(_model_check(config, backend, directory, cli_path))
        if reachable and config is not None and backend.preset == "llamacpp":
            checks.append(_context_check(backend, config.get(MODEL)))
    _run_directory_check(checks, directory)
    failed = [check for check in checks if check.status == "fail"]
    codes = {check.exit_code for check in failed}
    exit_code = next((code for code in (2, 78, 77) if code in codes), 1 if failed else 0)
    if as_json:
        print_json(
            {
                "exit_code": exit_code,
                "profile": backend.name if backend else None,
                "checks": [
                    {k: v for k, v in asdict(check).items() if k != "exit_code"} for check in checks
                ],
            }
        )
    else:
        for check in checks:
            click.echo(check.line())
        verdict = "all checks passed" if not failed else f"{len(failed)} check(s) failed"
        click.echo(f"claudeloop doctor: {verdict} (exit {exit_code})")
    sys.exit(exit_code)


def _cli_check(checks: list[Check]) -> Path | None:
    configured = cli_path_from_environment()
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
            checks.append(
                Check(
                    "cli",
                    "fail",
                    "no Claude Code CLI: none bundled with claude-agent-sdk, none on PATH",
                    "reinstall claudeloop (its claude-agent-sdk wheel bundles the CLI) or "
                    "set CLAUDELOOP_CLI_PATH",
                )
            )
            return None
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=_CLI_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        checks.append(
            Check(
                "cli",
                "fail",
                f"{path} ({how}) does not run: {error}",
                "point CLAUDELOOP_CLI_PATH at a working Claude Code executable or unset it",
            )
        )
        return None
    version = first_line(done.stdout, longest=200)
    version = version.removesuffix(" (Claude Code)")
    if done.returncode != 0 or not version:
        checks.append(
            Check(
                "cli",
                "fail",
                f"{path} ({how}) --version exited {done.returncode}",
                "point CLAUDELOOP_CLI_PATH at a working Claude Code executable or unset it",
            )
        )
        return None
    checks.append(Check("cli", "ok", f"Claude Code {version} at {path} ({how})"))
    return path


def _sdk_check(checks: list[Check]) -> None:
    try:
        version = importlib.metadata.version("claude-agent-sdk")
    except importlib.metadata.PackageNotFoundError:
        checks.append(
            Check("sdk", "fail", "claude-agent-sdk is not installed", "reinstall claudeloop")
        )
        return
    checks.append(Check("sdk", "ok", f"claude-agent-sdk {version}"))


def _config_check(checks: list[Check], cwd: Path, profile: str | None) -> Configuration | None:
    try:
        config = load_configuration(cwd=cwd, flags={"profile": profile}, environ=os.environ)
    except ConfigError as error:
        checks.append(
            Check(
                "config",
                "fail",
                str(error),
                "correct that key (`claudeloop config show` lists the settings)",
                exit_code=2,
            )
        )
        return None
    files = ", ".join(str(path) for path in config.files) or "no configuration files"
    checks.append(Check("config", "ok", f"valid: {files}"))
    return config


def _profile_check(checks: list[Check], config: Configuration) -> BackendProfile | None:
    try:
        backend = resolve_profile(config, os.environ)
    except ConfigError as error:
        checks.append(Check("profile", "fail", str(error), "set it as the message says", 2))
        return None
    if backend.local:
        preset = f"preset {backend.preset}, " if backend.preset else ""
        detail = (
            f"{backend.name}: {preset}{backend.base_url}, model {backend.model} ({backend.where})"
        )
    elif backend.name != "default":
        detail = f"{backend.name}: Anthropic's service ({backend.where})"
    else:
        detail = "default: Claude Code's own environment (no profile)"
    checks.append(Check("profile", "ok", detail))
    return backend


def _credentials_check(
    checks: list[Check], backend: BackendProfile, cli_path: Path | None, cwd: Path
) -> bool:
    """False when Claude Code is known to have no credentials at all."""
    if backend.credentials != "inherited from the environment":
        checks.append(Check("credentials", "ok", backend.credentials))
        return True
    env = claude_cli.environment(backend.env, os.environ)
    kinds = [
        f"{label} ({name})" for name, label in {**CREDENTIALS, **PROVIDERS}.items() if env.get(name)
    ]
    if kinds:
        checks.append(Check("credentials", "ok", ", ".join(kinds)))
        return True
    # Beyond the variables only the CLI knows them all: a login file or the keychain,
    # an apiKeyHelper in any settings file, the other cloud providers.
    status = claude_cli.login_status(cli_path, env, cwd) if cli_path else claude_cli.UNKNOWN
    if status.known and status.logged_in:
        checks.append(Check("credentials", "ok", f"Claude Code's own: {status.method}"))
    elif status.known:
        line = no_credentials(status.config_directory)
        found, _, fix = line.partition("): ")
        checks.append(Check("credentials", "fail", f"{found})", fix, 77))
        return False
    else:
        checks.append(
            Check(
                "credentials",
                "warn",
                "none in the environment; Claude Code did not say whether it has a login "
                "(the model probe will tell)",
                f"if the probe is refused: {PROVIDE_CREDENTIALS}",
            )
        )
    return True


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

    ends_at = login_ends_at(cli_path, {**os.environ, **backend.env}) if cli_path else None
    if ends_at is None:
        return Check("login", "skip", "no stored claude.ai login with a known end")
    now = datetime.now(UTC)
    max_wait = config.get(MAX_WAIT)
    standing = login_standing(ends_at, now=now, could_end_by=run_could_end_by(now, max_wait))
    said = f"the stored claude.ai login ends by {ends_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
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


def _backend_check(checks: list[Check], backend: BackendProfile) -> bool:
    problem = base_url_problem(backend.env, backend, os.environ)
    if problem is not None:
        checks.append(
            Check("backend", "fail", problem, "set it to the server's URL or unset it", 2)
        )
        return False
    url, what = _backend_url(backend)
    answer = reach(url)
    if answer.answered:
        checks.append(Check("backend", "ok", f"{url} answers (HTTP {answer.status})"))
        return True
    if backend.local:
        fix = advise(f"the server is unreachable ({answer.problem})", backend).fix
    else:
        fix = f"check {what}"
    checks.append(Check("backend", "fail", f"nothing answers at {url} ({answer.problem})", fix, 78))
    return False


def _model_check(
    config: Configuration, backend: BackendProfile, cwd: Path, cli_path: Path
) -> Check:
    import anyio

    from claudeloop.domain.capacity import (
        AuthenticationFailed,
        Available,
        BackendMisconfigured,
        CreditsExhausted,
        WindowExhausted,
        auth_failure_reason,
        describe,
    )
    from claudeloop.domain.classify import classify

    model = config.get(MODEL)
    # The probe sets the CLI's retries low itself, so a doctor answers in seconds.
    with tempfile.TemporaryDirectory(prefix="claudeloop-doctor-") as scratch:
        log = Path(scratch) / "claude-stderr.log"
        gateway = claude_code(
            replace(backend_for(backend), cli_path=cli_path),
            cwd=cwd,
            model=model,
            permission_mode=config.get(PERMISSION_MODE),
            stderr_log=log,
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
            return Check(
                "model",
                "fail",
                f"no answer to a probe within {_PROBE_TIMEOUT:g} s",
                "check that the server is not stuck loading the model",
                78 if backend.local else 1,
            )
        last_words = _last_line(log)
    signals = outcome.signals
    detail = first_line(signals.result_text, longest=200, empty="no detail")
    name = f"'{model}'" if model else "the default model"
    capacity = classify(signals)
    match capacity:
        case Available() if signals.is_error:
            # An error no rule names (a 400 of the server's own, say) is still no answer.
            return Check(
                "model",
                "fail",
                f"the probe ended in an error: {detail}",
                "run `claudeloop claude -p hi` (the same environment) to see why",
            )
        case Available() if signals.result_text.strip():
            return Check("model", "ok", f"{name} answered a probe")
        case Available():
            said = f": {last_words}" if last_words else ""
            return Check(
                "model",
                "fail",
                f"Claude Code ended the probe without an answer{said}",
                "run `claudeloop claude -p hi` (the same environment) to see why",
            )
        case BackendMisconfigured(reason=reason, kind=kind):
            advice = advise(reason, backend, kind=kind)
            return Check("model", "fail", advice.problem, advice.fix, 78)
        case AuthenticationFailed(kind="refused"):
            return Check(
                "model",
                "fail",
                "the credentials were refused "
                + ("(401)" if signals.api_error_status == 401 else f"({detail})"),
                auth_fix(backend),
                77,
            )
        case CreditsExhausted(source="proxy_budget") if backend.local:
            advice = proxy_budget_advice(backend)
            return Check("model", "fail", advice.problem, advice.fix)
        case AuthenticationFailed(kind=kind, detail=said):
            reason = auth_failure_reason(kind).removeprefix("authentication failed: ")
            return Check("model", "fail", reason, auth_fix(backend, kind, said), 77)
        case CreditsExhausted():
            return Check(
                "model",
                "fail",
                "the account is out of credits",
                "top up at console.anthropic.com (Plans & Billing)",
            )
        case WindowExhausted(rate_limit_type="upstream_unreachable") if backend.local:
            # A run waits it out (the upstream may come back), but nothing will answer a
            # run started now: the proxy's own configuration points where nothing listens.
            advice = upstream_advice(signals.result_text, backend, timed_out=False)
            return Check("model", "fail", advice.problem, advice.fix, 78)
        case WindowExhausted(rate_limit_type="timeout") if backend.local:
            advice = upstream_advice(signals.result_text, backend, timed_out=True)
            return Check("model", "warn", advice.problem, advice.fix)
        case WindowExhausted():
            return Check(
                "model",
                "warn",
                f"{name} is reachable but {describe(capacity)}",
                "nothing to configure: a run waits for it and probes",
            )
    return Check("model", "fail", describe(capacity))


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


def _run_directory_check(checks: list[Check], cwd: Path) -> None:
    root = runs_root(cwd)
    problem = why_no_runs_root(cwd)
    if problem is None:
        checks.append(Check("run dir", "ok", f"{root} can be written"))
    else:
        checks.append(
            Check(
                "run dir",
                "fail",
                problem,
                "run claudeloop in a directory you can write to, or fix what is named",
            )
        )
