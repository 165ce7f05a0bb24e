"""Claude Code started ahead of a probe's instant (`get_ready`), with the SDK client
played by a fake: the probe's process and the session's are started and sent nothing;
at the instant only the prompts go; what nothing uses is ended; an idle process is
never taken for a silent one, and a turn on it is watched once it is sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    CLIConnectionError,
    Message,
    TextBlock,
)

from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings
from claudeloop.adapters.claude_code import sdk_gateway as gateway_module
from claudeloop.adapters.claude_code.options import PROBE_PROMPT
from tests.adapters.claude_code.test_gateway_watchdog import WATCHDOG
from tests.adapters.claude_code.test_sdk_gateway import (
    HANG,
    OTHER,
    SESSION,
    FakeCli,
    FakeClient,
    answer,
    init,
)


class StartedCli(FakeCli):
    """A FakeCli that keeps the options each process was started with, in order."""

    def __init__(self, *turns: list[Message | BaseException]) -> None:
        super().__init__(*turns)
        self.started: list[ClaudeAgentOptions] = []

    def client(self, options: ClaudeAgentOptions, transport: object = None) -> FakeClient:
        self.started.append(options)
        return super().client(options, transport)

    def probes_started(self) -> int:
        return sum(1 for options in self.started if options.tools == [])

    def sessions_started(self) -> list[str | None]:
        return [options.resume for options in self.started if options.tools != []]


def gateway_on(cli: FakeCli, monkeypatch: pytest.MonkeyPatch, debug_log: Path) -> ClaudeCodeGateway:
    monkeypatch.setattr(gateway_module, "ClaudeSDKClient", cli.client)
    return ClaudeCodeGateway(
        GatewaySettings(cwd=Path("/work/project"), stderr_log=debug_log), watchdog=WATCHDOG
    )


@pytest.fixture
def debug_log(tmp_path: Path) -> Path:
    return tmp_path / "debug.log"


def probe_answer() -> list[Message | BaseException]:
    return [AssistantMessage(content=[TextBlock(text="ok")], model="m"), answer(cost=0.0001)]


def test_getting_ready_starts_the_probe_and_the_session_and_sends_neither_a_prompt(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli(probe_answer(), [answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log)
    before_the_instant: list[str] = []

    async def go() -> None:
        await gateway.get_ready(SESSION)
        before_the_instant.extend(cli.prompts)
        probe = await gateway.probe()
        assert probe.cost_usd == pytest.approx(0.0001)
        turn = await gateway.run_turn("go on", session_id=SESSION)
        assert turn.failure is None
        await gateway.close()

    anyio.run(go)
    assert before_the_instant == []  # nothing was sent while they waited
    assert cli.prompts == [PROBE_PROMPT, "go on"]  # at the instant, only the prompts
    # No process started at the instant: the probe's and the session's, both ahead.
    assert cli.probes_started() == 1
    assert cli.sessions_started() == [SESSION]
    log = debug_log.read_text()
    assert f"started ahead: the probe's and session {SESSION}'s Claude Code, idle" in log
    assert log.count("probe: sent on the Claude Code process started ahead") == 1
    assert log.count("turn: sent on the Claude Code process started ahead") == 1
    probe_options = next(options for options in cli.started if options.tools == [])
    assert probe_options.max_turns == 1
    assert "no-session-persistence" in probe_options.extra_args


def test_a_probes_process_is_ended_once_the_turn_after_it_is_sent_not_before(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    # Ending a process takes a moment (its SIGTERM handled): not on the way to the turn.
    cli = StartedCli(probe_answer(), [answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> list[int]:
        await gateway.get_ready(SESSION)
        await gateway.probe()
        after_the_probe = cli.disconnects
        await gateway.run_turn("go on", session_id=SESSION)
        after_the_turn = cli.disconnects
        await gateway.close()
        return [after_the_probe, after_the_turn, cli.disconnects]

    # The probe's once the turn was sent; the session's as the gateway closed.
    assert anyio.run(go) == [0, 1, 2]


def test_a_probes_process_not_followed_by_a_turn_is_ended_as_the_wait_goes_on(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli(probe_answer(), probe_answer())
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> list[int]:
        await gateway.get_ready(SESSION)
        await gateway.probe()  # finds the window closed: the wait goes on
        await gateway.get_ready(SESSION)  # the next probe is due within the lead
        ended = cli.disconnects
        await gateway.probe()
        await gateway.stand_down()
        return [ended, cli.disconnects]

    # The first probe's once the next wait got ready; the second's and the session's
    # as the gateway stood down.
    assert anyio.run(go) == [1, 3]
    assert cli.sessions_started() == [SESSION]
    assert cli.probes_started() == 2


def test_what_nothing_used_is_ended_by_stand_down_and_by_close_unheard(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli()
    # What a process would say as it exits: one never prompted is not heard out.
    cli.exits = [[HANG], [HANG]]
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> list[int]:
        await gateway.get_ready(SESSION)
        await gateway.stand_down()
        stood_down = cli.disconnects
        await gateway.get_ready(SESSION)
        lost = await gateway.close()
        assert lost == ()
        return [stood_down, cli.disconnects]

    assert anyio.run(go) == [2, 4]
    assert cli.prompts == []
    assert len(cli.exits) == 2  # neither was asked for its last words


def test_getting_ready_twice_keeps_the_session_started_ahead(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli([answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> None:
        await gateway.get_ready(SESSION)
        await gateway.get_ready(SESSION)
        await gateway.run_turn("go on", session_id=SESSION)
        await gateway.close()

    anyio.run(go)
    assert cli.sessions_started() == [SESSION]


def test_an_idle_process_started_ahead_is_never_taken_for_a_silent_one(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli([answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> None:
        await gateway.get_ready(SESSION)
        await anyio.sleep(WATCHDOG.silence * 3)  # idle, three times the silence allowed
        turn = await gateway.run_turn("go on", session_id=SESSION)
        assert turn.silent is None
        assert turn.failure is None
        await gateway.close()

    anyio.run(go)
    assert cli.sessions_started() == [SESSION]  # the same process took the turn


def test_a_turn_on_a_process_started_ahead_is_watched_once_it_is_sent(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli([init(SESSION), HANG])
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> None:
        await gateway.get_ready(SESSION)
        turn = await gateway.run_turn("go on", session_id=SESSION)
        assert turn.silent is not None  # ended by the watchdog, told as silent
        await gateway.close()

    anyio.run(go)


def test_a_new_session_started_ahead_takes_the_first_turn(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli([init(SESSION), answer()])
    gateway = gateway_on(cli, monkeypatch, debug_log)
    named: list[str] = []

    async def go() -> None:
        await gateway.get_ready(None)
        turn = await gateway.run_turn("go on", session_id=None, on_session=named.append)
        assert turn.session_id == SESSION
        await gateway.close()

    anyio.run(go)
    assert cli.sessions_started() == [None]
    assert named == [SESSION]


def test_a_turn_on_another_session_ends_the_one_started_ahead(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli([answer(session_id=OTHER)])
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> None:
        await gateway.get_ready(SESSION)
        await gateway.run_turn("go on", session_id=OTHER)
        await gateway.close()

    anyio.run(go)
    assert cli.sessions_started() == [SESSION, OTHER]
    assert cli.prompts == ["go on"]


def test_a_session_that_cannot_be_started_ahead_is_left_to_the_turn_to_say_why(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli()
    cli.connect_error = CLIConnectionError("Command failed with exit code 1")
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> str | None:
        await gateway.get_ready(SESSION)  # never raises: what fails is the turn's to say
        turn = await gateway.run_turn("go on", session_id=SESSION)
        await gateway.close()
        return turn.failure

    failure = anyio.run(go)
    assert "] started ahead:" not in debug_log.read_text()  # nothing was
    assert (
        failure
        == f"Claude Code could not resume session {SESSION}: Command failed with exit code 1"
    )
    log = debug_log.read_text()
    assert f"could not be started ahead, resuming session {SESSION}" in log
    assert "probe: Claude Code could not be started ahead" in log


def test_a_stop_while_claude_code_starts_ahead_leaves_nothing_started(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli([answer()])
    cli.connect_hangs = True  # as a loaded machine's slow start, which a stop cuts short
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> None:
        with anyio.move_on_after(0.2):
            await gateway.get_ready(SESSION)
        cli.connect_hangs = False
        await gateway.run_turn("go on", session_id=SESSION)
        await gateway.close()

    anyio.run(go)
    # The turn started a process of its own: nothing half-started was kept.
    assert cli.resumes == [SESSION]


def test_a_probe_whose_process_died_while_it_waited_starts_another(
    monkeypatch: pytest.MonkeyPatch, debug_log: Path
) -> None:
    cli = StartedCli()
    cli.query_errors.append(CLIConnectionError("process gone"))
    asked: list[str] = []

    async def fresh_probe(
        *, prompt: str, options: ClaudeAgentOptions, transport: object = None
    ) -> AsyncIterator[Message]:
        asked.append(prompt)
        for step in probe_answer():
            assert isinstance(step, Message)
            yield step

    monkeypatch.setattr(gateway_module, "query", fresh_probe)
    gateway = gateway_on(cli, monkeypatch, debug_log)

    async def go() -> float:
        await gateway.get_ready(SESSION)
        probe = await gateway.probe()
        await gateway.close()
        return probe.cost_usd

    assert anyio.run(go) == pytest.approx(0.0001)
    assert asked == [PROBE_PROMPT]
    assert "probe: the Claude Code process started ahead was gone" in debug_log.read_text()
