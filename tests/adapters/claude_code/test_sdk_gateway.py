"""The gateway's judgement of turns, with the SDK client played by a fake.

What the real CLI emits is the contract tests' business; here: when the process is kept
or started afresh, how cost is split per turn, and which turns are failures.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    CLIConnectionError,
    Message,
    ProcessError,
    ResultError,
    ResultMessage,
    SystemMessage,
    TextBlock,
)

from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings
from claudeloop.adapters.claude_code import sdk_gateway as gateway_module
from claudeloop.adapters.claude_code.startup_watch import StartupWatch
from claudeloop.application.ports import TurnOutcome
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.startup import session_gone
from tests.application.fakes import FakeControl, MemoryEvents

SESSION = "8f2ba0f9-e66a-4382-9199-b6e286b32481"
OTHER = "0b4b9d3a-54c1-4c2b-9a57-1d7b3c0f8e11"

Step = Message | BaseException
# A step at which the played CLI goes quiet until it is ended.
HANG = SystemMessage(subtype="hang", data={})
# A step at which it is quiet for a moment, then goes on.
PAUSE = SystemMessage(subtype="pause", data={})


def quiet(seconds: float) -> SystemMessage:
    """A step at which the played CLI says nothing for `seconds`, then goes on."""
    return SystemMessage(subtype="quiet", data={"seconds": seconds})


def answer(
    *,
    session_id: str = SESSION,
    cost: float = 0.0016,
    is_error: bool = False,
    status: int | None = None,
    subtype: str = "success",
    errors: list[str] | None = None,
    tokens: tuple[int, int] | None = None,
    session_tokens: tuple[int, int] | None = None,
) -> ResultMessage:
    """`tokens`: this turn's usage; `session_tokens`: the session's running total of
    them, whose price is `cost` (the CLI's `modelUsage`)."""
    usage = model_usage = None
    if tokens is not None and session_tokens is not None:
        usage = {"input_tokens": tokens[0], "output_tokens": tokens[1]}
        model_usage = {
            "claude-sonnet-5-5": {
                "inputTokens": session_tokens[0],
                "outputTokens": session_tokens[1],
                "costUSD": cost,
                "costBasis": "list",
            }
        }
    return ResultMessage(
        subtype=subtype,
        duration_ms=50,
        duration_api_ms=20,
        is_error=is_error,
        num_turns=2,
        session_id=session_id,
        total_cost_usd=cost,
        result="API Error: 529 Overloaded" if status else '{"complete":true}',
        structured_output=None if is_error else {"complete": True, "summary": "done"},
        api_error_status=status,
        errors=errors,
        usage=usage,
        model_usage=model_usage,  # type: ignore[arg-type]
    )


class FakeCli:
    """Plays Claude Code: every prompt gets the next scripted turn."""

    def __init__(self, *turns: list[Step]) -> None:
        self.turns = list(turns)
        self.resumes: list[str | None] = []
        self.prompts: list[str] = []
        self.disconnects = 0
        self.connect_error: Exception | None = None
        # A CLI that never answers its start-up (a Ctrl-C reached it as it started).
        self.connect_hangs = False
        self.refusal: tuple[str, str] | None = None
        self.query_errors: list[Exception] = []
        # What each process ended says as it exits (a message, or a text: a stderr line).
        self.exits: list[list[Step | str]] = []

    def client(self, options: ClaudeAgentOptions, transport: object = None) -> FakeClient:
        # The transport the gateway watches for a refusal to start (startup_watch.py);
        # a test plays a refusal by setting its `refusal` before connect fails.
        if isinstance(transport, StartupWatch):
            transport.refusal = self.refusal
        return FakeClient(self, options)


class FakeClient:
    def __init__(self, cli: FakeCli, options: ClaudeAgentOptions) -> None:
        self.cli = cli
        self.options = options
        self.turn: list[Step] = []

    async def connect(self) -> None:
        if self.cli.connect_hangs:
            await anyio.sleep_forever()
        if self.cli.connect_error is not None:
            raise self.cli.connect_error
        self.cli.resumes.append(self.options.resume)

    async def query(self, prompt: str) -> None:
        if self.cli.query_errors:
            raise self.cli.query_errors.pop(0)
        self.cli.prompts.append(prompt)
        self.turn = self.cli.turns.pop(0)

    async def receive_response(self) -> AsyncIterator[Message]:
        for step in self.turn:
            if isinstance(step, BaseException):
                raise step
            if step is HANG:
                await anyio.sleep_forever()  # a CLI waiting out its retry backoff
            if step is PAUSE:
                await anyio.sleep(0.2)  # a CLI at work, long enough for a stop to be seen
                continue
            if isinstance(step, SystemMessage) and step.subtype == "quiet":
                await anyio.sleep(step.data["seconds"])
                continue
            yield step

    async def receive_messages(self) -> AsyncIterator[Message]:
        """What the process says as it exits, once its input is closed."""
        for step in self.cli.exits.pop(0) if self.cli.exits else []:
            if isinstance(step, str):
                assert self.options.stderr is not None
                self.options.stderr(step)
            elif isinstance(step, BaseException):
                raise step
            elif step is HANG:
                await anyio.sleep_forever()  # a CLI that does not exit
            else:
                yield step

    async def disconnect(self) -> None:
        self.cli.disconnects += 1


@pytest.fixture
def debug_log(tmp_path: Path) -> Path:
    return tmp_path / "debug.log"


def gateway_on(
    cli: FakeCli, monkeypatch: pytest.MonkeyPatch, debug_log: Path, config: Path | None = None
) -> ClaudeCodeGateway:
    """A gateway on `cli`; `config`: the CLAUDE_CONFIG_DIR its sessions' transcripts are in."""
    monkeypatch.setattr(gateway_module, "ClaudeSDKClient", cli.client)
    env = {} if config is None else {"CLAUDE_CONFIG_DIR": str(config)}
    return ClaudeCodeGateway(
        GatewaySettings(cwd=Path("/work/project"), stderr_log=debug_log, env=env)
    )


# When the turn a crash cut off began.
CUT_OFF = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def after_a_crash(
    gateway: ClaudeCodeGateway, prompt: str = "go on", **told: Callable[[str], None]
) -> TurnOutcome:
    """The turn sent again on SESSION after the crash at CUT_OFF (then the gateway closed)."""

    async def go() -> TurnOutcome:
        outcome = await gateway.run_turn(prompt, session_id=SESSION, interrupted_at=CUT_OFF, **told)
        await gateway.close()
        return outcome

    return anyio.run(go)


def turns(gateway: ClaudeCodeGateway, *sessions: str | None) -> list[TurnOutcome]:
    async def go() -> list[TurnOutcome]:
        outcomes = []
        for session_id in sessions:
            outcomes.append(await gateway.run_turn("go on", session_id=session_id))
        await gateway.close()
        return outcomes

    return anyio.run(go)


def test_one_process_answers_every_turn_of_a_session(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer(cost=0.0016)], [answer(cost=0.0024)], [answer(cost=0.003)])
    first, second, third = turns(gateway_on(cli, monkeypatch, debug_log), None, SESSION, SESSION)

    assert cli.resumes == [None]
    assert cli.disconnects == 1
    # The CLI reports its process's running total; each turn pays only its own part.
    assert [first.cost_usd, second.cost_usd, third.cost_usd] == pytest.approx(
        [0.0016, 0.0008, 0.0006]
    )
    assert first.session_id == SESSION
    assert first.failure is None
    assert first.structured is not None
    assert first.structured.complete


def test_a_process_resumed_after_a_crash_bills_each_turn_what_it_reported(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    # Measured: after a kill -9 the next process restores an older running total (here
    # 0.0048 for three turns, while five were served); the turn itself used 400/80.
    cli = FakeCli(
        [answer(cost=0.0064, tokens=(400, 80), session_tokens=(1600, 320))],
        [answer(cost=0.0080, tokens=(400, 80), session_tokens=(2000, 400))],
    )
    first, second = turns(gateway_on(cli, monkeypatch, debug_log), SESSION, SESSION)
    assert [first.cost_usd, second.cost_usd] == pytest.approx([0.0016, 0.0016])


def test_another_session_or_a_new_one_starts_a_fresh_process(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer()], [answer(session_id=OTHER, cost=0.001)], [answer()])
    _, other, fresh = turns(gateway_on(cli, monkeypatch, debug_log), None, OTHER, None)

    assert cli.resumes == [None, OTHER, None]
    assert other.failure is None
    assert other.cost_usd == pytest.approx(0.001)
    assert fresh.cost_usd == pytest.approx(0.0016)


def test_a_busy_machine_gives_claude_code_five_minutes_to_start_and_a_users_setting_wins(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    # The SDK's one minute was not enough at load 15-20 (the run failed at its start).
    monkeypatch.delenv(gateway_module.START_PATIENCE, raising=False)
    gateway_on(FakeCli(), monkeypatch, debug_log)
    assert os.environ[gateway_module.START_PATIENCE] == "300000"
    monkeypatch.setenv(gateway_module.START_PATIENCE, "90000")
    gateway_on(FakeCli(), monkeypatch, debug_log)
    assert os.environ[gateway_module.START_PATIENCE] == "90000"


def test_a_failed_turn_ends_the_process_and_the_next_turn_resumes(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli(
        [answer()],
        [AssistantMessage(content=[], model="<synthetic>", error="server_error"),
         answer(is_error=True, status=529, cost=0.0016)],
        [answer(cost=0.0004)],
    )  # fmt: skip
    _, failed, resumed = turns(gateway_on(cli, monkeypatch, debug_log), None, SESSION, SESSION)

    assert failed.failure is None
    assert failed.signals.api_error_status == 529
    assert failed.signals.assistant_error == "server_error"
    assert failed.cost_usd == 0.0
    assert cli.resumes == [None, SESSION]
    assert resumed.cost_usd == pytest.approx(0.0004)


def test_a_session_resumed_after_another_profiles_turns_asks_for_its_own_model(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    # After a switch-profile detour the session's last turn was the local model's: the
    # CLI would resume with that model's name on this backend.
    refused: list[Step] = [
        AssistantMessage(content=[], model="<synthetic>", error="rate_limit"),
        answer(is_error=True, status=429, cost=0.0),
    ]
    served: list[Step] = [
        AssistantMessage(content=[TextBlock(text="ok")], model="claude-sonnet-5-5"),
        answer(),
    ]
    cli = FakeCli(served, refused, [answer()])
    models: list[str | None] = []
    original = FakeCli.client

    def client(self: FakeCli, options: ClaudeAgentOptions, transport: object = None) -> FakeClient:
        models.append(options.model)
        return original(self, options, transport)

    monkeypatch.setattr(FakeCli, "client", client)
    turns(gateway_on(cli, monkeypatch, debug_log), None, SESSION, SESSION)
    # The first process is kept for turn 2; the refusal ends it; turn 3 starts afresh.
    assert models == [None, "claude-sonnet-5-5"]


def test_an_answer_on_another_session_is_a_failure(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer(session_id=OTHER)], [answer()])
    switched, _ = turns(gateway_on(cli, monkeypatch, debug_log), SESSION, SESSION)

    assert switched.failure is not None
    assert OTHER in switched.failure
    assert "new session" in switched.failure
    assert cli.resumes == [SESSION, SESSION]


def test_a_crash_before_the_result_is_a_failure_in_one_line(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    crash = ProcessError("Command failed with exit code 137\nmore", exit_code=137)
    cli = FakeCli(
        [AssistantMessage(content=[TextBlock(text="Writing")], model="m"), crash], [], [answer()]
    )
    crashed, silent, after = turns(gateway_on(cli, monkeypatch, debug_log), None, None, None)

    assert crashed.failure == (
        "Claude Code ended the turn without a result: Command failed with exit code 137"
    )
    assert crashed.cost_usd == 0.0
    assert crashed.session_id is None
    assert silent.failure == "Claude Code ended the turn without a result"
    assert after.failure is None
    assert cli.resumes == [None, None, None]
    assert "[claudeloop] Claude Code ended the turn without a result" in debug_log.read_text()


def test_an_exit_after_the_result_keeps_the_result(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    data = {"subtype": "success", "is_error": True, "result": "Overloaded"}
    cli = FakeCli([answer(is_error=True, status=529), ResultError("exit", data=data, exit_code=1)])
    (outcome,) = turns(gateway_on(cli, monkeypatch, debug_log), None)

    assert outcome.failure is None
    assert outcome.signals.api_error_status == 529


def resume_refused(result: str) -> FakeCli:
    """A CLI that ends a resume at once with an error result saying `result` (2.1.332)."""
    cli = FakeCli()
    cli.connect_error = ResultError(
        "Claude Code returned an error result", data={"is_error": True, "result": result}
    )
    return cli


def test_a_session_claude_code_has_no_conversation_of_is_gone_with_the_way_on(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    # CLI 2.1.332: an error result.
    said = f"No conversation found with session ID: {SESSION}"
    (outcome,) = turns(gateway_on(resume_refused(said), monkeypatch, debug_log), SESSION)
    assert outcome.failure == session_gone(SESSION)
    assert outcome.gone_session == SESSION

    # CLI 2.1.337: a start-up refusal, resume_target_not_found.
    cli = FakeCli()
    cli.connect_error = Exception("Command failed with exit code 1 (exit code: 1)")
    cli.refusal = ("resume_target_not_found", f"No conversation found with session ID: {SESSION}")
    (outcome,) = turns(gateway_on(cli, monkeypatch, debug_log), SESSION)
    assert outcome.failure == session_gone(SESSION)
    assert outcome.gone_session == SESSION
    assert session_gone(SESSION) in debug_log.read_text()


def test_a_session_that_cannot_be_resumed_for_another_reason_is_a_failure(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = resume_refused("the session's file is damaged")
    (outcome,) = turns(gateway_on(cli, monkeypatch, debug_log), SESSION)
    assert outcome.failure == (
        f"Claude Code could not resume session {SESSION}: the session's file is damaged"
    )
    assert outcome.gone_session is None


def test_a_cli_that_refused_to_start_is_a_failure_that_says_why_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli()
    cli.connect_error = Exception("Command failed with exit code 1 (exit code: 1)")
    cli.refusal = ("cwd_unavailable", "The working directory /gone does not exist")
    (outcome,) = turns(gateway_on(cli, monkeypatch, debug_log), None)

    assert outcome.failure == (
        "Claude Code refused to start (cwd_unavailable): the working directory was deleted, "
        "moved or cannot be read: run from a directory that exists (--cwd)"
    )
    assert "refused to start (cwd_unavailable)" in debug_log.read_text()


def test_a_kept_process_that_died_is_replaced_once(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer()], [answer(cost=0.0004)])
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> TurnOutcome:
        await gateway.run_turn("first", session_id=None)
        cli.query_errors.append(CLIConnectionError("process gone"))
        return await gateway.run_turn("second", session_id=SESSION)

    outcome = anyio.run(go)
    assert outcome.failure is None
    assert outcome.cost_usd == pytest.approx(0.0004)
    assert cli.resumes == [None, SESSION]
    assert cli.prompts == ["first", "second"]


def test_a_fresh_process_that_cannot_take_the_prompt_is_a_failure(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli()
    cli.query_errors.append(CLIConnectionError("broken pipe"))
    (outcome,) = turns(gateway_on(cli, monkeypatch, debug_log), None)
    assert outcome.failure == "Claude Code could not start a session: broken pipe"


def test_a_stop_of_the_cli_own_is_a_failure(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    stopped = answer(is_error=True, subtype="error_during_execution", errors=["aborted"])
    cli = FakeCli([stopped])
    (outcome,) = turns(gateway_on(cli, monkeypatch, debug_log), None)
    assert outcome.failure == "Claude Code stopped the turn: error_during_execution: aborted"


def test_a_probe_reads_its_signals_even_when_the_cli_exits_1(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    seen: list[ClaudeAgentOptions] = []

    async def fake_query(
        *, prompt: str, options: ClaudeAgentOptions, transport: object = None
    ) -> AsyncIterator[Message]:
        seen.append(options)
        yield AssistantMessage(content=[], model="<synthetic>", error="rate_limit")
        yield answer(is_error=True, status=429, cost=0.0)
        raise ResultError("exit", data={"is_error": True}, exit_code=1)

    monkeypatch.setattr(gateway_module, "query", fake_query)
    gateway = ClaudeCodeGateway(GatewaySettings(cwd=Path("/work/project"), stderr_log=debug_log))
    probe = anyio.run(gateway.probe)

    assert probe.signals.api_error_status == 429
    assert probe.signals.assistant_error == "rate_limit"
    assert probe.cost_usd == 0.0
    assert seen[0].tools == []
    assert not debug_log.exists()


def test_a_probe_that_crashes_says_so_in_the_debug_log(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    async def fake_query(
        *, prompt: str, options: ClaudeAgentOptions, transport: object = None
    ) -> AsyncIterator[Message]:
        raise ProcessError("Command failed", exit_code=1)
        yield  # pragma: no cover - makes this an async generator

    monkeypatch.setattr(gateway_module, "query", fake_query)
    gateway = ClaudeCodeGateway(GatewaySettings(cwd=Path("/work/project"), stderr_log=debug_log))
    probe = anyio.run(gateway.probe)

    assert probe.signals.api_error_status is None
    assert "probe ended without a result: Command failed" in debug_log.read_text()


def test_secrets_in_a_failure_are_blanked(monkeypatch: pytest.MonkeyPatch, debug_log: Path) -> None:
    cli = FakeCli([ProcessError("bad token sk-ant-secret-value-1")])
    monkeypatch.setattr(gateway_module, "ClaudeSDKClient", cli.client)
    settings = GatewaySettings(
        cwd=Path("/work/project"),
        env={"ANTHROPIC_API_KEY": "sk-ant-secret-value-1"},
        stderr_log=debug_log,
    )
    (outcome,) = turns(ClaudeCodeGateway(settings), None)

    assert outcome.failure is not None
    assert "sk-ant-secret-value-1" not in outcome.failure
    assert "sk-ant-secret-value-1" not in debug_log.read_text()


class Interrupted(BaseException):
    """Stands for a cancellation or a Ctrl-C arriving mid-turn."""


def test_an_interrupted_turn_ends_the_process_and_propagates(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer()], [answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> None:
        await gateway.run_turn("go", session_id=None)
        cli.turns[0] = [Interrupted()]
        await gateway.run_turn("go on", session_id=SESSION)

    with pytest.raises(Interrupted):
        anyio.run(go)
    assert cli.disconnects == 1
    assert cli.resumes == [None]


def test_closing_twice_is_harmless(monkeypatch: pytest.MonkeyPatch, debug_log: Path) -> None:
    cli = FakeCli([answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> None:
        await gateway.run_turn("go", session_id=None)
        await gateway.close()
        await gateway.close()

    anyio.run(go)
    assert cli.disconnects == 1


def retry(attempt: int) -> SystemMessage:
    data = {
        "type": "system",
        "subtype": "api_retry",
        "attempt": attempt,
        "max_retries": 10,
        "retry_delay_ms": 4000,
        "error_status": 529,
        "error": "server_error",
    }
    return SystemMessage(subtype="api_retry", data=data)


def watched(
    cli: FakeCli, monkeypatch: pytest.MonkeyPatch, debug_log: Path, control: FakeControl
) -> tuple[ClaudeCodeGateway, MemoryEvents]:
    monkeypatch.setattr(gateway_module, "ClaudeSDKClient", cli.client)
    monkeypatch.setattr(gateway_module, "STOP_POLL_SECONDS", 0.01)
    events = MemoryEvents()
    gateway = ClaudeCodeGateway(
        GatewaySettings(cwd=Path("/work/project"), stderr_log=debug_log),
        control=control,
        events=events,
    )
    return gateway, events


def test_a_stop_ends_a_turn_stuck_in_the_clis_retries_and_says_what_it_waited_for(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([retry(1), retry(2), HANG, answer()])
    gateway, events = watched(cli, monkeypatch, debug_log, FakeControl(ControlCommand.STOP))

    (outcome,) = turns(gateway, None)

    assert outcome.failure == (
        "stopped while Claude Code was retrying a failed request (attempt 2 of 10: "
        "529 server_error)"
    )
    assert cli.disconnects == 1  # the CLI is ended, not left retrying
    retries = events.of("turn.retrying")
    assert [r["attempt"] for r in retries] == [1, 2]
    assert retries[0] == {
        "type": "turn.retrying",
        "attempt": 1,
        "max_retries": 10,
        "error_status": 529,
        "error": "server_error",
        "retry_delay_ms": 4000,
    }


def test_a_stop_waits_for_a_turn_that_is_working(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    # A retry the CLI got past is no longer a wait: the turn is working again.
    working = AssistantMessage(content=[TextBlock(text="writing")], model="m")
    cli = FakeCli([retry(1), working, PAUSE, answer()])
    gateway, _ = watched(cli, monkeypatch, debug_log, FakeControl(ControlCommand.STOP))

    async def slow_turn() -> TurnOutcome:
        outcome = await gateway.run_turn("go", session_id=None)
        await gateway.close()
        return outcome

    outcome = anyio.run(slow_turn)
    assert outcome.failure is None
    assert outcome.session_id == SESSION


def init(session_id: str) -> SystemMessage:
    return SystemMessage(subtype="init", data={"type": "system", "session_id": session_id})


def test_a_new_session_is_told_the_moment_the_cli_names_it_before_the_turn_ends(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    # The driver dies mid-turn, after the CLI's init message: the id was heard by then.
    cli = FakeCli([init(SESSION), Interrupted()], [init(SESSION), answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log)
    told: list[str] = []

    async def go() -> None:
        with pytest.raises(Interrupted):
            await gateway.run_turn("go", session_id=None, on_session=told.append)
        # A session resumed is the runner's already: nothing to tell.
        await gateway.run_turn("go on", session_id=SESSION, on_session=told.append)
        await gateway.close()

    anyio.run(go)
    assert told == [SESSION]


def test_a_session_named_but_never_written_is_started_afresh_after_a_crash(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path, tmp_path: Path
) -> None:
    # Killed between the CLI's init and its first write: no transcript, nothing served,
    # and `--resume` of that id would fail with "No conversation found".
    cli = FakeCli([init(OTHER), answer(session_id=OTHER)])
    told: list[str] = []
    gateway = gateway_on(cli, monkeypatch, debug_log, tmp_path / "config")
    outcome = after_a_crash(gateway, "go", on_session=told.append)
    assert cli.resumes == [None]
    assert outcome.failure is None
    assert outcome.session_id == OTHER
    assert told == [OTHER]
    assert f"session {SESSION} was never written" in debug_log.read_text()


def test_the_first_request_of_a_session_named_but_never_written_is_billed_at_an_estimate(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path, tmp_path: Path
) -> None:
    # Seen in the crash fuzz: the request goes out as the CLI names the session, and a
    # kill before the transcript's first line (a tenth of a second later) left it served
    # and unbilled. The new session's first answer (200 in, 40 out) prices it.
    config = tmp_path / "config"
    project = config / "projects" / "-work-project"
    project.mkdir(parents=True)
    answered = {
        "type": "assistant",
        "timestamp": "2026-12-01T12:00:05Z",
        "requestId": "req_b",
        "message": {
            "model": "claude-sonnet-5-5",
            "usage": {"input_tokens": 200, "output_tokens": 40},
        },
    }
    (project / f"{OTHER}.jsonl").write_text(json.dumps(answered) + "\n")
    cli = FakeCli(
        [
            init(OTHER),
            answer(session_id=OTHER, cost=0.0016, tokens=(400, 80), session_tokens=(400, 80)),
        ]
    )
    outcome = after_a_crash(gateway_on(cli, monkeypatch, debug_log, config), "go")
    assert cli.resumes == [None]
    assert outcome.session_id == OTHER
    # Its own 0.0016 and the request the killed session sent, estimated at 0.0008.
    assert outcome.cost_usd == pytest.approx(0.0024)
    assert outcome.estimated_cost_usd == pytest.approx(0.0008)


def cut_off_transcript(config: Path) -> None:
    """The cut-off turn's transcript: one request answered (200 in, 40 out), the next
    one in flight."""
    project = config / "projects" / "-work-project"
    project.mkdir(parents=True)
    usage = {"input_tokens": 200, "output_tokens": 40}
    lines = [
        {"type": "api-request", "timestamp": "2026-12-01T12:00:01Z", "id": "r1"},
        {
            "type": "assistant",
            "timestamp": "2026-12-01T12:00:02Z",
            "requestId": "req_a",
            "requestRef": "r1",
            "message": {"model": "claude-sonnet-5-5", "usage": usage},
        },
        {"type": "api-request", "timestamp": "2026-12-01T12:00:03Z", "id": "r2"},
    ]
    (project / f"{SESSION}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_turn_sent_again_that_a_limit_refuses_leaves_the_cut_off_one_owed(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path, tmp_path: Path
) -> None:
    # Seen in the crash fuzz: the turn sent again met a closed window; its result prices
    # nothing, so the two requests of the cut-off turn went unbilled for good.
    config = tmp_path / "config"
    cut_off_transcript(config)
    refused: list[Step] = [
        AssistantMessage(content=[], model="<synthetic>", error="rate_limit"),
        answer(is_error=True, status=429, cost=0.0),
    ]
    cli = FakeCli(refused, [answer(cost=0.0016, tokens=(400, 80), session_tokens=(400, 80))])
    gateway = gateway_on(cli, monkeypatch, debug_log, config)

    async def go() -> list[TurnOutcome]:
        first = await gateway.run_turn("go on", session_id=SESSION, interrupted_at=CUT_OFF)
        # What the refused try wrote: its prompt, its request and the error's placeholder
        # answer, which a transcript read again takes for the cut-off request's answer.
        refusal = [
            {"type": "user", "timestamp": "2026-12-01T12:01:00Z", "message": {}},
            {"type": "api-request", "timestamp": "2026-12-01T12:01:01Z", "id": "r3"},
            {"type": "assistant", "timestamp": "2026-12-01T12:01:02Z", "message": {}},
        ]
        transcript = config / "projects" / "-work-project" / f"{SESSION}.jsonl"
        with transcript.open("a") as file:
            file.writelines(json.dumps(line) + "\n" for line in refusal)
        # The runner tells the next turn of the crash again, as the first still owes it.
        second = await gateway.run_turn("go on", session_id=SESSION, interrupted_at=CUT_OFF)
        await gateway.close()
        return [first, second]

    first, second = anyio.run(go)
    assert (first.cost_usd, first.cut_off_owed) == (0.0, True)
    # Its own 0.0016, the answer served before the kill 0.0008, the one in flight 0.0008.
    assert second.cost_usd == pytest.approx(0.0032)
    assert second.estimated_cost_usd == pytest.approx(0.0008)
    assert second.cut_off_owed is False


def test_a_request_in_flight_at_the_crash_is_billed_at_an_estimate(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    cut_off_transcript(config)
    # The turn sent again: 400 in, 80 out for 0.0016, so 0.000002 a weighted token.
    cli = FakeCli([answer(cost=0.0016, tokens=(400, 80), session_tokens=(400, 80))])
    outcome = after_a_crash(gateway_on(cli, monkeypatch, debug_log, config))
    # Its own 0.0016, the answer served before the kill 0.0008, the one in flight 0.0008.
    assert outcome.cost_usd == pytest.approx(0.0032)
    assert outcome.estimated_cost_usd == pytest.approx(0.0008)
    assert "billed at an estimate" in debug_log.read_text()


def writes_lost(*sessions: str, lost: tuple[str, ...] = ("transcript",)) -> SystemMessage:
    """`session_writes_lost` as CLI 2.1.332 sends it when it exits 0 (measured)."""
    data: dict[str, object] = {
        "type": "system",
        "subtype": "session_writes_lost",
        "error_code": "ENOSPC",
        "lost": list(lost),
        "uuid": "505b443e-eb72-45e3-adf9-e7cd0cc58c8e",
        "session_id": SESSION,
    }
    if sessions:
        data["transcript_session_ids"] = list(sessions)
    return SystemMessage(subtype="session_writes_lost", data=data)


# The stderr line of a CLI that exits 1 after an error result (measured, 2.1.332).
LOST_LINE = (
    "Error: Claude Code could not save all of this session's transcript under "
    "/home/u/.claude because the disk is full (ENOSPC). If you resume this session, part "
    "of the conversation may be missing. Free up space on that disk before the next run."
)


def test_a_kept_process_that_lost_its_transcript_says_so_as_the_gateway_closes_it(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer()], [answer(cost=0.002)])
    cli.exits = [[writes_lost(SESSION)]]
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> tuple[list[TurnOutcome], tuple[str, ...], tuple[str, ...]]:
        outcomes = [await gateway.run_turn("go", session_id=sid) for sid in (None, SESSION)]
        return outcomes, await gateway.close(), await gateway.close()

    outcomes, heard, again = anyio.run(go)
    # Its turns went on the one process, whole in its memory: nothing to say of them.
    assert [outcome.writes_lost for outcome in outcomes] == [(), ()]
    assert cli.resumes == [None]
    assert (heard, again) == ((SESSION,), ())
    assert f"could not save the transcript of {SESSION}" in debug_log.read_text()


def test_a_failed_turn_whose_process_says_it_on_stderr_tells_it_with_the_turn(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    refused: list[Step] = [
        AssistantMessage(content=[], model="<synthetic>", error="rate_limit"),
        answer(is_error=True, status=429, cost=0.0),
    ]
    cli = FakeCli([answer()], refused)
    # Exit 1 after an error result: only the stderr line, then the SDK's error.
    cli.exits = [[LOST_LINE, ResultError("Claude Code returned an error result")]]
    first, failed = turns(gateway_on(cli, monkeypatch, debug_log), None, SESSION)
    assert first.writes_lost == ()
    assert failed.writes_lost == (SESSION,)


def test_the_sessions_a_process_names_are_the_ones_told(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer()], [answer(session_id=OTHER)])
    cli.exits = [[writes_lost(SESSION, OTHER)]]
    # The second turn asks for another session: the first process ends as it starts.
    _, other = turns(gateway_on(cli, monkeypatch, debug_log), None, OTHER)
    assert other.writes_lost == (SESSION, OTHER)


def test_a_process_that_lost_only_its_global_config_loses_no_conversation(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = FakeCli([answer()])
    cli.exits = [[writes_lost(lost=("global_config",))]]
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> tuple[str, ...]:
        await gateway.run_turn("go", session_id=None)
        return await gateway.close()

    assert anyio.run(go) == ()
