"""Ready at the instant a window reopens (issue 47): the runner has the gateway get
ready for the probe and the turn after it `ready_ahead` before the probe's instant, and
sends nothing until that instant; what was made ready and nothing used is ended. With
fakes and a clock the sleeper jumps: the tests say in what order, never how fast."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from datetime import timedelta

from claudeloop.domain.limits import LimitPolicies, SwitchProfile
from claudeloop.domain.loop import ControlCommand, Outcome
from claudeloop.domain.waiting import WaitPolicyConfig
from tests.application.fakes import START, FakeGateway, rejected_turn, verdict_turn
from tests.application.test_runner import (
    AHEAD,
    CREDITS_OUT,
    OK,
    WINDOW_REJECTED,
    drive,
    harness,
    record,
)

RESET = START + timedelta(hours=2)  # WINDOW_REJECTED's
# A probe interval longer than the wait: the announced reset alone decides.
AT_THE_RESET = WaitPolicyConfig(window_probe_interval=timedelta(hours=10))
DUE = RESET + AT_THE_RESET.reset_grace
SILENT_WINDOW = replace(WINDOW_REJECTED, resets_at=None)


def test_the_probe_and_the_turn_after_it_are_made_ready_ahead_and_sent_at_the_instant() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED), verdict_turn(complete=True)], probes=[OK])
    final = drive(h, record(policy=AT_THE_RESET))
    assert final.state.outcome is Outcome.DONE
    assert h.gateway.ready_times == [DUE - AHEAD]  # ready before the instant
    assert h.sleeper.slept_until == [DUE - AHEAD, DUE]
    assert h.gateway.probe_times == [DUE]  # the probe at the instant, on its ready process
    assert h.gateway.probes_on_ready == [True]
    # The turn after it, on the session's process made ready, once the probe found room.
    assert h.gateway.turn_times == [START, DUE]
    assert h.gateway.sessions == [None, "session-1"]
    assert h.gateway.turns_on_ready == [False, True]
    # Nothing went out between the refusal and the instant.
    sent = [*h.gateway.probe_times, *h.gateway.turn_times]
    assert [when for when in sent if START < when < DUE] == []
    assert h.gateway.ready == set()
    assert h.gateway.ended_unused == []


def test_getting_ready_that_takes_its_time_still_sends_the_probe_at_the_instant() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED), verdict_turn(complete=True)], probes=[OK])
    h.gateway.ready_seconds = 20.0  # a loaded machine's start, within the lead
    drive(h, record(policy=AT_THE_RESET))
    assert h.gateway.probe_times == [DUE]
    assert h.gateway.turn_times[-1] == DUE


def test_getting_ready_slower_than_the_lead_probes_once_ready_never_before() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED), verdict_turn(complete=True)], probes=[OK])
    h.gateway.ready_seconds = AHEAD.total_seconds() + 15
    drive(h, record(policy=AT_THE_RESET))
    ready = DUE - AHEAD + timedelta(seconds=h.gateway.ready_seconds)
    assert h.gateway.probe_times == [ready]  # as soon as it was ready
    assert h.gateway.probes_on_ready == [True]


def test_with_ready_ahead_zero_nothing_is_started_before_the_instant() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED), verdict_turn(complete=True)], probes=[OK])
    drive(h, record(policy=replace(AT_THE_RESET, ready_ahead=timedelta(0))))
    assert h.gateway.ready_times == []
    assert h.sleeper.slept_until == [DUE]
    assert h.gateway.probes_on_ready == [False]
    assert h.gateway.turns_on_ready == [False, False]


def test_a_wait_shorter_than_the_lead_gets_ready_as_it_begins() -> None:
    policy = WaitPolicyConfig(
        credits_probe_interval=timedelta(seconds=10), credits_probe_ceiling=timedelta(seconds=10)
    )
    h = harness([rejected_turn(CREDITS_OUT), verdict_turn(complete=True)], probes=[OK])
    drive(h, record(policy=policy))
    assert h.gateway.ready_times == [START]
    assert h.gateway.stood_down == []  # nothing to end: it begins ready
    assert h.sleeper.slept_until == [START + timedelta(seconds=10)]
    assert h.gateway.probes_on_ready == [True]
    assert h.gateway.turns_on_ready == [False, True]


def test_a_probe_that_finds_the_window_closed_with_a_long_wait_ahead_ends_what_was_ready() -> None:
    # No reset announced: a probe every five minutes; the first finds the window closed.
    h = harness(
        [rejected_turn(SILENT_WINDOW), verdict_turn(complete=True)],
        probes=[SILENT_WINDOW, OK],
    )
    final = drive(h, record())
    assert final.state.outcome is Outcome.DONE
    interval = WaitPolicyConfig().window_probe_interval
    first, second = START + interval, START + 2 * interval
    assert h.gateway.probe_times == [first, second]
    # Each wait begins with nothing ready, and is ready `ready_ahead` before its probe.
    assert h.gateway.stood_down == [START, first]
    assert h.gateway.ready_times == [first - AHEAD, second - AHEAD]
    # The first probe used its process; the session's, unused, was ended as the second
    # wait began, and started again ahead of the second probe, whose turn took it.
    assert h.gateway.ended_unused == ["turn:session-1"]
    assert h.gateway.probes_on_ready == [True, True]
    assert h.gateway.turns_on_ready == [False, True]
    assert h.gateway.ready == set()


def test_a_probe_due_again_within_the_lead_keeps_the_session_ready_for_it() -> None:
    # The window still refuses just after its reset: probed again 10 s later.
    late = replace(WINDOW_REJECTED, resets_at=RESET)
    h = harness([rejected_turn(WINDOW_REJECTED), verdict_turn(complete=True)], probes=[late, OK])
    drive(h, record(policy=AT_THE_RESET))
    retry = DUE + AT_THE_RESET.reset_retry_interval
    assert h.gateway.probe_times == [DUE, retry]
    assert h.gateway.ready_times == [DUE - AHEAD, DUE]  # the probe's process again at once
    assert h.gateway.stood_down == [START]  # only as the long wait began
    assert h.gateway.ended_unused == []  # the session's process waited for its turn
    assert h.gateway.probes_on_ready == [True, True]
    assert h.gateway.turns_on_ready == [False, True]


def test_a_stop_in_the_wait_after_getting_ready_ends_what_was_ready_and_sends_nothing() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED)], probes=[OK])
    h.sleeper.interrupt_at_sleep[1] = ControlCommand.STOP  # between ready and the instant
    final = drive(h, record(policy=AT_THE_RESET))
    assert final.state.outcome is Outcome.STOPPED
    assert h.gateway.ready_times == [DUE - AHEAD]
    assert h.gateway.probe_times == []
    assert h.gateway.closed
    assert h.gateway.ended_unused == ["probe", "turn:session-1"]
    assert h.gateway.ready == set()


def test_a_stop_while_claude_code_starts_ends_the_start_and_the_run_at_once() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED)], probes=[OK])
    h.gateway.ready_hangs = True

    def stop() -> None:
        h.control.command = ControlCommand.STOP  # `claudeloop stop` as Claude Code starts

    h.gateway.while_starting = stop
    final = drive(h, record(policy=AT_THE_RESET))
    assert final.state.outcome is Outcome.STOPPED
    assert h.gateway.ready_cancelled  # not waited for: ended as it started
    assert h.sleeper.slept_until == [DUE - AHEAD]  # no sleep to the instant after it
    assert h.gateway.probe_times == []
    assert h.gateway.ready == set()
    assert h.events.types()[-1] == "run.finished"


def test_a_turn_on_another_profile_ends_what_the_runs_own_gateway_made_ready() -> None:
    # Credits out are waited for; the probe then meets the 5-hour window, whose policy
    # sends the turns to another profile: the run's own session process goes unused.
    h = harness([rejected_turn(CREDITS_OUT)], probes=[WINDOW_REJECTED])
    local = FakeGateway(turns=deque([verdict_turn(complete=True)]), clock=h.clock)
    h.runner.profiles = lambda _name: local
    rec = record()
    policies = LimitPolicies((("five_hour", SwitchProfile("local")),))
    final = drive(h, replace(rec, spec=replace(rec.spec, limits=policies)))
    assert final.state.outcome is Outcome.DONE
    assert len(local.prompts) == 1
    assert h.gateway.ended_unused == ["turn:session-1"]
    assert h.gateway.ready == set()
