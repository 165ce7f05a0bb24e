"""A session Claude Code has no conversation of (its transcript removed after
cleanupPeriodDays, or under another config directory or machine): a run with a person at
hand fails saying how to go on, a fleet's run goes on in a new session by itself, and
`resume --new-session` goes on in one, told the task, what is done and what is left."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from claudeloop.application.ports import TurnOutcome
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.loop import Outcome, reopen
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.startup import session_gone
from tests.application.fakes import verdict_turn
from tests.application.test_runner import Harness, harness, record


def gone(session_id: str) -> TurnOutcome:
    """What the gateway brings back when the CLI has no conversation of the session."""
    return TurnOutcome(
        signals=TurnSignals(),
        structured=None,
        final_text="",
        cost_usd=0.0,
        session_id=None,
        failure=session_gone(session_id),
        gone_session=session_id,
    )


def after_one_turn() -> RunRecord:
    """A run that answered one turn on s-1 and stopped at its cap, reopened with the cap
    raised: what `claudeloop resume` drives."""
    h = harness([verdict_turn(remaining=("write c",), session_id="s-1", cost=0.25)])
    capped = replace(record(task="Build the three files."), spec=_spec(Budget(max_turns=1)))
    capped = replace(capped, state=replace(capped.state, ledger=BudgetLedger(Budget(max_turns=1))))
    ran = drive(h, capped)
    assert (ran.state.outcome, ran.session_id) == (Outcome.BUDGET_EXHAUSTED, "s-1")
    spec = _spec(Budget())
    return replace(
        ran,
        spec=spec,
        state=reopen(replace(ran.state, ledger=replace(ran.state.ledger, budget=spec.budget))),
    )


def _spec(budget: Budget) -> RunSpec:
    return replace(record().spec, task="Build the three files.", budget=budget)


def drive(h: Harness, rec: RunRecord, *, resumed: bool = False, new: bool = False) -> RunRecord:
    async def go() -> RunRecord:
        return await h.runner.drive(rec, resumed=resumed, new_session=new)

    return anyio.run(go)


def test_a_gone_session_ends_the_run_with_one_line_naming_the_way_on() -> None:
    before = after_one_turn()
    h = harness([gone("s-1")])
    final = drive(h, before, resumed=True)
    assert final.state.outcome is Outcome.FAILED
    assert final.state.reason == session_gone("s-1")
    assert "claudeloop resume --new-session" in (final.state.reason or "")
    assert h.gateway.sessions == ["s-1"]  # nothing else sent
    assert final.session_id == "s-1"  # kept: a person may mend CLAUDE_CONFIG_DIR instead
    assert final.gone_sessions == ()


def test_resume_new_session_goes_on_in_a_new_session_told_what_is_done_and_left() -> None:
    before = after_one_turn()
    h = harness([verdict_turn(complete=True, summary="all done", session_id="s-2")])
    final = drive(h, before, resumed=True, new=True)
    assert final.state.outcome is Outcome.DONE
    assert h.gateway.sessions == [None]  # s-1 never resumed
    handoff = h.gateway.prompts[0]
    assert "Build the three files." in handoff
    assert "its conversation is no longer available" in handoff
    assert "- write c" in handoff  # what the earlier session said was left
    assert final.gone_sessions == ("s-1",)
    assert final.session_id == "s-2"
    # The ledger goes on: the first turn's spend and count are kept.
    assert final.state.ledger.turns == 2
    assert final.state.ledger.dollars == pytest.approx(0.26)
    (replaced,) = h.events.of("session.replaced")
    assert replaced == {
        "type": "session.replaced",
        "session_id": "s-1",
        "reason": "claudeloop resume --new-session",
    }
    assert h.events.types().index("session.replaced") < h.events.types().index("turn.started")


def test_a_fleets_run_whose_session_is_gone_goes_on_in_a_new_session_by_itself() -> None:
    before = after_one_turn()
    h = harness([gone("s-1"), verdict_turn(complete=True, session_id="s-2")])
    h.runner.new_session_if_gone = True
    final = drive(h, before, resumed=True)
    assert final.state.outcome is Outcome.DONE
    assert h.gateway.sessions == ["s-1", None]
    assert "its conversation is no longer available" in h.gateway.prompts[1]
    assert final.gone_sessions == ("s-1",)
    assert [e["type"] for e in h.events.events if e["type"].startswith("turn.")] == [
        "turn.started",
        "turn.started",
        "turn.finished",
    ]  # the refused resume is no failed turn, and the turn keeps its number
    assert [e["turn"] for e in h.events.of("turn.started")] == [2, 2]
    # Saved before it is said: a crash now resumes the new session, never s-1.
    at_replacing = next(saved for saved in h.store.saved if saved.gone_sessions)
    assert at_replacing.session_id is None
