"""Whole turns through the real CLI: files written, verdicts, one session, probes, refusals."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from claudeloop.adapters.claude_code import ClaudeCodeGateway
from claudeloop.application.ports import ProbeOutcome, TurnOutcome
from claudeloop.domain.capacity import Available
from claudeloop.domain.classify import classify
from claudeloop.domain.completion import DEFAULT_DONE_MARKER, Done, evaluate
from claudeloop.domain.startup import session_gone
from claudeloop.rehearsal import RehearsalServer, load_scenario
from tests.contract.conftest import SCENARIOS, gateway_for, run

pytestmark = pytest.mark.e2e


def turns(gateway: ClaudeCodeGateway, *sessions: str | None) -> list[TurnOutcome]:
    """One turn per entry; None starts a session, "" continues the one the last turn was on."""

    async def go() -> list[TurnOutcome]:
        outcomes: list[TurnOutcome] = []
        try:
            for requested in sessions:
                session = outcomes[-1].session_id if requested == "" and outcomes else requested
                prompt = "Work through the task."
                outcomes.append(await gateway.run_turn(prompt, session_id=session))
        finally:
            await gateway.close()
        return outcomes

    return run(go)


def transcripts(home: Path) -> list[Path]:
    return sorted((home / ".claude" / "projects").glob("*/*.jsonl"))


def test_two_turns_write_files_and_stay_on_one_session(tmp_path: Path) -> None:
    project = tmp_path / "project"
    with RehearsalServer(load_scenario(SCENARIOS / "two_turns.toml")) as server:
        first, second = turns(gateway_for(server, tmp_path, "oauth"), None, "")
        # A later claudeloop process resumes the same session by its id.
        (third,) = turns(gateway_for(server, tmp_path, "oauth"), first.session_id)
        state = server.state()

    assert (project / "first.txt").read_text() == "one\n"
    assert (project / "second.txt").read_text() == "two\n"
    for outcome in (first, second, third):
        assert outcome.failure is None, outcome.failure
        assert outcome.cost_usd > 0
        assert outcome.denied_tools == ()
        assert classify(outcome.signals) == Available()
    assert first.structured is not None
    assert not first.structured.complete
    assert first.structured.remaining_work == ("Write second.txt",)
    assert first.structured.summary == "Wrote first.txt."
    assert second.structured is not None
    assert second.structured.complete
    assert second.structured.blocked_on is None
    assert first.session_id is not None
    assert second.session_id == first.session_id
    assert third.session_id == first.session_id
    assert [path.stem for path in transcripts(tmp_path / "home")] == [first.session_id]
    assert state["verdicts"] == 3


def test_a_probe_costs_little_and_leaves_no_session(tmp_path: Path) -> None:
    with RehearsalServer(load_scenario(SCENARIOS / "two_turns.toml")) as server:
        gateway = gateway_for(server, tmp_path, "oauth")

        async def probe() -> ProbeOutcome:
            try:
                return await gateway.probe()
            finally:
                await gateway.close()

        outcome = run(probe)
        state = server.state()

    assert classify(outcome.signals) == Available()
    # A subscription's healthy answer still carries an `allowed` rate-limit event.
    assert outcome.signals.rate_limit_status == "allowed"
    assert outcome.signals.result_text == "ok"
    assert outcome.cost_usd > 0
    assert [request["kind"] for request in state["requests"]] == ["probe"]
    assert state["turns"] == 0
    assert transcripts(tmp_path / "home") == []


def test_a_refused_shell_command_is_named_and_the_turn_goes_on(tmp_path: Path) -> None:
    with RehearsalServer(load_scenario(SCENARIOS / "shell_refused.toml")) as server:
        (outcome,) = turns(gateway_for(server, tmp_path, "api_key"), None)

    assert outcome.failure is None, outcome.failure
    assert outcome.denied_tools == ("Bash",)
    assert (tmp_path / "project" / "notes.txt").exists()
    assert outcome.structured is not None
    assert outcome.structured.remaining_work == ("Run the script",)


def test_without_structured_output_the_marker_decides(tmp_path: Path) -> None:
    with RehearsalServer(load_scenario(SCENARIOS / "marker.toml")) as server:
        gateway = gateway_for(server, tmp_path, "local", structured_output=False)
        (outcome,) = turns(gateway, None)

    assert outcome.failure is None, outcome.failure
    assert outcome.structured is None
    assert DEFAULT_DONE_MARKER in outcome.final_text
    assert isinstance(evaluate(None, final_text=outcome.final_text), Done)


def test_an_unknown_session_is_a_failure_not_a_new_session(tmp_path: Path) -> None:
    unknown = "0b4b9d3a-54c1-4c2b-9a57-1d7b3c0f8e11"
    with RehearsalServer(load_scenario(SCENARIOS / "two_turns.toml")) as server:
        (outcome,) = turns(gateway_for(server, tmp_path, "oauth"), unknown)
        state = server.state()

    # 2.1.332 said it in an error result, 2.1.337 refuses to start
    # (resume_target_not_found): either way one line with the fix, and the session named.
    assert outcome.failure == session_gone(unknown)
    assert outcome.gone_session == unknown
    assert state["requests"] == []
    assert not (tmp_path / "project" / "first.txt").exists()


def test_a_cli_that_dies_at_once_is_a_one_line_failure(tmp_path: Path) -> None:
    cli = tmp_path / "claude"
    cli.write_text("#!/bin/sh\necho 'fatal: cannot start' >&2\nexit 3\n")
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    with RehearsalServer(load_scenario(SCENARIOS / "two_turns.toml")) as server:
        (outcome,) = turns(gateway_for(server, tmp_path, "oauth", cli_path=cli), None)

    assert outcome.failure is not None
    assert outcome.failure.startswith("Claude Code ")
    assert "\n" not in outcome.failure
    assert "fatal: cannot start" in (tmp_path / "debug.log").read_text()


def test_the_sdk_waits_for_a_start_as_long_as_claudeloop_gives_it() -> None:
    """The SDK reads its initialize timeout from CLAUDE_CODE_STREAM_CLOSE_TIMEOUT at each
    connect (sdk_gateway.be_patient_at_start relies on it); a release that renames it
    would put a busy machine's runs back on one minute, and the canary says so here."""
    import inspect
    import sys

    from claude_agent_sdk import ClaudeSDKClient

    from claudeloop.adapters.claude_code.sdk_gateway import START_PATIENCE

    client = inspect.getsource(sys.modules[ClaudeSDKClient.__module__])
    assert f'os.environ.get("{START_PATIENCE}"' in client
