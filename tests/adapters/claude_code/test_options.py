"""What the SDK is asked for: a turn with Claude Code's own prompt, a probe with nothing."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import HookContext, PreToolUseHookInput

from claudeloop.adapters.claude_code.options import (
    QUESTION_DENIED,
    UNATTENDED_NOTE,
    GatewaySettings,
    deny_question,
    probe_options,
    stream_timeouts,
    turn_options,
)
from claudeloop.adapters.claude_code.verdict import VERDICT_SCHEMA


def ignore(line: str) -> None:
    pass


def settings(**overrides: object) -> GatewaySettings:
    return GatewaySettings(cwd=Path("/work/project"), **overrides)  # type: ignore[arg-type]


def test_a_turn_keeps_claude_codes_prompt_and_says_nobody_is_there() -> None:
    options = turn_options(settings(), resume=None, stderr=ignore)
    assert options.system_prompt == {
        "type": "preset",
        "preset": "claude_code",
        "append": UNATTENDED_NOTE,
    }
    assert options.output_format == {"type": "json_schema", "schema": VERDICT_SCHEMA}
    assert options.permission_mode == "acceptEdits"
    assert options.resume is None
    assert options.setting_sources is None
    assert options.stderr is ignore
    assert options.cwd == Path("/work/project")


def test_a_turn_resumes_the_session_it_is_given() -> None:
    options = turn_options(settings(), resume="abc", stderr=ignore)
    assert options.resume == "abc"


def test_without_structured_output_the_marker_is_asked_for_instead() -> None:
    options = turn_options(
        settings(structured_output=False, done_marker="ALL_DONE", append_system_prompt="Be terse."),
        resume=None,
        stderr=ignore,
    )
    assert options.output_format is None
    assert isinstance(options.system_prompt, dict)
    append = options.system_prompt.get("append")
    assert isinstance(append, str)
    assert "ALL_DONE" in append
    assert append.endswith("Be terse.")


def test_the_profile_reaches_the_cli() -> None:
    options = turn_options(
        settings(
            model="qwen3",
            permission_mode="bypassPermissions",
            env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:11434"},
            cli_path=Path("/opt/claude"),
            setting_sources=(),
            max_buffer_size=1024,
            local_backend=True,  # its stream timeouts are the CLI's own (see below)
        ),
        resume=None,
        stderr=ignore,
    )
    assert options.model == "qwen3"
    assert options.permission_mode == "bypassPermissions"
    assert options.env == {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:11434",
        # A CLI that refuses to start says why on a result (startup_watch.py).
        "CLAUDE_CODE_STARTUP_FAILURE_RESULTS": "1",
    }
    assert options.cli_path == Path("/opt/claude")
    assert options.setting_sources == []
    assert options.max_buffer_size == 1024


def test_a_turn_refuses_questions_with_guidance() -> None:
    options = turn_options(settings(), resume=None, stderr=ignore)
    assert options.hooks is not None
    (matcher,) = options.hooks["PreToolUse"]
    assert matcher.matcher == "AskUserQuestion"
    hook_input: PreToolUseHookInput = {
        "session_id": "s",
        "transcript_path": "/t",
        "cwd": "/work/project",
        "hook_event_name": "PreToolUse",
        "tool_name": "AskUserQuestion",
        "tool_input": {},
        "tool_use_id": "t1",
    }
    context: HookContext = {"signal": None}
    answer = anyio.run(deny_question, hook_input, "t1", context)
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": QUESTION_DENIED,
        }
    }


def test_a_probe_carries_no_tools_no_verdict_and_no_session() -> None:
    options = probe_options(settings(model="opus", setting_sources=("user",)), stderr=ignore)
    assert options.tools == []
    assert options.max_turns == 1
    assert options.output_format is None
    assert options.system_prompt is None
    assert options.hooks is None
    assert options.resume is None
    assert options.extra_args == {"no-session-persistence": None}
    assert options.model == "opus"
    assert options.setting_sources == ["user"]


def test_a_probe_is_one_request_without_the_clis_own_retries() -> None:
    probe = probe_options(settings(env={"A": "1"}), stderr=ignore, environ={})
    assert probe.env == {
        "A": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "CLAUDE_CODE_STARTUP_FAILURE_RESULTS": "1",
        # A probe's stalled answer is given up like a turn's (test_an_unattended_...).
        **stream_timeouts(settings(), environ={}),
    }
    # A turn keeps the CLI's retries: they ride out a blip inside a turn.
    turn = turn_options(settings(env={"A": "1"}), resume=None, stderr=ignore)
    assert "CLAUDE_CODE_MAX_RETRIES" not in turn.env


@pytest.mark.parametrize(
    ("env", "environ"),
    [({"CLAUDE_CODE_MAX_RETRIES": "3"}, {}), ({}, {"CLAUDE_CODE_MAX_RETRIES": "3"})],
)
def test_a_probe_keeps_the_retries_the_user_set(
    env: dict[str, str], environ: dict[str, str]
) -> None:
    probe = probe_options(settings(env=env), stderr=ignore, environ=environ)
    assert probe.env.get("CLAUDE_CODE_MAX_RETRIES", "3") == "3"


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"permission_mode": "yolo"}, "yolo"),
        ({"setting_sources": ("user", "team")}, "team"),
        ({"max_buffer_size": 0}, "max_buffer_size"),
    ],
)
def test_settings_refuse_what_the_cli_would_not_accept(
    overrides: dict[str, object], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        settings(**overrides)


def test_the_reviewer_only_reads_in_plan_mode_and_keeps_no_session() -> None:
    options = turn_options(
        settings(read_only=True, permission_mode="bypassPermissions"), resume=None, stderr=ignore
    )
    assert options.tools == ["Read", "Grep", "Glob"]
    assert options.allowed_tools == ["Read", "Grep", "Glob"]
    assert options.permission_mode == "plan"
    assert "no-session-persistence" in options.extra_args
    assert options.output_format == {"type": "json_schema", "schema": VERDICT_SCHEMA}
    working = turn_options(settings(), resume=None, stderr=ignore)
    assert working.tools is None
    assert "no-session-persistence" not in working.extra_args


def test_an_unattended_run_gives_up_on_a_silent_stream_after_50_seconds() -> None:
    # The CLI's own watchdog, at two thirds of the run's silence (75 s by default): its
    # retry, within the turn, comes before the turn's own watchdog ends the turn.
    assert stream_timeouts(settings(), environ={}) == {
        "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "50000",
        "CLAUDE_ENABLE_BYTE_WATCHDOG": "1",
        "CLAUDE_ENABLE_STREAM_WATCHDOG": "1",
    }
    assert (
        stream_timeouts(settings(silence_seconds=30.0), environ={})[
            "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS"
        ]
        == "20000"
    )


def test_the_cli_idle_timeout_never_goes_below_the_clis_own_floor() -> None:
    short = stream_timeouts(settings(silence_seconds=3.0), environ={})
    assert short["CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS"] == "10000"


@pytest.mark.parametrize(
    "variable",
    [
        "CLAUDE_STREAM_IDLE_TIMEOUT_MS",
        "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS",
        "CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS",
        "CLAUDE_ENABLE_STREAM_WATCHDOG",
        "CLAUDE_ENABLE_BYTE_WATCHDOG",
        "API_FORCE_IDLE_TIMEOUT",
    ],
)
def test_a_stream_timeout_the_user_set_is_theirs(variable: str) -> None:
    assert stream_timeouts(settings(), environ={variable: "1"}) == {}
    assert stream_timeouts(settings(env={variable: "1"}), environ={}) == {}


def test_a_local_backend_keeps_the_clis_own_stream_timeouts() -> None:
    # Its first byte may take minutes: a local server reads a long prompt first.
    assert stream_timeouts(settings(local_backend=True), environ={}) == {}


def test_a_turn_streams_every_event_so_a_long_answer_is_never_taken_for_silence() -> None:
    assert turn_options(settings(), resume=None, stderr=ignore).include_partial_messages
    assert not probe_options(settings(), stderr=ignore).include_partial_messages


def test_a_silence_that_is_no_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="silence_seconds"):
        settings(silence_seconds=0.0)
