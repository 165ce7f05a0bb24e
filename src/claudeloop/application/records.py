"""What a run is: what the user asked for, and what it has done so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from claudeloop.domain.budget import Budget
from claudeloop.domain.completion import DEFAULT_DONE_MARKER
from claudeloop.domain.confinement import Boundary
from claudeloop.domain.limits import LimitPolicies
from claudeloop.domain.loop import RunState, VerifyRules
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.verification import DEFAULT_VERIFY_TIMEOUT_SECONDS
from claudeloop.domain.waiting import WaitPolicyConfig


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What the user asked for; fixed for the life of a run."""

    cwd: Path
    task: str
    plan_path: Path | None = None
    budget: Budget = field(default_factory=Budget)
    wait_policy: WaitPolicyConfig = field(default_factory=WaitPolicyConfig)
    done_marker: str = DEFAULT_DONE_MARKER
    marker_fallback: bool = True
    continue_prompt: str | None = None
    model: str | None = None
    permission_mode: str = "acceptEdits"
    profile: str = "default"
    pause_at: PauseThresholds = field(default_factory=PauseThresholds)
    limits: LimitPolicies = field(default_factory=LimitPolicies)
    # Write the reconciled checkmarks into the plan file (off: the file is the user's).
    update_plan: bool = False
    # Where the model's commands and the checks run (domain.confinement): inside the
    # sandbox unless the user said --sandbox off.
    sandbox: Boundary = field(default_factory=Boundary)
    # What a Done must pass (the checks, the review) and the stagnation brake.
    verify: VerifyRules = field(default_factory=VerifyRules)
    # How long one verification command may run before it is killed and counts as failed.
    verify_timeout_seconds: float = DEFAULT_VERIFY_TIMEOUT_SECONDS
    # How long Claude Code may say nothing in a turn before the watchdog ends it
    # (domain.watchdog; None: the default for the backend).
    silence_seconds: float | None = None
    # --worktree: the git worktree the run works in (None: it works in `cwd`, where its
    # run directory is either way), and the branch it was made from, which `merge`
    # merges into.
    worktree: Path | None = None
    base_branch: str | None = None
    # A commit per answered turn: on the worktree's branch, or (--checkpoint) on the
    # current branch of `cwd`.
    checkpoint: bool = False

    @property
    def work_dir(self) -> Path:
        """Where Claude Code, the checks and the commits work: the worktree, or `cwd`."""
        return self.worktree or self.cwd


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as persisted: enough to resume it after a crash."""

    run_id: str
    spec: RunSpec
    state: RunState
    started_at: datetime
    session_id: str | None = None
    plan: WorkPlan | None = None
    # The time waited for capacity, up to the last save (see domain.loop.time_waited);
    # `earlier_waits_seconds` the part of it in waits that ended (the one going on counts
    # from state.waiting_since, so a resume mid-wait counts the restart too).
    waited_seconds: float = 0.0
    # When the last turn began; a turn sent again after a crash keeps the instant of the
    # one the crash cut off (what the service answered since is not billed yet).
    last_turn_started_at: datetime | None = None
    # The number of the turn sent and not yet recorded: saved before the prompt goes
    # out, cleared by the save that records its result. A resumed run that finds it set
    # knows the driver stopped mid-turn, says so, and sends that turn again under the
    # same number; no turn number is ever recorded or reported finished twice.
    turn_in_flight: int | None = None
    earlier_waits_seconds: float = 0.0
    # When the turn a crash cut off began, until a turn bills what the service answered
    # it. Saved, because the turn sent again may be refused (a closed window bills
    # nothing) and the driver killed in the wait that follows: the resume still owes it.
    interrupted_at: datetime | None = None
    # Sessions of this run whose transcripts Claude Code could not save (a full disk or
    # a quota), in the order heard: never resumed, since a resume would continue a
    # conversation that is not all there. The one the run was on is no longer its
    # `session_id`: the next turn starts a new session with a handoff
    # (domain.lost_writes), after a crash too.
    lost_sessions: tuple[str, ...] = ()
    # Sessions of this run Claude Code no longer had when the run went on (a transcript
    # removed after cleanupPeriodDays, or under another config directory or machine), or
    # that `claudeloop resume --new-session` let go of: the run went on in a new session,
    # told the task, what is done and what is left (a handoff).
    gone_sessions: tuple[str, ...] = ()
    # The number of the last request of the control file (a probe now, a cap raised, a
    # note) this run applied: one the file still holds at or below it is not applied
    # twice, after a crash either (application.steering).
    steered: int = 0
    # A commit per answered turn (--worktree, --checkpoint): the last turn answered, and
    # the last one checkpointed (committed, or found with nothing to commit); the runner
    # reconciles the two with the branch after a crash (domain.checkpoints).
    answered_turn: int = 0
    checkpointed_turn: int = 0
    # What `claudeloop rewind` undid, said first in the next prompt, until a turn that
    # said it is answered (None: nothing to say).
    rewound: str | None = None
    # Where the last start ran the model's commands (domain.confinement.posture_line),
    # and how many things the boundary stopped so far.
    sandbox: str = ""
    blocked: int = 0
    # When the run last ended (None: it has not, or a claudeloop of before ended it);
    # a resume leaves it, and a record whose phase is not terminal has no end.
    ended_at: datetime | None = None

    @property
    def plan_progress(self) -> tuple[int, int] | None:
        if self.plan is None or self.plan.total == 0:
            return None
        return (self.plan.done_count, self.plan.total)
