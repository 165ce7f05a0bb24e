"""Requests sent to a live run, applied by the runner at its safe points: a probe now
ends a wait, a cap raised lets the run go on, a cap reached ends it (in a wait at once,
with no probe), a lowered max-wait moves the wait's probe, a note reaches the next
turn's prompt."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from claudeloop.application.prompts import NOTE_OPENING
from claudeloop.domain.budget import Budget
from claudeloop.domain.loop import Outcome, Phase
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap
from claudeloop.domain.waiting import WaitPolicyConfig
from tests.application.fakes import START, rejected_turn, verdict_turn
from tests.application.test_runner import OK, WINDOW_REJECTED, drive, harness, record


def test_a_probe_now_in_a_wait_probes_at_once_and_the_run_goes_on() -> None:
    h = harness(
        [rejected_turn(WINDOW_REJECTED), verdict_turn(complete=True, summary="done")],
        probes=[OK],
    )
    h.sleeper.steer_at_sleep[0] = ProbeNow()
    final = drive(h, record())
    assert final.state.outcome is Outcome.DONE
    # The probe went out at once, not at the window's reset two hours on.
    assert h.gateway.probe_times == [START]
    types = h.events.types()
    assert types.index("wait.started") < types.index("probe.asked") < types.index("probe.finished")
    assert types.count("wait.started") == 1
    assert h.events.of("probe.asked")[0]["applied"] is True
    assert final.steered == 1
    assert h.control.requests() == ()  # let go of once applied


def test_a_note_in_a_wait_keeps_the_wait_and_reaches_the_next_turn() -> None:
    h = harness(
        [
            rejected_turn(WINDOW_REJECTED),
            verdict_turn(remaining=("b",)),
            verdict_turn(complete=True),
        ],
        probes=[OK],
    )
    h.sleeper.steer_at_sleep[0] = AddNote("the flaky test is known; skip it")
    final = drive(h, record())
    assert final.state.outcome is Outcome.DONE
    # The note woke the wait; the wait went on to its instant, said once.
    assert h.events.types().count("wait.started") == 1
    first, again = h.sleeper.slept_until[:2]
    assert first == again  # the same ready instant, slept to again
    assert h.gateway.probe_times[0] == h.sleeper.slept_until[2]
    assert h.events.of("note.added")[0]["text"] == "the flaky test is known; skip it"
    second, third = h.gateway.prompts[1], h.gateway.prompts[2]
    assert NOTE_OPENING in second
    assert "- the flaky test is known; skip it" in second
    assert NOTE_OPENING not in third  # said until a turn is answered, then let go of
    assert final.state.notes == ()


def test_a_probe_now_outside_a_wait_does_nothing_and_says_so() -> None:
    h = harness([verdict_turn(remaining=("b",)), verdict_turn(complete=True)])
    h.gateway.on_turn = lambda number: h.control.ask(ProbeNow()) if number == 1 else None
    final = drive(h, record())
    assert final.state.outcome is Outcome.DONE
    asked = h.events.of("probe.asked")
    assert len(asked) == 1
    assert asked[0]["applied"] is False
    assert "not waiting" in asked[0]["reason"]
    assert h.gateway.probe_times == []


def test_a_turn_cap_raised_mid_run_lets_it_go_on_and_a_resume_keeps_it() -> None:
    h = harness([verdict_turn(remaining=("b",)) for _ in range(4)] + [verdict_turn(complete=True)])
    h.gateway.on_turn = lambda number: (
        h.control.ask(RaiseCap(Cap.TURNS, 10)) if number == 1 else None
    )
    final = drive(h, record(budget=Budget(max_turns=2)))
    assert final.state.outcome is Outcome.DONE
    assert final.state.ledger.turns == 5
    assert final.spec.budget.max_turns == 10  # what a resume starts from
    assert final.state.ledger.budget.max_turns == 10
    raised = h.events.of("cap.raised")[0]
    assert (raised["cap"], raised["before"], raised["after"]) == ("max-turns", 2.0, 10.0)
    assert raised["applied"] is True


def test_a_cap_that_became_lower_than_what_was_spent_is_reached_and_ends_the_run() -> None:
    h = harness([verdict_turn(remaining=("b",), cost=0.01), verdict_turn(remaining=("b",))])
    # Sent as the first turn ran: by the safe point the run has spent more than it.
    h.gateway.on_turn = lambda number: (
        h.control.ask(RaiseCap(Cap.DOLLARS, 0.001)) if number == 1 else None
    )
    final = drive(h, record(budget=Budget(max_turns=5)))
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert final.state.reason == "budget cap reached (max-dollars)"
    assert len(h.gateway.prompts) == 1
    reached = h.events.of("cap.raised")[0]
    assert reached["applied"] is True
    assert "; reached: the run has spent $0.01" in reached["reason"]
    assert final.spec.budget.max_dollars == 0.001


def test_max_wait_raised_in_a_wait_keeps_the_run_waiting_past_the_old_one() -> None:
    closed = [rejected_turn(WINDOW_REJECTED)]
    h = harness([*closed, verdict_turn(complete=True)], probes=[WINDOW_REJECTED, OK])
    h.sleeper.steer_at_sleep[0] = RaiseCap(Cap.WAIT, 10 * 3600)
    policy = WaitPolicyConfig(max_wait=timedelta(hours=1))
    final = drive(h, record(policy=policy))
    assert final.state.outcome is Outcome.DONE
    assert final.spec.wait_policy.max_wait == timedelta(hours=10)


def test_a_request_applied_before_a_crash_is_not_applied_again() -> None:
    h = harness([verdict_turn(remaining=("b",)), verdict_turn(complete=True)])
    h.control.ask(AddNote("once"))
    rec = replace(record(), steered=1)  # the record says request 1 was applied already
    final = drive(h, rec)
    assert h.events.of("note.added") == []
    assert NOTE_OPENING not in h.gateway.prompts[0]
    assert h.control.requests() == ()  # let go of all the same
    assert final.steered == 1


def test_a_turn_cap_set_to_what_was_spent_sends_no_more_turns() -> None:
    h = harness([verdict_turn(remaining=("b",)) for _ in range(3)])
    h.gateway.on_turn = lambda number: (
        h.control.ask(RaiseCap(Cap.TURNS, 2)) if number == 2 else None
    )
    final = drive(h, record(budget=Budget(max_turns=10)))
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert len(h.gateway.prompts) == 2


# In a wait: a request wakes it, and the run decides again at once -----------------------

# The probe at the window's reset, two hours on (not the five-minute default interval).
AT_THE_RESET = WaitPolicyConfig(
    window_probe_interval=timedelta(days=1), max_wait=timedelta(hours=10)
)


def test_a_turn_cap_set_to_the_turns_answered_in_a_wait_ends_the_run_without_a_probe() -> None:
    h = harness([verdict_turn(remaining=("b",)), rejected_turn(WINDOW_REJECTED)], probes=[OK])
    h.sleeper.steer_at_sleep[0] = RaiseCap(Cap.TURNS, 1)
    h.sleeper.steer_after[0] = timedelta(minutes=20)
    final = drive(h, record(budget=Budget(max_turns=50), policy=AT_THE_RESET))
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert final.state.reason == "budget cap reached (max-turns)"
    assert h.events.of("run.finished")[0]["exit_code"] == 3  # as a cap reached after a turn
    assert h.gateway.probe_times == []
    (slept,) = h.sleeper.slept_until  # one wait, ended when the request came
    assert h.clock.now() < slept
    types = h.events.types()
    assert types.index("wait.started") < types.index("cap.raised") < types.index("run.finished")
    assert "probe.finished" not in types
    assert final.state.next_probe_at is None
    assert final.waited_seconds == 20 * 60
    raised = h.events.of("cap.raised")[0]
    assert raised["applied"] is True
    assert raised["reason"] == "max-turns 50 turns -> 1 turns; reached: the run has spent 1 turns"


def test_a_dollar_cap_lowered_below_what_was_spent_in_a_wait_ends_the_run() -> None:
    h = harness(
        [verdict_turn(remaining=("b",), cost=0.5), rejected_turn(WINDOW_REJECTED, cost=0.1)],
        probes=[OK],
    )
    h.sleeper.steer_at_sleep[0] = RaiseCap(Cap.DOLLARS, 0.3)
    final = drive(h, record(policy=AT_THE_RESET))
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert final.state.reason == "budget cap reached (max-dollars)"
    assert h.gateway.probe_times == []


def test_a_cap_reached_in_a_wait_ends_it_without_the_probe_asked_for_or_due() -> None:
    h = harness([verdict_turn(remaining=("b",)), rejected_turn(WINDOW_REJECTED)], probes=[OK])

    def asked(number: int) -> None:
        # Sent as the refused turn ran, applied as its wait wakes: the cap outranks it.
        if number == 2:
            h.control.ask(ProbeNow())
            h.control.ask(RaiseCap(Cap.TURNS, 1))

    h.gateway.on_turn = asked
    final = drive(h, record(policy=AT_THE_RESET))
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert h.gateway.probe_times == []
    assert [e["applied"] for e in h.events.of("probe.asked")] == [True]


def test_a_max_wait_lowered_in_a_wait_brings_its_probe_forward() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED)], probes=[WINDOW_REJECTED])
    h.sleeper.steer_at_sleep[0] = RaiseCap(Cap.WAIT, 3600)
    h.sleeper.steer_after[0] = timedelta(minutes=10)
    final = drive(h, record(policy=AT_THE_RESET))
    ahead = AT_THE_RESET.ready_ahead
    ready_for_reset, ready_for_moved, moved = h.sleeper.slept_until
    assert ready_for_reset == START + timedelta(hours=2) + AT_THE_RESET.reset_grace - ahead
    assert ready_for_moved == START + timedelta(hours=1) - ahead
    assert moved == START + timedelta(hours=1)  # the wait began at START
    # The instant moved is saved: a resume after a crash keeps it.
    assert any(saved.state.next_probe_at == moved for saved in h.store.saved)
    # The probe at the new end of the wait, as at any max-wait's end, then the wait ends.
    assert h.gateway.probe_times == [moved]
    assert final.state.outcome is Outcome.MAX_WAIT_EXCEEDED
    assert h.events.types().count("wait.started") == 1


def test_a_max_wait_lowered_below_what_was_waited_ends_the_wait_without_a_probe() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED)], probes=[OK])
    # Asked as 45 minutes (the wait then shorter), applied an hour in: already past.
    h.sleeper.steer_at_sleep[0] = RaiseCap(Cap.WAIT, 45 * 60)
    h.sleeper.steer_after[0] = timedelta(hours=1)
    final = drive(h, record(policy=AT_THE_RESET))
    assert final.state.outcome is Outcome.MAX_WAIT_EXCEEDED
    assert h.events.of("run.finished")[0]["exit_code"] == 4
    assert h.gateway.probe_times == []
    assert final.spec.wait_policy.max_wait == timedelta(minutes=45)
    assert "; reached: the run has spent 3600 s" in h.events.of("cap.raised")[0]["reason"]


def test_a_note_in_a_wait_is_kept_in_the_record_until_the_next_turn() -> None:
    h = harness(
        [rejected_turn(WINDOW_REJECTED), verdict_turn(complete=True)],
        probes=[OK],
    )
    h.sleeper.steer_at_sleep[0] = AddNote("use the staging database")
    final = drive(h, record(policy=AT_THE_RESET))
    assert final.state.outcome is Outcome.DONE
    waiting = [s for s in h.store.saved if s.state.phase is Phase.WAITING]
    assert waiting[-1].state.notes == ("use the staging database",)  # what status reads
    assert final.state.notes == ()  # the next turn was answered: said
