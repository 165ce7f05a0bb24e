"""The run loop driven by random turns, probes, clock jumps, controls, a person's
requests and crashes.

The machine plays the runner: it does what the last decision says (send a turn, wait for
the probe instant, run the probe) and feeds back a random outcome. The invariants are the
loop's promises, checked after every step.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    UnknownWindow,
    WaitKind,
    WindowExhausted,
)
from claudeloop.domain.completion import Blocked, CompletionVerdict, Continue, Done
from claudeloop.domain.limits import LimitPolicies, SwitchProfile, Wait, WindDown
from claudeloop.domain.loop import (
    ControlCommand,
    Decision,
    Finish,
    Interrupt,
    Outcome,
    Phase,
    RunProbe,
    RunState,
    ScheduleProbe,
    SendTurn,
    Transition,
    begin_probe,
    decide_after_probe,
    decide_after_silent_turn,
    decide_after_turn,
    decide_on_control,
    decide_on_failure,
    decide_on_interrupt,
    decide_on_waking,
    decide_preflight,
    resume_decision,
)
from claudeloop.domain.steering import (
    AddNote,
    Cap,
    ProbeNow,
    RaiseCap,
    Steer,
    spent_on,
    steer,
    waited_now,
)
from claudeloop.domain.waiting import WaitPolicyConfig, wait_exceeded
from tests.examples import examples

START = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)

# Every kind of capacity, Available most often so that runs get long enough to matter.
KINDS = ["available"] * 6 + ["window"] * 3 + ["credits"] * 3 + ["auth", "misconfigured"]
capacity_kinds = st.sampled_from(KINDS)
# Before the first turn what is known of capacity is usually nothing bad.
preflight_kinds = st.sampled_from(["available"] * 10 + KINDS)
reset_offsets = st.none() | st.timedeltas(
    min_value=timedelta(hours=-6), max_value=timedelta(days=8)
)
window_types: st.SearchStrategy[WaitKind | UnknownWindow] = st.sampled_from(
    ["five_hour", "seven_day", "overage", "local", "unknown", UnknownWindow("seven_day_cowork")]
)
continues = st.builds(Continue, st.lists(st.sampled_from("abc"), max_size=3).map(tuple))
verdicts: st.SearchStrategy[CompletionVerdict] = st.one_of(
    continues,
    continues,
    continues,
    st.builds(Done, st.text(max_size=5)),
    st.builds(Blocked, st.sampled_from(["a password", "an approval"])),
)
costs = st.floats(min_value=0.0, max_value=1.0)
small_steps = st.timedeltas(min_value=timedelta(0), max_value=timedelta(hours=2))
policy_sets = st.sampled_from(
    [
        LimitPolicies(),
        LimitPolicies((("credits", WindDown()),)),
        LimitPolicies((("five_hour", SwitchProfile("local")), ("local", Wait()))),
        LimitPolicies((("five_hour", SwitchProfile("local")), ("seven_day", WindDown()))),
    ]
)
budgets = st.builds(
    Budget,
    max_turns=st.none() | st.integers(min_value=1, max_value=8),
    max_dollars=st.none() | st.floats(min_value=0.5, max_value=6.0),
    max_attempts=st.none() | st.integers(min_value=1, max_value=12),
)


@st.composite
def configs(draw: st.DrawFn) -> WaitPolicyConfig:
    interval = draw(st.timedeltas(min_value=timedelta(seconds=30), max_value=timedelta(minutes=10)))
    return WaitPolicyConfig(
        window_probe_interval=draw(
            st.timedeltas(min_value=timedelta(minutes=1), max_value=timedelta(hours=1))
        ),
        reset_grace=draw(st.timedeltas(min_value=timedelta(0), max_value=timedelta(minutes=5))),
        credits_probe_interval=interval,
        credits_probe_factor=draw(st.floats(min_value=1.0, max_value=3.0)),
        credits_probe_ceiling=draw(st.timedeltas(min_value=interval, max_value=timedelta(hours=2))),
        max_wait=draw(
            st.none() | st.timedeltas(min_value=timedelta(minutes=10), max_value=timedelta(days=2))
        ),
    )


class RunLoopMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = START
        self.config = WaitPolicyConfig()
        self.state = RunState()
        self.decision: Decision = SendTurn()
        # What the last step reported and which step it was: a turn, a probe, ...
        self.step = "start"
        self.reported: CapacityState | None = None
        self.verdict: CompletionVerdict | None = None
        self.policies = LimitPolicies()
        self.was_on_detour = False

    def capacity(
        self, kind: str, window_type: WaitKind | UnknownWindow, reset_offset: timedelta | None
    ) -> CapacityState:
        match kind:
            case "available":
                return Available()
            case "window":
                reset = None if reset_offset is None else self.now + reset_offset
                return WindowExhausted(window_type, reset)
            case "credits":
                return CreditsExhausted("balance too low")
            case "auth":
                return AuthenticationFailed("invalid key")
            case _:
                return BackendMisconfigured("the model was not found")

    def take(self, step: str, transition: Transition) -> None:
        self.step = step
        self.was_on_detour = self.state.detour is not None
        self.state = transition.state
        self.decision = transition.decision
        if isinstance(transition.decision, Finish):
            event(f"finished: {transition.decision.outcome.value} after {step}")
        if transition.state.detour is not None:
            event("on a switch-profile detour")

    # The runner's moves -------------------------------------------------------------

    @initialize(
        budget=budgets,
        config=configs(),
        kind=preflight_kinds,
        window_type=window_types,
        reset_offset=reset_offsets,
        policies=policy_sets,
    )
    def preflight(
        self,
        *,
        budget: Budget,
        config: WaitPolicyConfig,
        kind: str,
        window_type: WaitKind | UnknownWindow,
        reset_offset: timedelta | None,
        policies: LimitPolicies,
    ) -> None:
        self.config = config
        self.policies = policies
        capacity = self.capacity(kind, window_type, reset_offset)
        self.reported = capacity
        start = RunState(ledger=BudgetLedger(budget))
        self.take(
            "preflight",
            decide_preflight(start, capacity, now=self.now, config=config, policies=policies),
        )

    @precondition(lambda self: isinstance(self.decision, SendTurn))
    @rule(
        kind=capacity_kinds,
        window_type=window_types,
        reset_offset=reset_offsets,
        verdict=verdicts,
        cost=costs,
        duration=small_steps,
    )
    def turn(
        self,
        *,
        kind: str,
        window_type: WaitKind | UnknownWindow,
        reset_offset: timedelta | None,
        verdict: CompletionVerdict,
        cost: float,
        duration: timedelta,
    ) -> None:
        assert not self.state.ledger.any_exhausted, "a turn was sent over a cap"
        self.now += duration
        capacity = self.capacity(kind, window_type, reset_offset)
        self.reported = capacity
        self.verdict = verdict
        transition = decide_after_turn(
            self.state,
            capacity=capacity,
            verdict=verdict,
            now=self.now,
            config=self.config,
            cost_usd=cost,
            policies=self.policies,
        )
        self.take("turn", transition)

    # Now and then a turn is silent: the watchdog ends it, nothing comes back.
    @precondition(lambda self: isinstance(self.decision, SendTurn))
    @rule(duration=small_steps, roll=st.integers(min_value=0, max_value=3))
    def silent_turn(self, *, duration: timedelta, roll: int) -> None:
        if roll != 0:
            return
        self.now += duration
        before = self.state.ledger
        transition = decide_after_silent_turn(
            self.state, now=self.now, config=self.config, policies=self.policies
        )
        assert transition.state.ledger == before, "a silent turn spent something"
        self.take("silent turn", transition)

    @precondition(lambda self: isinstance(self.decision, ScheduleProbe))
    @rule(lateness=st.timedeltas(min_value=timedelta(0), max_value=timedelta(minutes=30)))
    def probe_comes_due(self, lateness: timedelta) -> None:
        assert isinstance(self.decision, ScheduleProbe)
        # The clock only moves forward; a sleeping laptop wakes late, never early.
        self.now = max(self.now, self.decision.at) + lateness
        self.take("probe due", begin_probe(self.state))

    @precondition(
        lambda self: isinstance(self.decision, ScheduleProbe) and self.decision.at > self.now
    )
    @rule(
        asked=st.sampled_from(["note", "probe now", *Cap]),
        more=st.integers(min_value=0, max_value=3),
        into=small_steps,
    )
    def a_request_wakes_the_wait(self, *, asked: str | Cap, more: int, into: timedelta) -> None:
        # A person's request comes before the probe's instant: a note, a probe now, or a
        # cap set to what was spent or more (dollars and the wait rounded down: below it,
        # as when spending went on between the asking and the applying).
        assert isinstance(self.decision, ScheduleProbe)
        self.now = min(self.now + into, self.decision.at - timedelta(microseconds=1))
        request: Steer
        match asked:
            case "note":
                request = AddNote("the flaky test is known")
            case "probe now":
                request = ProbeNow()
            case Cap() as cap:
                waited = waited_now(self.state, self.now)
                used = spent_on(cap, self.state.ledger, waited_seconds=waited)
                request = RaiseCap(cap, float(int(used) + more))
            case _:
                raise AssertionError(asked)
        steered = steer(self.state, self.config, request, now=self.now)
        self.config = steered.wait_policy
        woke = decide_on_waking(
            steered.state, self.decision, due=steered.probe, now=self.now, config=self.config
        )
        self.take("steer", woke)

    @precondition(lambda self: isinstance(self.decision, RunProbe))
    @rule(
        kind=capacity_kinds,
        window_type=window_types,
        reset_offset=reset_offsets,
        cost=costs,
        duration=st.timedeltas(min_value=timedelta(0), max_value=timedelta(minutes=1)),
    )
    def probe(
        self,
        *,
        kind: str,
        window_type: WaitKind | UnknownWindow,
        reset_offset: timedelta | None,
        cost: float,
        duration: timedelta,
    ) -> None:
        self.now += duration
        capacity = self.capacity(kind, window_type, reset_offset)
        self.reported = capacity
        transition = decide_after_probe(
            self.state,
            capacity,
            now=self.now,
            config=self.config,
            cost_usd=cost,
            policies=self.policies,
        )
        self.take("probe", transition)

    # A person or the machine interrupts now and then, not at every step, so that runs
    # grow long enough to reach caps and max-wait.
    @precondition(lambda self: not self.state.phase.terminal)
    @rule(
        interruption=st.sampled_from(["stop", "wind-down", "failure", "signal"]),
        roll=st.integers(min_value=0, max_value=30),
    )
    def interrupt(self, *, interruption: str, roll: int) -> None:
        if roll != 13:
            return
        match interruption:
            case "stop":
                self.take("control", decide_on_control(self.state, ControlCommand.STOP))
            case "wind-down":
                self.take("control", decide_on_control(self.state, ControlCommand.WIND_DOWN))
            case "signal":
                self.take("signal", decide_on_interrupt(self.state, Interrupt.TERMINATE))
            case _:
                self.take("failure", decide_on_failure(self.state, "the CLI crashed"))

    # Any run can be killed and resumed, a finished one too: it must stay finished.
    @rule(downtime=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=1)))
    def crash_and_resume(self, downtime: timedelta) -> None:
        before = self.state
        self.now += downtime
        self.decision = resume_decision(self.state)
        if not before.phase.terminal:
            self.step = "resume"  # a finished run keeps the step that finished it
        assert self.state == before

    # The loop's promises ------------------------------------------------------------

    @invariant()
    def terminal_phases_absorb(self) -> None:
        if self.state.phase.terminal:
            assert isinstance(self.decision, Finish)
            assert self.state.outcome is self.decision.outcome
            assert self.state.next_probe_at is None
        else:
            assert not isinstance(self.decision, Finish)
            assert self.state.outcome is None

    @invariant()
    def the_decision_matches_the_phase(self) -> None:
        expected = {
            SendTurn: {Phase.RUNNING},
            ScheduleProbe: {Phase.WAITING},
            RunProbe: {Phase.PROBING},
            Finish: {Phase.COMPLETE, Phase.FAILED},
        }[type(self.decision)]
        assert self.state.phase in expected

    @invariant()
    def the_persisted_state_alone_gives_the_same_decision(self) -> None:
        # What a crash-and-resume relies on: a run waiting keeps its probe instant.
        assert resume_decision(self.state) == self.decision

    @invariant()
    def no_turn_is_sent_while_capacity_is_not_available(self) -> None:
        if isinstance(self.decision, SendTurn):
            assert self.state.capacity == Available()
            if self.state.detour is None:
                assert self.reported == Available()
            else:
                # On a detour the turn goes to the other profile; the run's own backend
                # is the one that is out, and only a policy sends it there.
                assert isinstance(
                    self.policies.action_for(self.state.detour.awaiting), SwitchProfile
                )

    @invariant()
    def a_signal_stops_the_run_with_its_own_exit_code(self) -> None:
        if self.state.interrupt is not None:
            assert self.state.outcome is Outcome.STOPPED
            assert self.state.exit_code == self.state.interrupt.exit_code == 143
        elif self.state.outcome is not None:
            assert self.state.exit_code == self.state.outcome.exit_code

    @invariant()
    def a_detour_ends_with_the_run(self) -> None:
        if self.state.phase.terminal or self.state.phase is Phase.WAITING:
            # Waiting is for the run's own backend, and an ended run waits for nothing.
            assert self.state.detour is None or self.state.phase.terminal

    @invariant()
    def no_cap_is_overrun(self) -> None:
        ledger = self.state.ledger
        if isinstance(self.decision, SendTurn):
            assert not ledger.any_exhausted
        if ledger.budget.max_turns is not None:
            assert ledger.turns <= ledger.budget.max_turns
        if ledger.budget.max_attempts is not None:
            assert ledger.attempts <= ledger.budget.max_attempts
        assert ledger.turns <= ledger.attempts

    @invariant()
    def done_only_follows_an_available_turn(self) -> None:
        if isinstance(self.decision, Finish) and self.decision.outcome is Outcome.DONE:
            assert self.step == "turn"
            assert self.reported == Available()
            assert isinstance(self.verdict, Done)
            assert self.state.phase is Phase.COMPLETE
        if self.state.phase is Phase.COMPLETE:
            assert self.state.outcome is Outcome.DONE

    @invariant()
    def waitable_states_never_finish_the_run_by_themselves(self) -> None:
        waitable = isinstance(self.reported, WindowExhausted | CreditsExhausted)
        if waitable and self.step in ("preflight", "turn", "probe"):
            assert isinstance(self.reported, WindowExhausted | CreditsExhausted)
            action = self.policies.action_for(self.reported)
            if isinstance(self.decision, Finish):
                allowed = {Outcome.BUDGET_EXHAUSTED, Outcome.MAX_WAIT_EXCEEDED}
                if isinstance(action, WindDown):
                    allowed.add(Outcome.WOUND_DOWN)  # the user's policy, not the limit
                assert self.decision.outcome in allowed
            elif isinstance(self.decision, SendTurn):
                assert self.state.detour is not None  # only a switch-profile goes on
            else:
                assert isinstance(self.decision, ScheduleProbe)
                if not self.was_on_detour and not isinstance(action, SwitchProfile):
                    assert self.decision.awaiting == self.reported

    @invariant()
    def terminal_capacity_always_ends_the_run(self) -> None:
        terminal = isinstance(self.reported, AuthenticationFailed | BackendMisconfigured)
        if terminal and self.step in ("preflight", "turn", "probe"):
            assert isinstance(self.decision, Finish)
            assert self.decision.outcome in (
                Outcome.AUTH_FAILED,
                Outcome.BACKEND_MISCONFIGURED,
                Outcome.BUDGET_EXHAUSTED,
            )

    @invariant()
    def a_probe_is_never_scheduled_in_the_past_nor_past_max_wait(self) -> None:
        if not isinstance(self.decision, ScheduleProbe):
            return
        if self.step == "resume":
            return  # the persisted instant may have passed while the run was down
        assert self.decision.at >= self.now
        assert self.state.waiting_since is not None
        assert self.state.waiting_since <= self.now
        bound = max(self.config.window_probe_interval, self.config.credits_probe_ceiling)
        assert self.decision.at <= self.now + bound
        if self.config.max_wait is not None:
            assert self.decision.at <= max(
                self.now, self.state.waiting_since + self.config.max_wait
            )

    @invariant()
    def no_probe_goes_out_past_a_cap(self) -> None:
        if isinstance(self.decision, ScheduleProbe | RunProbe):
            assert not self.state.ledger.any_exhausted

    @invariant()
    def a_wait_never_goes_on_past_max_wait(self) -> None:
        if self.step not in ("probe", "steer") or not isinstance(self.decision, ScheduleProbe):
            return
        assert self.state.waiting_since is not None
        assert not wait_exceeded(
            started_waiting_at=self.state.waiting_since, now=self.now, config=self.config
        )


RunLoopMachine.TestCase.settings = settings(
    max_examples=examples(250), stateful_step_count=50, deadline=None
)
TestRunLoop = RunLoopMachine.TestCase
