"""The runner: executes the domain's decisions, one at a time, and owns no rules.

Every choice of what comes next is the domain's (`claudeloop.domain.loop`): the runner
asks it, then carries the decision out through collaborators that each do one thing:
sending a turn or a probe and billing it (`turns`), verifying a Done (`verification`),
committing a settled turn (`checkpointing`), keeping the plan (`plan_keeping`), letting
a session go (`lost_sessions`), applying the requests of the control file (`steering`)
and counting the time waited (`waiting`). It saves each step's record before it says
what happened. It talks to the world only through ports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import assert_never

from claudeloop.application.announcements import announced_by
from claudeloop.application.checkpointing import Checkpointing
from claudeloop.application.events import (
    Event,
    ProbeFinished,
    RunFinished,
    RunResumed,
    RunStarted,
    SandboxSet,
    TurnFailed,
    TurnInterrupted,
    TurnSilent,
    WaitStarted,
)
from claudeloop.application.lost_sessions import LostWrites, replace_session
from claudeloop.application.plan_keeping import PlanKeeper, checked
from claudeloop.application.ports import (
    Advisor,
    Checkpoints,
    Checks,
    Clock,
    ControlInbox,
    EventSink,
    Gateway,
    PlanFiles,
    RunStore,
    Sleeper,
    TurnOutcome,
    WorkingTree,
)
from claudeloop.application.prompts import next_prompt
from claudeloop.application.records import RunRecord
from claudeloop.application.steering import apply_requests
from claudeloop.application.stopping import unless_stopped
from claudeloop.application.turns import Turns, turn_said
from claudeloop.application.verification import (
    NO_CHECKS,
    NO_REVIEWER,
    Verification,
    check_finished,
    review_finished,
)
from claudeloop.application.waiting import trusted, with_time_waited
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    capacity_kind,
    describe,
)
from claudeloop.domain.completion import Done
from claudeloop.domain.confinement import Posture, posture_line, posture_name
from claudeloop.domain.login import within_login
from claudeloop.domain.loop import (
    ControlCommand,
    Decision,
    Finish,
    Outcome,
    Phase,
    RunProbe,
    ScheduleProbe,
    SendTurn,
    Transition,
    budget_reached,
    decide_after_check,
    decide_after_probe,
    decide_after_review,
    decide_after_silent_turn,
    decide_after_turn,
    decide_on_control,
    decide_on_failure,
    decide_on_interrupt,
    decide_on_waking,
    decide_preflight,
    hear_resets,
    resume_decision,
)
from claudeloop.domain.lost_writes import after_lost_writes
from claudeloop.domain.pause import was_answered
from claudeloop.domain.stagnation import Answered, Stagnation
from claudeloop.domain.verification import AskReview, CheckCommand, RunCheck
from claudeloop.domain.waiting import ready_instant
from claudeloop.domain.watchdog import awaited

Step = tuple[RunRecord, Decision | None]


@dataclass
class Runner:
    gateway: Gateway
    clock: Clock
    sleeper: Sleeper
    events: EventSink
    store: RunStore
    control: ControlInbox
    # The plan file as it is on disk now (the model checks items off in it).
    plans: PlanFiles | None = None
    # Gateways of other profiles, for a limit policy that switches profile.
    profiles: Callable[[str], Gateway] | None = None
    # Gateways of the run's own backend on another model, for a switch-model policy.
    models: Callable[[str], Gateway] | None = None
    # The fix for a run the backend or the credentials end (None: the reason alone).
    advisor: Advisor | None = None
    # The verification commands a Done must pass, and the directory their outputs go to
    # (None: the run's cwd).
    checks: Checks | None = None
    check_logs: Path | None = None
    # The independent reviewer: a gateway on fresh sessions whose tools only read.
    reviewer: Gateway | None = None
    # The working tree, for the stagnation brake's evidence (None: not looked at).
    tree: WorkingTree | None = None
    # When the stored claude.ai login ends, as Claude Code said when the run was wired
    # (None: unknown, or a credential with no end): no request is sent after it and no
    # wait begun that would outlast it (domain.login).
    login_ends_at: datetime | None = None
    # The run's branch, for a commit per answered turn (None: no commits).
    checkpoints: Checkpoints | None = None
    # A run with nobody at hand to answer (a fleet's): a session Claude Code has no
    # conversation of (its transcript did not come to this machine, or was removed) is
    # let go of and the run goes on in a new one; else the run fails saying how to
    # (`claudeloop resume --new-session`), since a person may rather mend the config
    # directory and keep the conversation.
    new_session_if_gone: bool = False
    # Where this start runs the model's commands and the checks (None: not said, as in
    # the tests of other things).
    posture: Posture | None = None
    # The collaborators of one drive, made as it begins from the ports above (which the
    # composition root and the tests may set after construction); what they remember
    # between turns starts afresh with each drive, as a resume's does.
    _turns: Turns = field(init=False, repr=False, compare=False)
    _verification: Verification = field(init=False, repr=False, compare=False)
    _commits: Checkpointing = field(init=False, repr=False, compare=False)
    _plan: PlanKeeper = field(init=False, repr=False, compare=False)
    _lost: LostWrites = field(init=False, repr=False, compare=False)

    def _begin(self, *, probe_cut_off: bool) -> None:
        self._turns = Turns(
            self.gateway,
            self.clock,
            self.store,
            self.events,
            profiles=self.profiles,
            models=self.models,
            probe_cut_off=probe_cut_off,
        )
        self._verification = Verification(
            self.checks, self.check_logs, self.reviewer, self.control, self.events
        )
        self._commits = Checkpointing(self.checkpoints, self.store, self.events, self.tree)
        self._plan = PlanKeeper(self.plans)
        self._lost = LostWrites()

    async def drive(
        self, record: RunRecord, *, resumed: bool = False, new_session: bool = False
    ) -> RunRecord:
        """Run until the domain says Finish; returns the final record. `new_session`: the
        session the record names is let go of first (`claudeloop resume --new-session`)."""
        self.events.emit(_resumed(record) if resumed else _started(record))
        record, announce = self._mended(record, resumed=resumed, new_session=new_session)
        self._begin(probe_cut_off=resumed and record.state.phase is Phase.PROBING)
        record, decision = self._first_decision(record, resumed=resumed)
        self.store.save(record)
        for event in announce:
            self.events.emit(event)
        # A turn answered and not committed before a crash is committed before any other.
        record = self._commits.settle(record)
        while True:
            record, next_decision = await self._execute(record, decision)
            if next_decision is None:
                return record
            record = self._commits.settle(record)
            decision = next_decision

    def _mended(
        self, record: RunRecord, *, resumed: bool, new_session: bool
    ) -> tuple[RunRecord, list[Event]]:
        """The record as this start finds it (where it runs the model's commands, the
        session let go of, a turn a crash cut off), and what is said of it once saved."""
        announce: list[Event] = []
        if self.posture is not None:
            line = posture_line(self.posture)
            announce.append(SandboxSet(posture=posture_name(self.posture), line=line))
            record = replace(record, sandbox=line)
        if new_session:
            record = replace_session(record, "claudeloop resume --new-session", announce)
        if resumed and record.turn_in_flight is not None:
            # Killed mid-turn: its result never reached the record, so it is sent again
            # under the same number (see RunRecord.turn_in_flight).
            announce.append(
                TurnInterrupted(
                    turn=record.turn_in_flight,
                    reason="the run stopped while this turn was in flight; its "
                    "result was not recorded, so the turn is sent again",
                )
            )
            # What the service answered it since it began is billed with the turn sent
            # again (see Gateway.run_turn); a crash of a turn already sent again keeps
            # the instant of the first one cut off.
            since = record.interrupted_at or record.last_turn_started_at
            record = replace(record, turn_in_flight=None, interrupted_at=since)
        return record, announce

    def _first_decision(self, record: RunRecord, *, resumed: bool) -> tuple[RunRecord, Decision]:
        """The domain's first decision of this drive, and the record it leaves."""
        if resumed and record.state.phase in (Phase.WAITING, Phase.PROBING):
            # Killed while waiting: keep the persisted probe instant, within reason.
            decision = trusted(record, resume_decision(record.state), now=self.clock.now())
            if isinstance(decision, ScheduleProbe):
                record = replace(record, state=replace(record.state, next_probe_at=decision.at))
            transition = self._within_login(Transition(record.state, decision))
            return replace(record, state=transition.state), transition.decision
        if record.state.phase is Phase.PREFLIGHT:
            # Where the run begins, so its first turn is compared with something (a run
            # resumed before its first turn begins here too).
            plan = self._plan.current(record)
            start = Stagnation.start(checked_items=checked(plan), tree=self._fingerprint())
            record = replace(record, state=replace(record.state, stagnation=start))
        transition = decide_preflight(
            record.state,
            Available(),
            now=self.clock.now(),
            config=record.spec.wait_policy,
            policies=record.spec.limits,
            rules=record.spec.verify,
        )
        transition = self._within_login(transition)
        return replace(record, state=transition.state), transition.decision

    async def _execute(self, record: RunRecord, decision: Decision) -> Step:
        match decision:
            case SendTurn() | RunCheck() | AskReview():
                record, _ = self._steer(record)  # a probe now here has no wait to end
                if (stopped := self._stop_if_asked(record)) is not None:
                    return stopped
                if isinstance(decision, RunCheck):
                    return await self._run_check(record, decision.check)
                if isinstance(decision, AskReview):
                    return await self._review(record)
                if (reached := budget_reached(record.state)) is not None:
                    return self._apply(record, reached)  # a cap set to what was spent
                return await self._send_turn(record)
            case ScheduleProbe():
                return await self._wait(record, decision)
            case RunProbe():
                return await self._probe(record)
            case Finish(outcome=outcome, reason=reason):
                reason = self._advised(record, reason)
                record = replace(
                    record, state=replace(record.state, reason=reason), ended_at=self.clock.now()
                )
                # The processes end first: one that lost its transcript's lines says so
                # only as it exits, and the record must know before a resume reads it.
                heard = (*await self.gateway.close(), *await self.close())
                said: list[Event] = []
                record, _ = self._lost.heard(record, heard, said, ending=True)
                self.store.save(record)
                for event in said:
                    self.events.emit(event)
                self.events.emit(
                    RunFinished(outcome=outcome, exit_code=record.state.exit_code, reason=reason)
                )
                return record, None
            case _:
                assert_never(decision)

    async def _wait(self, record: RunRecord, decision: ScheduleProbe) -> Step:
        """Sleeps to the probe instant, going on asleep while the domain says so; ready
        by then to send the probe and the turn after it (`_sleep_to_probe`)."""
        at, awaiting = decision.at, decision.awaiting
        self.events.emit(
            WaitStarted(
                capacity=describe(awaiting), probe_at=at, capacity_kind=capacity_kind(awaiting)
            )
        )
        before = record.waited_seconds

        def progress(seconds: float) -> None:
            # Saved as the wait goes, so a kill mid-wait loses little of it; the
            # sleeper's own count holds when the wall clock stepped back.
            nonlocal record
            record = with_time_waited(record, now=self.clock.now(), at_least=before + seconds)
            self.store.save(record)

        while True:
            woke_on_time = await self._sleep_to_probe(record, at, progress)
            record = with_time_waited(record, now=self.clock.now())
            record, probe_now = self._steer(record)
            if (stopped := self._stop_if_asked(record)) is not None:
                return stopped
            woke = decide_on_waking(
                record.state,
                ScheduleProbe(at, awaiting),
                due=probe_now or woke_on_time,
                now=self.clock.now(),
                config=record.spec.wait_policy,
            )
            if not isinstance(woke.decision, ScheduleProbe):
                return self._apply(record, woke)
            # Woken by a request, applied: the same wait goes on, unsaid, to its probe
            # (brought forward by a lowered max-wait, and saved so).
            if woke.decision.at != at:
                at = woke.decision.at
                record = replace(record, state=woke.state)
                self.store.save(record)

    async def _sleep_to_probe(
        self, record: RunRecord, at: datetime, progress: Callable[[float], None]
    ) -> bool:
        """Sleeps to the probe instant `at` (False: the control file woke it first).
        At the ready instant before it (domain.waiting.ready_instant) the gateway gets
        ready for the probe and the turn after it, so that at `at` only their requests
        are sent; a wait longer than that first ends what an earlier probe left ready,
        so that nothing idles through it."""
        ready_at = ready_instant(at, record.spec.wait_policy)
        if ready_at is None:
            return await self.sleeper.sleep_until(at, progress=progress)
        # Each leg's sleeper counts from its own start: the second goes on from the first.
        first_leg = 0.0

        def before_ready(seconds: float) -> None:
            nonlocal first_leg
            first_leg = seconds
            progress(seconds)

        if ready_at > self.clock.now():
            await self.gateway.stand_down()
            if not await self.sleeper.sleep_until(ready_at, progress=before_ready):
                return False
        if not await self._get_ready(record.session_id):
            return False
        return await self.sleeper.sleep_until(
            at, progress=lambda seconds: progress(first_leg + seconds)
        )

    async def _get_ready(self, session_id: str | None) -> bool:
        """The gateway made ready for the probe and the turn on `session_id`; False when
        a stop came first: starting Claude Code takes seconds, which a stop does not
        wait for (the gateway ends what it started)."""
        ready = await unless_stopped(
            self.control.stop_asked, lambda: self.gateway.get_ready(session_id)
        )
        return ready is not None

    async def _probe(self, record: RunRecord) -> Step:
        probe, cost, estimated = await self._turns.probe()
        # Said once the probe is saved: a kill before that loses neither its cost nor
        # what it found.
        announce: list[Event] = []
        capacity = self._turns.capacity(record, probe.signals, announce)
        self._turns.note_guess(probe.guessed_models, probe.guessed_cost_usd, announce)
        announce.append(
            ProbeFinished(
                capacity=describe(capacity), cost_usd=cost, capacity_kind=capacity_kind(capacity)
            )
        )
        transition = decide_after_probe(
            hear_resets(record.state, probe.signals, probe.announced),
            capacity,
            now=self.clock.now(),
            config=record.spec.wait_policy,
            cost_usd=cost,
            policies=record.spec.limits,
            estimated_usd=estimated,
        )
        return self._apply(record, transition, announce=announce)

    def _advised(self, record: RunRecord, reason: str) -> str:
        """A run the backend or the credentials ended says how to mend it, in the reason
        it is saved and told with (decided once, here, not rewritten downstream)."""
        capacity = record.state.capacity
        ended_by_it = record.state.outcome in (Outcome.AUTH_FAILED, Outcome.BACKEND_MISCONFIGURED)
        if self.advisor is None or not ended_by_it:
            return reason
        if not isinstance(capacity, AuthenticationFailed | BackendMisconfigured):
            return reason
        detour = record.state.detour.profile if record.state.detour is not None else None
        return self.advisor.advised(reason, capacity, detour=detour)

    async def _send_turn(self, record: RunRecord) -> Step:
        spec = record.spec
        plan = self._plan.current(record)
        prompt = next_prompt(record, plan)
        number = record.state.ledger.attempts + 1
        record, outcome = await self._turns.send(replace(record, plan=plan), prompt, number)
        gone = outcome.gone_session
        if gone is not None and gone == record.session_id and self.new_session_if_gone:
            replaced: list[Event] = []
            record = replace_session(record, "Claude Code has no conversation of it here", replaced)
            self.store.save(record)
            for event in replaced:
                self.events.emit(event)
            return record, SendTurn()  # nothing was sent: the same turn, on a new session
        if outcome.failure is not None:
            return self._turn_failed(record, number, outcome, outcome.failure)
        record, cost, estimated = self._turns.billed(record, outcome)
        # Everything said of the turn is said once the record holding it is saved.
        announce: list[Event] = []
        read = self._turns.read(record, outcome, prompt, announce)
        answered = was_answered(read.capacity)
        seen: Answered | None = None
        plan_said: list[Event] = []  # said after the turn's own events
        if answered:
            # A Done still to be verified checks no plan item by itself.
            accepted = not (isinstance(read.verdict, Done) and spec.verify.verifies)
            record = self._plan.reconcile(record, read.verdict, plan_said, accepted=accepted)
            seen = Answered(checked_items=checked(record.plan), tree=self._fingerprint())
            record = replace(record, rewound=None)  # said, and answered
            record = self._commits.answered(record, number, read.verdict.summary, cost)
        transition = decide_after_turn(
            hear_resets(record.state, outcome.signals, outcome.announced),
            capacity=read.capacity,
            verdict=read.verdict,
            now=self.clock.now(),
            config=spec.wait_policy,
            cost_usd=cost,
            error=read.error,
            policies=spec.limits,
            sent=outcome.sent,
            rules=spec.verify,
            seen=seen,
            estimated_usd=estimated,
        )
        record, said = turn_said(number, record, outcome, read, answered=answered, cost=cost)
        announce += said + plan_said
        record, choice = self._lost.heard(record, outcome.writes_lost, announce)
        return self._apply(record, after_lost_writes(transition, choice), announce=announce)

    def _turn_failed(
        self, record: RunRecord, number: int, outcome: TurnOutcome, failure: str
    ) -> Step:
        """A turn with no result to read: cut off (by the watchdog, a signal), or failed."""
        if outcome.silent is not None or outcome.interrupted is not None:
            return self._cut_off(record, number, outcome)
        failed: list[Event] = [TurnFailed(turn=number, reason=failure)]
        record, _ = self._lost.heard(record, outcome.writes_lost, failed, ending=True)
        # A Ctrl-C reaches the CLI child too and kills its turn: that is a stop.
        if (stopped := self._stop_if_asked(record, announce=failed)) is not None:
            return stopped
        return self._apply(record, decide_on_failure(record.state, failure), announce=failed)

    def _cut_off(
        self, record: RunRecord, number: int, outcome: TurnOutcome, *, review: bool = False
    ) -> Step:
        """A turn (or a review) ended before its result. By a signal: the run stops, the
        turn kept in flight for a resume to send again. By the watchdog: the domain says
        whether it goes again at once or is waited out as an outage. A turn's service
        answers are billed with the turn sent again, as after a crash; a review's
        session keeps no transcript to bill from."""
        said: list[Event] = []
        if not review:
            record = replace(record, interrupted_at=record.last_turn_started_at)
        stopped = outcome.interrupted
        record, choice = self._lost.heard(
            record, outcome.writes_lost, said, ending=stopped is not None
        )
        if stopped is not None:
            cut = None if review else number
            stop = decide_on_interrupt(record.state, stopped, cut_turn=cut)
            return self._apply(record, stop, announce=said, in_flight=cut)
        silent = outcome.silent
        assert silent is not None  # cut off by one or the other
        spec = record.spec
        transition = decide_after_silent_turn(
            record.state, now=self.clock.now(), config=spec.wait_policy, policies=spec.limits
        )
        again = isinstance(transition.decision, SendTurn | AskReview)
        said.insert(
            0,
            TurnSilent(
                turn=number,
                seconds=round(silent.seconds, 1),
                awaiting=awaited(silent.activity),
                action="sent_again" if again else "wait",
            ),
        )
        return self._apply(record, after_lost_writes(transition, choice), announce=said)

    async def _run_check(self, record: RunRecord, check: CheckCommand) -> Step:
        """One verification command of the Done in verification, through the Checks port."""
        verifying = record.state.verifying
        assert verifying is not None  # a RunCheck comes only with a Done in verification
        checks = self._verification.checks
        if checks is None:
            return self._apply(record, decide_on_failure(record.state, NO_CHECKS))
        result = await self._verification.check(record, checks, check)
        if result is None:
            # A check may run for its whole timeout: a stop ends it and the run, which
            # keeps the round to run again from its first check on resume. A wind-down
            # lets the check finish, as it lets a turn.
            stop = decide_on_control(
                record.state, ControlCommand.STOP, interrupt=self.control.interrupted()
            )
            return self._apply(record, stop)
        turn = record.state.ledger.attempts
        announce: list[Event] = [check_finished(turn, check, result)]
        self._commits.checks_ran(turn, (*verifying.results, result))
        transition = decide_after_check(record.state, result)
        record = self._on_acceptance(record, transition, verifying.summary, announce)
        return self._apply(record, transition, announce=announce)

    async def _review(self, record: RunRecord) -> Step:
        """The independent review: one turn on a fresh, read-only session."""
        verifying = record.state.verifying
        assert verifying is not None  # an AskReview comes only with a Done in verification
        reviewer = self._verification.reviewer
        if reviewer is None:
            return self._apply(record, decide_on_failure(record.state, NO_REVIEWER))
        number = record.state.ledger.attempts + 1
        plan = self._plan.current(record)
        prompt, outcome = await self._verification.review(record, reviewer, plan, number)
        if outcome.silent is not None or outcome.interrupted is not None:
            return self._cut_off(record, number, outcome, review=True)
        if outcome.failure is not None:
            failed = TurnFailed(turn=number, reason=f"the review failed: {outcome.failure}")
            if (stopped := self._stop_if_asked(record, announce=[failed])) is not None:
                return stopped
            return self._apply(
                record, decide_on_failure(record.state, failed.reason), announce=[failed]
            )
        announce: list[Event] = []
        read = self._turns.read(record, outcome, prompt, announce)
        cost = outcome.cost_usd if outcome.billed else 0.0
        spec = record.spec
        transition = decide_after_review(
            hear_resets(record.state, outcome.signals, outcome.announced),
            capacity=read.capacity,
            verdict=read.verdict,
            now=self.clock.now(),
            config=spec.wait_policy,
            cost_usd=cost,
            error=read.error,
            policies=spec.limits,
            sent=outcome.sent,
        )
        answered = was_answered(read.capacity)
        announce.append(review_finished(number, read, answered=answered, cost=cost))
        record = self._on_acceptance(record, transition, verifying.summary, announce)
        return self._apply(record, transition, announce=announce)

    def _on_acceptance(
        self, record: RunRecord, transition: Transition, summary: str, announce: list[Event]
    ) -> RunRecord:
        """A Done accepted after its verification checks the plan's items, as an
        unverified Done does at once."""
        if transition.state.outcome is not Outcome.DONE:
            return record
        return self._plan.reconcile(record, Done(summary), announce)

    def _fingerprint(self) -> str | None:
        return self.tree.fingerprint() if self.tree is not None else None

    async def close(self) -> tuple[str, ...]:
        """Closes the other profiles' gateways and the reviewer's (the run's own belongs
        to its owner); returns the sessions whose transcripts their processes said they
        could not save (a detour's process is on the run's session)."""
        return (*await self._turns.close_detours(), *await self._verification.close())

    def _within_login(self, transition: Transition) -> Transition:
        return within_login(transition, ends_at=self.login_ends_at, now=self.clock.now())

    def _stop_if_asked(self, record: RunRecord, *, announce: Sequence[Event] = ()) -> Step | None:
        """At a safe point: a stop or wind-down asked for since the last one takes effect
        here (None: none was asked for, the step goes ahead)."""
        command = self.control.pending()
        if command is None:
            return None
        stop = decide_on_control(record.state, command, interrupt=self.control.interrupted())
        return self._apply(record, stop, announce=announce)

    def _steer(self, record: RunRecord) -> tuple[RunRecord, bool]:
        """The requests of the control file applied (and saved, and said); and whether
        one of them ended the wait going on (probe now)."""
        return apply_requests(
            record, self.control, clock=self.clock, store=self.store, events=self.events
        )

    def _apply(
        self,
        record: RunRecord,
        transition: Transition,
        *,
        announce: Sequence[Event] = (),
        in_flight: int | None = None,
    ) -> Step:
        """Saves the transition, then says what happened: an event never tells of
        something a resume would do again. `in_flight`: a turn cut off, which the record
        keeps for a resume to send again (RunRecord.turn_in_flight)."""
        transition = self._within_login(transition)
        said = [*announce, *announced_by(record, transition.state)]
        record = with_time_waited(record, now=self.clock.now(), after=transition.state)
        record = replace(record, state=transition.state, turn_in_flight=in_flight)
        self.store.save(record)
        for event in said:
            self.events.emit(event)
        return record, transition.decision


def _started(record: RunRecord) -> RunStarted:
    spec = record.spec
    return RunStarted(
        run_id=record.run_id,
        cwd=str(spec.cwd),
        plan=str(spec.plan_path) if spec.plan_path else None,
        profile=spec.profile,
        model=spec.model,
        permission_mode=spec.permission_mode,
    )


def _resumed(record: RunRecord) -> RunResumed:
    return RunResumed(
        phase=record.state.phase.value,
        run_id=record.run_id,
        cwd=str(record.spec.cwd),
        turn=record.state.ledger.attempts + 1,
    )
