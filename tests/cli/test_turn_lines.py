"""The line each turn gets on screen (and in `claudeloop logs`) says what really
happened: a turn held back by shared capacity was never sent, and a turn that ended in
an error is an error, not a verdict."""

from __future__ import annotations

import io
from dataclasses import replace

from claudeloop.application.ports import TurnOutcome
from claudeloop.cli.display import ConsoleView
from claudeloop.domain.signals import TurnSignals
from tests.application.fakes import rejected_turn, verdict_turn
from tests.application.test_runner import WINDOW_REJECTED, drive, harness, record

HELD_BACK = TurnOutcome(
    # As SharedCapacityGateway returns it when another loop found the window closed.
    signals=replace(
        WINDOW_REJECTED,
        is_error=True,
        result_text="not sent: process 4242 found this account's capacity closed: "
        "You've hit your 5-hour limit · resets 1:22pm (UTC)",
    ),
    structured=None,
    final_text="",
    cost_usd=0.0,
    session_id=None,
    sent=False,
)


def screen(turns: list[TurnOutcome], probes: list[TurnSignals] | None = None) -> list[str]:
    h = harness(turns, probes)
    drive(h, record())
    stream = io.StringIO()
    view = ConsoleView(stream=stream)
    for event in h.events.emitted:
        view.emit(event)
    view.close()
    return stream.getvalue().splitlines()


def test_a_turn_held_back_by_shared_capacity_is_shown_as_held_back() -> None:
    lines = screen([HELD_BACK, verdict_turn(complete=True, summary="all done")], [TurnSignals()])
    turns = [line for line in lines if line.startswith("turn ")]
    # Held back, it was no attempt: the turn sent once the window is open is turn 1 too.
    assert turns == [
        "turn 1: started",
        "turn 1: held back: process 4242 found this account's capacity closed: "
        "You've hit your 5-hour limit · resets 1:22pm (UTC)",
        "turn 1: started",
        "turn 1 answered: done ($0.01) — all done",
    ]


def test_a_turn_that_ended_in_an_error_is_shown_as_an_error() -> None:
    errored = verdict_turn(
        summary="Working on it.",
        cost=0.02,
        signals=TurnSignals(
            is_error=True, result_text="Claude Code crashed mid-turn\nstack trace here"
        ),
    )
    lines = screen([errored, verdict_turn(complete=True, summary="all done")])
    assert "turn 1: error: Claude Code crashed mid-turn, $0.02" in lines
    assert not any(line.startswith("turn 1: continue") for line in lines)
    assert "turn 2 answered: done ($0.01) — all done" in lines


def test_a_refusal_line_says_the_message_once_and_cuts_it_between_words() -> None:
    from claudeloop.application.events import TurnFinished
    from claudeloop.cli.display import event_line

    def refused(capacity: str, summary: str) -> str:
        finished = TurnFinished(
            turn=1,
            capacity=capacity,
            verdict="refused",
            summary=summary,
            cost_usd=0.0,
            session_id=None,
            denied_tools=(),
        )
        line = event_line(finished)
        assert line is not None
        return line

    missing = "There's an issue with the selected model (qwen3). It may not exist."
    quoted = f"backend misconfigured: the model was not found ({missing})"
    assert refused(quoted, missing).count(missing) == 1
    overloaded = (
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary, try "
        "again in a moment. If it persists, check status.anthropic.com."
    )
    said = refused("overloaded", overloaded).split(" — ", 1)[1]
    assert said.endswith("…")
    kept = said.removesuffix("…")
    assert overloaded.startswith(kept)
    assert overloaded[len(kept)] in " ,."  # cut between words, not mid-word


def test_a_refused_turn_and_the_probes_after_it_read_as_sentences() -> None:
    lines = screen(
        [
            rejected_turn(WINDOW_REJECTED),
            verdict_turn(summary="Wrote step2.txt."),
            verdict_turn(complete=True, summary="all done"),
        ],
        [WINDOW_REJECTED, TurnSignals()],
    )
    refused = next(line for line in lines if line.startswith("turn 1 refused: "))
    assert "$" not in refused  # a refusal that cost nothing names no price
    probes = [line for line in lines if line.startswith("probe: ")]
    assert probes[0].startswith("probe: still "), probes
    assert probes[-1] == "probe: capacity is back"
    assert "turn 2 answered, not done yet ($0.01) — Wrote step2.txt." in lines
