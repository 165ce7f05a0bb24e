"""A credential the model copies into its words never leaves claudeloop in clear: not in
any file of the run, not on the screen, not in status or the --json result, nor in any
other command's output, the dashboard or the run's commits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Finished, Rehearsal, write_plan

pytestmark = pytest.mark.e2e

CANARIES = (
    "canary-pat-5d1e2f9a",  # MY_SERVICE_PAT, a name no list knew
    "canary-auth-4b7c0e",  # ANTHROPIC_AUTH_TOKEN
    "canary-extra-pass-31",  # a profile's extra_env DEPLOY_PASS
    "canary-url-pass-66",  # the password of a URL in a profile's extra_env
    "notify-pass-8812",  # the password of the notification URL in CLAUDELOOP_NOTIFY
)


def assert_no_canary(text: str, where: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"{canary} leaked into {where}"


@pytest.mark.scenario("secrets_in_output")
def test_a_credential_in_the_models_output_appears_nowhere_and_no_planted_link_is_followed(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    rehearsal.env["NO_PROXY"] = rehearsal.env["no_proxy"] = "127.0.0.1,localhost"
    rehearsal.env.update(
        {
            "MY_SERVICE_PAT": "canary-pat-5d1e2f9a",
            "ANTHROPIC_AUTH_TOKEN": "canary-auth-4b7c0e",
            # Nothing listens there: the notification fails, and says so in events.
            "CLAUDELOOP_NOTIFY": "json://night:notify-pass-8812@127.0.0.1:9/hook",
        }
    )
    (rehearsal.project / "claudeloop.toml").write_text(
        "[profiles.night]\n"
        'extra_env = { DEPLOY_PASS = "canary-extra-pass-31", '
        'DEPLOY_URL = "https://deploy:canary-url-pass-66@deploy.example/" }\n'
    )
    # A stand-in for the CLI that prints what it was given on stderr, then runs the real one.
    from claude_agent_sdk import __file__ as sdk_file

    real = Path(sdk_file).parent / "_bundled" / "claude"
    wrapper = tmp_path / "claude-wrapper"
    wrapper.write_text(
        "#!/bin/sh\n"
        'echo "env $MY_SERVICE_PAT $ANTHROPIC_AUTH_TOKEN $DEPLOY_PASS $DEPLOY_URL '
        '$CLAUDELOOP_NOTIFY" >&2\n'
        f'exec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    rehearsal.env["CLAUDELOOP_CLI_PATH"] = str(wrapper)
    plan = write_plan(rehearsal.project)

    # On the screen (-v shows each summary), under a umask that would share every file.
    shown = subprocess.run(
        rehearsal.command("run", str(plan), "--profile", "night", "-v", *FAST_WAITS),
        env=rehearsal.env,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
        umask=0,
    )
    assert shown.returncode == 1, shown.stderr  # blocked
    assert "[redacted]" in shown.stderr  # the summaries were shown, masked
    assert_no_canary(shown.stdout + shown.stderr, "the console")

    (run,) = list((rehearsal.project / ".claudeloop" / "runs").iterdir())
    assert (run / "summary.md").stat().st_mode & 0o777 == 0o600
    # A link planted in the run's directory is replaced, never written through.
    outside = tmp_path / "someone-elses.txt"
    outside.write_text("theirs\n")
    outside.chmod(0o644)
    (run / "summary.md").unlink()
    (run / "summary.md").symlink_to(outside)

    # The --json result of the same run, resumed (the model names the blocker again).
    resumed = rehearsal.claudeloop("resume")
    assert resumed.exit_code == 1, resumed.stderr
    result = resumed.result
    assert result["outcome"] == "blocked"
    assert "[redacted]" in result["reason"]
    assert "[redacted]" in result["summary"]
    assert_no_canary(resumed.stdout, "the --json result")
    assert_no_canary(resumed.stderr, "the resume's stderr")

    said: dict[str, str] = {}
    for args in (("status",), ("status", "--json"), ("logs",), ("logs", "--json")):
        seen = subprocess.run(
            rehearsal.command(*args),
            env=rehearsal.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert seen.returncode == 0, seen.stderr
        assert_no_canary(seen.stdout + seen.stderr, " ".join(args))
        said[" ".join(args)] = seen.stdout
    assert "[redacted]" in json.loads(said["status --json"])["summary"]

    assert not (run / "summary.md").is_symlink()  # replaced by a file of its own
    assert "# claudeloop run" in (run / "summary.md").read_text()
    assert outside.read_text() == "theirs\n"
    names = {path.name for path in run.iterdir()}
    assert {"state.json", "events.jsonl", "debug.log", "summary.md"} <= names
    for path in run.iterdir():
        assert_no_canary(path.read_text(), path.name)
    # The wrapper's line reached the log, masked; the log is the owner's alone.
    assert "env [redacted]" in (run / "debug.log").read_text()
    assert (run / "debug.log").stat().st_mode & 0o777 == 0o600
    assert "notify.failed" in (run / "events.jsonl").read_text()
    assert os.stat(run / "summary.md").st_mode & 0o777 == 0o600

    # A link where the events go: the resume is refused before it writes anything.
    (run / "events.jsonl").rename(tmp_path / "events.jsonl")
    (run / "events.jsonl").symlink_to(outside)
    refused = rehearsal.claudeloop("resume")
    assert refused.exit_code == 2
    (line,) = refused.stderr.splitlines()
    assert "events.jsonl: cannot be written" in line
    assert outside.read_text() == "theirs\n"
    assert outside.stat().st_mode & 0o777 == 0o644


# A secret of the environment (its name says so) and a token's shape (no variable holds
# it): the model copies both into its every word, and the check prints both (the token
# made as it runs, so its command, kept as the user wrote it, holds neither).
ENV_SECRET = "canary-value-xyz123"
TOKEN_SHAPE = "sk-ant-api03-canaryShape0123456789"
EVERY_CANARY = (ENV_SECRET, TOKEN_SHAPE)
CHECK = (
    "sh -c 'echo deploying with $MY_SERVICE_TOKEN and sk-ant-api03-$0; exit 1' "
    "canaryShape0123456789"
)


# Each command that shows a run or its sessions, in each of its forms.
SHOWING_A_RUN = (
    ("sessions",),
    ("sessions", "--json"),
    ("status",),
    ("status", "--json"),
    ("logs",),
    ("logs", "--json"),
    ("runs",),
    ("runs", "--json"),
    ("report",),
    ("report", "--json"),
)


def _every_view(rehearsal: Rehearsal, finished: Finished) -> dict[str, str]:
    """What each command that shows a run prints of it (its project's and the machine's),
    the report's page, and every file of its run directory, by where it was read."""
    shown = {" ".join(args): _shown(rehearsal, *args) for args in SHOWING_A_RUN}
    shown["runs --all"] = _shown(rehearsal, "runs", "--all", cwd=False)
    shown["runs --all --json"] = _shown(rehearsal, "runs", "--all", "--json", cwd=False)
    page = rehearsal.project.parent / "report.html"
    _shown(rehearsal, "report", "--html", str(page))
    shown["report --html"] = page.read_text()
    run = finished.run_directory()
    return shown | {
        str(path.relative_to(run)): path.read_text(errors="replace")
        for path in run.rglob("*")
        if path.is_file()
    }


def _shown(rehearsal: Rehearsal, *args: str, cwd: bool = True) -> str:
    """What `claudeloop ARGS` prints, on stdout and stderr, once it exited 0."""
    seen = subprocess.run(
        rehearsal.command(*args) if cwd else [sys.executable, "-m", "claudeloop", *args],
        env=rehearsal.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert seen.returncode == 0, seen.stderr
    return seen.stdout + seen.stderr


def _leaks(text: str, where: str) -> list[str]:
    """Each canary `text` holds, in any case (a comparison's key is casefolded)."""
    return [f"{canary} in {where}" for canary in EVERY_CANARY if canary.lower() in text.lower()]


def _dashboard_texts(env: dict[str, str], events: int) -> dict[str, str]:
    """Every page of `claudeloop dashboard`, the main part of each, and its run's live
    stream read until it sent the run's `events` events."""
    from tests.e2e.test_dashboard import Dashboard

    served = Dashboard(env)
    try:
        direct = urllib.request.ProxyHandler({})  # 127.0.0.1 itself, whatever the proxy
        opener = urllib.request.build_opener(direct, urllib.request.HTTPCookieProcessor())
        with opener.open(served.url, timeout=30) as answer:  # the token, then the cookie
            listing = answer.read().decode()
        (key,) = set(re.findall(r'data-key="([^"]+)"', listing))
        texts: dict[str, str] = {}
        for page in ("/", "/accounts", "/report", f"/run/{key}"):
            for shown in (page, f"{page}?part=main"):
                with opener.open(served.base + shown, timeout=30) as answer:
                    texts[shown] = answer.read().decode()
        stream: list[str] = []
        with opener.open(f"{served.base}/run/{key}/stream?offset=0", timeout=30) as answer:
            while sum(line.startswith("event: event") for line in stream) < events:
                stream.append(answer.readline().decode())
        texts[f"/run/{key}/stream"] = "".join(stream)
        return texts
    finally:
        served.close()


@pytest.mark.scenario("secrets_in_every_output")
def test_no_output_of_claudeloop_prints_a_secret_or_a_token(rehearsal: Rehearsal) -> None:
    from tests.e2e.test_worktrees import git, repository

    rehearsal.env["MY_SERVICE_TOKEN"] = ENV_SECRET
    plan = repository(rehearsal.project)
    finished = rehearsal.run(str(plan), "--checkpoint", "--verify", CHECK, *FAST_WAITS)
    assert finished.exit_code == 1, finished.stderr
    assert finished.result["outcome"] == "blocked"
    leaks = _leaks(finished.stdout + finished.stderr, "the run's --json result")

    # Every view of the run, and its files and its checks' output; then its commits.
    shown = _every_view(rehearsal, finished)
    log = git(rehearsal.project, "log", "--format=%B")
    shown["the messages of the run's commits"] = log

    # The dashboard: each page, its main part, and a run's live stream of events.
    events = len(finished.events())
    shown |= {
        f"the dashboard's {where}": text
        for where, text in _dashboard_texts(rehearsal.env, events).items()
    }
    for where, text in shown.items():
        leaks += _leaks(text, where)
    assert not leaks, "\n".join(leaks)

    # What was shown was the model's words and the check's, masked, not left out.
    sessions = json.loads(shown["sessions --json"])
    assert any("[redacted]" in session["summary"] for session in sessions), sessions
    status = json.loads(shown["status --json"])
    assert "[redacted]" in status["summary"]
    assert any("[redacted]" in c["subject"] for c in status["branch"]["commits"]), status
    assert "[redacted]" in finished.result["blocked_on"]
    assert "[redacted]" in json.dumps(json.loads(shown["report --json"]))
    assert "[redacted]" in shown["summary.md"]
    # The check runs in the sandbox, whose environment holds no secret: the variable is
    # empty there, and the token's shape it printed is masked.
    assert "deploying with and [redacted]" in shown["checks/turn-2-check-1.log"]
    assert log.count("Claudeloop-Turn:") == 3, log  # one commit per turn that wrote a file
    assert "[redacted]" in log


# The token of a profile that is not the default, written in the project's file; the
# model quotes it in its remaining work, which the next prompt carries, and Claude Code
# keeps that prompt cut at 200 characters, the cut inside the token.
PROFILE_TOKEN = "CNRYboxProfileToken9f3e1d0c7b"


@pytest.mark.scenario("secret_of_a_profile")
def test_a_profiles_token_shows_in_no_output_whole_or_cut(rehearsal: Rehearsal) -> None:
    rehearsal.env["CLAUDELOOP_CONFIG_DIR"] = str(rehearsal.project.parent / "user-config")
    (rehearsal.project / "claudeloop.toml").write_text(
        "[profiles.box]\n"
        f'base_url = "{rehearsal.server.base_url}"\n'
        'model = "claude-sonnet-4-5"\n'
        f'auth_token = "{PROFILE_TOKEN}"\n'
    )
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), "--profile", "box", *FAST_WAITS)
    assert finished.exit_code == 1, finished.stderr  # blocked
    shown = {"the run's --json result": finished.stdout + finished.stderr}
    shown |= _every_view(rehearsal, finished)
    shown |= {
        f"the dashboard's {where}": text
        for where, text in _dashboard_texts(rehearsal.env, len(finished.events())).items()
    }
    # Its first four characters are a trace too: where a cut fell inside it.
    leaks = [where for where, text in shown.items() if PROFILE_TOKEN[:4] in text]
    assert not leaks, leaks

    # The session's prompt was cut inside the token, and shown masked up to the cut.
    (session,) = json.loads(shown["sessions --json"])
    assert session["summary"].endswith("the key [redacted]\u2026"), session
    assert "[redacted]" in json.loads(shown["status --json"])["reason"]
