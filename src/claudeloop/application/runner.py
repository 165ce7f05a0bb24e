"""The runner: executes the domain's decisions, one at a time, and owns no rules.

Every choice of what comes next is the domain's (`claudeloop.domain.loop`); the runner
sends what it is told to send, waits as long as it is told to wait, and reports what came
back. It talks to the world only through ports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import assert_never

import anyio

from claudeloop.application.events import (
    CommitRefused,
    CostGuessed,
    Event,
    ModelRestored,
    ModelSwitched,
    NoProgress,
    OverageStarted,
    PauseIgnored,
    PlanUpdated,
    ProbeFinished,
    ProfileRestored,
    ProfileSwitched,
    ReviewFinished,
    ReviewStarted,
    RunFinished,
    RunResumed,
    RunStarted,
    SandboxBlocked,
    SandboxSet,
    SessionReplaced,
    SessionWritesLost,
    ToolsDenied,
    TurnCommitted,
    TurnFailed,
    TurnFinished,
    TurnInterrupted,
    TurnSilent,
    TurnStarted,
    VerifyFinished,
    VerifyStarted,
    WaitStarted,
)
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
from claudeloop.application.prompts import (
    continue_prompt,
    first_prompt,
    handoff_prompt,
    rejection_prompt,
    review_prompt,
    with_notes,
)
from claudeloop.application.records import RunRecord
from claudeloop.application.steering import steering_event
from claudeloop.domain.budget import in_flight_estimate
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    capacity_kind,
    describe,
)
from claudeloop.domain.checkpoints import commit_message, reconcile, trailers
from claudeloop.domain.classify import turn_warning, unreachable_reading
from claudeloop.domain.completion import CompletionVerdict, Continue, Done, evaluate
from claudeloop.domain.confinement import Posture, posture_line, posture_name
from claudeloop.domain.limits import render_action
from claudeloop.domain.login import within_login
from claudeloop.domain.loop import (
    ControlCommand,
    Decision,
    Finish,
    Outcome,
    Phase,
    RunProbe,
    RunState,
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
    time_waited,
    wait_began,
)
from claudeloop.domain.lost_writes import (
    ResumeSession,
    SessionChoice,
    StopLost,
    after_lost_writes,
    session_for_next_turn,
)
from claudeloop.domain.overage import is_paid_overage
from claudeloop.domain.pause import capacity_of, was_answered
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.progress import plan_after_verdict
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.stagnation import Answered, Stagnation
from claudeloop.domain.steering import steer
from claudeloop.domain.text import first_line
from claudeloop.domain.turn_end import is_error_turn
from claudeloop.domain.verification import (
    AskReview,
    CheckCommand,
    CheckResult,
    ReviewDisagreed,
    RunCheck,
)
from claudeloop.domain.waiting import trusted_probe_instant
from claudeloop.domain.watchdog import awaited


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
    # What the runner keeps between turns, not parameters (init=False: no caller sets it).
    # Windows whose pause threshold was already reported as ignored: say it once.
    _noticed: set[str] = field(default_factory=set, init=False)
    # Models whose price the CLI guessed, already reported: say it once.
    _guessed: set[str] = field(default_factory=set, init=False)
    _others: dict[str, Gateway] = field(default_factory=dict, init=False)
    _models: dict[str, Gateway] = field(default_factory=dict, init=False)
    # A probe a crash cut off: the service may have answered it, nobody recorded it; it
    # is billed at an estimate with the probe sent again.
    _probe_cut_off: bool = field(default=False, init=False)
    # Sessions whose transcripts Claude Code could not save since this drive began: a
    # second one ends the run (domain.lost_writes); a resume, after the person freed
    # space, counts afresh.
    _lost_in_a_row: int = field(default=0, init=False)
    # What an answered turn's commit says: its summary and cost, and the checks of the
    # verification round that followed it, by turn (a resume after a crash has neither:
    # its commit says less).
    _said_of_turn: dict[int, tuple[str, float]] = field(default_factory=dict, init=False)
    _checks_of_turn: dict[int, tuple[tuple[str, bool], ...]] = field(
        default_factory=dict, init=False
    )

    async def drive(
        self, record: RunRecord, *, resumed: bool = False, new_session: bool = False
    ) -> RunRecord:
        """Run until the domain says Finish; returns the final record. `new_session`: the
        session the record names is let go of first (`claudeloop resume --new-session`)."""
        if resumed:
            self.events.emit(
                RunResumed(
                    phase=record.state.phase.value,
                    run_id=record.run_id,
                    cwd=str(record.spec.cwd),
                    turn=record.state.ledger.attempts + 1,
                )
            )
        else:
            self.events.emit(
                RunStarted(
                    run_id=record.run_id,
                    cwd=str(record.spec.cwd),
                    plan=str(record.spec.plan_path) if record.spec.plan_path else None,
                    profile=record.spec.profile,
                    model=record.spec.model,
                    permission_mode=record.spec.permission_mode,
                )
            )
        announce: list[Event] = []
        if self.posture is not None:
            line = posture_line(self.posture)
            announce.append(SandboxSet(posture=posture_name(self.posture), line=line))
            record = replace(record, sandbox=line)
        if new_session:
            record = _replace_session(record, "claudeloop resume --new-session", announce)
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
        self._probe_cut_off = resumed and record.state.phase is Phase.PROBING
        if resumed and record.state.phase in (Phase.WAITING, Phase.PROBING):
            # Killed while waiting: keep the persisted probe instant, within reason.
            decision = self._trusted(record, resume_decision(record.state))
            if isinstance(decision, ScheduleProbe):
                record = replace(record, state=replace(record.state, next_probe_at=decision.at))
            checked = self._within_login(Transition(record.state, decision))
            record = replace(record, state=checked.state)
            decision = checked.decision
        else:
            if record.state.phase is Phase.PREFLIGHT:
                # Where the run begins, so its first turn is compared with something
                # (a run resumed before its first turn begins here too).
                plan = self._current_plan(record)
                start = Stagnation.start(checked_items=_checked(plan), tree=self._fingerprint())
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
            record = replace(record, state=transition.state)
            decision = transition.decision
        self.store.save(record)
        for event in announce:
            self.events.emit(event)
        # A turn answered and not committed before a crash is committed before any other.
        record = self._checkpoint(record)
        while True:
            record, next_decision = await self._execute(record, decision)
            if next_decision is None:
                return record
            record = self._checkpoint(record)
            decision = next_decision

    async def _execute(
        self, record: RunRecord, decision: Decision
    ) -> tuple[RunRecord, Decision | None]:
        match decision:
            case SendTurn():
                record, _ = self._steer(record)  # a probe now here has no wait to end
                if (stopped := self._stop_if_asked(record)) is not None:
                    return stopped
                if (reached := budget_reached(record.state)) is not None:
                    return self._apply(record, reached)  # a cap set to what was spent
                return await self._send_turn(record)
            case RunCheck(check=check):
                record, _ = self._steer(record)  # a probe now here has no wait to end
                if (stopped := self._stop_if_asked(record)) is not None:
                    return stopped
                return await self._run_check(record, check)
            case AskReview():
                record, _ = self._steer(record)  # a probe now here has no wait to end
                if (stopped := self._stop_if_asked(record)) is not None:
                    return stopped
                return await self._review(record)
            case ScheduleProbe(at=at, awaiting=awaiting):
                self.events.emit(
                    WaitStarted(
                        capacity=describe(awaiting),
                        probe_at=at,
                        capacity_kind=capacity_kind(awaiting),
                    )
                )
                before = record.waited_seconds

                def progress(seconds: float) -> None:
                    # Saved as the wait goes, so a kill mid-wait loses little of it; the
                    # sleeper's own count holds when the wall clock stepped back.
                    nonlocal record
                    record = self._waited(record, at_least=before + seconds)
                    self.store.save(record)

                while True:
                    woke_on_time = await self.sleeper.sleep_until(at, progress=progress)
                    record = self._waited(record)
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
                    # Woken by a request, applied: the same wait goes on, unsaid, to its
                    # probe (brought forward by a lowered max-wait, and saved so).
                    if woke.decision.at != at:
                        at = woke.decision.at
                        record = replace(record, state=woke.state)
                        self.store.save(record)
            case RunProbe():
                probe = await self.gateway.probe()
                cut_off, self._probe_cut_off = self._probe_cut_off, False
                estimated = in_flight_estimate(int(cut_off), before=None, after=probe.cost_usd)
                cost = probe.cost_usd + estimated
                # Said once the probe is saved: a kill before that loses neither its cost
                # nor what it found.
                announce: list[Event] = []
                capacity = self._capacity(record, probe.signals, announce)
                self._note_guess(probe.guessed_models, probe.guessed_cost_usd, announce)
                announce.append(
                    ProbeFinished(
                        capacity=describe(capacity),
                        cost_usd=cost,
                        capacity_kind=capacity_kind(capacity),
                    )
                )
                return self._apply(
                    record,
                    decide_after_probe(
                        hear_resets(record.state, probe.signals, probe.announced),
                        capacity,
                        now=self.clock.now(),
                        config=record.spec.wait_policy,
                        cost_usd=cost,
                        policies=record.spec.limits,
                        estimated_usd=estimated,
                    ),
                    announce=announce,
                )
            case Finish(outcome=outcome, reason=reason):
                reason = self._advised(record, reason)
                record = replace(
                    record, state=replace(record.state, reason=reason), ended_at=self.clock.now()
                )
                # The processes end first: one that lost its transcript's lines says so
                # only as it exits, and the record must know before a resume reads it.
                heard = (*await self.gateway.close(), *await self.close())
                said: list[Event] = []
                record, _ = self._writes_lost(record, heard, said, ending=True)
                self.store.save(record)
                for event in said:
                    self.events.emit(event)
                self.events.emit(
                    RunFinished(outcome=outcome, exit_code=record.state.exit_code, reason=reason)
                )
                return record, None
            case _:
                assert_never(decision)

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

    def _prompt(self, record: RunRecord, plan: WorkPlan | None) -> str:
        """The prompt of the next turn: the first, a handoff, or a continue prompt, after
        what a rejection or a rewind has to say."""
        spec = record.spec
        marker = spec.done_marker if spec.marker_fallback else None
        # A session whose transcript Claude Code could not save is never resumed: a new
        # one takes over, told the task again and what the lost one left to do.
        handed = record.lost_sessions or record.gone_sessions
        if record.session_id is None and handed and record.state.ledger.attempts:
            prompt = handoff_prompt(
                spec.task,
                gone=bool(record.gone_sessions),
                plan=plan,
                plan_name=spec.plan_path.name if spec.plan_path else None,
                remaining_work=record.state.remaining_work,
                marker=marker,
            )
        # No turn recorded yet: a session saved mid-turn by a first turn a crash cut off
        # holds at most part of the task, so the task is said again.
        elif record.session_id is None or record.state.ledger.attempts == 0:
            plan_name = spec.plan_path.name if spec.plan_path else None
            prompt = first_prompt(spec.task, plan=plan, plan_name=plan_name, marker=marker)
        else:
            rejection = record.state.rejection
            prompt = continue_prompt(
                plan=plan,
                # A reviewer's remaining work is said with its rejection.
                remaining_work=()
                if isinstance(rejection, ReviewDisagreed)
                else record.state.remaining_work,
                custom=spec.continue_prompt,
                marker=marker,
            )
            if rejection is not None:
                prompt = f"{rejection_prompt(rejection)}\n\n{prompt}"
        prompt = with_notes(prompt, record.state.notes)
        if record.rewound:
            prompt = f"{record.rewound}\n\n{prompt}"
        return prompt

    async def _send_turn(self, record: RunRecord) -> tuple[RunRecord, Decision | None]:
        spec = record.spec
        plan = self._current_plan(record)
        prompt = self._prompt(record, plan)
        number = record.state.ledger.attempts + 1
        # A turn sent again after a crash keeps the instant the cut-off one began, so a
        # second crash still finds everything unbilled since then.
        started = record.interrupted_at or self.clock.now()
        record = replace(record, last_turn_started_at=started, plan=plan, turn_in_flight=number)
        self.store.save(record)
        self.events.emit(TurnStarted(turn=number, session_id=record.session_id))

        def session_named(session_id: str) -> None:
            # Saved at once: a kill before the turn ends resumes this session, and what
            # it served is billed then, instead of a new session leaving it unbilled.
            nonlocal record
            if session_id != record.session_id:
                record = replace(record, session_id=session_id)
                self.store.save(record)

        outcome = await self._gateway_for(record).run_turn(
            prompt,
            session_id=record.session_id,
            interrupted_at=record.interrupted_at,
            on_session=session_named,
        )
        if outcome.sent and outcome.failure is None and not outcome.cut_off_owed:
            record = replace(record, interrupted_at=None)  # billed with this turn
        gone = outcome.gone_session
        if gone is not None and gone == record.session_id and self.new_session_if_gone:
            replaced: list[Event] = []
            record = _replace_session(
                record, "Claude Code has no conversation of it here", replaced
            )
            self.store.save(record)
            for event in replaced:
                self.events.emit(event)
            return record, SendTurn()  # nothing was sent: the same turn, on a new session
        if outcome.failure is not None:
            return self._turn_failed(record, number, outcome, outcome.failure)
        record, cost = _with_session(record, outcome)
        estimated = min(outcome.estimated_cost_usd, cost) if outcome.billed else 0.0
        # Everything said of the turn is said once the record holding it is saved.
        announce: list[Event] = []
        capacity, verdict, error = self._read(record, outcome, prompt, announce)
        answered = was_answered(capacity)
        seen: Answered | None = None
        plan_said: list[Event] = []  # said after the turn's own events
        if answered:
            # A Done still to be verified checks no plan item by itself.
            accepted = not (isinstance(verdict, Done) and spec.verify.verifies)
            record = self._reconcile_plan(record, verdict, plan_said, accepted=accepted)
            seen = Answered(checked_items=_checked(record.plan), tree=self._fingerprint())
            record = replace(record, rewound=None)  # said, and answered
            if self.checkpoints is not None:
                # Saved with the turn's result: a crash before its commit commits it on
                # resume (domain.checkpoints).
                record = replace(record, answered_turn=number)
                self._said_of_turn[number] = (verdict.summary, cost)
        transition = decide_after_turn(
            hear_resets(record.state, outcome.signals, outcome.announced),
            capacity=capacity,
            verdict=verdict,
            now=self.clock.now(),
            config=spec.wait_policy,
            cost_usd=cost,
            error=error,
            policies=spec.limits,
            sent=outcome.sent,
            rules=spec.verify,
            seen=seen,
            estimated_usd=estimated,
        )
        announce.append(
            TurnFinished(
                turn=number,
                capacity=describe(capacity),
                # A refused turn's verdict means nothing (the limit may have cut it short).
                verdict=type(verdict).__name__.lower() if answered else "refused",
                summary=verdict.summary,
                cost_usd=cost,
                session_id=record.session_id,
                denied_tools=tuple(outcome.denied_tools),
                sent=outcome.sent,
                error=error,
                usage_warning=turn_warning(outcome.signals),
                capacity_kind=capacity_kind(capacity),
            )
        )
        if outcome.denied_tools:
            announce.append(ToolsDenied(tools=tuple(outcome.denied_tools)))
        announce.extend(
            SandboxBlocked(turn=number, kind=each.kind, target=each.target)
            for each in outcome.blocked
        )
        if outcome.blocked:
            record = replace(record, blocked=record.blocked + len(outcome.blocked))
        announce.extend(plan_said)
        record, choice = self._writes_lost(record, outcome.writes_lost, announce)
        return self._apply(record, after_lost_writes(transition, choice), announce=announce)

    def _turn_failed(
        self, record: RunRecord, number: int, outcome: TurnOutcome, failure: str
    ) -> tuple[RunRecord, Decision | None]:
        """A turn with no result to read: cut off (by the watchdog, a signal), or failed."""
        if outcome.silent is not None or outcome.interrupted is not None:
            return self._cut_off(record, number, outcome)
        failed: list[Event] = [TurnFailed(turn=number, reason=failure)]
        record, _ = self._writes_lost(record, outcome.writes_lost, failed, ending=True)
        # A Ctrl-C reaches the CLI child too and kills its turn: that is a stop.
        if (stopped := self._stop_if_asked(record, announce=failed)) is not None:
            return stopped
        return self._apply(record, decide_on_failure(record.state, failure), announce=failed)

    def _cut_off(
        self, record: RunRecord, number: int, outcome: TurnOutcome, *, review: bool = False
    ) -> tuple[RunRecord, Decision | None]:
        """A turn (or a review) ended before its result. By a signal: the run stops, the
        turn kept in flight for a resume to send again. By the watchdog: the domain says
        whether it goes again at once or is waited out as an outage. A turn's service
        answers are billed with the turn sent again, as after a crash; a review's
        session keeps no transcript to bill from."""
        said: list[Event] = []
        if not review:
            record = replace(record, interrupted_at=record.last_turn_started_at)
        stopped = outcome.interrupted
        record, choice = self._writes_lost(
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

    def _writes_lost(
        self,
        record: RunRecord,
        heard: Sequence[str],
        announce: list[Event],
        *,
        ending: bool = False,
    ) -> tuple[RunRecord, SessionChoice]:
        """The record once Claude Code said whose transcripts it could not save: each is
        kept in `lost_sessions`, and the run's own session is let go of, so no turn, no
        resume after a crash, resumes it (domain.lost_writes). `ending`: the run ends
        anyway (no second loss ends it again); a resume of it starts a new session."""
        fresh = tuple(s for s in dict.fromkeys(heard) if s not in record.lost_sessions)
        if not fresh:
            return record, ResumeSession(record.session_id)
        cut = record.session_id is not None and record.session_id in fresh
        if cut:
            self._lost_in_a_row += 1
        choice = session_for_next_turn(
            record.session_id, writes_lost=cut, lost_in_a_row=self._lost_in_a_row
        )
        if cut and record.session_id is not None:
            stops = isinstance(choice, StopLost) and not ending
            announce.append(
                SessionWritesLost(
                    session_id=record.session_id,
                    action="stop" if stops else "new_session",
                    reason=choice.reason
                    if isinstance(choice, StopLost) and stops
                    else "Claude Code could not save this session's transcript (a full disk "
                    "or quota), so a resume would continue a conversation that is not all "
                    "there: the next turn starts a new session, told the task again",
                )
            )
        lost = replace(record, lost_sessions=record.lost_sessions + fresh)
        return (replace(lost, session_id=None) if cut else lost), choice

    async def _run_check(
        self, record: RunRecord, check: CheckCommand
    ) -> tuple[RunRecord, Decision | None]:
        """One verification command of the Done in verification, through the Checks port."""
        verifying = record.state.verifying
        assert verifying is not None  # a RunCheck comes only with a Done in verification
        if self.checks is None:
            reason = "verification commands are configured but this run cannot run them"
            return self._apply(record, decide_on_failure(record.state, reason))
        turn = record.state.ledger.attempts
        logs = self.check_logs or record.spec.cwd
        output = logs / f"turn-{turn}-check-{len(verifying.results) + 1}.log"
        self.events.emit(VerifyStarted(turn=turn, command=check.text, output=str(output)))
        result = await self._check_unless_stopped(self.checks, check, output)
        if result is None:
            # A check may run for its whole timeout: a stop ends it and the run, which
            # keeps the round to run again from its first check on resume. A wind-down
            # lets the check finish, as it lets a turn.
            stop = decide_on_control(
                record.state, ControlCommand.STOP, interrupt=self.control.interrupted()
            )
            return self._apply(record, stop)
        announce: list[Event] = [
            VerifyFinished(
                turn=turn,
                command=check.text,
                passed=result.passed,
                exit_code=result.exit_code,
                seconds=round(result.seconds, 3),
                output=str(result.output_path) if result.output_path else None,
                timed_out=result.timed_out,
                error=result.start_error,
            )
        ]
        self._checks_of_turn[turn] = tuple(
            (done.command.text, done.passed) for done in (*verifying.results, result)
        )
        transition = decide_after_check(record.state, result)
        record = self._on_acceptance(record, transition, verifying.summary, announce)
        return self._apply(record, transition, announce=announce)

    async def _check_unless_stopped(
        self, checks: Checks, check: CheckCommand, output: Path
    ) -> CheckResult | None:
        """The check's result, or None when a stop came first (cancelled, the check has
        ended its process group)."""
        results: list[CheckResult] = []
        failure: BaseException | None = None
        async with anyio.create_task_group() as group:

            async def stop_when_asked() -> None:
                await self.control.stop_asked()
                group.cancel_scope.cancel()

            group.start_soon(stop_when_asked)
            try:
                results.append(await checks.run(check, output=output))
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as other:
                failure = other  # raised as itself (a full disk), not in an exception group
            group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return results[0] if results else None

    async def _review(self, record: RunRecord) -> tuple[RunRecord, Decision | None]:
        """The independent review: one turn on a fresh, read-only session."""
        verifying = record.state.verifying
        assert verifying is not None  # an AskReview comes only with a Done in verification
        if self.reviewer is None:
            reason = "an independent review is asked for but this run has no reviewer"
            return self._apply(record, decide_on_failure(record.state, reason))
        spec = record.spec
        marker = spec.done_marker if spec.marker_fallback else None
        prompt = review_prompt(
            spec.task, plan=self._current_plan(record), summary=verifying.summary, marker=marker
        )
        number = record.state.ledger.attempts + 1
        self.events.emit(ReviewStarted(turn=number))
        outcome = await self.reviewer.run_turn(prompt, session_id=None)
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
        capacity, verdict, error = self._read(record, outcome, prompt, announce)
        cost = outcome.cost_usd if outcome.billed else 0.0
        transition = decide_after_review(
            hear_resets(record.state, outcome.signals, outcome.announced),
            capacity=capacity,
            verdict=verdict,
            now=self.clock.now(),
            config=spec.wait_policy,
            cost_usd=cost,
            error=error,
            policies=spec.limits,
            sent=outcome.sent,
        )
        answered = was_answered(capacity)
        announce.append(
            ReviewFinished(
                turn=number,
                capacity=describe(capacity),
                verdict=type(verdict).__name__.lower() if answered else "refused",
                summary=verdict.summary,
                remaining_work=verdict.remaining_work if isinstance(verdict, Continue) else (),
                cost_usd=cost,
            )
        )
        record = self._on_acceptance(record, transition, verifying.summary, announce)
        return self._apply(record, transition, announce=announce)

    def _on_acceptance(
        self,
        record: RunRecord,
        transition: Transition,
        summary: str,
        announce: list[Event],
    ) -> RunRecord:
        """A Done accepted after its verification checks the plan's items, as an
        unverified Done does at once."""
        if transition.state.outcome is not Outcome.DONE:
            return record
        return self._reconcile_plan(record, Done(summary), announce)

    def _checkpoint(self, record: RunRecord) -> RunRecord:
        """A commit of the last answered turn's changes, once the turn is settled (its
        verification round over), reconciled with the branch first, so that no turn is
        committed twice nor left out after a crash; the record then says it."""
        checkpoints = self.checkpoints
        if checkpoints is None or record.state.verifying is not None:
            return record
        if record.answered_turn <= record.checkpointed_turn:
            return record
        plan = reconcile(
            recorded=record.checkpointed_turn,
            on_branch=checkpoints.last_turn(),
            answered=record.answered_turn,
        )
        said: list[Event] = []
        turn = plan.commit
        if turn is not None:
            summary, cost = self._said_of_turn.get(
                turn, (f"turn {turn}, committed as the run resumed after a stop", 0.0)
            )
            checks = self._checks_of_turn.get(turn, ())
            message = commit_message(summary, turn, trailers(record.run_id, turn, cost, checks))
            done = checkpoints.commit(message)
            if done.refused:
                said.append(
                    CommitRefused(
                        turn=turn,
                        files=done.refused,
                        reason="they hold a secret this run knows (or are too large to "
                        "be read for one); they stay in the working tree, uncommitted",
                    )
                )
            if done.sha is not None:
                said.append(
                    TurnCommitted(
                        turn=turn,
                        branch=checkpoints.branch,
                        sha=done.sha,
                        files_changed=len(done.files),
                    )
                )
                # The tree the next turn is compared with is the committed one.
                stagnation = record.state.stagnation.rebased(self._fingerprint())
                record = replace(record, state=replace(record.state, stagnation=stagnation))
        record = replace(record, checkpointed_turn=turn if turn is not None else plan.settled)
        self.store.save(record)
        for event in said:
            self.events.emit(event)
        return record

    def _fingerprint(self) -> str | None:
        return self.tree.fingerprint() if self.tree is not None else None

    def _read(
        self, record: RunRecord, outcome: TurnOutcome, prompt: str, announce: list[Event]
    ) -> tuple[CapacityState, CompletionVerdict, str | None]:
        """What a turn's or a review's outcome says: the capacity it met, its verdict, and
        the error it ended in (None: none)."""
        self._note_guess(outcome.guessed_models, outcome.guessed_cost_usd, announce)
        capacity = self._capacity(record, outcome.signals, announce)
        verdict = evaluate(
            outcome.structured,
            final_text=outcome.final_text,
            prompt=prompt,
            marker=record.spec.done_marker,
            marker_fallback=record.spec.marker_fallback,
            stopped_by_hook=outcome.stopped_by_hook,
            refused_by_model=outcome.refused_by_model,
        )
        error = (
            first_line(outcome.signals.result_text, longest=300, empty="no detail")
            if is_error_turn(outcome.signals)
            else None
        )
        return capacity, verdict, error

    def _capacity(
        self, record: RunRecord, signals: TurnSignals, announce: list[Event]
    ) -> CapacityState:
        thresholds = record.spec.pause_at
        unreported = thresholds.unreported(signals.windows) if signals.windows else ()
        fresh = [window for window in unreported if window not in self._noticed]
        if fresh:
            self._noticed.update(fresh)
            announce.append(
                PauseIgnored(
                    windows=tuple(fresh),
                    reason="the service reports no utilization for these windows; "
                    "their pause thresholds are ignored",
                )
            )
        # A server that cannot be reached is an outage unless the evidence says the
        # address is wrong (domain.classify.unreachable_reading).
        return unreachable_reading(
            capacity_of(signals, thresholds),
            signals,
            answered_before=record.state.ledger.turns > 0,
        )

    def _note_guess(
        self, models: tuple[str, ...], guessed_usd: float, announce: list[Event]
    ) -> None:
        fresh = [model for model in models if model not in self._guessed]
        if not fresh:
            return
        self._guessed.update(fresh)
        announce.append(
            CostGuessed(
                models=tuple(fresh),
                guessed_usd=guessed_usd,
                reason="Claude Code does not know the price of these models and "
                "guesses it; the guess is not counted in the run's dollars nor "
                "against --max-dollars",
            )
        )

    def _trusted(self, record: RunRecord, decision: Decision) -> Decision:
        if not isinstance(decision, ScheduleProbe):
            return decision
        state = record.state
        now = self.clock.now()
        at = trusted_probe_instant(
            decision.at,
            decision.awaiting,
            now=now,
            started_waiting_at=state.waiting_since or now,
            probe_count=state.wait_probes,
            config=record.spec.wait_policy,
            announced=state.announced_resets,
        )
        return replace(decision, at=at)

    def _reconcile_plan(
        self,
        record: RunRecord,
        verdict: CompletionVerdict,
        announce: list[Event],
        *,
        accepted: bool = True,
    ) -> RunRecord:
        if record.plan is None:
            return record
        before = (record.plan.done_count, record.plan.total)
        plan = plan_after_verdict(record.plan, verdict, accepted=accepted)
        on_disk = self._read_plan(record)
        if on_disk is not None:
            plan = plan.merged_with(on_disk)
        if (plan.done_count, plan.total) != before:
            announce.append(
                PlanUpdated(
                    done=plan.done_count,
                    total=plan.total,
                    open=tuple(item.text for item in plan.open_items),
                )
            )
        path = record.spec.plan_path
        if record.spec.update_plan and on_disk is not None and path is not None and self.plans:
            # Only checkmarks are written, onto the file as it is now: the text the model
            # or a person changed since is kept.
            done = frozenset(item.key for item in plan.items if item.done)
            checked = on_disk.with_items_marked_done(done)
            if checked != on_disk:
                self.plans.write(path, checked)
        return replace(record, plan=plan)

    def _read_plan(self, record: RunRecord) -> WorkPlan | None:
        path = record.spec.plan_path
        return self.plans.read(path) if path is not None and self.plans is not None else None

    def _current_plan(self, record: RunRecord) -> WorkPlan | None:
        """The plan as the run knows it, with what the model checked off in the file."""
        on_disk = self._read_plan(record)
        if record.plan is None:
            return on_disk
        if on_disk is None:
            return record.plan
        return record.plan.merged_with(on_disk)

    def _gateway_for(self, record: RunRecord) -> Gateway:
        """The run's own gateway, or the other profile's (or model's) while on a detour."""
        detour = record.state.detour
        if detour is not None and detour.model is not None and self.models is not None:
            if detour.model not in self._models:
                self._models[detour.model] = self.models(detour.model)
            return self._models[detour.model]
        if detour is None or detour.profile is None or self.profiles is None:
            return self.gateway
        if detour.profile not in self._others:
            self._others[detour.profile] = self.profiles(detour.profile)
        return self._others[detour.profile]

    async def close(self) -> tuple[str, ...]:
        """Closes the other profiles' gateways and the reviewer's (the run's own belongs
        to its owner); returns the sessions whose transcripts their processes said they
        could not save (a detour's process is on the run's session)."""
        others, self._others = self._others, {}
        models, self._models = self._models, {}
        heard: list[str] = []
        for gateway in (*others.values(), *models.values()):
            heard += await gateway.close()
        if self.reviewer is not None:
            heard += await self.reviewer.close()
        return tuple(heard)

    def _within_login(self, transition: Transition) -> Transition:
        return within_login(transition, ends_at=self.login_ends_at, now=self.clock.now())

    def _waited(
        self, record: RunRecord, *, after: RunState | None = None, at_least: float = 0.0
    ) -> RunRecord:
        """`record` with the time waited up to now (`domain.loop.time_waited`, never less
        than it said nor than `at_least`); with `after`, the state it moves to: a wait that
        ends there, or begins, closes the count of the one before."""
        earlier = record.earlier_waits_seconds
        counted = time_waited(record.state, earlier=earlier, now=self.clock.now())
        total = max(record.waited_seconds, counted, at_least)
        if after is not None and wait_began(after) != wait_began(record.state):
            earlier = total
        return replace(record, waited_seconds=total, earlier_waits_seconds=earlier)

    def _stop_if_asked(
        self, record: RunRecord, *, announce: Sequence[Event] = ()
    ) -> tuple[RunRecord, Decision | None] | None:
        """At a safe point: a stop or wind-down asked for since the last one takes effect
        here (None: none was asked for, the step goes ahead)."""
        command = self.control.pending()
        if command is None:
            return None
        stop = decide_on_control(record.state, command, interrupt=self.control.interrupted())
        return self._apply(record, stop, announce=announce)

    def _steer(self, record: RunRecord) -> tuple[RunRecord, bool]:
        """The requests of the control file this run has not applied yet, applied in
        the order sent (domain.steering), saved, then said; and whether one of them
        ended the wait going on (probe now). A request applied before a crash is not
        applied again: the record keeps the number of the last one (`steered`)."""
        requests = self.control.requests()
        fresh = [request for request in requests if request.seq > record.steered]
        if not fresh:
            if requests:  # applied and saved before, not let go of yet
                self.control.consumed(record.steered)
            return record, False
        state, policy = record.state, record.spec.wait_policy
        said: list[Event] = []
        probe_now = False
        for request in fresh:
            steered = steer(state, policy, request.asked, now=self.clock.now())
            state, policy = steered.state, steered.wait_policy
            probe_now = probe_now or steered.probe
            said.append(steering_event(request.asked, steered))
        spec = replace(record.spec, budget=state.ledger.budget, wait_policy=policy)
        record = replace(record, spec=spec, state=state, steered=fresh[-1].seq)
        self.store.save(record)
        self.control.consumed(record.steered)
        for event in said:
            self.events.emit(event)
        return record, probe_now

    def _apply(
        self,
        record: RunRecord,
        transition: Transition,
        *,
        announce: Sequence[Event] = (),
        in_flight: int | None = None,
    ) -> tuple[RunRecord, Decision | None]:
        """Saves the transition, then says what happened: an event never tells of
        something a resume would do again. `in_flight`: a turn cut off, which the record
        keeps for a resume to send again (RunRecord.turn_in_flight)."""
        transition = self._within_login(transition)
        said = list(announce)
        counted = transition.state.stagnation.turns_without_progress
        if counted > record.state.stagnation.turns_without_progress:
            said.append(
                NoProgress(
                    turn=transition.state.ledger.attempts,
                    turns_without_progress=counted,
                    stall_turns=record.spec.verify.stagnation.stall_turns,
                )
            )
        before, after = record.state.detour, transition.state.detour
        if after is not None and before is None:
            because = describe(after.awaiting)
            if after.model is not None:
                said.append(ModelSwitched(after.model, because, after.check_at))
            elif after.profile is not None:
                said.append(ProfileSwitched(after.profile, because, after.check_at))
        elif before is not None and after is None:
            if before.model is not None:
                said.append(ModelRestored(model=before.model))
            elif before.profile is not None:
                said.append(ProfileRestored(profile=before.profile))
        if is_paid_overage(transition.state.capacity) and not is_paid_overage(
            record.state.capacity
        ):
            capacity = transition.state.capacity
            said.append(
                OverageStarted(
                    turn=transition.state.ledger.attempts,
                    resets_at=capacity.resets_at,
                    action=render_action(record.spec.limits.action_for(capacity)),
                )
            )
        record = self._waited(record, after=transition.state)
        record = replace(record, state=transition.state, turn_in_flight=in_flight)
        self.store.save(record)
        for event in said:
            self.events.emit(event)
        return record, transition.decision


def _checked(plan: WorkPlan | None) -> frozenset[str]:
    """The keys of the plan's checked items."""
    return frozenset(item.key for item in plan.items if item.done) if plan else frozenset()


def _with_session(record: RunRecord, outcome: TurnOutcome) -> tuple[RunRecord, float]:
    """The record on the turn's session, and what the turn cost: what the turn itself
    reported (the gateway never bills a running total across processes)."""
    if outcome.session_id and outcome.session_id != record.session_id:
        record = replace(record, session_id=outcome.session_id)
    return record, outcome.cost_usd if outcome.billed else 0.0


def _replace_session(record: RunRecord, reason: str, announce: list[Event]) -> RunRecord:
    """The record with its session let go of (kept in `gone_sessions`): the next turn
    starts a new one, with a handoff once a turn was answered."""
    if record.session_id is None:
        return record
    announce.append(SessionReplaced(session_id=record.session_id, reason=reason))
    return replace(
        record, session_id=None, gone_sessions=(*record.gone_sessions, record.session_id)
    )
