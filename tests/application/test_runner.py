"""The runner with fakes of every port: order and counts of what it sends, and when."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from claudeloop.application.durations import duration_said
from claudeloop.application.ports import TurnOutcome
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.runner import Runner
from claudeloop.application.summary import result_object, summary_markdown
from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.capacity import AuthenticationFailed, BackendMisconfigured, WindowExhausted
from claudeloop.domain.loop import ControlCommand, Outcome, Phase, RunState, reopen
from claudeloop.domain.signals import TurnSignals, WindowUsage
from claudeloop.domain.waiting import AnnouncedReset, WaitPolicyConfig
from tests.application.fakes import (
    START,
    FakeClock,
    FakeControl,
    FakeGateway,
    FakeSleeper,
    FakeTree,
    MemoryEvents,
    MemoryPlans,
    MemoryStore,
    rejected_turn,
    verdict_turn,
)
from tests.json_view import plain

WINDOW_REJECTED = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    resets_at=START + timedelta(hours=2),
    api_error_status=429,
    assistant_error="rate_limit",
)
CREDITS_OUT = TurnSignals(assistant_error="billing_error", api_error_status=400)
# How long before a probe the gateway gets ready for it: each wait sleeps to then first.
AHEAD = WaitPolicyConfig().ready_ahead
AUTH_FAILED = TurnSignals(assistant_error="authentication_failed", api_error_status=401)
OK = TurnSignals()


@dataclass
class Harness:
    gateway: FakeGateway
    clock: FakeClock
    control: FakeControl
    sleeper: FakeSleeper
    events: MemoryEvents
    store: MemoryStore
    runner: Runner
    plans: MemoryPlans
    tree: FakeTree


def harness(turns: list[TurnOutcome], probes: list[TurnSignals] | None = None) -> Harness:
    clock = FakeClock()
    control = FakeControl()
    sleeper = FakeSleeper(clock=clock, control=control)
    gateway = FakeGateway(turns=deque(turns), probes=deque(probes or []), clock=clock)
    events = MemoryEvents()
    store = MemoryStore()
    plans = MemoryPlans()
    tree = FakeTree()
    runner = Runner(
        gateway=gateway,
        clock=clock,
        sleeper=sleeper,
        events=events,
        store=store,
        control=control,
        plans=plans,
        tree=tree,
    )
    return Harness(gateway, clock, control, sleeper, events, store, runner, plans, tree)


def record(
    *,
    task: str = "Build it.",
    plan_path: Path | None = None,
    budget: Budget | None = None,
    policy: WaitPolicyConfig | None = None,
    tmp: Path = Path("."),
) -> RunRecord:
    spec = RunSpec(
        cwd=tmp,
        task=task,
        plan_path=plan_path,
        budget=budget or Budget(),
        wait_policy=policy or WaitPolicyConfig(),
    )
    return RunRecord(
        run_id="run-1",
        spec=spec,
        state=RunState(ledger=BudgetLedger(budget=spec.budget)),
        started_at=START,
    )


def drive(h: Harness, rec: RunRecord, *, resumed: bool = False) -> RunRecord:
    async def go() -> RunRecord:
        return await h.runner.drive(rec, resumed=resumed)

    return anyio.run(go)


def test_runs_until_the_verdict_says_done_on_one_session() -> None:
    h = harness(
        [
            verdict_turn(remaining=("write b",), session_id="s-1"),
            verdict_turn(complete=True, summary="all done", session_id="s-1"),
        ]
    )
    final = drive(h, record())
    assert final.state.outcome is Outcome.DONE
    assert final.state.phase is Phase.COMPLETE
    assert h.gateway.sessions == [None, "s-1"]
    assert final.state.ledger.turns == 2
    assert h.events.types()[0] == "run.started"
    assert h.events.types()[-1] == "run.finished"
    assert h.events.of("run.finished")[0]["exit_code"] == 0


def test_continue_prompt_names_what_is_left() -> None:
    h = harness(
        [
            verdict_turn(remaining=("write the parser", "add tests")),
            verdict_turn(complete=True),
        ]
    )
    drive(h, record())
    assert "write the parser" in h.gateway.prompts[1]
    assert "add tests" in h.gateway.prompts[1]


def test_closed_window_waits_until_reset_plus_grace_then_probes_then_resumes() -> None:
    policy = WaitPolicyConfig(
        window_probe_interval=timedelta(hours=10), reset_grace=timedelta(seconds=60)
    )
    h = harness(
        [
            verdict_turn(remaining=("b",)),
            rejected_turn(WINDOW_REJECTED, complete=True),
            verdict_turn(complete=True),
        ],
        probes=[OK],
    )
    final = drive(h, record(policy=policy))
    reset = START + timedelta(hours=2)
    due = reset + timedelta(seconds=60)
    assert h.sleeper.slept_until == [due - AHEAD, due]
    assert h.gateway.ready_times == [due - AHEAD]
    assert h.gateway.probe_times == [due]
    # The Done claimed on the rejected turn did not end the run; the third turn did.
    assert len(h.gateway.prompts) == 3
    assert h.gateway.turn_times[2] >= reset
    assert final.state.outcome is Outcome.DONE
    assert final.state.ledger.turns == 2
    assert final.state.ledger.attempts == 3
    assert final.waited_seconds == (reset + timedelta(seconds=60) - START).total_seconds()


def test_a_silent_refusal_waits_for_the_reset_the_answers_before_it_announced() -> None:
    # The answers announce the 5-hour window's reset; the refusal (a thin 429) omits it.
    reset = START + timedelta(seconds=40)
    announcing = TurnSignals(
        rate_limit_status="allowed", windows=(WindowUsage("five_hour", 0.97, reset),)
    )
    silent = replace(WINDOW_REJECTED, resets_at=None)
    h = harness(
        [
            verdict_turn(remaining=("b",), signals=announcing),
            rejected_turn(silent),
            verdict_turn(complete=True),
        ],
        probes=[OK],
    )
    final = drive(h, record())
    due = reset + WaitPolicyConfig().reset_grace
    assert h.sleeper.slept_until == [due - AHEAD, due]  # not a whole probe interval
    assert h.gateway.probe_times == [due]
    assert h.gateway.turn_times[2] >= reset
    assert final.state.outcome is Outcome.DONE
    assert final.state.announced_resets == (AnnouncedReset("five_hour", reset),)


def test_a_first_turn_refused_silently_waits_for_the_reset_another_run_heard() -> None:
    # No answer of this run's own yet: the capacity board's sightings announced it.
    reset = START + timedelta(seconds=40)
    silent = replace(WINDOW_REJECTED, resets_at=None)
    heard = (AnnouncedReset("five_hour", reset),)
    h = harness(
        [replace(rejected_turn(silent), announced=heard), verdict_turn(complete=True)],
        probes=[OK],
    )
    final = drive(h, record())
    due = reset + WaitPolicyConfig().reset_grace
    assert h.sleeper.slept_until == [due - AHEAD, due]
    assert final.state.outcome is Outcome.DONE


def test_a_resumed_wait_for_a_remembered_reset_keeps_its_instant() -> None:
    reset = START + timedelta(seconds=40)
    due = reset + WaitPolicyConfig().reset_grace
    waiting = RunState(
        phase=Phase.WAITING,
        capacity=WindowExhausted("five_hour"),
        waiting_since=START,
        next_probe_at=due,
        announced_resets=(AnnouncedReset("five_hour", reset),),
    )
    h = harness([verdict_turn(complete=True)], probes=[OK])
    final = drive(h, replace(record(), state=waiting), resumed=True)
    assert h.sleeper.slept_until == [due - AHEAD, due]
    assert h.gateway.probe_times == [due]
    assert final.state.outcome is Outcome.DONE


def test_the_time_waited_that_ends_a_run_on_max_wait_counts_its_probes_too() -> None:
    # Each probe takes 2 s; --max-wait 15s gives up after the probe that ends past it.
    policy = WaitPolicyConfig(
        credits_probe_interval=timedelta(seconds=1),
        credits_probe_ceiling=timedelta(seconds=3),
        max_wait=timedelta(seconds=15),
    )
    h = harness([rejected_turn(CREDITS_OUT)], probes=[CREDITS_OUT] * 20)
    h.gateway.probe_seconds = 2.0
    final = drive(h, record(policy=policy))
    assert final.state.outcome is Outcome.MAX_WAIT_EXCEEDED
    assert "waited longer than max-wait" in final.state.reason
    # Wall time from the refusal (the turn came back at START) to giving up.
    assert final.waited_seconds == (h.clock.now() - START).total_seconds()
    assert final.waited_seconds >= 15
    shown = f"- Time waited for capacity: {duration_said(final.waited_seconds)}"
    assert shown in summary_markdown(final)


def test_the_time_waited_runs_from_the_refusal_to_capacity_over_probes_and_restarts() -> None:
    policy = WaitPolicyConfig(
        credits_probe_interval=timedelta(seconds=60),
        credits_probe_ceiling=timedelta(seconds=60),
    )
    h = harness([rejected_turn(CREDITS_OUT)], probes=[CREDITS_OUT])
    h.gateway.probe_seconds = 5.0
    # Stopped as its second wait begins (each wait sleeps to its ready instant first).
    h.sleeper.interrupt_at_sleep[2] = ControlCommand.STOP
    stopped = drive(h, record(policy=policy))
    # 60 s asleep, a 5 s probe, then the stop: 65 s since the refusal.
    assert stopped.state.outcome is Outcome.STOPPED
    assert stopped.waited_seconds == 65.0
    # Resumed an hour later (the hour is no wait): a second refusal, a second wait.
    h.control.command = None
    h.clock.advance(3600)
    h.gateway.turns.extend([rejected_turn(CREDITS_OUT), verdict_turn(complete=True)])
    h.gateway.probes.append(OK)
    resumed = drive(h, replace(stopped, state=reopen(stopped.state)), resumed=True)
    assert resumed.state.outcome is Outcome.DONE
    assert resumed.waited_seconds == 65.0 + 60.0 + 5.0


def test_credits_out_backs_off_and_resumes_within_one_probe_of_the_top_up() -> None:
    h = harness(
        [rejected_turn(CREDITS_OUT), verdict_turn(complete=True)],
        probes=[CREDITS_OUT, CREDITS_OUT, CREDITS_OUT, OK],
    )
    final = drive(h, record())
    gaps = [
        (later - earlier).total_seconds()
        for earlier, later in zip(
            [START, *h.gateway.probe_times], h.gateway.probe_times, strict=False
        )
    ]
    assert gaps == [60.0, 90.0, 135.0, 202.5]  # the default backoff: 60 s growing 1.5x
    assert final.state.outcome is Outcome.DONE
    assert final.state.probes == 4


def test_bad_credentials_stop_at_once_without_probing() -> None:
    h = harness([rejected_turn(AUTH_FAILED)])
    final = drive(h, record())
    assert final.state.outcome is Outcome.AUTH_FAILED
    assert h.gateway.probe_times == []
    assert h.events.of("run.finished")[0]["exit_code"] == 77


def test_a_window_that_reopens_after_the_login_ends_ends_the_run_77_without_a_wait() -> None:
    # The five-hour window reopens in two hours; the stored login ends in one.
    h = harness([verdict_turn(remaining=("b",)), rejected_turn(WINDOW_REJECTED)])
    h.runner.login_ends_at = START + timedelta(hours=1)
    final = drive(h, record())
    assert final.state.outcome is Outcome.AUTH_FAILED
    assert "claudeloop login" in final.state.reason
    assert len(h.gateway.prompts) == 2
    assert h.sleeper.slept_until == []
    assert h.gateway.probe_times == []
    assert "wait.started" not in h.events.types()
    assert h.events.of("run.finished")[0]["exit_code"] == 77


def test_a_login_whose_end_has_passed_sends_no_turn_and_a_resume_no_probe() -> None:
    h = harness([verdict_turn(complete=True)])
    h.runner.login_ends_at = START
    final = drive(h, record())
    assert final.state.outcome is Outcome.AUTH_FAILED
    assert h.gateway.prompts == []
    # A run killed while waiting, resumed after its login ended: no probe either.
    waiting = RunState(
        phase=Phase.WAITING,
        capacity=WindowExhausted("five_hour", resets_at=START + timedelta(minutes=5)),
        waiting_since=START,
        next_probe_at=START + timedelta(minutes=5),
    )
    h = harness([], probes=[OK])
    h.runner.login_ends_at = START
    final = drive(h, replace(record(), state=waiting), resumed=True)
    assert final.state.outcome is Outcome.AUTH_FAILED
    assert h.gateway.probe_times == []
    assert h.sleeper.slept_until == []


def test_a_turn_a_hook_stopped_ends_the_run_blocked_on_the_hook_with_no_turn_after() -> None:
    stopped = replace(verdict_turn(complete=True), stopped_by_hook="the build is red")
    h = harness([verdict_turn(remaining=("b",)), stopped, verdict_turn(complete=True)])
    final = drive(h, record())
    assert final.state.outcome is Outcome.BLOCKED
    assert final.state.blocked_on == "a hook stopped Claude Code: the build is red"
    assert len(h.gateway.prompts) == 2
    assert h.events.of("run.finished")[0]["exit_code"] == 1


def test_turn_cap_ends_with_budget_exhausted_and_what_is_left() -> None:
    h = harness([verdict_turn(remaining=("a", "b")), verdict_turn(remaining=("b",))])
    final = drive(h, record(budget=Budget(max_turns=2)))
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert final.state.remaining_work == ("b",)
    assert len(h.gateway.prompts) == 2


def test_cost_of_a_rejected_turn_counts() -> None:
    h = harness(
        [rejected_turn(CREDITS_OUT, cost=0.5), verdict_turn(complete=True, cost=0.25)],
        probes=[OK],
    )
    final = drive(h, record())
    assert final.state.ledger.dollars == 0.5 + 0.25 + 0.001


def test_blocked_verdict_ends_with_the_blocker() -> None:
    h = harness([verdict_turn(blocked_on="the staging database password")])
    final = drive(h, record())
    assert final.state.outcome is Outcome.BLOCKED
    assert "staging database password" in final.state.reason


def test_stop_during_a_wait_ends_at_once() -> None:
    h = harness([rejected_turn(WINDOW_REJECTED)])
    h.sleeper.interrupt_at_sleep[0] = ControlCommand.STOP
    final = drive(h, record())
    assert final.state.outcome is Outcome.STOPPED
    assert h.gateway.probe_times == []


def test_wind_down_after_the_current_turn() -> None:
    h = harness([verdict_turn(remaining=("b",)), verdict_turn(complete=True)])
    h.gateway.on_turn = lambda n: setattr(h.control, "command", ControlCommand.WIND_DOWN)
    final = drive(h, record())
    assert final.state.outcome is Outcome.WOUND_DOWN
    assert len(h.gateway.prompts) == 1


def test_a_turn_a_crash_cut_off_is_billed_with_the_turn_sent_again_and_only_with_it() -> None:
    cut_off_at = START - timedelta(minutes=7)
    rec = replace(
        record(),
        state=RunState(phase=Phase.RUNNING, ledger=BudgetLedger(turns=1, attempts=1)),
        session_id="s-1",
        turn_in_flight=2,
        last_turn_started_at=cut_off_at,
    )
    h = harness([verdict_turn(remaining=("more",)), verdict_turn(complete=True)])
    drive(h, rec, resumed=True)
    assert h.gateway.interrupted == [cut_off_at, None]
    # Saved before the prompt went out: a second crash still bills everything since then.
    assert h.store.saved[1].last_turn_started_at == cut_off_at


@pytest.mark.parametrize(
    "first",
    [
        # Held back by another loop's sighting: it never reached the service.
        replace(verdict_turn(signals=WINDOW_REJECTED), sent=False),
        # Refused by the window: its result priced nothing, so it billed nothing.
        replace(verdict_turn(signals=WINDOW_REJECTED, cost=0.0), cut_off_owed=True),
    ],
    ids=["held-back", "refused"],
)
def test_a_turn_sent_again_that_bills_nothing_leaves_the_cut_off_one_owed(
    first: TurnOutcome,
) -> None:
    cut_off_at = START - timedelta(minutes=7)
    rec = replace(
        record(),
        state=RunState(phase=Phase.RUNNING),
        session_id="s-1",
        turn_in_flight=1,
        last_turn_started_at=cut_off_at,
    )
    h = harness([first, verdict_turn(complete=True)], probes=[OK])
    final = drive(h, rec, resumed=True)
    assert h.gateway.interrupted == [cut_off_at, cut_off_at]
    # Every save during the wait still owes it: a kill there resumes owing it too.
    waiting = [saved for saved in h.store.saved if saved.state.phase is Phase.WAITING]
    assert waiting
    assert {saved.interrupted_at for saved in waiting} == {cut_off_at}
    assert final.interrupted_at is None  # billed by the turn that was served


def test_a_run_resumed_from_a_wait_still_owing_a_cut_off_turn_bills_it_with_the_next() -> None:
    cut_off_at = START - timedelta(minutes=7)
    waiting = RunState(
        phase=Phase.WAITING,
        capacity=WindowExhausted("five_hour", None),
        waiting_since=START - timedelta(minutes=3),
        next_probe_at=START + timedelta(minutes=1),
    )
    rec = replace(
        record(),
        state=waiting,
        session_id="s-1",
        last_turn_started_at=cut_off_at,
        interrupted_at=cut_off_at,
    )
    h = harness([verdict_turn(complete=True)], probes=[OK])
    final = drive(h, rec, resumed=True)
    assert h.gateway.interrupted == [cut_off_at]
    assert final.interrupted_at is None


def test_resumed_while_waiting_keeps_the_persisted_probe_instant() -> None:
    probe_at = START + timedelta(minutes=4)  # within the 5-minute interval of now
    rec = record()
    waiting = RunState(
        phase=Phase.WAITING,
        capacity=WindowExhausted("five_hour", None),
        waiting_since=START - timedelta(minutes=3),
        next_probe_at=probe_at,
    )
    h = harness([verdict_turn(complete=True)], probes=[OK])
    final = drive(h, replace(rec, state=waiting, session_id="s-9"), resumed=True)
    assert h.sleeper.slept_until == [probe_at - AHEAD, probe_at]
    assert h.gateway.sessions == ["s-9"]
    assert h.gateway.turns_on_ready == [True]  # the resumed session, started ahead
    assert final.state.outcome is Outcome.DONE


def test_a_persisted_probe_instant_years_away_is_clamped_to_the_policy_on_resume() -> None:
    # A tampered or corrupted record (or a clock stepped back since it was written).
    waiting = RunState(
        phase=Phase.WAITING,
        capacity=WindowExhausted("five_hour", None),
        waiting_since=START - timedelta(minutes=3),
        next_probe_at=START + timedelta(days=3 * 365),
    )
    h = harness([verdict_turn(complete=True)], probes=[OK])
    final = drive(h, replace(record(), state=waiting, session_id="s-9"), resumed=True)
    at = START + WaitPolicyConfig().window_probe_interval
    assert h.sleeper.slept_until == [at - AHEAD, at]
    assert h.store.saved[0].state.next_probe_at == at  # what status shows, too
    assert final.state.outcome is Outcome.DONE


def test_plan_progress_is_reconciled_and_the_file_never_rewritten() -> None:
    plan = Path("/project/PLAN.md")
    text = "# Plan\n- [ ] write a\n- [ ] write b\n- [ ] write c\n"
    h = harness(
        [
            verdict_turn(remaining=("Write B.", "write c")),
            verdict_turn(remaining=("write c",)),
            verdict_turn(complete=True),
        ]
    )
    h.plans.files[plan] = text
    final = drive(h, record(plan_path=plan))
    updates = [(e["done"], e["total"]) for e in h.events.of("plan.updated")]
    assert updates == [(1, 3), (2, 3), (3, 3)]
    assert "write c" in h.gateway.prompts[2]
    assert "write a" not in h.gateway.prompts[2]
    assert h.plans.writes == []
    assert h.plans.files[plan] == text
    assert final.plan_progress == (3, 3)


def test_asked_to_update_the_plan_it_writes_checkmarks_and_keeps_the_file_s_text() -> None:
    plan = Path("/project/PLAN.md")
    h = harness([verdict_turn(remaining=("write b",)), verdict_turn(complete=True)])
    h.plans.files[plan] = "# Plan\n- [ ] write a\n- [ ] write b\n"
    h.gateway.on_turn = lambda n: h.plans.files.update(
        {plan: "# Plan (edited by the model)\n- [ ] write a\n- [ ] write b\n"}
    )
    rec = record(plan_path=plan)
    drive(h, replace(rec, spec=replace(rec.spec, update_plan=True)))
    assert h.plans.files[plan] == "# Plan (edited by the model)\n- [x] write a\n- [x] write b\n"


def test_a_crashed_turn_fails_the_run_with_its_reason() -> None:
    crashed = TurnOutcome(
        signals=OK,
        structured=None,
        final_text="",
        cost_usd=0.0,
        session_id=None,
        failure="the Claude Code CLI exited with code 1 and no result",
    )
    h = harness([crashed])
    final = drive(h, record())
    assert final.state.outcome is Outcome.FAILED
    assert "exited with code 1" in final.state.reason


def test_a_window_at_its_pause_threshold_is_waited_out_after_the_turn() -> None:
    from claudeloop.domain.pause import PauseThresholds
    from claudeloop.domain.signals import WindowUsage

    reset = START + timedelta(hours=1)
    warned = TurnSignals(
        rate_limit_status="allowed_warning",
        windows=(WindowUsage("five_hour", 0.93, reset), WindowUsage("seven_day", 0.2, None)),
    )
    h = harness(
        [
            verdict_turn(remaining=("b",), signals=warned),
            verdict_turn(
                complete=True, signals=TurnSignals(windows=(WindowUsage("five_hour", 0.01),))
            ),
        ],
        probes=[OK],
    )
    rec = record()
    rec = replace(rec, spec=replace(rec.spec, pause_at=PauseThresholds.parse("5h=90%,7d_opus=50%")))
    final = drive(h, rec)
    assert final.state.outcome is Outcome.DONE
    assert final.state.ledger.turns == 2  # the paused turn counted as answered
    due = reset + WaitPolicyConfig().reset_grace
    assert h.sleeper.slept_until == [due - AHEAD, due]
    assert h.gateway.probe_times == [due]
    ignored = h.events.of("pause.ignored")
    assert [event["windows"] for event in ignored] == [["seven_day_opus"]]  # said once


def test_switch_profile_policy_detours_and_comes_back_when_the_limit_lifts() -> None:
    from claudeloop.domain.limits import LimitPolicies, SwitchProfile

    h = harness(
        [
            verdict_turn(remaining=("b", "c")),
            rejected_turn(WINDOW_REJECTED),
            verdict_turn(remaining=("c",)),  # back on the run's own backend
            verdict_turn(complete=True),
        ],
        probes=[WINDOW_REJECTED, OK],
    )
    local = FakeGateway(
        turns=deque(verdict_turn(remaining=("c",)) for _ in range(4)),
        clock=h.clock,
    )
    opened: list[str] = []

    def profiles(name: str) -> FakeGateway:
        opened.append(name)
        return local

    # Each turn on the other profile takes three minutes of the clock.
    local.on_turn = lambda n: h.clock.advance(180)
    h.runner.profiles = profiles
    rec = record()
    policies = LimitPolicies((("five_hour", SwitchProfile("local")),))
    final = drive(h, replace(rec, spec=replace(rec.spec, limits=policies)))
    assert final.state.outcome is Outcome.DONE
    assert opened == ["local"]  # made once, kept for the detour
    # Checks at 5 min (still closed) and 11 min (open): four turns on the other profile.
    assert len(local.prompts) == 4
    assert set(local.sessions) == {"session-1"}  # the same Claude session
    assert h.events.types().count("profile.switched") == 1
    assert h.events.types().count("profile.restored") == 1
    assert local.closed  # closed when the run ended
    assert h.sleeper.slept_until == []  # never idle: the other profile kept working


def test_a_wait_the_machine_slept_through_probes_on_waking() -> None:
    h = harness([rejected_turn(CREDITS_OUT), verdict_turn(complete=True)], probes=[OK])

    async def suspend_through(instant: datetime, **_: object) -> bool:
        h.sleeper.slept_until.append(instant)
        if len(h.sleeper.slept_until) == 1:
            h.clock.current = instant + timedelta(hours=3)  # woke long after the instant
        h.clock.current = max(h.clock.current, instant)
        return True

    h.runner.sleeper = type("Suspending", (), {"sleep_until": staticmethod(suspend_through)})()
    final = drive(h, record())
    woke = h.sleeper.slept_until[0] + timedelta(hours=3)
    assert h.gateway.probe_times == [woke]  # at once on waking, no fresh interval
    assert h.gateway.turn_times[-1] == woke
    assert final.state.outcome is Outcome.DONE


def test_each_turn_is_billed_what_it_reported_and_an_unbilled_one_nothing() -> None:
    def turn(cost: float, *, billed: bool = True, complete: bool = False) -> TurnOutcome:
        outcome = verdict_turn(complete=complete, remaining=("b",), cost=cost)
        return replace(outcome, billed=billed)

    h = harness([turn(0.5), turn(0.4, billed=False), turn(0.1, complete=True)])
    final = drive(h, record())
    assert [e["cost_usd"] for e in h.events.of("turn.finished")] == [0.5, 0.0, 0.1]
    assert final.state.ledger.dollars == 0.6


def test_a_guessed_price_is_not_spend_and_is_said_once() -> None:
    def turn(*, complete: bool = False) -> TurnOutcome:
        outcome = verdict_turn(complete=complete, remaining=("b",), cost=0.0)
        return replace(outcome, guessed_cost_usd=0.25, guessed_models=("qwen3-coder:30b",))

    h = harness([turn(), turn(), turn(complete=True)])
    final = drive(h, record(budget=Budget(max_dollars=0.5)))
    assert final.state.outcome is Outcome.DONE  # 0.75 guessed never reached the 0.5 cap
    assert final.state.ledger.dollars == 0.0
    (said,) = h.events.of("cost.guessed")
    assert said["models"] == ["qwen3-coder:30b"]
    assert "--max-dollars" in said["reason"]


def test_a_wait_across_a_clock_stepped_back_counts_the_time_the_sleeper_waited() -> None:
    h = harness([rejected_turn(CREDITS_OUT), verdict_turn(complete=True)], probes=[OK])

    async def stepped_back(instant: datetime, *, progress: Any = None) -> bool:
        h.sleeper.slept_until.append(instant)
        if len(h.sleeper.slept_until) == 1:  # the sleep to the ready instant
            progress(60.0)  # a minute waited, by the monotonic clock
            h.clock.current -= timedelta(hours=1)  # while the wall clock stepped back an hour
        return True

    h.runner.sleeper = type("SteppedBack", (), {"sleep_until": staticmethod(stepped_back)})()
    final = drive(h, record())
    assert final.waited_seconds == 60.0
    # Saved while still waiting: a kill there keeps the minute.
    assert any(s.waited_seconds == 60.0 and s.state.phase is Phase.WAITING for s in h.store.saved)


@dataclass
class FakeAdvisor:
    asked: list[tuple[str, str | None]]

    def advised(
        self,
        reason: str,
        capacity: AuthenticationFailed | BackendMisconfigured,
        *,
        detour: str | None,
    ) -> str:
        self.asked.append((type(capacity).__name__, detour))
        return f"{reason}: log in again"


def test_a_run_the_credentials_end_is_saved_and_told_with_its_fix_once() -> None:
    h = harness([rejected_turn(AUTH_FAILED)])
    advisor = FakeAdvisor(asked=[])
    h.runner.advisor = advisor
    final = drive(h, record())
    assert final.state.outcome is Outcome.AUTH_FAILED
    reason = "authentication failed: the credentials were refused: log in again"
    assert final.state.reason == reason
    assert h.store.last.state.reason == reason  # saved with it: nothing rewrites it later
    assert h.events.of("run.finished")[0]["reason"] == reason
    assert advisor.asked == [("AuthenticationFailed", None)]


def test_a_run_that_ends_otherwise_asks_no_advice() -> None:
    h = harness([verdict_turn(complete=True)])
    advisor = FakeAdvisor(asked=[])
    h.runner.advisor = advisor
    drive(h, record())
    assert advisor.asked == []


def test_a_cost_partly_estimated_counts_against_max_dollars_and_is_said_apart() -> None:
    # The turn sent again after a crash: 0.004 exact, and a request cut off in flight
    # priced at 0.002.
    again = replace(verdict_turn(remaining=("b",), cost=0.006), estimated_cost_usd=0.002)
    h = harness([again, verdict_turn(complete=True)])
    final = drive(h, record(budget=Budget(max_dollars=0.005)))
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED  # 0.004 alone would not be
    assert final.state.ledger.dollars == 0.006
    assert final.state.ledger.estimated_dollars == 0.002
    said = plain(result_object(final))
    assert (said["dollars"], said["estimated_dollars"]) == (0.006, 0.002)
    spend = "- Spend: $0.0060 (≈, includes $0.0020 estimated for a turn cut off)"
    assert spend in summary_markdown(final)
    assert said["said"]["dollars"] == "$0.0060 (≈, includes $0.0020 estimated for a turn cut off)"


def test_a_probe_a_kill_cut_off_is_billed_at_an_estimate_with_the_one_sent_again() -> None:
    probing = RunState(
        phase=Phase.PROBING,
        capacity=WindowExhausted("five_hour", None),
        waiting_since=START - timedelta(minutes=3),
    )
    h = harness([verdict_turn(complete=True, cost=0.01)], probes=[OK, OK])
    final = drive(h, replace(record(), state=probing, session_id="s-9"), resumed=True)
    assert len(h.gateway.probe_times) == 1
    # The fake's probe costs 0.001: the one sent again, and as much for the cut-off one.
    assert final.state.ledger.dollars == pytest.approx(0.012)
    assert final.state.ledger.estimated_dollars == pytest.approx(0.001)
    assert [e["cost_usd"] for e in h.events.of("probe.finished")] == [pytest.approx(0.002)]
