"""The ports the runner talks to the world through. Adapters implement them; tests fake them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from claudeloop.application.events import Event
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

# What a sighting says of the account's capacity, and what made it.
Standing = Literal["open", "closed", "other"]
Source = Literal["turn", "probe"]


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

    async def close(self) -> tuple[str, ...]:
        """Ends the Claude Code process kept for the session, if any (a later turn starts
        another); returns the sessions whose transcripts it said, as it exited, it could
        not save (as `TurnOutcome.writes_lost`)."""
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


@dataclass(frozen=True, slots=True)
class Sighting:
    """What one loop last learned about its account's capacity, when, and who it was."""

    seq: int
    at: datetime
    pid: int
    # The process and the gateway within it: a loop never mistakes its own record for
    # news from another.
    writer: str
    source: Source
    standing: Standing
    signals: TurnSignals
    # The run that wrote it: a run's own earlier record (a driver of it that was stopped
    # or crashed) never holds it back. None in a record an older version wrote.
    run_id: str | None = None
    # The machine of the process `pid` (a fleet's board spans machines): whether that
    # process still runs can be told only there. None in a record of an older version.
    host: str | None = None


class ProbeHold(Protocol):
    """The right to probe for every loop of an account, until released (or until its
    holder is gone: a dead holder's right lapses by itself)."""

    def release(self) -> None: ...


class CapacityBoard(Protocol):
    """Where the loops of one account share what they learn about its capacity: a file
    on one machine, a database table for a fleet. Never fatal: a board that cannot be
    read reads as no record, and one that cannot be written raises OSError, which the
    loop survives by going on alone."""

    def read(self) -> Sighting | None:
        """The current record, or None when there is none or it cannot be read."""
        ...

    def publish(
        self,
        *,
        signals: TurnSignals,
        standing: Standing,
        source: Source,
        writer: str,
        now: datetime,
        run_id: str | None = ...,
        unless: Callable[[Sighting | None], bool] = ...,
        patience: float = ...,
    ) -> Sighting | None:
        """Write the next record (the next sequence number), stamped with this process,
        its machine and `run_id`, unless `unless(current)` says the current one is
        better news; returns what was written. Waits at most `patience` seconds for
        another writer of the account (0: one attempt), then raises OSError: a stuck
        writer never holds a loop up."""
        ...

    def writer_alive(self, sighting: Sighting) -> bool | None:
        """Whether the process that wrote `sighting` still runs; None when this board
        cannot tell (it ran on another machine)."""
        ...

    def try_probe_lock(self) -> ProbeHold | None:
        """The probe right when no other loop of the account holds it; never blocks."""
        ...

    def wait_for_news(self, after_seq: int, timeout: float) -> Sighting | None:
        """The first record newer than `after_seq` once one is published, or None after
        `timeout` seconds."""
        ...


# The fleet, as its commands use it -------------------------------------------------


@dataclass(frozen=True)
class QueuedRun:
    """A run of the fleet's queue: its state in the user's words (queued, running, done,
    exit N, cancelled, failed), where it runs, the account it spends, its worker."""

    run_id: str
    state: str
    cwd: str
    account: str
    worker: str | None

    def to_json(self) -> dict[str, str | None]:
        return {
            "run_id": self.run_id,
            "state": self.state,
            "cwd": self.cwd,
            "account": self.account,
            "worker": self.worker,
        }


@dataclass(frozen=True)
class StoredRun:
    """What the worker holding a run stored of it last: who holds it, its phase, and its
    record (None before the first; `readable` False when this claudeloop cannot read
    the one stored)."""

    holder: str | None
    phase: str | None
    record: RunRecord | None
    readable: bool = True


@dataclass(frozen=True)
class RunSummary:
    """A run's line in the fleet's overview (`status --engine`), which its worker keeps
    beside the run's record at each store: the overview reads these, never a record."""

    phase: str
    turns: int
    dollars: float
    next_probe_at: datetime | None = None
    plan_done: int | None = None
    plan_total: int | None = None
    # The prompts sent (answered or refused), the probes, and the probes' share of
    # `dollars`, as the read model says them (run_facts.py); None in a summary a worker
    # of before stored.
    sent: int | None = None
    probes: int | None = None
    probe_dollars: float | None = None


@dataclass(frozen=True)
class StoredSummary:
    """A run's summary as the engine holds it: who holds the run, its phase, and its
    summary (None before its first store; `readable` False when this claudeloop cannot
    read the one stored)."""

    holder: str | None
    phase: str | None
    summary: RunSummary | None
    readable: bool = True


@dataclass(frozen=True)
class AccountCapacity:
    """An account's row of the fleet's capacity board, as `status --engine` shows it."""

    account: str
    standing: str
    at: str
    source: str
    writer: str
    resets_at: str | None


class RunIdTaken(ValueError):
    """The run id is already in the fleet's queue."""


class Fleet(Protocol):
    """A fleet's engine as its commands see it: the queue of runs, what the workers
    stored of each, the stop and wind-down asked of them, the accounts' capacity.

    Reading sets nothing up and writes nothing: `exists` says whether there is a fleet
    to read; only `set_up` and `enqueue` make one.
    """

    @property
    def masked_url(self) -> str:
        """The engine's URL with its password masked."""
        ...

    def exists(self) -> bool: ...

    def set_up(self) -> None: ...

    def enqueue(
        self,
        run_id: str,
        cwd: str,
        arguments: list[str],
        account: str,
        *,
        repo: str | None = None,
        branch: str | None = None,
    ) -> None:
        """Queue a run; RunIdTaken when the id is in the queue already."""
        ...

    def queue(self) -> list[QueuedRun]:
        """Every run of the queue, oldest first."""
        ...

    def queued(self, run_id: str) -> QueuedRun | None: ...

    def cancel(self, run_id: str) -> QueuedRun | None:
        """Cancel the run (queued: it never starts; running: its worker stops it); the
        run as it was, None when the queue has no such run."""
        ...

    def stored(self, run_id: str) -> StoredRun | None: ...

    def summaries(self) -> dict[str, StoredSummary]:
        """Every run's summary, by run id: no record is read (a row stored before
        summaries were kept is summed up from its record)."""
        ...

    def event_lines(self, run_id: str) -> list[bytes]:
        """The whole lines of the run's events.jsonl as its worker stored it last."""
        ...

    def capacity(self) -> list[AccountCapacity]: ...

    def ask(self, run_id: str, command: ControlCommand) -> None:
        """Ask the run's worker to pass a stop or wind-down on to it."""
        ...

    def steer(self, run_id: str, asked: Steer) -> None:
        """Ask the run's worker to pass a request (domain.steering) on to it."""
        ...


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How a worker takes runs: how many at once, of one account at once, its name on
    this machine, its lease, and where it finds runs queued by a checkout's name."""

    slots: int
    per_account: int
    name: str | None
    lease_seconds: float
    work_root: Path | None


class WorkerHost(Protocol):
    """A machine a fleet's worker runs on, for the fleet's engine."""

    def is_directory(self, path: Path) -> bool:
        """Whether `path` is a directory of this machine."""
        ...

    def serve(self, options: WorkerOptions, say: Callable[[str], None]) -> int:
        """Take runs until SIGTERM or SIGINT; the exit code (130 when stopped).
        UsageError when a worker of the same name runs on this machine."""
        ...

    def exit_now(self, code: int) -> None:
        """End the process with `code`, leaving the engine's held work for another."""
        ...


# A project's runs, as the commands that watch and steer them use them -------------


class ProjectRuns(Protocol):
    """The run directories of one working directory, as `status`, `runs`, `logs`,
    `stop` and `wind-down` see them: each run by its id, newest first."""

    @property
    def where(self) -> Path:
        """The working directory whose runs these are."""
        ...

    def run_ids(self) -> list[str]:
        """Every run of the directory, newest first."""
        ...

    def watched(self, run_id: str | None) -> str:
        """The run a command means: `run_id`; without one, the run a live driver drives
        (the newest, if several are), else the newest; UsageError when there is none."""
        ...

    def record(self, run_id: str) -> RunRecord:
        """The run's record; UsageError, naming the file, when it cannot be read."""
        ...

    def driver(self, run_id: str) -> int | None:
        """The pid of the live process driving the run, None when none is."""
        ...

    def finish_summary(self, run_id: str, record: RunRecord) -> None:
        """summary.md of a run that ended without one (killed after its last save);
        nothing when its driver is about to write it or it cannot be written."""
        ...

    def control_file(self, run_id: str) -> Path:
        """Where the run's driver reads what it is asked."""
        ...

    def send(self, run_id: str, command: ControlCommand | Steer) -> None:
        """The command, or the request (numbered after the last one the file or the
        record knows), into the run's control file; OSError when it cannot be written."""
        ...

    def events_file(self, run_id: str) -> Path:
        """Where the run's events are (events.jsonl), as a warning names it."""
        ...

    def event_lines(self, run_id: str, offset: int) -> tuple[list[bytes], int]:
        """The whole lines of the run's events from byte `offset`, and the offset after
        the last of them (a line being written is left for later); none before the
        file exists; UsageError, naming it, when it cannot be read."""
        ...

    def ended(self, run_id: str) -> bool:
        """The run's record says it ended (False while it cannot be read)."""
        ...

    def event_tail(self, run_id: str, count: int) -> tuple[list[bytes], int]:
        """The last `count` whole lines of the run's events and the offset after them,
        read from the file's end: as cheap after 100,000 events as after ten."""
        ...

    def claude_sessions(self, limit: int) -> list[ClaudeSession]:
        """Claude Code's own sessions of the working directory, the newest `limit`."""
        ...


@dataclass(frozen=True, slots=True)
class ClaudeSession:
    """A session of Claude Code's own, as `claudeloop sessions` lists it."""

    session_id: str
    summary: str
    last_modified: datetime

    def to_json(self) -> dict[str, str]:
        return {
            "session_id": self.session_id,
            "summary": self.summary,
            "last_modified": self.last_modified.isoformat(),
        }


# Every run of this machine, as `runs --all` and the dashboard find them ------------


@dataclass(frozen=True, slots=True)
class IndexedRun:
    """A run a driver on this machine registered: its directory, the working directory
    it works in, the account it spends (the capacity board's key; None when it shares
    no capacity), the machine, and when it was registered."""

    run_id: str
    directory: Path
    cwd: Path
    account: str | None
    host: str
    registered_at: datetime

    @property
    def key(self) -> str:
        """The run's name in the index: its id and a hash of where it is (two working
        directories may hold runs of the same id)."""
        import hashlib

        digest = hashlib.sha256(str(self.directory).encode()).hexdigest()[:10]
        return f"{self.run_id}.{digest}"


class RunIndex(Protocol):
    """The runs started on this machine, each registered once by its driver: one entry
    per run, so runs registering at once never meet."""

    def register(self, run: IndexedRun) -> None:
        """Add (or refresh) the run's entry; OSError when it cannot be written."""
        ...

    def runs(self) -> list[IndexedRun]:
        """Every entry, newest first; an entry that cannot be read is left out."""
        ...

    def present(self, run: IndexedRun) -> bool:
        """Whether the run's directory is still there (a run removed since is gone)."""
        ...


@dataclass(frozen=True, slots=True)
class AccountSighting:
    """An account's last sighting on this machine's capacity board (None: its record
    cannot be read)."""

    account: str
    sighting: Sighting | None


class AccountBoards(Protocol):
    """The capacity boards of this machine's accounts, as the dashboard shows them."""

    def sightings(self) -> list[AccountSighting]:
        """Each account with a record, by name."""
        ...


# What `claudeloop doctor` checks on this machine -------------------------------------

CheckStatus = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    """One line of `doctor`: what was checked, how it went, and the fix when it failed."""

    name: str
    status: CheckStatus
    detail: str
    fix: str = ""
    # The exit code this check's failure calls for.
    exit_code: int = 1


class DoctorChecks(Protocol):
    """The checks of `doctor` on one machine and working directory. Each is asked at
    most once, in this order, and a later one uses what an earlier one found: the
    model probe the CLI `cli` found, the profile the configuration `configuration`
    loaded. Which are asked is the use case's (application/doctor.py)."""

    def cli(self) -> DoctorCheck:
        """The Claude Code CLI a run starts, and that it answers --version."""
        ...

    def sdk(self) -> DoctorCheck:
        """claude-agent-sdk installed."""
        ...

    def configuration(self) -> DoctorCheck:
        """The configuration files and variables valid."""
        ...

    def profile(self) -> tuple[DoctorCheck, str | None]:
        """The backend profile resolved, and its name (None when it did not resolve)."""
        ...

    def credentials(self) -> DoctorCheck:
        """Credentials Claude Code will use; `fail` when it is known to have none."""
        ...

    def login(self) -> DoctorCheck:
        """When the stored claude.ai login ends, against how long a run could go on."""
        ...

    def backend(self) -> DoctorCheck:
        """The backend's URL answers."""
        ...

    def model(self) -> DoctorCheck:
        """A probe through Claude Code answered by the model."""
        ...

    def context(self) -> DoctorCheck | None:
        """Whether the server's context holds Claude Code's first turn; None for a
        backend that does not say it (only llama-server does)."""
        ...

    def sandbox(self) -> DoctorCheck:
        """Whether the model's commands and the checks can run confined here (a warning
        where they cannot: commands are then refused)."""
        ...

    def run_directory(self) -> DoctorCheck:
        """The run directory of the working directory can be written."""
        ...
