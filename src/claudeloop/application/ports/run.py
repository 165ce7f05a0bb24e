"""What the runner needs of the world: a gateway to Claude Code, the clock and the sleeper,
the run's record and events, its control inbox, the plan file, the checks, the working
tree and the branch it commits on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from claudeloop.application.records import RunRecord
from claudeloop.domain.capacity import AuthenticationFailed, BackendMisconfigured
from claudeloop.domain.completion import StructuredVerdict
from claudeloop.domain.confinement import BlockedAction
from claudeloop.domain.loop import ControlCommand, Interrupt
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.steering import Steer
from claudeloop.domain.verification import CheckCommand, CheckResult
from claudeloop.domain.waiting import AnnouncedReset
from claudeloop.domain.watchdog import SilentTurn

if TYPE_CHECKING:
    # Only named: the 48 events load with the runner that emits them, not with every
    # command that reads a port (a read-only command's CPU, bench/commands.py).
    from claudeloop.application.events import Event


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """What one turn (one prompt answered by one result) brought back."""

    signals: TurnSignals
    structured: StructuredVerdict | None
    final_text: str
    cost_usd: float
    session_id: str | None
    # The part of `cost_usd` that is an estimate: requests a crash cut off in flight,
    # whose answers nobody recorded (domain.budget.in_flight_estimate).
    estimated_cost_usd: float = 0.0
    # Tools the permission mode refused during the turn, so the user can be told how to
    # allow them.
    denied_tools: tuple[str, ...] = ()
    # What the turn cost at a price the CLI guessed (a model missing from its price
    # table, e.g. a local model's name): not money anyone was billed, so not in
    # `cost_usd` and never counted against --max-dollars.
    guessed_cost_usd: float = 0.0
    guessed_models: tuple[str, ...] = ()
    # False when the turn never reached the service (another loop had found its capacity
    # closed): it counts as no attempt.
    sent: bool = True
    # False for a backend that costs nothing (a local model): none of its cost is spend.
    billed: bool = True
    # True when this turn could not price what the turn a crash cut off was served (its
    # result priced no request, as a refusal's does): that is still owed, and the next
    # turn bills it.
    cut_off_owed: bool = False
    # A turn that ended in an error the classifier does not map to a capacity state
    # (e.g. the CLI itself crashed). The text says what happened.
    failure: str | None = None
    # The turn was ended before its result (`failure` says so too): the watchdog found
    # Claude Code silent too long (domain.watchdog), or a signal stopped the run, which
    # cut the turn off at once. Either way it is sent again under its number, what the
    # service served it billed then (as after a crash).
    silent: SilentTurn | None = None
    interrupted: Interrupt | None = None
    # The session this turn asked to resume, which Claude Code has no conversation of
    # (its transcript removed after cleanupPeriodDays, or under another config directory
    # or machine): `failure` says so with the fix, and the run may go on in a new session.
    gone_session: str | None = None
    # A hook of the user's stopped Claude Code (`prevent_continuation`): its reason.
    stopped_by_hook: str | None = None
    # Sessions whose transcripts Claude Code said it could not save (a full disk or a
    # quota), heard as a process of the gateway's ended during this turn: a resume of
    # one would continue a conversation that is not all there (domain.lost_writes).
    writes_lost: tuple[str, ...] = ()
    # The model refused and no fallback model retried (`model_refusal_no_fallback`).
    refused_by_model: str | None = None
    # What the run's boundary stopped during the turn (domain.confinement), in the order
    # Claude Code told it.
    blocked: tuple[BlockedAction, ...] = ()
    # Resets other runs of the account heard announced (the capacity board's sightings),
    # heard before this turn's own signals (domain.waiting.remember_resets).
    announced: tuple[AnnouncedReset, ...] = ()


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What a throwaway probe learned about capacity."""

    signals: TurnSignals
    cost_usd: float = 0.0
    # As on TurnOutcome: a cost at a guessed price, never spend.
    guessed_cost_usd: float = 0.0
    guessed_models: tuple[str, ...] = ()
    # As on TurnOutcome: resets other runs of the account heard announced.
    announced: tuple[AnnouncedReset, ...] = ()


class Gateway(Protocol):
    """Claude Code, one turn at a time, on one session."""

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        """Send `prompt` on `session_id` (a new session when None) and wait for its result.

        `interrupted_at`: this turn is sent again after a crash cut off the one that began
        then; what the service had answered of that one is billed with this turn.
        `on_session` hears the id of a new session the moment Claude Code names it, long
        before the turn ends: a crash in between then resumes that session, and bills
        what it served, instead of starting another."""
        ...

    async def probe(self) -> ProbeOutcome:
        """A minimal request on the same backend and model; persists no session."""
        ...

    async def get_ready(self, session_id: str | None) -> None:
        """Ahead of a probe's instant, starts what the probe and the turn after it on
        `session_id` (a new session when None) need: their Claude Code processes started
        and connected, the session's options built, so that at the instant only the
        request is sent. Sends the service nothing. What is ready already stays ready;
        what fails to start is left to the probe or the turn, which start afresh and
        say why. Cancelled (a stop), it ends what it started."""
        ...

    async def stand_down(self) -> None:
        """Ends the processes nothing is using (started by `get_ready`, or kept from the
        last turn): a long wait begins, or the turn goes elsewhere. Sends the service
        nothing. The sessions they say, as they exit, they could not save are told with
        the next turn or by `close`."""
        ...

    async def close(self) -> tuple[str, ...]:
        """Ends the Claude Code processes kept for the session or started ahead, if any
        (a later turn starts another); returns the sessions whose transcripts they said,
        as they exited, they could not save (as `TurnOutcome.writes_lost`)."""
        ...


@dataclass(frozen=True, slots=True)
class Advice:
    """A failure of the backend or the credentials said for a person: what is wrong
    (`problem`, naming the model, the server, the profile) and what mends it (`fix`,
    empty when nothing known does). A run's reason and doctor's checks say the same."""

    problem: str
    fix: str = ""

    @property
    def line(self) -> str:
        return f"{self.problem}: {self.fix}" if self.fix else self.problem


class Advising(Protocol):
    """The advice for the profile in use, typed: what `Advisor` says in a line."""

    def advice(
        self,
        reason: str,
        capacity: AuthenticationFailed | BackendMisconfigured,
        *,
        detour: str | None,
    ) -> Advice:
        """The problem and its fix for the profile in use (`detour`'s, while on one)."""
        ...


class Advisor(Protocol):
    """The fix a person needs when the backend or the credentials end a run."""

    def advised(
        self,
        reason: str,
        capacity: AuthenticationFailed | BackendMisconfigured,
        *,
        detour: str | None,
    ) -> str:
        """`reason` with its one-line fix for the profile in use: the switch-profile
        detour's (`detour`, its name) while on one, else the run's own."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        ...


class Sleeper(Protocol):
    async def sleep_until(
        self, instant: datetime, *, progress: Callable[[float], None] | None = None
    ) -> bool:
        """Wait until `instant`; return False when a control command woke it early.

        `progress` is called now and then (at least once a minute of waiting) with the
        seconds waited so far, so what a kill mid-wait loses is small."""
        ...


class EventSink(Protocol):
    def emit(self, event: Event) -> None:
        """Record that something happened, as it happens."""
        ...


class RunStore(Protocol):
    def save(self, record: RunRecord) -> None:
        """Persist the record so a crash at any moment can be resumed from it."""
        ...


@dataclass(frozen=True, slots=True)
class Request:
    """A request a person sent a live run (domain.steering), numbered in the order
    sent: the run's record keeps the number of the last one applied (`steered`)."""

    seq: int
    asked: Steer


class ControlInbox(Protocol):
    def pending(self) -> ControlCommand | None:
        """The stop or wind-down a person sent to this run, if any, without consuming it."""
        ...

    def requests(self) -> tuple[Request, ...]:
        """The requests sent to this run not yet let go of (`consumed`), in order; a
        wait ends early while there is one (it is applied at once)."""
        ...

    def consumed(self, through: int) -> None:
        """The requests numbered up to `through` are applied and saved: let go of them."""
        ...

    async def stop_asked(self) -> None:
        """Return once a stop is pending (within a second of it): what a verification
        check in flight is ended by."""
        ...

    def interrupted(self) -> Interrupt | None:
        """The signal the run's driver received, if one stopped it (its stop is pending
        too): a turn in flight is cut off at once, and the run's exit code is its own."""
        ...


class PlanFiles(Protocol):
    def read(self, path: Path) -> WorkPlan | None:
        """The plan in the file as it is now; None when it cannot be read."""
        ...

    def write(self, path: Path, plan: WorkPlan) -> None:
        """Write the plan's checkmarks back (only when the user asked for it)."""
        ...


class Checks(Protocol):
    """The verification commands a Done must pass, run one at a time."""

    async def run(self, check: CheckCommand, *, output: Path) -> CheckResult:
        """Run `check` in the run's cwd, its whole output into `output`; a command that
        times out or cannot start is a failed result, not an exception. Cancelled (a
        stop), it ends the check's whole process group before it returns."""
        ...


class WorkingTree(Protocol):
    """The run's working directory, for the stagnation brake's evidence."""

    def fingerprint(self) -> str | None:
        """What the tree holds now, as a short text that changes when a file does (None
        when it cannot be told); never the files' contents in the clear."""
        ...


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What a checkpoint did: the commit it made (`sha` None: nothing to commit), the
    files it committed, and the files it left out because they hold a secret the run
    knows (never committed; left in the working tree as they are)."""

    sha: str | None
    files: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()


class Checkpoints(Protocol):
    """The run's branch: a commit per answered turn (domain.checkpoints)."""

    @property
    def branch(self) -> str:
        """The branch the commits go on, such as claudeloop/RUN_ID."""
        ...

    def last_turn(self) -> int:
        """The turn the branch's last commit of this run names in its Claudeloop-Turn
        trailer (0: none)."""
        ...

    def commit(self, message: str) -> Checkpoint:
        """Commit everything the working tree changed but the run's own files
        (`.claudeloop/`) and files holding a secret the run knows."""
        ...
