"""In-memory fakes of every port the runner uses. Fakes, not mocks: they behave."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from claudeloop.application.errors import NoRun, UsageError
from claudeloop.application.events import Event, event_fields
from claudeloop.application.ports import (
    AccountCapacity,
    AccountSighting,
    Checkpoint,
    ClaudeSession,
    IndexedRun,
    ProbeOutcome,
    QueuedRun,
    Request,
    RunIdTaken,
    StoredRun,
    StoredSummary,
    TurnOutcome,
    WorkerOptions,
)
from claudeloop.application.records import RunRecord
from claudeloop.application.summary import run_summary
from claudeloop.domain.completion import StructuredVerdict
from claudeloop.domain.loop import ControlCommand, Interrupt
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.steering import Steer
from claudeloop.domain.verification import CheckCommand, CheckResult

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class FakeClock:
    current: datetime = START

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


@dataclass
class FakeSleeper:
    """Jumps the clock to the requested instant, so a week of waiting takes no time."""

    clock: FakeClock
    control: FakeControl
    slept_until: list[datetime] = field(default_factory=list)
    # A command to deliver while sleeping number N (0-based).
    interrupt_at_sleep: dict[int, ControlCommand] = field(default_factory=dict)
    # A request a person sends while sleeping number N (0-based): it wakes the wait.
    steer_at_sleep: dict[int, Steer] = field(default_factory=dict)
    # How far into sleep N its request comes (at its start unless said; never past the
    # instant slept to).
    steer_after: dict[int, timedelta] = field(default_factory=dict)

    async def sleep_until(
        self, instant: datetime, *, progress: Callable[[float], None] | None = None
    ) -> bool:
        index = len(self.slept_until)
        self.slept_until.append(instant)
        if index in self.interrupt_at_sleep:
            self.control.command = self.interrupt_at_sleep[index]
            return False
        if index in self.steer_at_sleep:
            woken_at = min(self.clock.current + self.steer_after.get(index, timedelta()), instant)
            if woken_at > self.clock.current:
                waited = (woken_at - self.clock.current).total_seconds()
                self.clock.current = woken_at
                if progress is not None:
                    progress(waited)
            self.control.ask(self.steer_at_sleep[index])
            return False
        waited = max((instant - self.clock.current).total_seconds(), 0.0)
        self.clock.current = max(self.clock.current, instant)
        if progress is not None:
            progress(waited)
        return True


@dataclass
class FakeControl:
    command: ControlCommand | None = None
    # The requests sent and not let go of yet, and how many were ever sent.
    pending_requests: list[Request] = field(default_factory=list)
    numbered: int = 0
    # The signal the driver received (its stop is `command`).
    interrupt: Interrupt | None = None

    def pending(self) -> ControlCommand | None:
        return self.command

    def interrupted(self) -> Interrupt | None:
        return self.interrupt

    def signal(self, interrupt: Interrupt) -> None:
        """The driver hears `interrupt`: a stop, and the signal it came by."""
        self.interrupt = interrupt
        self.command = ControlCommand.STOP

    def ask(self, asked: Steer) -> None:
        """A person sends `asked` (numbered as the control file numbers it)."""
        self.numbered += 1
        self.pending_requests.append(Request(self.numbered, asked))

    def requests(self) -> tuple[Request, ...]:
        return tuple(self.pending_requests)

    def consumed(self, through: int) -> None:
        self.pending_requests = [r for r in self.pending_requests if r.seq > through]

    async def stop_asked(self) -> None:
        # Looks again at each turn of the event loop: a fake check that blocks is ended
        # as soon as a stop is set, with no time passing.
        while self.command is not ControlCommand.STOP:
            await anyio.sleep(0)


def verdict_turn(
    *,
    complete: bool = False,
    remaining: tuple[str, ...] = (),
    blocked_on: str | None = None,
    summary: str = "",
    cost: float = 0.01,
    session_id: str = "session-1",
    signals: TurnSignals | None = None,
) -> TurnOutcome:
    return TurnOutcome(
        signals=signals or TurnSignals(),
        structured=StructuredVerdict(
            complete=complete, remaining_work=remaining, blocked_on=blocked_on, summary=summary
        ),
        final_text=summary,
        cost_usd=cost,
        session_id=session_id,
    )


def rejected_turn(
    signals: TurnSignals, *, cost: float = 0.0, complete: bool = False
) -> TurnOutcome:
    return verdict_turn(complete=complete, cost=cost, signals=signals)


@dataclass
class FakeGateway:
    """Plays scripted turn outcomes and probe results, and records what it was sent."""

    turns: deque[TurnOutcome]
    probes: deque[TurnSignals] = field(default_factory=deque)
    clock: FakeClock | None = None
    prompts: list[str] = field(default_factory=list)
    sessions: list[str | None] = field(default_factory=list)
    probe_times: list[datetime] = field(default_factory=list)
    turn_times: list[datetime] = field(default_factory=list)
    closed: bool = False
    on_turn: Any = None
    # Per turn, the instant of the crashed turn it was told to bill (None: none).
    interrupted: list[datetime | None] = field(default_factory=list)
    # How long each probe takes, on the clock (a real one is a CLI process and a request).
    probe_seconds: float = 0.0
    # The sessions whose transcripts the process ended by `close` says it could not save.
    lost_at_close: tuple[str, ...] = ()
    # What `get_ready` started and nothing used or ended yet: "probe", and the turn's
    # process as "turn:SESSION" ("turn:new" for a new session); when each `get_ready`
    # and `stand_down` was asked; whether each probe and turn went on a process started
    # ahead; and what was ended unused (by `stand_down`, `close`, or a turn elsewhere).
    ready: set[str] = field(default_factory=set)
    ready_times: list[datetime] = field(default_factory=list)
    stood_down: list[datetime] = field(default_factory=list)
    probes_on_ready: list[bool] = field(default_factory=list)
    turns_on_ready: list[bool] = field(default_factory=list)
    ended_unused: list[str] = field(default_factory=list)
    # How long `get_ready` takes, on the clock (a real one starts two CLI processes).
    ready_seconds: float = 0.0
    # `get_ready` takes a while (a thousand turns of the event loop, no time), calling
    # `while_starting` at its start; and whether it was cancelled meanwhile (a stop).
    ready_hangs: bool = False
    while_starting: Callable[[], None] | None = None
    ready_cancelled: bool = False

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        self.prompts.append(prompt)
        self.sessions.append(session_id)
        self.interrupted.append(interrupted_at)
        if self.clock is not None:
            self.turn_times.append(self.clock.now())
        started = _turn_process(session_id)
        self.turns_on_ready.append(started in self.ready)
        self.ready.discard(started)
        # A process started ahead for another session is ended, as a real gateway does.
        self._end_unused(lambda name: name.startswith("turn:"))
        named = self.turns[0].session_id if self.turns else None
        if session_id is None and on_session is not None and named:
            on_session(named)  # as Claude Code's init message names a new session
        if self.on_turn is not None:
            self.on_turn(len(self.prompts))
        return self.turns.popleft()

    async def probe(self) -> ProbeOutcome:
        self.probes_on_ready.append("probe" in self.ready)
        self.ready.discard("probe")
        if self.clock is not None:
            self.probe_times.append(self.clock.now())
            self.clock.advance(self.probe_seconds)
        return ProbeOutcome(signals=self.probes.popleft(), cost_usd=0.001)

    async def get_ready(self, session_id: str | None) -> None:
        if self.clock is not None:
            self.ready_times.append(self.clock.now())
        if self.ready_hangs:
            if self.while_starting is not None:
                self.while_starting()
            try:
                for _ in range(1000):
                    await anyio.sleep(0)
            except anyio.get_cancelled_exc_class():
                self.ready_cancelled = True  # what it started is ended
                raise
        if self.clock is not None:
            self.clock.advance(self.ready_seconds)
        started = _turn_process(session_id)
        self._end_unused(lambda name: name.startswith("turn:") and name != started)
        self.ready |= {"probe", started}

    async def stand_down(self) -> None:
        if self.clock is not None:
            self.stood_down.append(self.clock.now())
        self._end_unused(lambda _name: True)

    async def close(self) -> tuple[str, ...]:
        self.closed = True
        self._end_unused(lambda _name: True)
        lost, self.lost_at_close = self.lost_at_close, ()
        return lost

    def _end_unused(self, which: Callable[[str], bool]) -> None:
        ended = sorted(name for name in self.ready if which(name))
        self.ended_unused += ended
        self.ready -= set(ended)


def _turn_process(session_id: str | None) -> str:
    return f"turn:{session_id or 'new'}"


@dataclass
class MemoryEvents:
    """Keeps each event, and its fields as events.jsonl would hold them."""

    emitted: list[Event] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        self.emitted.append(event)
        self.events.append({"type": event.type, **event_fields(event)})

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    def of(self, event_type: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["type"] == event_type]


@dataclass
class MemoryStore:
    saved: list[RunRecord] = field(default_factory=list)

    def save(self, record: RunRecord) -> None:
        self.saved.append(record)

    @property
    def last(self) -> RunRecord:
        return self.saved[-1]


@dataclass
class MemoryPlans:
    """Plan files in memory; the model 'checks items off' by changing the text."""

    files: dict[Path, str] = field(default_factory=dict)
    writes: list[Path] = field(default_factory=list)

    def read(self, path: Path) -> WorkPlan | None:
        text = self.files.get(path)
        return WorkPlan.parse(text) if text is not None else None

    def write(self, path: Path, plan: WorkPlan) -> None:
        self.writes.append(path)
        self.files[path] = plan.render()


@dataclass
class FakeTree:
    """A working tree: `changing` (the default) is a model that writes something every
    turn; set it False and the turns change nothing."""

    changing: bool = True
    looks: int = 0

    def fingerprint(self) -> str | None:
        self.looks += 1
        return f"tree-{self.looks}" if self.changing else "tree"


@dataclass
class FakeBranch:
    """A run's branch: each commit a (turn, message) pair, its turn read back from the
    message's Claudeloop-Turn trailer as git would. `changed`: what each commit finds
    changed, in order (the last kept; default one file every time); `secret`: files
    that hold a secret, left out. `before_commit`: called as a commit begins (a test
    kills the driver there)."""

    commits: list[tuple[int, str]] = field(default_factory=list)
    changed: list[tuple[str, ...]] = field(default_factory=lambda: [("a.txt",)])
    secret: tuple[str, ...] = ()
    before_commit: Callable[[], None] | None = None
    after_commit: Callable[[], None] | None = None
    branch: str = "claudeloop/run-1"

    def last_turn(self) -> int:
        for _, message in reversed(self.commits):
            for line in message.splitlines():
                if line.startswith("Claudeloop-Turn: "):
                    return int(line.removeprefix("Claudeloop-Turn: "))
        return 0

    def commit(self, message: str) -> Checkpoint:
        if self.before_commit is not None:
            self.before_commit()
        files = self.changed.pop(0) if len(self.changed) > 1 else self.changed[0]
        refused = tuple(name for name in files if name in self.secret)
        kept = tuple(name for name in files if name not in self.secret)
        if not kept:
            return Checkpoint(sha=None, refused=refused)
        turn = 0
        for line in message.splitlines():
            if line.startswith("Claudeloop-Turn: "):
                turn = int(line.removeprefix("Claudeloop-Turn: "))
        self.commits.append((turn, message))
        if self.after_commit is not None:
            self.after_commit()
        return Checkpoint(sha=f"{len(self.commits):040x}", files=kept, refused=refused)


@dataclass
class FakeChecks:
    """Verification commands that end as scripted, per command text (each list played in
    order, its last ending kept), and record what ran."""

    endings: dict[str, list[int | None]] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    on_run: Any = None
    # Commands that take a while (a thousand turns of the event loop, no time) before
    # they end as scripted, and those cancelled meanwhile.
    hang: set[str] = field(default_factory=set)
    cancelled: list[str] = field(default_factory=list)

    async def run(self, check: CheckCommand, *, output: Path) -> CheckResult:
        self.ran.append(check.text)
        self.outputs.append(output)
        if self.on_run is not None:
            self.on_run(check.text)
        if check.text in self.hang:
            try:
                for _ in range(1000):
                    await anyio.sleep(0)
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(check.text)
                raise
        script = self.endings.get(check.text, [0])
        code = script.pop(0) if len(script) > 1 else script[0]
        if code is None:
            return CheckResult(
                command=check, exit_code=None, seconds=600.0, output_path=output, timed_out=True
            )
        tail = "" if code == 0 else f"{check.text}: 1 failed"
        return CheckResult(
            command=check,
            exit_code=code,
            seconds=0.5,
            output_tail=tail,
            output_bytes=len(tail),
            output_path=output,
        )


class MemoryFleet:
    """A fleet in memory that behaves as the engine's does: the queue in the order runs
    were added, what workers stored, the commands asked. `reads` counts what was asked
    of it; `made` says whether anything set it up."""

    def __init__(self, *, made: bool = True) -> None:
        self.masked_url = "sqlite:///memory"
        self.made = made
        self.runs: dict[str, QueuedRun] = {}
        self.records: dict[str, StoredRun] = {}
        self.lines: dict[str, list[bytes]] = {}
        self.asked: list[tuple[str, ControlCommand]] = []
        self.steered: list[tuple[str, Steer]] = []
        self.sightings: list[AccountCapacity] = []
        # What each queued run was given: its arguments, repository and branch.
        self.given: dict[str, tuple[list[str], str | None, str | None]] = {}

    def exists(self) -> bool:
        return self.made

    def set_up(self) -> None:
        self.made = True

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
        self.made = True
        if run_id in self.runs:
            raise RunIdTaken(run_id)
        self.runs[run_id] = QueuedRun(run_id, "queued", cwd, account, None)
        self.given[run_id] = (arguments, repo, branch)

    def queue(self) -> list[QueuedRun]:
        assert self.made, "the queue of a fleet never made was read"
        return list(self.runs.values())

    def queued(self, run_id: str) -> QueuedRun | None:
        return self.runs.get(run_id)

    def cancel(self, run_id: str) -> QueuedRun | None:
        before = self.runs.get(run_id)
        if before is not None and before.state in ("queued", "running"):
            self.runs[run_id] = replace(before, state="cancelled")
        return before

    def stored(self, run_id: str) -> StoredRun | None:
        return self.records.get(run_id)

    def summaries(self) -> dict[str, StoredSummary]:
        return {
            run_id: StoredSummary(
                stored.holder,
                stored.phase,
                run_summary(stored.record) if stored.record is not None else None,
                stored.readable,
            )
            for run_id, stored in self.records.items()
        }

    def event_lines(self, run_id: str) -> list[bytes]:
        return list(self.lines.get(run_id, []))

    def capacity(self) -> list[AccountCapacity]:
        return list(self.sightings)

    def ask(self, run_id: str, command: ControlCommand) -> None:
        self.asked.append((run_id, command))

    def steer(self, run_id: str, asked: Steer) -> None:
        self.steered.append((run_id, asked))


@dataclass
class FakeWorkerHost:
    """A machine with the directories in `directories`; a worker served on it ends at
    once with `code`, or is refused as already running when `running`."""

    directories: set[Path] = field(default_factory=set)
    code: int = 130
    running: bool = False
    served: list[WorkerOptions] = field(default_factory=list)

    def is_directory(self, path: Path) -> bool:
        return path in self.directories

    def serve(self, options: WorkerOptions, say: Callable[[str], None]) -> int:
        if self.running:
            raise UsageError("a worker named w is already running (pid 1)")
        self.served.append(options)
        say("worker started")
        return self.code

    def exit_now(self, code: int) -> None:
        raise AssertionError("a use case never ends the process")


class MemoryRuns:
    """A project's runs in memory, newest first in the order given; a run in
    `unreadable` has a record that cannot be read, one in `drivers` a live driver."""

    def __init__(self, *records: RunRecord) -> None:
        self.where = Path("/src/app")
        self.records = {record.run_id: record for record in records}
        self.drivers: dict[str, int] = {}
        self.unreadable: set[str] = set()
        self.summaries: list[str] = []
        self.sent: list[tuple[str, ControlCommand | Steer]] = []
        self.refuse_writes = False
        # Each run's events.jsonl, as bytes; `on_read` runs after each read (a run
        # that goes on writing, or ends, while `logs -f` follows it).
        self.events: dict[str, bytes] = {}
        self.on_read: Callable[[MemoryRuns], None] = lambda _runs: None
        self.sessions: list[ClaudeSession] = []

    def run_ids(self) -> list[str]:
        return list(self.records)

    def watched(self, run_id: str | None) -> str:
        if run_id is not None:
            if run_id not in self.records:
                raise UsageError(f"--run-id {run_id}: no such run in {self.where}")
            return run_id
        live = [name for name in self.records if name in self.drivers]
        if live or self.records:
            return (live or list(self.records))[0]
        raise NoRun(f"no claudeloop run in {self.where}")

    def record(self, run_id: str) -> RunRecord:
        if run_id in self.unreadable:
            raise UsageError(f"{run_id}/state.json: unreadable (not JSON)")
        return self.records[run_id]

    def driver(self, run_id: str) -> int | None:
        return self.drivers.get(run_id)

    def finish_summary(self, run_id: str, record: RunRecord) -> None:
        if record.state.phase.terminal and run_id not in self.drivers:
            self.summaries.append(run_id)

    def control_file(self, run_id: str) -> Path:
        return self.where / ".claudeloop" / "runs" / run_id / "control"

    def send(self, run_id: str, command: ControlCommand | Steer) -> None:
        if self.refuse_writes:
            raise PermissionError(13, "Permission denied")
        self.sent.append((run_id, command))

    def events_file(self, run_id: str) -> Path:
        return self.where / ".claudeloop" / "runs" / run_id / "events.jsonl"

    def event_lines(self, run_id: str, offset: int) -> tuple[list[bytes], int]:
        written = self.events.get(run_id, b"")
        whole = written[offset : written.rfind(b"\n") + 1] if b"\n" in written else b""
        lines = whole.splitlines(keepends=True)
        self.on_read(self)
        return lines, offset + len(whole)

    def ended(self, run_id: str) -> bool:
        return run_id not in self.unreadable and self.records[run_id].state.phase.terminal

    def event_tail(self, run_id: str, count: int) -> tuple[list[bytes], int]:
        written = self.events.get(run_id, b"")
        whole = written[: written.rfind(b"\n") + 1] if b"\n" in written else b""
        return whole.splitlines(keepends=True)[-count:] if count else [], len(whole)

    def claude_sessions(self, limit: int) -> list[ClaudeSession]:
        return self.sessions[:limit]


class MemoryIndex:
    """The machine's index of runs in memory, newest first by registration; `refuse`
    makes a registration fail as a full disk would."""

    def __init__(self, *entries: IndexedRun) -> None:
        self.entries: dict[str, IndexedRun] = {entry.key: entry for entry in entries}
        self.refuse = False
        self.gone: set[str] = set()

    def register(self, run: IndexedRun) -> None:
        if self.refuse:
            raise OSError(28, "No space left on device")
        self.entries[run.key] = run

    def runs(self) -> list[IndexedRun]:
        return sorted(self.entries.values(), key=lambda run: run.registered_at, reverse=True)

    def present(self, run: IndexedRun) -> bool:
        return run.key not in self.gone


@dataclass
class MemoryBoards:
    """The machine's capacity boards in memory."""

    accounts: list[AccountSighting] = field(default_factory=list)

    def sightings(self) -> list[AccountSighting]:
        return list(self.accounts)
