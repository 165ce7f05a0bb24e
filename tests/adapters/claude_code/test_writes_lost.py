"""What Claude Code says of a transcript it could not save, as CLI 2.1.332 says it."""

from __future__ import annotations

import pytest
from claude_agent_sdk import SystemMessage

from claudeloop.adapters.claude_code.writes_lost import writes_lost_in_stderr, writes_lost_of

A = "8f2ba0f9-e66a-4382-9199-b6e286b32481"
B = "0b4b9d3a-54c1-4c2b-9a57-1d7b3c0f8e11"


def message(**data: object) -> SystemMessage:
    return SystemMessage(subtype="session_writes_lost", data={"session_id": A, **data})


def test_the_message_names_the_sessions_whose_transcripts_lost_lines() -> None:
    said = message(lost=["transcript", "global_config"], transcript_session_ids=[B, A])
    assert writes_lost_of(said) == (B, A)


def test_a_message_naming_none_is_the_processes_own_session() -> None:
    assert writes_lost_of(message(lost=["transcript"])) == (A,)
    assert writes_lost_of(message(lost=["transcript"], session_id="")) == ()


@pytest.mark.parametrize(
    "said",
    [
        message(lost=["global_config"]),
        message(lost="transcript"),
        SystemMessage(subtype="init", data={"session_id": A}),
    ],
)
def test_anything_else_loses_no_conversation(said: SystemMessage) -> None:
    assert writes_lost_of(said) is None


def test_the_stderr_line_of_a_process_that_exited_1_is_its_own_session() -> None:
    line = (
        "Error: Claude Code could not save all of this session's transcript under /h/.claude "
        "because the disk is full (ENOSPC). If you resume this session, part of the "
        "conversation may be missing. Free up space on that disk before the next run."
    )
    assert writes_lost_in_stderr(line) == ()


def test_the_stderr_line_names_the_sessions_when_they_are_not_its_own() -> None:
    line = (
        "Error: Claude Code could not save all of this run's transcript under /h because "
        f"your disk quota is used up (EDQUOT). If you resume session {A} or {B}, part of "
        "the conversation may be missing. Free up space, or ask for a larger quota."
    )
    assert writes_lost_in_stderr(line) == (A, B)


@pytest.mark.parametrize(
    "line",
    [
        "Error: Claude Code could not save changes this run made to /h/.claude.json because "
        "the disk is full (ENOSPC). Free up space on that disk before the next run.",
        "some other line",
    ],
)
def test_a_line_that_loses_no_conversation_says_nothing(line: str) -> None:
    assert writes_lost_in_stderr(line) is None
