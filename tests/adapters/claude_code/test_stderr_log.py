"""The CLI's stderr lands in the debug log, with credentials blanked, or nowhere."""

from __future__ import annotations

from pathlib import Path

from claudeloop.adapters.claude_code.stderr_log import REDACTED, StderrLog, secret_values
from claudeloop.adapters.redaction import Redactor


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
