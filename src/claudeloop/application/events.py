"""What a run says as it goes: one frozen dataclass per event, and the closed union of them.

The runner says most of them, once the record that holds what they report is saved; the
Claude Code gateway says `turn.retrying` mid-turn and the notifier `notify.failed`. Each
class's `type` is its name in events.jsonl, and its fields are that line's fields, in
order: `event_fields` writes them, `event_from` reads a line back (None for a line of
an older claudeloop or of the wrong shape, which `claudeloop logs` shows as it is),
both through the one codec (application/codec.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, cast, get_args

from claudeloop.application.codec import Codec, DecodeError, Shape
from claudeloop.application.json_form import JsonObject
from claudeloop.domain.capacity import CapacityKind, kind_in_words
from claudeloop.domain.confinement import BlockedKind
from claudeloop.domain.loop import Outcome
from claudeloop.domain.plan import PlanHistory, PlanSaid, RewoundTo


@dataclass(frozen=True, slots=True)
class RunStarted:
    type: ClassVar[str] = "run.started"
    run_id: str
    cwd: str
    plan: str | None
    profile: str
    model: str | None
    permission_mode: str


@dataclass(frozen=True, slots=True)
class RunResumed:
    type: ClassVar[str] = "run.resumed"
    phase: str
    # Which run, where: written since 2026-12-02 (a line from before reads as empty).
    run_id: str = ""
    cwd: str = ""
    # The turn it resumes at (its next turn's number): written since 2026-12-08 (a line
    # from before reads as 0, unknown).
    turn: int = 0


@dataclass(frozen=True, slots=True)
class TurnStarted:
    type: ClassVar[str] = "turn.started"
    turn: int
    session_id: str | None


@dataclass(frozen=True, slots=True)
class TurnFinished:
    type: ClassVar[str] = "turn.finished"
    turn: int
    capacity: str
    # done, continue, blocked, ... or "refused": a refused turn's verdict means nothing.
    verdict: str
    summary: str
    cost_usd: float
    session_id: str | None
    denied_tools: tuple[str, ...]
    # What the screen needs to say "held back" or "error", not a verdict. Written since
    # 2026-12-01: a line from before reads as a sent turn with no error.
    sent: bool = True
    error: str | None = None
    # The service's warning that came with the answer (a window nearly used), in words;
    # written since 2026-12-02.
    usage_warning: str | None = None
    # `capacity`'s kind, for what matches on it (domain.capacity.CapacityKind); written
    # since 2026-12-06: a line from before has none.
    capacity_kind: CapacityKind | None = None


@dataclass(frozen=True, slots=True)
class TurnRetrying:
    """As the CLI's api_retry message says it: any of it may be missing."""

    type: ClassVar[str] = "turn.retrying"
    attempt: int | None
    max_retries: int | None
    error_status: int | None
    error: str | None
    retry_delay_ms: float | None


@dataclass(frozen=True, slots=True)
class TurnFailed:
    type: ClassVar[str] = "turn.failed"
    turn: int
    reason: str


@dataclass(frozen=True, slots=True)
class TurnInterrupted:
    type: ClassVar[str] = "turn.interrupted"
    turn: int
    reason: str


@dataclass(frozen=True, slots=True)
class TurnSilent:
    """The watchdog ended a turn: Claude Code said nothing for `seconds` while it awaited
    `awaiting` (domain.watchdog). `action` is `sent_again` (at once, on the same
    session) or `wait` (silent too often in a row: waited out as an outage)."""

    type: ClassVar[str] = "turn.silent"
    turn: int
    seconds: float
    awaiting: str
    action: str


@dataclass(frozen=True, slots=True)
class SessionWritesLost:
    """Claude Code could not save a session's transcript (a full disk or a quota), so
    the session is never resumed: `action` is `new_session` (the next turn starts one,
    told the task again) or `stop` (the run ends; `reason` says why)."""

    type: ClassVar[str] = "session.writes_lost"
    session_id: str
    action: str
    reason: str


@dataclass(frozen=True, slots=True)
class SessionReplaced:
    """The run goes on in a new session, told the task, what is done and what is left:
    Claude Code no longer had `session_id` (a fleet's run taken over where its transcript
    is not), or `claudeloop resume --new-session` asked for one; `reason` says which."""

    type: ClassVar[str] = "session.replaced"
    session_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ToolsDenied:
    type: ClassVar[str] = "tools.denied"
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SandboxSet:
    """Where the model's commands and the checks run, said at each start: `posture` is
    confined, refused (no sandbox here: commands refused) or off (--sandbox off)."""

    type: ClassVar[str] = "sandbox.set"
    posture: str
    line: str


@dataclass(frozen=True, slots=True)
class SandboxBlocked:
    """One thing the boundary stopped: `kind` read, write, network, escape or command,
    and the path, host or command (redacted like every event)."""

    type: ClassVar[str] = "sandbox.blocked"
    turn: int
    kind: BlockedKind
    target: str


@dataclass(frozen=True, slots=True)
class CostGuessed:
    type: ClassVar[str] = "cost.guessed"
    models: tuple[str, ...]
    guessed_usd: float
    reason: str


@dataclass(frozen=True, slots=True)
class PauseIgnored:
    type: ClassVar[str] = "pause.ignored"
    windows: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    type: ClassVar[str] = "plan.updated"
    done: int
    total: int
    open: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WaitStarted:
    type: ClassVar[str] = "wait.started"
    capacity: str
    probe_at: datetime
    # As on turn.finished: what is waited for, as one of a closed set of kinds.
    capacity_kind: CapacityKind | None = None


@dataclass(frozen=True, slots=True)
class ProbeFinished:
    type: ClassVar[str] = "probe.finished"
    capacity: str
    cost_usd: float
    # As on turn.finished.
    capacity_kind: CapacityKind | None = None


@dataclass(frozen=True, slots=True)
class ProfileSwitched:
    type: ClassVar[str] = "profile.switched"
    profile: str
    because: str
    check_at: datetime


@dataclass(frozen=True, slots=True)
class ModelSwitched:
    """A switch-model policy sent the turns to another model of the run's own backend."""

    type: ClassVar[str] = "model.switched"
    model: str
    because: str
    check_at: datetime


@dataclass(frozen=True, slots=True)
class ModelRestored:
    type: ClassVar[str] = "model.restored"
    model: str


@dataclass(frozen=True, slots=True)
class OverageStarted:
    """A turn was answered on paid overage (extra usage billed to the account): said
    once as it starts, with what the run's `overage_in_use` policy does about it."""

    type: ClassVar[str] = "overage.started"
    turn: int
    resets_at: datetime | None
    action: str


@dataclass(frozen=True, slots=True)
class ProfileRestored:
    type: ClassVar[str] = "profile.restored"
    profile: str


@dataclass(frozen=True, slots=True)
class NotifyFailed:
    type: ClassVar[str] = "notify.failed"
    service: str
    kind: str
    reason: str


@dataclass(frozen=True, slots=True)
class VerifyStarted:
    """A verification command of a Done starts; its whole output goes to `output`."""

    type: ClassVar[str] = "verify.started"
    turn: int
    command: str
    output: str


@dataclass(frozen=True, slots=True)
class VerifyFinished:
    type: ClassVar[str] = "verify.finished"
    turn: int
    command: str
    passed: bool
    # None when it timed out or could not start (`error` says why it did not start).
    exit_code: int | None
    seconds: float
    output: str | None
    timed_out: bool
    error: str | None


@dataclass(frozen=True, slots=True)
class ReviewStarted:
    """The independent review of a Done goes to a fresh, read-only session."""

    type: ClassVar[str] = "review.started"
    turn: int


@dataclass(frozen=True, slots=True)
class ReviewFinished:
    type: ClassVar[str] = "review.finished"
    turn: int
    capacity: str
    # done (the reviewer agrees), continue or blocked; "refused" when a limit cut it off.
    verdict: str
    summary: str
    remaining_work: tuple[str, ...]
    cost_usd: float
    # As on turn.finished; written since 2026-12-07: a line from before has none.
    capacity_kind: CapacityKind | None = None


@dataclass(frozen=True, slots=True)
class NoProgress:
    """A counted turn showed no evidence of progress; `stall_turns` in a row end the run
    (0: the brake is off)."""

    type: ClassVar[str] = "progress.none"
    turn: int
    turns_without_progress: int
    stall_turns: int


@dataclass(frozen=True, slots=True)
class TurnCommitted:
    """A turn's changes were committed on the run's branch (--worktree, --checkpoint)."""

    type: ClassVar[str] = "turn.committed"
    turn: int
    branch: str
    sha: str
    files_changed: int


@dataclass(frozen=True, slots=True)
class BranchRewound:
    """`claudeloop rewind` reset the run's branch to the commit of `to_turn` (0: where
    the run began); the next prompt says what was undone."""

    type: ClassVar[str] = "branch.rewound"
    to_turn: int
    sha: str
    undone: tuple[int, ...]
    reason: str | None


@dataclass(frozen=True, slots=True)
class CommitRefused:
    """Files a turn changed hold a secret the run knows: they are left out of its commit
    (and stay in the working tree as they are)."""

    type: ClassVar[str] = "commit.refused"
    turn: int
    files: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class ProbeAsked:
    """A person asked the run to end its wait and probe now (`claudeloop probe-now`);
    `applied` False: it was not waiting, nothing was done."""

    type: ClassVar[str] = "probe.asked"
    applied: bool
    reason: str


@dataclass(frozen=True, slots=True)
class CapRaised:
    """A person changed a cap of the live run (`claudeloop raise`): `cap` is its flag's
    name, `before` and `after` its values (turns, dollars, seconds; None: no cap);
    `applied` False: refused (lower than what was spent by then), `reason` says why."""

    type: ClassVar[str] = "cap.raised"
    cap: str
    before: float | None
    after: float
    applied: bool
    reason: str


@dataclass(frozen=True, slots=True)
class NoteAdded:
    """A person left a note for the next turn (`claudeloop note`): said with its prompt."""

    type: ClassVar[str] = "note.added"
    text: str
    applied: bool


@dataclass(frozen=True, slots=True)
class RunFinished:
    type: ClassVar[str] = "run.finished"
    outcome: Outcome
    exit_code: int
    reason: str


Event = (
    RunStarted
    | RunResumed
    | TurnStarted
    | TurnFinished
    | TurnRetrying
    | TurnFailed
    | TurnInterrupted
    | TurnSilent
    | SessionWritesLost
    | SessionReplaced
    | ToolsDenied
    | SandboxSet
    | SandboxBlocked
    | CostGuessed
    | PauseIgnored
    | PlanUpdated
    | WaitStarted
    | ProbeFinished
    | ProfileSwitched
    | ProfileRestored
    | ModelSwitched
    | ModelRestored
    | OverageStarted
    | VerifyStarted
    | VerifyFinished
    | ReviewStarted
    | ReviewFinished
    | NoProgress
    | TurnCommitted
    | CommitRefused
    | BranchRewound
    | NotifyFailed
    | ProbeAsked
    | CapRaised
    | NoteAdded
    | RunFinished
)

EVENT_TYPES: dict[str, type[Event]] = {cls.type: cls for cls in get_args(Event)}


# events.jsonl: an event's fields as they are (a naive instant of a hand-edited line reads).
# A kind is written once known: a line of before, read and written again, stays the same.
_KIND = Shape(sparse=frozenset({"capacity_kind"}))
EVENT_CODEC = Codec(
    aware=False,
    shapes={
        TurnFinished: _KIND,
        WaitStarted: _KIND,
        ProbeFinished: _KIND,
        ReviewFinished: _KIND,
        RunResumed: Shape(sparse=frozenset({"turn"})),
    },
)


# The events that say a capacity: each that ends a turn, a probe or a review, and a wait.
SaysCapacity = TurnFinished | WaitStarted | ProbeFinished | ReviewFinished


def capacity_kind_of(event: SaysCapacity) -> CapacityKind | None:
    """The kind of the capacity `event` says: its own, else, on a line written before
    events carried the kind, the kind its words say (domain.capacity.kind_in_words): what
    reads events matches on this, never on the words."""
    return event.capacity_kind or kind_in_words(event.capacity)


def event_fields(event: Event) -> JsonObject:
    """The event's fields as events.jsonl holds them (JSON values, in the class's order)."""
    return cast(JsonObject, EVENT_CODEC.encode(event))


def event_from(line: Mapping[str, Any]) -> Event | None:
    """The event a line of events.jsonl holds; None when its type is unknown or a field
    is missing or of the wrong type (an older claudeloop's line, a hand-edited one). A
    field added since the line was written reads as its default."""
    cls = EVENT_TYPES.get(str(line.get("type")))
    if cls is None:
        return None
    try:
        return cast(Event, EVENT_CODEC.decode(dict(line), cls))
    except DecodeError:
        return None


def plan_history(lines: Iterable[Mapping[str, Any]]) -> tuple[PlanHistory, ...]:
    """What the turns said of the plan and the rewinds that undid them, in order, from
    the lines of events.jsonl: each `plan.updated` belongs to the turn started last."""
    history: list[PlanHistory] = []
    turn = 0
    for line in lines:
        match event_from(line):
            case TurnStarted(turn=number):
                turn = number
            case PlanUpdated(open=still_open):
                history.append(PlanSaid(turn, still_open))
            case BranchRewound(to_turn=to):
                history.append(RewoundTo(to))
            case _:
                pass  # says nothing of the plan
    return tuple(history)
