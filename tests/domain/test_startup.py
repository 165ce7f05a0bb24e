"""startup: each reason the CLI gives for refusing to start is one line with its fix."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.startup import STARTUP_FAILURE_REASONS, session_gone, startup_refusal


def test_the_clis_twenty_nine_reasons_are_all_known() -> None:
    # Read from the CLI 2.1.337 binary (its zod enum of startup_failure_reason: 2.1.332's
    # 25, and resume_target_not_found, consumer_terms_review_in_terminal,
    # consumer_terms_accept_on_web, org_signin_ended); `make canary` reads them anew.
    assert len(set(STARTUP_FAILURE_REASONS)) == 29


def test_a_session_claude_code_no_longer_has_names_the_way_to_go_on() -> None:
    line = startup_refusal("resume_target_not_found", "No conversation found with session ID")
    assert "cleanupPeriodDays" in line
    assert session_gone("s-1").startswith("Claude Code cannot resume session s-1: it has no ")
    assert session_gone("s-1").endswith(line.rsplit(": ", 1)[1])
    assert line.endswith(
        "`claudeloop resume --new-session` goes on in a new session with the run's plan, "
        "ledger and branch, or resume where CLAUDE_CONFIG_DIR holds the session"
    )


def test_a_known_reason_says_what_it_means_and_the_fix() -> None:
    assert startup_refusal("cli_version_too_old", "ignored") == (
        "Claude Code refused to start (cli_version_too_old): this Claude Code version is "
        "below the minimum Anthropic requires: upgrade claude-agent-sdk (`pip install -U "
        "claude-agent-sdk`), which bundles the CLI, or point CLAUDELOOP_CLI_PATH at a newer "
        "Claude Code executable"
    )
    assert startup_refusal("session_held_by_background").endswith(
        "stop that background session, then `claudeloop resume`"
    )


@given(reason=st.sampled_from(STARTUP_FAILURE_REASONS))
def test_every_known_reason_is_one_line_naming_it_with_a_fix(reason: str) -> None:
    line = startup_refusal(reason)
    assert "\n" not in line
    assert line.startswith(f"Claude Code refused to start ({reason}): ")
    # meaning: fix
    assert line.count(": ") >= 2


def test_a_later_clis_reason_is_said_in_the_clis_own_words() -> None:
    assert startup_refusal("new_reason", "Something new\nmore") == (
        "Claude Code refused to start (new_reason): Something new"
    )
    assert startup_refusal("new_reason") == "Claude Code refused to start (new_reason)"
