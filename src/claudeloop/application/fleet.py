"""What the fleet's commands do between parsing and rendering, through the `Fleet` port.

Each function is one command's work: `queue add`, `queue ls`, `queue cancel`,
`worker`, `status`, `logs`, `stop` and `wind-down` with `--engine`. None of them sets
the engine up or writes to it but the ones that change what is queued or asked:
reading a fleet is only reading.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import assert_never
from urllib.parse import urlsplit

from claudeloop.application.errors import UsageError
from claudeloop.application.json_form import JsonObject
from claudeloop.application.masking import Mask, masked
from claudeloop.application.ports import (
    AccountCapacity,
    Fleet,
    QueuedRun,
    RunIdTaken,
    StoredRun,
    WorkerHost,
    WorkerOptions,
)
from claudeloop.application.run_status import RunStatus, run_status_of
from claudeloop.application.summary import summary_object
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import AddNote, ProbeNow, RaiseCap, Steer, refusal, waited_now

# What `status` shows of a view: masks what must not be shown (the run's secrets).
_ENDED_PHASES = ("complete", "failed")
_WORKER_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")


@dataclass(frozen=True)
class FleetRun:
    """A run as the engine knows it: its place in the queue, and what its worker stored
    last (None before its first save)."""

    run_id: str
    queued: QueuedRun | None
    stored: StoredRun | None

    @property
    def worker(self) -> str | None:
        if self.stored is not None and self.stored.holder is not None:
            return self.stored.holder
        return self.queued.worker if self.queued else None

    @property
    def state(self) -> str:
        """The queue's word for it (queued, running, done, exit N, cancelled, failed)."""
        return self.queued.state if self.queued else "unknown"

    @property
    def phase(self) -> str | None:
        return self.stored.phase if self.stored else None

    @property
    def has_record(self) -> bool:
        return self.stored is not None and self.stored.record is not None


@dataclass(frozen=True)
class FleetRow:
    """A run of the fleet's overview: its place in the queue, and what the summary its
    worker stored says of it (masked), in the values `status --json` gives them; None
    where there is no summary yet, or a worker of before stored none of it. `phase`
    "unreadable": the summary cannot be read. `said_turns` and `said_dollars`: its
    turns and money in the words every view says them (run_facts.py)."""

    run_id: str
    state: str
    phase: str | None
    worker: str | None
    cwd: str
    account: str
    next_probe_at: str | None = None
    next_probe_in_seconds: float | None = None
    plan: tuple[int, int] | None = None  # (done, total)
    turns: int | None = None
    dollars: float | None = None
    sent: int | None = None
    answered: int | None = None
    refused: int | None = None
    probes: int | None = None
    turn_dollars: float | None = None
    probe_dollars: float | None = None
    said_turns: str | None = None
    said_dollars: str | None = None

    def to_json(self) -> JsonObject:
        """The row as `status --engine --json` lists it."""
        return {
            "run_id": self.run_id,
            "state": self.state,
            "phase": self.phase,
            "worker": self.worker,
            "next_probe_at": self.next_probe_at,
            "next_probe_in_seconds": self.next_probe_in_seconds,
            "plan": None if self.plan is None else {"done": self.plan[0], "total": self.plan[1]},
            "turns": self.turns,
            "dollars": self.dollars,
            "sent": self.sent,
            "answered": self.answered,
            "refused": self.refused,
            "probes": self.probes,
            "turn_dollars": self.turn_dollars,
            "probe_dollars": self.probe_dollars,
            "said": None
            if self.said_dollars is None
            else {"turns": self.said_turns, "dollars": self.said_dollars},
            "cwd": self.cwd,
            "account": self.account,
        }


@dataclass(frozen=True)
class FleetOverview:
    """Every run of the fleet, newest first, and each account's capacity."""

    runs: list[FleetRow]
    capacity: list[AccountCapacity]


def require(fleet: Fleet, asked: str) -> None:
    """A command that reads a fleet: one never made is said so, not made by asking."""
    if not fleet.exists():
        raise UsageError(
            f"{asked}: there is no fleet at {fleet.masked_url} yet; `claudeloop fleet init` or "
            "`claudeloop queue add` makes one, or name another with --engine"
        )


def queue_listing(fleet: Fleet) -> list[QueuedRun]:
    """`queue ls`: a fleet never made has an empty queue."""
    return fleet.queue() if fleet.exists() else []


def cancel(fleet: Fleet, run_id: str) -> QueuedRun:
    """`queue cancel`: the run as it was before; an unknown one is the user's mistake."""
    require(fleet, f"queue cancel {run_id}")
    before = fleet.cancel(run_id)
    if before is None:
        raise UsageError(f"queue cancel {run_id}: no such run in the queue of {fleet.masked_url}")
    return before


def look_up(fleet: Fleet, run_id: str) -> FleetRun:
    queued = fleet.queued(run_id)
    stored = fleet.stored(run_id)
    if queued is None and stored is None:
        raise UsageError(f"--run-id {run_id}: no such run in the fleet of {fleet.masked_url}")
    return FleetRun(run_id, queued, stored)


@dataclass(frozen=True, slots=True)
class FleetStatus:
    """What local `status` says of a fleet's run, from its stored record, and where it
    is in the fleet: its state in the queue and its worker."""

    status: RunStatus
    state: str
    worker: str | None

    def to_json(self) -> JsonObject:
        return {**self.status.to_json(), "state": self.state, "worker": self.worker}


def status_view(found: FleetRun, *, now: datetime, mask: Mask) -> FleetStatus | None:
    """What local `status --json` says of the run, from its stored record, and where it
    is in the fleet; None before the run's first record. A record its worker stored
    that cannot be read is said in one line."""
    if found.stored is not None and not found.stored.readable:
        raise UsageError(f"run {found.run_id}: the record its worker stored cannot be read")
    if found.stored is None or found.stored.record is None:
        return None
    status = run_status_of(found.stored.record, now=now, driver_pid=None)
    return FleetStatus(masked(status, mask), found.state, masked(found.worker, mask))


def overview(fleet: Fleet, *, now: datetime, mask: Mask) -> FleetOverview:
    """`status --engine` without a run id."""
    require(fleet, "status --engine")
    summaries = fleet.summaries()
    rows = []
    for queued in reversed(fleet.queue()):
        stored = summaries.get(queued.run_id)
        readable = stored is None or stored.readable
        summary = stored.summary if stored is not None else None
        data = dict(mask(dict(summary_object(summary, now=now)))) if summary is not None else {}
        holder = stored.holder if stored is not None else None
        plan, said = data.get("plan"), data.get("said")
        rows.append(
            FleetRow(
                run_id=queued.run_id,
                state=queued.state,
                phase=data.get("phase") if readable else "unreadable",
                worker=holder if holder is not None else queued.worker,
                cwd=queued.cwd,
                account=queued.account,
                next_probe_at=data.get("next_probe_at"),
                next_probe_in_seconds=data.get("next_probe_in_seconds"),
                plan=None if plan is None else (plan["done"], plan["total"]),
                turns=data.get("turns"),
                dollars=data.get("dollars"),
                # The read model's counts and the probes' share (run_facts.py), as
                # `status`, `runs` and `report` say them of a run on this machine.
                sent=data.get("sent"),
                answered=data.get("answered"),
                refused=data.get("refused"),
                probes=data.get("probes"),
                turn_dollars=data.get("turn_dollars"),
                probe_dollars=data.get("probe_dollars"),
                said_turns=said["turns"] if said else None,
                said_dollars=said["dollars"] if said else None,
            )
        )
    return FleetOverview(rows, fleet.capacity())


def control(fleet: Fleet, run_id: str, command: ControlCommand) -> FleetRun:
    """`stop` or `wind-down --engine`: asked of the run's worker, which writes it into
    the run's control file. A run that is not running is the user's mistake."""
    found = _running(fleet, run_id, command.value)
    fleet.ask(run_id, command)
    return found


def steer(fleet: Fleet, run_id: str, asked: Sequence[Steer], *, now: datetime) -> FleetRun:
    """`probe-now`, `raise` or `note --engine`: the requests asked of the run's worker,
    which writes them into the run's control file; a cap below what the run's stored
    record says it spent is refused before any is asked."""
    if not asked:
        raise UsageError("give at least one of --max-turns, --max-dollars, --max-wait")
    found = _running(fleet, run_id, _VERB[type(asked[0])])
    record = found.stored.record if found.stored is not None else None
    for each in asked:
        if isinstance(each, RaiseCap) and record is not None:
            state = record.state
            waited = waited_now(state, now)
            refused = refusal(each.cap, each.to, state.ledger, waited_seconds=waited)
            if refused is not None:
                raise UsageError(f"run {run_id}: {refused}")
    for each in asked:
        fleet.steer(run_id, each)
    return found


_VERB: dict[type, str] = {ProbeNow: "probe-now", RaiseCap: "raise", AddNote: "note"}


def _running(fleet: Fleet, run_id: str, verb: str) -> FleetRun:
    require(fleet, f"{verb} --engine")
    found = look_up(fleet, run_id)
    doing = verb.replace("-", " ")  # "nothing to wind down"
    if found.state == "queued":
        raise UsageError(
            f"run {run_id} is queued, not running; nothing to {doing} "
            f"(`claudeloop queue cancel {run_id}` keeps it from starting)"
        )
    if found.state != "running" or found.phase in _ENDED_PHASES:
        ended = found.state if found.state != "running" else found.phase
        raise UsageError(f"run {run_id} has ended ({ended}); nothing to {doing}")
    return found


def events(
    fleet: Fleet, found: FleetRun, *, follow: bool, sleep: Callable[[float], None]
) -> Iterator[bytes]:
    """`logs --engine`: each stored event line once; with `follow`, the lines to come
    until the queue says the run is over."""
    seen = 0
    stored, state = found.stored, found.state
    for polls in itertools.count(1):
        if stored is not None and stored.record is not None:
            lines = fleet.event_lines(found.run_id)
            yield from lines[seen:]
            seen = max(seen, len(lines))
        if not follow or state not in ("queued", "running"):
            return
        sleep(1.0)  # a worker stores the record as it changes
        stored = fleet.stored(found.run_id)
        # A record that says the run ended may be one handed back by a stopping worker,
        # for another to resume: only the queue says it is over. It is also asked now
        # and then, for a run cancelled before it started.
        ended = stored is not None and stored.phase in _ENDED_PHASES
        if ended or polls % 10 == 0:
            queued = fleet.queued(found.run_id)
            state = queued.state if queued else state


# queue add ----------------------------------------------------------------------------


@dataclass(frozen=True)
class InDirectory:
    """A run in a directory of this machine (--cwd, else the current one)."""

    cwd: Path


@dataclass(frozen=True)
class InCheckout:
    """A run in the checkout `name` under each worker's --work-root."""

    name: str


@dataclass(frozen=True)
class InClone:
    """A run in a clone of the repository `url` each worker makes (of `branch`)."""

    url: str
    branch: str | None


RunPlace = InDirectory | InCheckout | InClone


def queued_place(
    *,
    plan: Path | None,
    prompt: str | None,
    cwd: Path | None,
    checkout: str | None,
    repo: str | None,
    branch: str | None,
    directory: Callable[[Path | None], Path],
) -> RunPlace:
    """`queue add`: the run has a task (a PLAN file or --prompt TEXT, one of them) and
    one place: a checkout or a clone on the workers' machines, where nothing of it is
    looked for here, or else a directory of this machine (`directory` finds --cwd, or
    the current one, and refuses one that is not a directory)."""
    if plan is None and prompt is None:
        raise UsageError("say what the run is to do: a PLAN file, or --prompt TEXT")
    if plan is not None and prompt is not None:
        raise UsageError(
            "give a PLAN file or --prompt TEXT, not both: a plan's checklist is the task"
        )
    if branch is not None and repo is None:
        raise UsageError("--branch names a branch of --repo URL; give --repo too")
    if checkout is None and repo is None:
        return InDirectory(directory(cwd))
    if cwd is not None or (checkout is not None and repo is not None):
        raise UsageError("give one of --cwd PATH, --checkout NAME and --repo URL")
    if repo is not None:
        return InClone(repo, branch)
    assert checkout is not None  # one of the two, as the test above says
    return InCheckout(checkout)


@dataclass(frozen=True)
class QueueSupport:
    """What `queue add` asks of the machine: a new run id, whether a run id is used in a
    directory already, the account a model's runs spend (the queue's partition), and a
    URL with its password masked."""

    new_run_id: Callable[[], str]
    run_id_used: Callable[[Path, str], bool]
    account_of: Callable[[str | None], str]
    masked_url: Callable[[str], str]


@dataclass(frozen=True)
class Queued:
    """A run `queue add` queued: its id, where it runs, the account it spends."""

    run_id: str
    cwd: str
    account: str


def queue_run(
    fleet: Fleet,
    support: QueueSupport,
    *,
    place: RunPlace,
    plan: Path | None,
    run_id: str | None,
    model: str | None,
    arguments: list[str],
) -> Queued:
    """`queue add`: the run, with the command line of `claudeloop run` that gives its
    options, into the queue. A run elsewhere (a checkout, a clone) is not looked for
    here; a run of this machine's directory must not reuse a run id of it (the worker
    would resume that run instead)."""
    repo: str | None = None
    branch: str | None = None
    match place:
        case InDirectory(cwd=cwd):
            where = str(cwd)
        case InClone(url=url, branch=branch):
            if urlsplit(url).password:
                raise UsageError(
                    f"--repo {support.masked_url(url)}: a password in the URL would be kept "
                    "in the engine's database; use SSH or a git credential helper on the "
                    "workers"
                )
            where, repo = url, url
        case InCheckout(name=name):
            relative = Path(name)
            if not name.strip() or relative.is_absolute() or ".." in relative.parts:
                raise UsageError(
                    f"--checkout {name!r}: a relative path under the workers' "
                    "--work-root, without '..'"
                )
            where = str(relative)
        case _:
            assert_never(place)
    if plan is not None and plan.is_absolute() and not isinstance(place, InDirectory):
        what = "repository" if isinstance(place, InClone) else "checkout"
        raise UsageError(f"plan file {plan}: name it relative to the {what}")
    chosen = _run_id(run_id, support)
    if isinstance(place, InDirectory) and support.run_id_used(place.cwd, chosen):
        raise UsageError(f"run id {chosen!r} is already used in {place.cwd}; pick another --run-id")
    account = support.account_of(model)
    try:
        fleet.enqueue(chosen, where, arguments, account, repo=repo, branch=branch)
    except RunIdTaken:
        raise UsageError(f"--run-id {chosen}: already in the queue of {fleet.masked_url}") from None
    return Queued(chosen, where, account)


def _run_id(given: str | None, support: QueueSupport) -> str:
    if given is None:
        return support.new_run_id()
    if not given.strip() or "/" in given or given.startswith("."):
        raise UsageError(
            f"--run-id {given!r}: use letters, digits, '-' and '_' (it names a directory)"
        )
    return given


# worker -------------------------------------------------------------------------------


def serve_worker(
    host: WorkerHost,
    *,
    slots: int,
    per_account: int,
    name: str | None,
    lease: timedelta,
    lease_shown: str,
    work_root: Path | None,
    say: Callable[[str], None],
) -> int:
    """`worker`: take runs until stopped; the exit code. `lease_shown`: the lease as
    the user wrote it, for the one line that refuses it; `work_root`: absolute."""
    if name is not None and not _WORKER_NAME.fullmatch(name):
        raise UsageError(f"--name {name!r}: use letters, digits, '-' and '_'")
    if lease < timedelta(seconds=1):
        raise UsageError(f"--lease {lease_shown}: at least 1s (default 30s)")
    if work_root is not None and not host.is_directory(work_root):
        raise UsageError(f"--work-root {work_root}: not a directory")
    options = WorkerOptions(slots, per_account, name, lease.total_seconds(), work_root)
    return host.serve(options, say)
