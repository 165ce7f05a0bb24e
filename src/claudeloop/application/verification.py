"""Verification of a Done: its checks (commands that must pass) and the independent
review (one turn on a fresh, read-only session). What a check or a review means is the
domain's (domain.verification); this runs them and says what they did."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from claudeloop.application.events import (
    ReviewFinished,
    ReviewStarted,
    VerifyFinished,
    VerifyStarted,
)
from claudeloop.application.ports import Checks, ControlInbox, EventSink, Gateway, TurnOutcome
from claudeloop.application.prompts import review_prompt
from claudeloop.application.records import RunRecord
from claudeloop.application.stopping import unless_stopped
from claudeloop.application.turns import Read
from claudeloop.domain.capacity import capacity_kind, describe
from claudeloop.domain.completion import Continue
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.verification import CheckCommand, CheckResult

# Why a run fails that is asked to verify what it cannot.
NO_CHECKS = "verification commands are configured but this run cannot run them"
NO_REVIEWER = "an independent review is asked for but this run has no reviewer"


@dataclass(frozen=True, slots=True)
class Verification:
    # The verification commands a Done must pass (None: this run cannot run them), and
    # the directory their outputs go to (None: the run's cwd).
    checks: Checks | None
    check_logs: Path | None
    # The independent reviewer: a gateway on fresh sessions whose tools only read
    # (None: this run has none).
    reviewer: Gateway | None
    control: ControlInbox
    events: EventSink

    async def check(
        self, record: RunRecord, checks: Checks, check: CheckCommand
    ) -> CheckResult | None:
        """One check of the Done in verification, its output in a file of its own; None
        when a stop came first."""
        verifying = record.state.verifying
        assert verifying is not None  # a check comes only with a Done in verification
        turn = record.state.ledger.attempts
        logs = self.check_logs or record.spec.cwd
        output = logs / f"turn-{turn}-check-{len(verifying.results) + 1}.log"
        self.events.emit(VerifyStarted(turn=turn, command=check.text, output=str(output)))
        result = await unless_stopped(
            self.control.stop_asked, lambda: checks.run(check, output=output)
        )
        return None if result is None else result.value

    async def review(
        self, record: RunRecord, reviewer: Gateway, plan: WorkPlan | None, turn: int
    ) -> tuple[str, TurnOutcome]:
        """The independent review of the Done in verification, as turn `turn`: its
        prompt, and what came back."""
        verifying = record.state.verifying
        assert verifying is not None  # a review comes only with a Done in verification
        spec = record.spec
        marker = spec.done_marker if spec.marker_fallback else None
        prompt = review_prompt(spec.task, plan=plan, summary=verifying.summary, marker=marker)
        self.events.emit(ReviewStarted(turn=turn))
        return prompt, await reviewer.run_turn(prompt, session_id=None)

    async def close(self) -> tuple[str, ...]:
        """Closes the reviewer's gateway; returns the sessions whose transcripts its
        process said it could not save."""
        return await self.reviewer.close() if self.reviewer is not None else ()


def check_finished(turn: int, check: CheckCommand, result: CheckResult) -> VerifyFinished:
    """What is said of a check that ran."""
    return VerifyFinished(
        turn=turn,
        command=check.text,
        passed=result.passed,
        exit_code=result.exit_code,
        seconds=round(result.seconds, 3),
        output=str(result.output_path) if result.output_path else None,
        timed_out=result.timed_out,
        error=result.start_error,
    )


def review_finished(turn: int, read: Read, *, answered: bool, cost: float) -> ReviewFinished:
    """What is said of a review that came back (refused: a limit cut it off)."""
    verdict = read.verdict
    return ReviewFinished(
        turn=turn,
        capacity=describe(read.capacity),
        verdict=type(verdict).__name__.lower() if answered else "refused",
        summary=verdict.summary,
        remaining_work=verdict.remaining_work if isinstance(verdict, Continue) else (),
        cost_usd=cost,
        capacity_kind=capacity_kind(read.capacity),
    )
