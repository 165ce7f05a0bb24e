"""The CLI's stderr lands in the debug log, with credentials blanked, or nowhere."""

from __future__ import annotations

import os
from pathlib import Path

from claudeloop.adapters.claude_code.stderr_log import REDACTED, StderrLog
from claudeloop.adapters.redaction import Redactor, secret_values


def test_lines_are_appended_with_their_origin(tmp_path: Path) -> None:
    path = tmp_path / "run" / "debug.log"
    log = StderrLog(path)
    log("Warning: something\n")
    log.note("the CLI exited")
    assert path.read_text() == "[claude] Warning: something\n[claudeloop] the CLI exited\n"


def test_credential_values_never_reach_the_log(tmp_path: Path) -> None:
    path = tmp_path / "debug.log"
    secrets = secret_values(
        {"ANTHROPIC_API_KEY": "sk-ant-very-secret", "HOME": "/home/someone-long"},
        {"CLAUDE_CODE_OAUTH_TOKEN": "oauth-secret-value", "ANTHROPIC_AUTH_TOKEN": "short"},
    )
    log = StderrLog(path, redactor=Redactor(tuple(secrets)))
    log("auth sk-ant-very-secret and oauth-secret-value in /home/someone-long (short)")
    assert path.read_text() == (
        f"[claude] auth {REDACTED} and {REDACTED} in /home/someone-long (short)\n"
    )
    assert log.redact("x sk-ant-very-secret") == f"x {REDACTED}"


def test_token_shapes_are_masked_even_when_no_variable_held_them(tmp_path: Path) -> None:
    path = tmp_path / "debug.log"
    StderrLog(path)("key sk-ant-api03-abcdefghijklmnop; Authorization: Bearer abcdef0123456789")
    assert path.read_text() == f"[claude] key {REDACTED}; Authorization: {REDACTED}\n"


def test_without_a_path_lines_go_nowhere(tmp_path: Path) -> None:
    log = StderrLog(None)
    log("nothing to see")
    log.note("nor here")
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_log_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    StderrLog(blocker / "debug.log")("line")


def test_the_log_is_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "debug.log"
    before = os.umask(0)
    try:
        StderrLog(path)("line")
    finally:
        os.umask(before)
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_planted_link_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("mine\n")
    (tmp_path / "debug.log").symlink_to(target)
    StderrLog(tmp_path / "debug.log")("line")
    assert target.read_text() == "mine\n"


def test_every_secret_looking_variable_is_masked_not_only_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "debug.log"
    environment = {
        "MY_SERVICE_PAT": "pat-canary-123456",
        "DB_PASS": "db-canary-654321",
        "HTTPS_PROXY": "http://me:proxy-canary-77@proxy.example:3128",
    }
    StderrLog(path, redactor=Redactor.from_environment(environment))(
        "pat-canary-123456 db-canary-654321 proxy-canary-77"
    )
    assert path.read_text() == f"[claude] {REDACTED} {REDACTED} {REDACTED}\n"
