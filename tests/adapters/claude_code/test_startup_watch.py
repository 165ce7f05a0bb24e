"""startup_watch: the result of a CLI that refused to start, read before the SDK drops it."""

from __future__ import annotations

from claudeloop.adapters.claude_code.startup_watch import refusal_in


def test_the_result_a_refusing_cli_writes_names_its_reason_and_message() -> None:
    # As measured (CLI 2.1.332, bypassPermissions as root, CLAUDE_CODE_STARTUP_FAILURE_RESULTS=1).
    written = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "num_turns": 0,
        "errors": ["--dangerously-skip-permissions cannot be used with root/sudo privileges"],
        "startup_failure_reason": "bypass_root",
    }
    assert refusal_in(written) == (
        "bypass_root",
        "--dangerously-skip-permissions cannot be used with root/sudo privileges",
    )


def test_any_other_message_is_no_refusal() -> None:
    assert refusal_in({"type": "result", "subtype": "success"}) is None
    assert refusal_in({"type": "system", "startup_failure_reason": "bypass_root"}) is None
    assert refusal_in({"type": "result", "startup_failure_reason": ""}) is None
    assert refusal_in({"type": "result", "startup_failure_reason": "x", "errors": "no"}) == (
        "x",
        "",
    )
