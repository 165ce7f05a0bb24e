"""startup: each reason the CLI gives for refusing to start is one line with its fix."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.startup import STARTUP_FAILURE_REASONS, startup_refusal


def test_the_clis_twenty_five_reasons_are_all_known() -> None:
    # Read from the CLI 2.1.332 binary (its zod enum of startup_failure_reason).
    assert len(set(STARTUP_FAILURE_REASONS)) == 25


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
