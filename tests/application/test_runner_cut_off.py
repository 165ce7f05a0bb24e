"""Turns ended before their result: by the watchdog (Claude Code silent too long), sent
again on the same session or waited out; by a signal, the run stopped with the turn in
flight for a resume to send again. Fakes of every port; the clock never read for a
duration."""

from __future__ import annotations

from dataclasses import replace

from claudeloop.application.ports import TurnOutcome
from claudeloop.application.summary import result_object, summary_markdown
from claudeloop.domain.loop import SILENT_TURNS_SENT_AGAIN, Interrupt, Outcome
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.watchdog import AwaitingAnswer, RunningTools, SilentTurn, ToolCall
from tests.application.fakes import verdict_turn
from tests.application.test_runner import OK, drive, harness, record
from tests.application.test_runner_verification import verified

SILENT = SilentTurn(seconds=91.0, activity=AwaitingAnswer())


def silent(session_id: str | None = "s-1", during: SilentTurn = SILENT) -> TurnOutcome:
    """What the gateway says of a turn its watchdog ended."""
    return TurnOutcome(
        signals=TurnSignals(),
        structured=None,
        final_text="",
        cost_usd=0.0,
        session_id=None,
        failure=f"{during.reason}; the turn was ended",
        silent=during,
    )


def interrupted(by: Interrupt) -> TurnOutcome:
    return replace(silent(), silent=None, interrupted=by, failure="the run was stopped")


def test_a_silent_turn_is_sent_again_at_once_under_its_number_on_the_same_session() -> None:
    h = harness(
        [
            verdict_turn(remaining=("more",), session_id="s-1"),
            silent(),
            verdict_turn(complete=True, session_id="s-1"),
        ]
    )
    final = drive(h, record())

    assert final.state.outcome is Outcome.DONE
    assert h.gateway.sessions == [None, "s-1", "s-1"]
    assert h.gateway.prompts[1] == h.gateway.prompts[2]  # the same turn, the same words
    turns = [(e["type"], e.get("turn")) for e in h.events.events if e["type"].startswith("turn.")]
    assert turns == [
        ("turn.started", 1),
        ("turn.finished", 1),
        ("turn.started", 2),
        ("turn.silent", 2),
        ("turn.started", 2),
        ("turn.finished", 2),
    ]
    (said,) = h.events.of("turn.silent")
    assert said == {
        "type": "turn.silent",
        "turn": 2,
        "seconds": 91.0,
        "awaiting": "the model's answer",
        "action": "sent_again",
    }
    # What the service served the silent turn is billed with the one sent again.
    started = h.gateway.turn_times[1]
    assert h.gateway.interrupted == [None, None, started]
    assert final.interrupted_at is None
    assert (final.state.ledger.turns, final.state.ledger.attempts) == (2, 2)
    assert final.state.errored_turns == 0


def test_silence_in_a_row_past_the_limit_is_waited_out_as_an_outage_then_goes_on() -> None:
    tools = SilentTurn(seconds=200.0, activity=RunningTools((ToolCall("Bash", 120),)))
    h = harness(
        [
            *[silent() for _ in range(SILENT_TURNS_SENT_AGAIN)],
            silent(during=tools),
            verdict_turn(complete=True, session_id="s-1"),
        ],
        probes=[OK],
    )
    final = drive(h, record())

    assert final.state.outcome is Outcome.DONE
    said = h.events.of("turn.silent")
    assert [e["action"] for e in said] == ["sent_again"] * SILENT_TURNS_SENT_AGAIN + ["wait"]
    assert said[-1]["awaiting"] == "tools to return (Bash)"
    assert {e["turn"] for e in said} == {1}
    types = h.events.types()
    assert types.index("wait.started") > types.index("turn.silent")
    assert types.count("probe.finished") == 1
    assert h.events.of("wait.started")[0]["capacity_kind"] == "overloaded"
    assert final.state.silent_turns == 0  # the answered turn ended the row
    assert "turn.failed" not in types


def test_a_signal_mid_turn_stops_the_run_with_the_turn_kept_for_a_resume() -> None:
    h = harness(
        [verdict_turn(remaining=("more",), session_id="s-1"), interrupted(Interrupt.TERMINATE)]
    )
    # The driver hears the signal while turn 2 runs; the gateway cuts the turn off.
    h.gateway.on_turn = lambda n: h.control.signal(Interrupt.TERMINATE) if n == 2 else None
    final = drive(h, record())

    assert final.state.outcome is Outcome.STOPPED
    assert final.state.exit_code == 143
    assert final.state.reason == "stopped by SIGTERM in turn 2, which a resume sends again"
    assert final.turn_in_flight == 2
    assert final.session_id == "s-1"
    assert final.interrupted_at == h.gateway.turn_times[1]
    types = h.events.types()
    assert "turn.failed" not in types  # a stop, not a failure
    assert types[-2:] == ["turn.started", "run.finished"]
    assert h.events.of("run.finished")[0]["exit_code"] == 143
    assert result_object(final)["exit_code"] == 143
    assert "**stopped** (exit 143)" in summary_markdown(final)

    # The resume sends the cut-off turn again under its number, billing it from then.
    again = harness([verdict_turn(complete=True, session_id="s-1")])
    resumed = drive(again, replace(final, state=replace(final.state, outcome=None)), resumed=True)
    assert resumed.state.outcome is Outcome.DONE
    assert [e["turn"] for e in again.events.of("turn.interrupted")] == [2]
    assert [e["turn"] for e in again.events.of("turn.started")] == [2]
    assert again.gateway.sessions == ["s-1"]
    assert again.gateway.interrupted == [h.gateway.turn_times[1]]


def test_a_signal_heard_between_turns_stops_at_the_safe_point_with_its_exit_code() -> None:
    h = harness([verdict_turn(remaining=("more",), session_id="s-1"), verdict_turn()])
    h.gateway.on_turn = lambda n: h.control.signal(Interrupt.CTRL_C)
    final = drive(h, record())

    assert final.state.outcome is Outcome.STOPPED
    assert final.state.exit_code == 130
    assert final.state.reason == "stopped by Ctrl-C (SIGINT)"
    assert final.turn_in_flight is None
    assert len(h.gateway.prompts) == 1


def test_a_silent_review_is_asked_again_and_a_signal_during_one_stops_the_run() -> None:
    h = harness([verdict_turn(complete=True, session_id="s-1")])
    rec, _, reviewer = verified(
        h, checks=(), review=True, reviews=[silent(None), verdict_turn(complete=True)]
    )
    final = drive(h, rec)
    assert final.state.outcome is Outcome.DONE
    assert len(reviewer.prompts) == 2
    assert [e["action"] for e in h.events.of("turn.silent")] == ["sent_again"]
    assert final.interrupted_at is None  # a review's session keeps nothing to bill from

    h = harness([verdict_turn(complete=True, session_id="s-1")])
    rec, _, reviewer = verified(h, checks=(), review=True, reviews=[interrupted(Interrupt.CTRL_C)])
    final = drive(h, rec)
    assert final.state.outcome is Outcome.STOPPED
    assert final.state.exit_code == 130
    assert final.state.reason == "stopped by Ctrl-C (SIGINT)"
    assert final.turn_in_flight is None  # a review is no turn: the resume verifies again
    assert "turn.failed" not in h.events.types()
