"""Where a run stands now, as a typed answer: what `status` says (and `status --json`
writes), what each row of `runs`, `runs --all` and the dashboard's front page says,
and what a fleet's run says from its record. Every view renders these values; their
JSON is made in one place each (`to_json`), with the keys scripts read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from claudeloop.application.json_form import Json, JsonObject
from claudeloop.application.records import RunRecord
from claudeloop.application.run_facts import RunFacts, run_facts
from claudeloop.domain.capacity import describe
from claudeloop.domain.overage import is_paid_overage
from claudeloop.domain.verification import CheckResult


@dataclass(frozen=True, slots=True)
class CheckShown:
    """A check of the last verification round: its command, how it ended, where its
    output is."""

    command: str
    passed: bool
    exit_code: int | None
    seconds: float
    timed_out: bool
    ended: str
    output: str | None

    def to_json(self) -> JsonObject:
        return {
            "command": self.command,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "timed_out": self.timed_out,
            "ended": self.ended,
            "output": self.output,
        }


def check_shown(result: CheckResult) -> CheckShown:
    return CheckShown(
        command=result.command.text,
        passed=result.passed,
        exit_code=result.exit_code,
        seconds=result.seconds,
        timed_out=result.timed_out,
        ended=result.ended,
        output=str(result.output_path) if result.output_path else None,
    )


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit of a run's branch: the turn it holds, its sha and subject."""

    turn: int
    sha: str
    subject: str


@dataclass(frozen=True, slots=True)
class GitFacts:
    """What git says of a run's branch now (`status` reads it): its commits and their
    diffstat."""

    commits: tuple[Commit, ...]
    diffstat: str


@dataclass(frozen=True, slots=True)
class RunBranch:
    """Where a run commits its turns: the worktree, the branch it came from and the last
    turn checkpointed; `git`: what git says now (None: not asked, or the worktree is
    gone)."""

    name: str | None
    worktree: str | None
    work_dir: str
    base_branch: str | None
    last_committed_turn: int
    git: GitFacts | None = None

    def to_json(self) -> JsonObject:
        data: dict[str, Json] = {
            "name": self.name,
            "worktree": self.worktree,
            "work_dir": self.work_dir,
            "base_branch": self.base_branch,
            "last_committed_turn": self.last_committed_turn,
        }
        if self.git is not None:
            data["commits"] = [
                {"turn": commit.turn, "sha": commit.sha, "subject": commit.subject}
                for commit in self.git.commits
            ]
            data["diffstat"] = self.git.diffstat
        return data


def run_branch(record: RunRecord) -> RunBranch | None:
    """Where `record`'s run commits its turns; None: it commits none."""
    spec = record.spec
    if not spec.checkpoint:
        return None
    return RunBranch(
        name=f"claudeloop/{record.run_id}" if spec.worktree is not None else None,
        worktree=str(spec.worktree) if spec.worktree is not None else None,
        work_dir=str(spec.work_dir),
        base_branch=spec.base_branch,
        last_committed_turn=record.checkpointed_turn,
    )


@dataclass(frozen=True, slots=True)
class Detour:
    """The profile or model the turns went to while the run's own backend waits."""

    profile: str | None
    model: str | None
    to: str
    awaiting: str
    check_at: datetime
    check_in_seconds: float | None

    def to_json(self) -> JsonObject:
        return {
            "profile": self.profile,
            "model": self.model,
            "to": self.to,
            "awaiting": self.awaiting,
            "check_at": self.check_at.isoformat(),
            "check_in_seconds": self.check_in_seconds,
        }


# The profiles a rehearsal's run is on (the rehearsal API's own, and the local server's
# it plays): a record on one of them is a rehearsal's (tests/cli/test_dashboard_app.py
# holds them to the names the rehearsal gives them).
REHEARSAL_PROFILES = frozenset({"rehearsal", "rehearsal-local"})


def seconds_until(instant: datetime | None, now: datetime) -> float | None:
    return round(max((instant - now).total_seconds(), 0.0), 1) if instant else None


@dataclass(frozen=True, slots=True)
class RunStatus:
    """Where a run stands now, ended or not: the read model's facts and what else its
    record knows."""

    facts: RunFacts
    session_id: str | None
    # The turns answered and the prompts sent, as before the read model's `answered`
    # and `sent` (README, the --json result).
    turns: int
    attempts: int
    # Turns answered on paid overage: extra usage billed to the account.
    overage_turns: int
    summary: str | None
    # The last verification round.
    verification: tuple[CheckShown, ...]
    turns_without_progress: int
    # Sessions whose transcripts Claude Code could not save: never resumed.
    lost_sessions: tuple[str, ...]
    # Sessions Claude Code no longer had, or `resume --new-session` let go of.
    gone_sessions: tuple[str, ...]
    capacity: str
    overage_in_use: bool
    next_probe_at: datetime | None
    next_probe_in_seconds: float | None
    driver_pid: int | None
    # Where the last start ran the model's commands, and what its boundary stopped.
    sandbox: str | None
    blocked: int
    branch: RunBranch | None
    # Notes a person left that wait for the next turn: said with every prompt until a
    # turn is answered (a wait for capacity holds them till then).
    pending_notes: tuple[str, ...]
    detour: Detour | None
    # A rehearsal's run (`claudeloop rehearse`, kept with --keep): no real work.
    rehearsal: bool = False

    @property
    def run_id(self) -> str:
        return self.facts.run_id

    @property
    def driver_alive(self) -> bool:
        return self.driver_pid is not None

    @property
    def waiting_for(self) -> str | None:
        """What the run waits for (None: it waits for nothing)."""
        return self.capacity if self.next_probe_at is not None else None

    @property
    def last_verification(self) -> str | None:
        """`2/3 passed`: how the last verification round went (None: there was none)."""
        if not self.verification:
            return None
        passed = sum(1 for check in self.verification if check.passed)
        return f"{passed}/{len(self.verification)} passed"

    def spent_json(self) -> JsonObject:
        """What `status --json` and the `--json` result both say of a run."""
        return {
            **self.facts.to_json(),
            "session_id": self.session_id,
            "turns": self.turns,
            "attempts": self.attempts,
            "overage_turns": self.overage_turns,
            "summary": self.summary,
            "verification": [check.to_json() for check in self.verification],
            "turns_without_progress": self.turns_without_progress,
            "lost_sessions": list(self.lost_sessions),
            "gone_sessions": list(self.gone_sessions),
        }

    def to_json(self) -> JsonObject:
        """The object `status --json` prints."""
        return {
            **self.spent_json(),
            "capacity": self.capacity,
            "overage_in_use": self.overage_in_use,
            "next_probe_at": self.next_probe_at.isoformat() if self.next_probe_at else None,
            "next_probe_in_seconds": self.next_probe_in_seconds,
            "driver_pid": self.driver_pid,
            "driver_alive": self.driver_alive,
            "sandbox": self.sandbox,
            "blocked": self.blocked,
            "branch": None if self.branch is None else self.branch.to_json(),
            "pending_notes": list(self.pending_notes),
            "detour": None if self.detour is None else self.detour.to_json(),
        }


def run_status_of(
    record: RunRecord, *, now: datetime, driver_pid: int | None, facts: RunFacts | None = None
) -> RunStatus:
    """Where `record`'s run stands at `now` (`facts`: the read model's, when the caller
    has them already, as an ended run's are up to its end)."""
    state = record.state
    detour = state.detour
    return RunStatus(
        facts=facts if facts is not None else run_facts(record, now=now),
        session_id=record.session_id,
        turns=state.ledger.turns,
        attempts=state.ledger.attempts,
        overage_turns=state.overage_turns,
        summary=state.summary,
        verification=tuple(check_shown(result) for result in state.last_checks),
        turns_without_progress=state.stagnation.turns_without_progress,
        lost_sessions=tuple(record.lost_sessions),
        gone_sessions=tuple(record.gone_sessions),
        capacity=describe(state.capacity),
        overage_in_use=is_paid_overage(state.capacity),
        next_probe_at=state.next_probe_at,
        next_probe_in_seconds=seconds_until(state.next_probe_at, now),
        driver_pid=driver_pid,
        sandbox=record.sandbox or None,
        blocked=record.blocked,
        branch=run_branch(record),
        pending_notes=tuple(state.notes),
        detour=None
        if detour is None
        else Detour(
            profile=detour.profile,
            model=detour.model,
            to=detour.to,
            awaiting=describe(detour.awaiting),
            check_at=detour.check_at,
            check_in_seconds=seconds_until(detour.check_at, now),
        ),
        rehearsal=record.spec.profile in REHEARSAL_PROFILES,
    )
