"""The gateway's watch over a turn and a probe (domain.watchdog) and what a signal the
driver heard does to a turn in flight, with the SDK client played by a fake. The bounds
are compressed to a fraction of a second; the tests say what ended, never how fast."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    Message,
    ProcessError,
    StreamEvent,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings
from claudeloop.adapters.claude_code import sdk_gateway as gateway_module
from claudeloop.application.ports import TurnOutcome
from claudeloop.domain.loop import Interrupt
from claudeloop.domain.watchdog import (
    AwaitingAnswer,
    RunningTools,
    ToolCall,
    WatchdogSettings,
)
from tests.adapters.claude_code.test_sdk_gateway import (
    HANG,
    SESSION,
    FakeCli,
    answer,
    init,
    quiet,
)
from tests.application.fakes import FakeControl, MemoryEvents

# A fifth of a second for the model's answer, the same after a retry's delay and after
# a tool's own timeout, and for an exit.
WATCHDOG = WatchdogSettings(silence=0.2, tool_grace=0.2, exit_grace=0.2)


def gateway_on(
    cli: FakeCli,
    monkeypatch: pytest.MonkeyPatch,
    debug_log: Path,
    control: FakeControl | None = None,
) -> ClaudeCodeGateway:
    monkeypatch.setattr(gateway_module, "ClaudeSDKClient", cli.client)
    monkeypatch.setattr(gateway_module, "STOP_POLL_SECONDS", 0.01)
    monkeypatch.setattr(gateway_module, "SIGNAL_HEARD_SECONDS", 0.2)
    return ClaudeCodeGateway(
        GatewaySettings(cwd=Path("/work/project"), stderr_log=debug_log),
        control=control,
        events=MemoryEvents(),
        watchdog=WATCHDOG,
    )


@pytest.fixture
def debug_log(tmp_path: Path) -> Path:
    return tmp_path / "debug.log"


def run(gateway: ClaudeCodeGateway, *sessions: str | None) -> list[TurnOutcome]:
    async def go() -> list[TurnOutcome]:
        outcomes = [await gateway.run_turn("go on", session_id=s) for s in sessions]
        await gateway.close()
        return outcomes

    return anyio.run(go)


def streamed(kind: str) -> StreamEvent:
    return StreamEvent(uuid="u", session_id=SESSION, event={"type": kind})


def bash(call_id: str, timeout_ms: int | None) -> AssistantMessage:
    asked = {} if timeout_ms is None else {"timeout": timeout_ms}
    block = ToolUseBlock(id=call_id, name="Bash", input={"command": "make", **asked})
    return AssistantMessage(content=[block], model="m")


def returned(call_id: str) -> UserMessage:
    return UserMessage(content=[ToolResultBlock(tool_use_id=call_id, content="ok")])


# A turn's silence ---------------------------------------------------------------------


def test_a_turn_silent_past_its_patience_is_ended_and_told_as_silent(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([init(SESSION), streamed("message_start"), HANG], [answer()])
    silent, again = run(gateway_on(cli, monkeypatch, debug_log), None, SESSION)

    assert silent.silent is not None
    assert silent.silent.activity == AwaitingAnswer()
    assert silent.interrupted is None
    assert silent.failure is not None
    assert silent.failure.startswith("Claude Code said nothing for 0 s while awaiting")
    assert "the turn was ended" in debug_log.read_text()
    # Its process is ended; the turn sent again resumes the session in a new one.
    assert cli.resumes == [None, SESSION]
    assert again.failure is None


def test_a_long_answer_still_streaming_is_never_taken_for_silence(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    deltas = [step for _ in range(6) for step in (quiet(0.1), streamed("content_block_delta"))]
    cli = FakeCli([init(SESSION), *deltas, answer()])
    (outcome,) = run(gateway_on(cli, monkeypatch, debug_log), None)
    assert outcome.silent is None
    assert outcome.failure is None


def test_a_tool_may_be_silent_for_its_own_timeout(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    # A Bash call of 0.5 s may run 0.7 s; the model's answer only 0.2 s.
    cli = FakeCli(
        [init(SESSION), bash("t1", 500), quiet(0.4), returned("t1"), answer()],
        [init(SESSION), bash("t2", 100), quiet(0.6), returned("t2"), answer()],
    )
    ran, overran = run(gateway_on(cli, monkeypatch, debug_log), None, SESSION)
    assert ran.silent is None
    assert overran.silent is not None
    assert overran.silent.activity == RunningTools((ToolCall("Bash", 0.1),))


def test_the_verdicts_tool_is_no_tool_that_runs(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    verdict = ToolUseBlock(id="v", name="StructuredOutput", input={"complete": True})
    cli = FakeCli([init(SESSION), AssistantMessage(content=[verdict], model="m"), HANG])
    (outcome,) = run(gateway_on(cli, monkeypatch, debug_log), None)
    assert outcome.silent is not None
    assert outcome.silent.activity == AwaitingAnswer()


def test_a_retry_the_cli_announced_may_take_its_delay(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    from tests.adapters.claude_code.test_sdk_gateway import retry

    slow = retry(1)
    slow.data["retry_delay_ms"] = 400
    cli = FakeCli([init(SESSION), slow, quiet(0.4), answer()])
    (outcome,) = run(gateway_on(cli, monkeypatch, debug_log), None)
    assert outcome.silent is None
    assert outcome.failure is None


# A signal the driver heard ------------------------------------------------------------


def signalled_during(
    gateway: ClaudeCodeGateway, control: FakeControl, interrupt: Interrupt
) -> TurnOutcome:
    async def go() -> TurnOutcome:
        async with anyio.create_task_group() as group:

            async def later() -> None:
                await anyio.sleep(0.05)
                control.signal(interrupt)

            group.start_soon(later)
            outcome = await gateway.run_turn("go on", session_id=None)
        await gateway.close()
        return outcome

    return anyio.run(go)


def test_a_signal_cuts_the_turn_off_at_once(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    control = FakeControl()
    cli = FakeCli([init(SESSION), HANG])
    gateway = gateway_on(cli, monkeypatch, debug_log, control)
    outcome = signalled_during(gateway, control, Interrupt.TERMINATE)

    assert outcome.interrupted is Interrupt.TERMINATE
    assert outcome.silent is None
    assert outcome.failure == "the run was stopped by SIGTERM during the turn"
    assert cli.disconnects == 1


def test_a_signal_while_the_cli_starts_is_no_failure_to_start(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    control = FakeControl()
    cli = FakeCli([answer()])
    cli.connect_hangs = True  # a Ctrl-C reached it before it answered its start-up
    outcome = signalled_during(
        gateway_on(cli, monkeypatch, debug_log, control), control, Interrupt.CTRL_C
    )
    assert outcome.interrupted is Interrupt.CTRL_C
    assert "could not start" not in (outcome.failure or "")


@pytest.mark.parametrize(
    "ending",
    [
        # The terminal's Ctrl-C reached the CLI too: it ends its turn, aborted...
        [
            replace(
                answer(is_error=True, subtype="error_during_execution"),
                terminal_reason="aborted_streaming",
            )
        ],
        # ... or dies of it before it could.
        [ProcessError("Command failed with exit code -2", exit_code=-2)],
    ],
    ids=["aborted", "killed"],
)
def test_a_turn_the_cli_ended_on_the_drivers_signal_is_cut_off_not_failed(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path, ending: list[Message | BaseException]
) -> None:
    control = FakeControl()
    # The signal comes while the CLI ends the turn, before the watch looks again.
    cli = FakeCli([init(SESSION), quiet(0.1), *ending])
    gateway = gateway_on(cli, monkeypatch, debug_log, control)
    monkeypatch.setattr(gateway_module, "STOP_POLL_SECONDS", 5.0)
    outcome = signalled_during(gateway, control, Interrupt.CTRL_C)
    assert outcome.interrupted is Interrupt.CTRL_C
    assert outcome.failure == "the run was stopped by Ctrl-C (SIGINT) during the turn"


def test_a_turn_that_ended_whole_stands_though_a_signal_came_with_it(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    control = FakeControl()
    cli = FakeCli([init(SESSION), quiet(0.1), answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log, control)
    monkeypatch.setattr(gateway_module, "STOP_POLL_SECONDS", 5.0)
    outcome = signalled_during(gateway, control, Interrupt.CTRL_C)
    assert outcome.interrupted is None
    assert outcome.failure is None  # the runner stops at the next safe point


# A CLI that does not exit --------------------------------------------------------------


def test_a_probe_whose_cli_does_not_exit_after_its_result_is_ended(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    async def lingering(
        *, prompt: str, options: ClaudeAgentOptions, transport: object = None
    ) -> AsyncIterator[Message]:
        yield AssistantMessage(content=[TextBlock(text="ok")], model="m")
        yield answer(cost=0.0001)
        await anyio.sleep_forever()  # its result written, its input closed: it lingers

    monkeypatch.setattr(gateway_module, "query", lingering)
    gateway = ClaudeCodeGateway(
        GatewaySettings(cwd=Path("/work/project"), stderr_log=debug_log), watchdog=WATCHDOG
    )
    probe = anyio.run(gateway.probe)
    assert probe.cost_usd == pytest.approx(0.0001)
    assert "probe: Claude Code had not exited 0 s after its result; it was ended" in (
        debug_log.read_text()
    )


def test_a_probe_silent_before_its_result_is_ended(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    async def hung(
        *, prompt: str, options: ClaudeAgentOptions, transport: object = None
    ) -> AsyncIterator[Message]:
        await anyio.sleep_forever()
        yield answer()  # pragma: no cover - never reached

    monkeypatch.setattr(gateway_module, "query", hung)
    gateway = ClaudeCodeGateway(
        GatewaySettings(cwd=Path("/work/project"), stderr_log=debug_log), watchdog=WATCHDOG
    )
    probe = anyio.run(gateway.probe)
    assert probe.signals.result_text == ""
    assert "probe: Claude Code said nothing for 0 s while awaiting the model's answer" in (
        debug_log.read_text()
    )


def test_a_process_that_does_not_exit_when_its_input_closes_is_left_within_its_grace(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer()])
    cli.exits = [[HANG]]  # its last words never end
    (outcome,) = run(gateway_on(cli, monkeypatch, debug_log), None)
    assert outcome.failure is None
    assert cli.disconnects == 1


# What the SDK logs -----------------------------------------------------------------------


def test_the_sdks_own_log_lines_go_to_the_debug_log_not_the_screen(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway_on(FakeCli(), monkeypatch, debug_log)
    logging.getLogger("claude_agent_sdk._internal.query").error(
        "Fatal error in message reader: Command failed with exit code -2"
    )
    assert capsys.readouterr().err == ""
    assert "claude-agent-sdk: Fatal error in message reader" in debug_log.read_text()
