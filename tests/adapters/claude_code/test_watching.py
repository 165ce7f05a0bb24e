"""What the watch hears in the CLI's messages, and the watchdog settings of a gateway."""

from __future__ import annotations

from pathlib import Path

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from claudeloop.adapters.claude_code.options import GatewaySettings
from claudeloop.adapters.claude_code.watching import said_in, watchdog_settings
from claudeloop.domain.watchdog import (
    CalledTools,
    RetryAnnounced,
    Spoke,
    ToolCall,
    ToolsReturned,
    WatchdogSettings,
)


def called(*blocks: ToolUseBlock) -> AssistantMessage:
    return AssistantMessage(content=[TextBlock(text="on it"), *blocks], model="m")


def test_tool_calls_are_heard_with_the_timeout_bash_asked_for() -> None:
    message = called(
        ToolUseBlock(id="a", name="Bash", input={"command": "make", "timeout": 300000}),
        ToolUseBlock(id="b", name="Bash", input={"command": "ls"}),
        ToolUseBlock(id="c", name="Read", input={"file_path": "/x", "timeout": 5}),
        ToolUseBlock(id="d", name="Bash", input={"command": "ls", "timeout": "soon"}),
    )
    assert said_in(message) == CalledTools(
        (
            ("a", ToolCall("Bash", 300.0)),
            ("b", ToolCall("Bash")),
            ("c", ToolCall("Read")),
            ("d", ToolCall("Bash")),
        )
    )


def test_the_verdicts_tool_runs_nothing() -> None:
    verdict = ToolUseBlock(id="v", name="StructuredOutput", input={"complete": True})
    assert said_in(called(verdict)) == Spoke()


def test_tool_results_are_heard_by_their_ids() -> None:
    message = UserMessage(
        content=[
            ToolResultBlock(tool_use_id="a", content="ok"),
            TextBlock(text="<system-reminder>x</system-reminder>"),
            ToolResultBlock(tool_use_id="b", content="ok"),
        ]
    )
    assert said_in(message) == ToolsReturned(("a", "b"))
    assert said_in(UserMessage(content="a prompt")) == Spoke()


def test_a_retry_is_heard_with_its_delay() -> None:
    retry = SystemMessage(subtype="api_retry", data={"retry_delay_ms": 4000})
    assert said_in(retry) == RetryAnnounced(4.0)
    assert said_in(SystemMessage(subtype="api_retry", data={})) == RetryAnnounced(0.0)


def test_anything_else_is_the_cli_speaking() -> None:
    event = StreamEvent(uuid="u", session_id="s", event={"type": "ping"})
    result = ResultMessage(
        subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1,
        session_id="s",
    )  # fmt: skip
    for message in (event, result, SystemMessage(subtype="init", data={})):
        assert said_in(message) == Spoke()


def test_the_gateways_watchdog_takes_the_runs_silence_and_claude_codes_bash_limits() -> None:
    settings = GatewaySettings(
        cwd=Path("/w"), silence_seconds=30.0, env={"BASH_MAX_TIMEOUT_MS": "1200000"}
    )
    watchdog = watchdog_settings(settings, {"BASH_DEFAULT_TIMEOUT_MS": "60000"})
    assert watchdog == WatchdogSettings(silence=30.0, bash_default=60.0, bash_ceiling=1200.0)


def test_a_limit_that_is_no_number_of_milliseconds_keeps_claude_codes_own() -> None:
    environ = {"BASH_DEFAULT_TIMEOUT_MS": "two minutes", "BASH_MAX_TIMEOUT_MS": "0"}
    watchdog = watchdog_settings(GatewaySettings(cwd=Path("/w")), environ)
    assert watchdog == WatchdogSettings()


def test_a_local_backends_silence_is_longer_by_default() -> None:
    local = watchdog_settings(GatewaySettings(cwd=Path("/w"), local_backend=True), {})
    assert local.silence == 360.0
