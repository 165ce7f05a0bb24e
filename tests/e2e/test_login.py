"""Credentials through the real bundled CLI: a run with none at all does not start,
whatever the CLI accepts is accepted, and `claudeloop login` / `claudeloop claude` reach
the CLI inside the SDK's wheel (after `pip install claudeloop` no `claude` is on PATH).

Nothing leaves 127.0.0.1: every CLI here has ANTHROPIC_BASE_URL on a loopback port, no
browser, and a login that is never completed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from claudeloop.adapters.claude_code.backend import Backend
from tests.e2e.conftest import Rehearsal, cli_env, write_plan


def bundled_cli() -> Path:
    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    assert bundled.is_file()
    return bundled


def no_credentials_env(home: Path) -> dict[str, str]:
    """A user with no login, no token, no key: `cli_env` without its dummy token, a
    closed loopback port for the API and no browser to open."""
    env = cli_env("http://127.0.0.1:9", home)
    del env["CLAUDE_CODE_OAUTH_TOKEN"]
    env["BROWSER"] = "/bin/false"
    env.pop("CLAUDELOOP_CLI_PATH", None)
    return env


def claudeloop(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "claudeloop", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.scenario("one_step")
def test_a_run_without_credentials_ends_77_before_any_turn_in_one_line(
    rehearsal: Rehearsal,
) -> None:
    del rehearsal.env["CLAUDE_CODE_OAUTH_TOKEN"]
    write_plan(rehearsal.project, items=1)
    finished = rehearsal.run("PLAN.md")
    assert finished.exit_code == 77, finished.stderr
    (line,) = finished.stderr.splitlines()
    assert line.startswith("claudeloop: error: no Claude credentials found (")
    for way in ("`claudeloop login`", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"):
        assert way in line
    assert "refused" not in line
    assert rehearsal.requests() == []
    # No run was started: no run directory, so no turn.started anywhere.
    runs = rehearsal.project / ".claudeloop" / "runs"
    assert not runs.exists() or list(runs.iterdir()) == []


@pytest.mark.scenario("one_step")
def test_an_api_key_helper_is_credentials_for_doctor_and_the_run_is_done(
    rehearsal: Rehearsal,
) -> None:
    """Claude Code takes a key from an `apiKeyHelper` command in a settings file; the
    check must not refuse what the CLI accepts. What the CLI accepts, doctor accepts:
    the CLI itself is asked (the old doctor said "none" here, and the probe then passed)."""
    del rehearsal.env["CLAUDE_CODE_OAUTH_TOKEN"]
    rehearsal.env["CLAUDELOOP_CONFIG_DIR"] = str(rehearsal.project.parent / "user-config")
    settings = rehearsal.project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"apiKeyHelper": "echo e2e-helper-key-not-real"}))
    checked = rehearsal.claudeloop("doctor")
    checks = {check["name"]: check for check in checked.result["checks"]}
    assert checks["credentials"] == {
        "name": "credentials",
        "status": "ok",
        "detail": "Claude Code's own: api_key_helper",
        "fix": "",
    }
    assert checks["model"]["status"] == "ok"
    assert checked.exit_code == 0, checks

    write_plan(rehearsal.project, items=1)
    finished = rehearsal.run("PLAN.md")
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert "turn.started" in finished.event_types()


def login_file(config: Path) -> None:
    config.mkdir(parents=True, exist_ok=True)
    oauth = {
        "accessToken": "e2e-access-not-real",
        "refreshToken": "e2e-refresh-not-real",
        "expiresAt": 4102444800000,
        "scopes": ["user:inference"],
        "subscriptionType": "max",
    }
    (config / ".credentials.json").write_text(json.dumps({"claudeAiOauth": oauth}))


@pytest.mark.parametrize(
    "setup",
    ["login file", "Mantle", "project apiKeyHelper"],
)
def test_setups_the_cli_accepts_start_a_run(
    setup: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claudeloop.adapters.claude_code.backend import refuse_no_credentials

    env = no_credentials_env(tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    if setup == "login file":
        login_file(Path(env["CLAUDE_CONFIG_DIR"]))
    elif setup == "Mantle":
        # A provider no list of claudeloop's names: the CLI knows it.
        env["CLAUDE_CODE_USE_MANTLE"] = "1"
    else:
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").write_text('{"apiKeyHelper": "echo k"}')
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    refuse_no_credentials(Backend(env={}), project)  # no NoCredentials


def test_with_none_the_check_says_where_the_cli_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claudeloop.adapters.claude_code.backend import refuse_no_credentials
    from claudeloop.application.errors import NoCredentials

    env = no_credentials_env(tmp_path / "home")
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(NoCredentials) as refused:
        refuse_no_credentials(Backend(env={}), tmp_path)
    assert refused.value.exit_code == 77
    assert f"no login in {env['CLAUDE_CONFIG_DIR']}" in str(refused.value)
    # A local server needs no Claude login: not even the CLI is asked.
    refuse_no_credentials(Backend(env={}, local=True), tmp_path)


def test_claudeloop_claude_runs_the_bundled_cli_and_keeps_its_exit_code(tmp_path: Path) -> None:
    env = no_credentials_env(tmp_path / "home")
    # No `claude` on PATH, as after `pip install claudeloop`.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin"
    version = claudeloop("claude", "--version", env=env, cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip().endswith("(Claude Code)")
    bundled = bundled_cli()
    direct = subprocess.run([str(bundled), "--version"], check=True, capture_output=True, text=True)
    assert version.stdout == direct.stdout
    status = claudeloop("claude", "auth", "status", "--json", env=env, cwd=tmp_path)
    assert status.returncode == 1  # the CLI's "not logged in", passed on
    said = json.loads(status.stdout)
    assert said["loggedIn"] is False
    # The environment a run gives it: its CLAUDE_CONFIG_DIR.
    assert said["configDirectory"] == env["CLAUDE_CONFIG_DIR"]


def started_login(*args: str, env: dict[str, str], cwd: Path) -> str:
    """What `claudeloop login ARGS` prints until the CLI asks for the code the browser
    would show (stdin closed: it never gets one); then it is ended."""
    process = subprocess.Popen(
        [sys.executable, "-m", "claudeloop", "login", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    said: list[str] = []
    timer = threading.Timer(120, lambda: os.killpg(process.pid, signal.SIGKILL))
    timer.start()
    try:
        for line in process.stdout:
            said.append(line)
            if "oauth/authorize" in line:
                break
    finally:
        timer.cancel()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    return "".join(said)


def test_login_reaches_the_bundled_cli_login_in_a_runs_environment(tmp_path: Path) -> None:
    env = no_credentials_env(tmp_path / "home")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin"
    said = started_login(env=env, cwd=tmp_path)
    assert "https://claude.ai/oauth/authorize?" in said, said
    # Its options reach the CLI: --console signs in to the Console instead.
    console = started_login("--console", env=env, cwd=tmp_path)
    assert "https://platform.claude.com/oauth/authorize?" in console, console
    # Run in the run's CLAUDE_CONFIG_DIR, which the CLI set up as its own.
    assert (Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json").is_file()


def interrupted_on_a_terminal(
    argv: list[str], env: dict[str, str], cwd: Path, how: str
) -> tuple[str, int]:
    """What `argv` shows on a pty until it waits for the login code, then Ctrl-C: as the
    key (the CLI reads its terminal raw) or as the SIGINT a terminal in cooked mode sends
    the whole foreground group; again every 5 s should it not have heard. Its exit."""
    import pty
    import select
    import time

    pid, terminal = pty.fork()
    if pid == 0:  # the child, on the pty
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    shown = b""
    interrupted_at: float | None = None
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([terminal], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(terminal, 4096)
                except OSError:  # the pty closed: the child ended
                    break
                if not chunk:
                    break
                shown += chunk
            now = time.monotonic()
            if b"Paste code" in shown and (interrupted_at is None or now - interrupted_at > 5):
                if how == "key":
                    os.write(terminal, b"\x03")
                else:
                    os.killpg(pid, signal.SIGINT)  # pty.fork made it a group's leader
                interrupted_at = now
    finally:
        ended, status = os.waitpid(pid, os.WNOHANG)
        if ended == 0:  # still running: the test failed; leave nothing behind
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        os.close(terminal)
    assert interrupted_at is not None, shown
    return shown.decode(errors="replace"), os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize("how", ["key", "signal"])
def test_login_on_a_terminal_is_the_clis_and_so_is_its_end_on_ctrl_c(
    tmp_path: Path, how: str
) -> None:
    """On a terminal the CLI has it, and Ctrl-C is the CLI's to decide: claudeloop
    exits as the bare CLI does (130 on the key, 0 on SIGINT, 2.1.332), saying nothing
    of its own and no traceback."""
    env = no_credentials_env(tmp_path / "home")
    argv = [sys.executable, "-m", "claudeloop", "login"]
    text, code = interrupted_on_a_terminal(argv, env, tmp_path, how)
    assert "https://claude.ai/oauth/authorize?" in text, text
    assert "Traceback" not in text
    assert "claudeloop: aborted" not in text
    bare = [str(bundled_cli()), "auth", "login"]
    _, bare_code = interrupted_on_a_terminal(bare, env, tmp_path, how)
    assert code == bare_code, text
