"""What lets another worker take a dead worker's runs: leases, takeover, epochs, and the
run records kept in the engine's database.

Two tables beside DBOS's, in the same database (a SQLite file or PostgreSQL):

- `claudeloop_workers`: one row per worker (its DBOS executor id) with the instant of
  its last heartbeat, by the database's clock, its own lease, and who took it over. A
  worker whose heartbeat is older than its own lease is dead, to a judge that has
  reached the database for a whole such lease itself (one back from an outage allows
  the others the time their heartbeats could not be written); the first live worker
  whose `UPDATE ... WHERE taken_by IS NULL` changes its row is the one that takes its
  runs.
- `claudeloop_runs`: one row per run with its epoch, the worker that holds it, and the
  run's record (state.json and events.jsonl) and Claude session transcript as the last
  holder stored them. Each drive, and each takeover, raises the epoch; a record stored
  under an older epoch is refused, which is how a worker cut off but alive is fenced.
- `claudeloop_controls`: a `stop` or `wind-down` asked from any machine, one per run,
  until the worker holding the run writes it into the run's control file (a worker
  that takes the run over meanwhile delivers it instead).
- `claudeloop_requests`: a probe now, a cap raised or a note asked from any machine
  (domain.steering, as the control file's JSON writes it), each a row of its own in the
  order asked, until the worker holding the run writes it into the control file.
- `claudeloop_queue`: the queue as claudeloop knows it, one row per run: its order,
  account, and status: `queued` (written in the transaction the engine queues it in),
  `running` under a worker (its claim, in the claim's transaction), `finished` with its
  exit code or `failed` (the worker, as the drive ends), `cancelled` (`queue cancel`,
  before it asks the engine; a worker never starts a run cancelled here, whatever the
  engine hands it), and back to `queued` when its worker is taken over (in the
  takeover's transaction). The commands that look read it, never the engine's own
  tables: the engine is reached only through its public API (queue_engine.py).

The statements are plain SQL for both dialects, run on a worker's SQLAlchemy pool or on
one DB-API connection (adapters/fleet/connections.py); the tables are made, and the
statements' transactions begun, by adapters/fleet/lease_tables.py. The fleet commands
alone import this module.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from claudeloop.adapters.fleet import run_archive
from claudeloop.adapters.fleet.lease_tables import DEFAULT_LEASE_MS, REQUESTS_TABLE, LeaseTables
from claudeloop.application.ports import AccountCapacity

if TYPE_CHECKING:
    from claudeloop.adapters.fleet.connections import Transaction

# Dead: let go on purpose (its heartbeat set to 0), or silent past its own lease while
# the judge (`:up_for` ms without a break on its side) could have seen it beat.
_DEAD = "taken_by IS NULL AND (beat_at = 0 OR (beat_at < :now - lease_ms AND lease_ms <= :up_for))"


def _account_lock(account: str) -> int:
    """The PostgreSQL advisory lock (a signed 64-bit key) its account's claims take."""
    digest = hashlib.blake2b(f"claudeloop account {account}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


class Fenced(RuntimeError):
    """This worker was taken over, or this run's epoch is no longer the one it holds."""


class Cancelled(RuntimeError):
    """The run was cancelled before this worker could start it."""


class NoRoom(RuntimeError):
    """The run's account has as many runs running as its limit allows: the run waits."""

    def __init__(self, account: str, running: int) -> None:
        super().__init__(f"account {account!r} has {running} runs running")
        self.account = account
        self.running = running


# A run's status in claudeloop_queue (the module's docstring says who writes each).
QUEUED, RUNNING, FINISHED = "queued", "running", "finished"
FAILED, CANCELLED = "failed", "cancelled"


@dataclass(frozen=True)
class QueueRow:
    """A run of the queue as claudeloop_queue holds it."""

    run_id: str
    status: str
    worker: str | None  # the worker that runs or ran it
    exit_code: int | None  # once finished
    order: str  # the order's JSON
    account: str = ""
    queued_at: int = 0  # ms since the epoch


@dataclass(frozen=True)
class StoredRow:
    """A run's row as the engine holds it: the record and transcript still in bytes (the
    application's `StoredRun` is what a command reads of it)."""

    epoch: int
    holder: str | None
    saved_by: str | None
    phase: str | None
    record: bytes | None
    transcript: bytes | None


@dataclass(frozen=True)
class SummaryRow:
    """A run's summary as the engine holds it (`record`: only for a row without one)."""

    holder: str | None
    phase: str | None
    summary: str | None
    record: bytes | None


EVENTS, TRANSCRIPT = "events", "transcript"  # the append-only files, as chunks name them


@dataclass(frozen=True)
class Inbox:
    """What was asked of a worker's runs since it last looked (Leases.asked): its inbox."""

    cancelled: list[str]  # run ids
    commands: list[tuple[str, str]]  # (run id, command), by run id
    requests: list[tuple[int, str, str]]  # (id, run id, request), in the order asked


class Leases(LeaseTables):
    """The leases and run records of one engine's database."""

    # Workers

    def start(self, worker: str, lease_ms: int = DEFAULT_LEASE_MS) -> None:
        """A worker begins a life: a fresh heartbeat, its lease, taken over by no one."""
        self._change(
            "INSERT INTO claudeloop_workers (worker, beat_at, taken_by, lease_ms)"
            " VALUES (:w, :now, NULL, :lease)"
            " ON CONFLICT (worker) DO UPDATE"
            " SET beat_at = :now, taken_by = NULL, lease_ms = :lease",
            w=worker,
            lease=lease_ms,
        )

    def beat(self, worker: str) -> bool:
        """Heartbeat; False when another worker has taken this one over (fenced)."""
        changed = self._change(
            "UPDATE claudeloop_workers SET beat_at = :now WHERE worker = :w AND taken_by IS NULL",
            w=worker,
        )
        return changed == 1

    def let_go(self, worker: str) -> None:
        """A worker stopping on purpose: its lease ends now, so another worker takes
        the runs it hands back without waiting for the lease to run out."""
        self._change(
            "UPDATE claudeloop_workers SET beat_at = 0 WHERE worker = :w AND taken_by IS NULL",
            w=worker,
        )

    def dead(self, me: str, up_for_ms: int) -> list[str]:
        """Workers other than `me` that let go, or whose own lease ran out while `me`
        reached the database (`up_for_ms`: since its last failed heartbeat), and that
        nobody took over."""
        rows = self._rows(
            f"SELECT worker FROM claudeloop_workers WHERE worker <> :me AND {_DEAD}"
            " ORDER BY worker",
            me=me,
            up_for=up_for_ms,
        )
        return [str(row[0]) for row in rows]

    def take_over(self, dead: str, me: str, up_for_ms: int) -> list[str] | None:
        """Take `dead`'s runs: one statement that only one live worker wins (one taken
        over itself wins none). The winner gets the executor ids whose pending runs it
        must recover: `dead`'s and those of the workers `dead` had taken over (it may
        have died before recovering them); every run they held has its epoch raised,
        fencing them. None: not won."""
        with self._begin() as c:
            won = c.execute(
                self._sql(
                    f"UPDATE claudeloop_workers SET taken_by = :me WHERE worker = :dead AND {_DEAD}"
                    " AND EXISTS (SELECT 1 FROM claudeloop_workers mine"
                    " WHERE mine.worker = :me AND mine.taken_by IS NULL)"
                ),
                {"me": me, "dead": dead, "up_for": up_for_ms},
            )
            if won.rowcount != 1:
                return None
            taken = c.execute(
                ("SELECT worker FROM claudeloop_workers WHERE taken_by = :dead"),
                {"dead": dead},
            )
            executors = [dead, *(str(row[0]) for row in taken)]
            for executor in executors:
                c.execute(
                    (
                        "UPDATE claudeloop_runs SET epoch = epoch + 1, holder = NULL"
                        " WHERE holder = :x"
                    ),
                    {"x": executor},
                )
                c.execute(
                    f"UPDATE claudeloop_queue SET status = '{QUEUED}', worker = NULL"
                    f" WHERE worker = :x AND status = '{RUNNING}'",
                    {"x": executor},
                )
            return executors

    # Runs

    def claim(
        self,
        run_id: str,
        me: str,
        order: str | None = None,
        account: str = "",
        *,
        per_account: int | None = None,
        driving: Collection[str] = (),
    ) -> int:
        """This worker drives the run from now: a new epoch, and the run `running` under
        it in the queue; Fenced when this worker itself was taken over, Cancelled when
        the run was. `order` (its JSON) and `account`: the run's row is made with them
        when the queue has none (a run queued by a claudeloop of before).

        `per_account`: NoRoom, nothing changed, when the account already has that many
        runs running, counted under the database's write lock. The engine's queue hands
        out no more than that, but on SQLite it counts outside its transaction, so
        workers taking at the same instant can each see room: this count is the one
        that holds. A run this worker holds from a life before (`driving` lacks it) is
        not counted: it is being claimed again, one at a time, like this one."""
        with self._begin() as c:
            # A write first: on SQLite it takes the database's write lock for the whole
            # transaction (a read first would not), so no other claim counts meanwhile.
            alive = c.execute(
                "UPDATE claudeloop_workers SET beat_at = beat_at"
                " WHERE worker = :me AND taken_by IS NULL",
                {"me": me},
            ).rowcount
            if alive != 1:
                raise Fenced(f"worker {me} was taken over")
            cancelled = c.execute(
                f"SELECT 1 FROM claudeloop_queue WHERE run_id = :r AND status = '{CANCELLED}'",
                {"r": run_id},
            ).first()
            if cancelled is not None:
                raise Cancelled(f"run {run_id} was cancelled")
            if per_account is not None:
                running = self._running_for(c, account, run_id, me, driving)
                if running >= per_account:
                    raise NoRoom(account, running)
            if order is None:
                c.execute(
                    f"UPDATE claudeloop_queue SET status = '{RUNNING}', worker = :me,"
                    " exit_code = NULL WHERE run_id = :r",
                    {"r": run_id, "me": me},
                )
            else:
                c.execute(
                    self._sql(
                        "INSERT INTO claudeloop_queue"
                        " (run_id, queued_at, account, orders, status, worker)"
                        f" VALUES (:r, :now, :a, :o, '{RUNNING}', :me) ON CONFLICT (run_id)"
                        f" DO UPDATE SET status = '{RUNNING}', worker = :me, exit_code = NULL"
                    ),
                    {"r": run_id, "me": me, "a": account, "o": order},
                )
            c.execute(
                (
                    "INSERT INTO claudeloop_runs (run_id, epoch, holder) VALUES (:r, 1, :me)"
                    " ON CONFLICT (run_id) DO UPDATE"
                    " SET epoch = claudeloop_runs.epoch + 1, holder = :me"
                ),
                {"r": run_id, "me": me},
            )
            epoch = c.execute(
                ("SELECT epoch FROM claudeloop_runs WHERE run_id = :r"), {"r": run_id}
            ).scalar_one()
            return int(epoch)

    def _running_for(
        self, c: Transaction, account: str, run_id: str, me: str, driving: Collection[str]
    ) -> int:
        """The account's other runs running: under other workers, or driven by `me`."""
        if self.kind == "postgresql":  # one claim of the account at a time
            c.execute("SELECT pg_advisory_xact_lock(:key)", {"key": _account_lock(account)})
        rows = c.execute(
            f"SELECT run_id, worker FROM claudeloop_queue WHERE account = :a"
            f" AND status = '{RUNNING}' AND run_id <> :r",
            {"a": account, "r": run_id},
        )
        return sum(1 for other, worker in rows if worker != me or other in driving)

    def holds(self, run_id: str, epoch: int) -> bool:
        rows = self._rows(
            "SELECT 1 FROM claudeloop_runs WHERE run_id = :r AND epoch = :e", r=run_id, e=epoch
        )
        return bool(rows)

    def store(
        self,
        run_id: str,
        epoch: int,
        me: str,
        *,
        phase: str | None,
        record: bytes,
        transcript: bytes | None,
        summary: str | None = None,
    ) -> None:
        """Keep the run's record, transcript and summary whole (a compaction: what was
        appended since the last whole one is in them); Fenced when `epoch` is stale."""
        with self._begin() as c:
            changed = c.execute(
                self._sql(
                    "UPDATE claudeloop_runs SET phase = :phase, record = :record,"
                    " transcript = COALESCE(:transcript, transcript), saved_by = :me,"
                    " summary = :summary, state = NULL WHERE run_id = :r AND epoch = :e"
                ),
                {
                    "r": run_id,
                    "e": epoch,
                    "me": me,
                    "phase": phase,
                    "record": record,
                    "transcript": transcript,
                    "summary": summary,
                },
            ).rowcount
            if changed != 1:
                raise Fenced(f"run {run_id}: epoch {epoch} is no longer this worker's")
            # The chunks are in the files just stored whole; the transcript's only when
            # one was (without one, its chunks go on from the one stored before).
            files = [EVENTS, TRANSCRIPT] if transcript is not None else [EVENTS]
            for file in files:
                c.execute(
                    ("DELETE FROM claudeloop_chunks WHERE run_id = :r AND file = :f"),
                    {"r": run_id, "f": file},
                )

    def append(
        self,
        run_id: str,
        epoch: int,
        me: str,
        *,
        phase: str | None,
        state: bytes,
        summary: str | None,
        chunks: list[tuple[str, int, bytes]],
    ) -> None:
        """Keep what changed since the last store: the run's state.json (compressed) on
        its own, and each append-only file's new bytes as a chunk (file, the byte it
        starts at, its bytes); Fenced when `epoch` is stale. A chunk stored again (a
        store whose answer was lost) replaces the one at its byte."""
        with self._begin() as c:
            changed = c.execute(
                self._sql(
                    "UPDATE claudeloop_runs SET phase = :phase, state = :state, saved_by = :me,"
                    " summary = :summary WHERE run_id = :r AND epoch = :e"
                ),
                {"r": run_id, "e": epoch, "me": me, "phase": phase, "state": state,
                 "summary": summary},
            ).rowcount  # fmt: skip
            if changed != 1:
                raise Fenced(f"run {run_id}: epoch {epoch} is no longer this worker's")
            for file, byte, data in chunks:
                c.execute(
                    (
                        "INSERT INTO claudeloop_chunks (run_id, file, byte, data)"
                        " VALUES (:r, :f, :b, :d) ON CONFLICT (run_id, file, byte)"
                        " DO UPDATE SET data = excluded.data"
                    ),
                    {"r": run_id, "f": file, "b": byte, "d": data},
                )

    def stored(self, run_id: str) -> StoredRow | None:
        """The run's record and transcript as the last store left them: the whole ones,
        with the state stored since and the chunks appended since put in."""
        appended = self._has_column("claudeloop_runs", "state")
        with self._begin() as c:
            row = c.execute(
                (
                    "SELECT epoch, holder, saved_by, phase, record, transcript"
                    + (", state" if appended else ", NULL")
                    + " FROM claudeloop_runs WHERE run_id = :r"
                ),
                {"r": run_id},
            ).first()
            if row is None:
                return None
            chunks: dict[str, list[tuple[int, bytes]]] = {EVENTS: [], TRANSCRIPT: []}
            if appended:
                for file, byte, data in c.execute(
                    (
                        "SELECT file, byte, data FROM claudeloop_chunks WHERE run_id = :r"
                        " ORDER BY file, byte"
                    ),
                    {"r": run_id},
                ):
                    chunks.setdefault(str(file), []).append((int(byte), bytes(data)))
        record = bytes(row[4]) if row[4] is not None else None
        transcript = bytes(row[5]) if row[5] is not None else None
        state = bytes(row[6]) if row[6] is not None else None
        if state is not None or chunks[EVENTS]:
            record = run_archive.grown_record(record, state, chunks[EVENTS])
        if chunks[TRANSCRIPT]:
            transcript = run_archive.grown_transcript(transcript, chunks[TRANSCRIPT])
        return StoredRow(int(row[0]), row[1], row[2], row[3], record, transcript)

    def summaries(self) -> dict[str, SummaryRow]:
        """Every run's holder, phase and summary, by run id (the fleet's view), without
        its record: only a row stored before summaries were kept (none in its column)
        has its record read, to sum it up."""
        if not self._has_column("claudeloop_runs", "summary"):  # a fleet of before
            rows = self._rows("SELECT run_id, holder, phase, NULL, record FROM claudeloop_runs")
        else:
            rows = self._rows(
                "SELECT run_id, holder, phase, summary, CASE WHEN summary IS NULL"
                " THEN record END FROM claudeloop_runs"
            )
        return {
            str(row[0]): SummaryRow(
                row[1],
                row[2],
                row[3],
                bytes(row[4]) if row[4] is not None else None,
            )
            for row in rows
        }

    # Stop and wind-down from any machine

    def ask(self, run_id: str, command: str) -> None:
        """Ask the worker holding the run to pass `command` on to it; the last asked
        counts."""
        self._change(
            "INSERT INTO claudeloop_controls (run_id, command, asked_at) VALUES (:r, :c, :now)"
            " ON CONFLICT (run_id) DO UPDATE SET command = :c, asked_at = :now",
            r=run_id,
            c=command,
        )

    def request(self, run_id: str, asked: str) -> None:
        """Ask the worker holding the run to pass the request `asked` (its JSON) on."""
        self._change(REQUESTS_TABLE[self.kind])
        self._change(
            "INSERT INTO claudeloop_requests (run_id, asked, asked_at) VALUES (:r, :a, :now)",
            r=run_id,
            a=asked,
        )

    def request_delivered(self, request_id: int) -> None:
        self._change("DELETE FROM claudeloop_requests WHERE id = :i", i=request_id)

    # The queue as claudeloop knows it

    def add_to_queue(
        self, run_id: str, order: str, account: str, engine_queues: Callable[[Any], None]
    ) -> None:
        """The run `queued`, in the transaction `engine_queues(connection)` queues it in
        the engine with; a run id already in the queue is the engine's to refuse."""
        with self._begin() as c:
            engine_queues(c.connection)
            c.execute(
                self._sql(
                    "INSERT INTO claudeloop_queue (run_id, queued_at, account, orders, status)"
                    f" VALUES (:r, :now, :a, :o, '{QUEUED}') ON CONFLICT (run_id) DO NOTHING"
                ),
                {"r": run_id, "a": account, "o": order},
            )

    def copy_into_queue(self, rows: list[QueueRow]) -> None:
        """The runs an engine held before claudeloop kept its queue, copied once (a
        row written since stays as it is)."""
        with self._begin() as c:
            for row in rows:
                c.execute(
                    "INSERT INTO claudeloop_queue"
                    " (run_id, queued_at, account, orders, status, worker, exit_code)"
                    " VALUES (:r, :q, :a, :o, :s, :w, :x) ON CONFLICT (run_id) DO NOTHING",
                    {"r": row.run_id, "q": row.queued_at, "a": row.account, "o": row.order,
                     "s": row.status, "w": row.worker, "x": row.exit_code},
                )  # fmt: skip

    def queue_rows(self, run_id: str | None = None) -> list[QueueRow]:
        """The queue's runs, oldest first (or the one `run_id`)."""
        where, values = (" WHERE run_id = :r", {"r": run_id}) if run_id is not None else ("", {})
        rows = self._rows(
            "SELECT run_id, status, worker, exit_code, orders, account, queued_at"
            f" FROM claudeloop_queue{where} ORDER BY queued_at, run_id",
            **values,
        )
        return [
            QueueRow(
                str(row[0]),
                str(row[1]),
                row[2],
                None if row[3] is None else int(row[3]),
                str(row[4]),
                str(row[5]),
                int(row[6]),
            )
            for row in rows
        ]

    def mark_cancelled(self, run_id: str) -> None:
        """A queued or running run cancelled: no worker starts it, its worker stops it."""
        self._change(
            f"UPDATE claudeloop_queue SET status = '{CANCELLED}'"
            f" WHERE run_id = :r AND status IN ('{QUEUED}', '{RUNNING}')",
            r=run_id,
        )

    def ended(self, run_id: str, me: str, exit_code: int | None) -> None:
        """The drive of the run by `me` ended: `finished` with its exit code (None:
        `failed`, the drive itself raised); a run `me` could not start was never its.
        A run cancelled, or another worker's since, stays as it is."""
        status = FAILED if exit_code is None else FINISHED
        self._change(
            f"UPDATE claudeloop_queue SET status = '{status}', exit_code = :x"
            f" WHERE run_id = :r AND status IN ('{RUNNING}', '{QUEUED}')"
            " AND (worker = :me OR worker IS NULL)",
            r=run_id,
            me=me,
            x=exit_code,
        )

    def asked(self, worker: str, running: list[str]) -> Inbox:
        """What was asked of the runs `worker` holds, in one statement (a worker asks
        once a second): which of `running` were cancelled, the commands asked of its
        runs, and its runs' requests in the order asked (none on a fleet whose table of
        them is not made yet)."""
        if not self._requests_made:
            # Asked once it is there (it stays), not at every tick.
            self._requests_made = self._db.has_table("claudeloop_requests")
        values: dict[str, Any] = {"w": worker}
        parts = [
            "SELECT 'command', c.run_id, CAST(NULL AS BIGINT), c.command FROM claudeloop_controls c"
            " JOIN claudeloop_runs r ON r.run_id = c.run_id WHERE r.holder = :w"
        ]
        if running:
            values |= {f"r{n}": run_id for n, run_id in enumerate(running)}
            among = ", ".join(f":r{n}" for n in range(len(running)))
            parts.append(
                "SELECT 'cancelled', run_id, CAST(NULL AS BIGINT), NULL FROM claudeloop_queue"
                f" WHERE status = '{CANCELLED}' AND run_id IN ({among})"
            )
        if self._requests_made:
            parts.append(
                "SELECT 'request', q.run_id, q.id, q.asked FROM claudeloop_requests q"
                " JOIN claudeloop_runs r ON r.run_id = q.run_id WHERE r.holder = :w"
            )
        rows = self._rows(" UNION ALL ".join(parts), **values)
        return Inbox(
            cancelled=sorted(str(r[1]) for r in rows if r[0] == "cancelled"),
            commands=sorted((str(r[1]), str(r[3])) for r in rows if r[0] == "command"),
            requests=sorted((int(r[2]), str(r[1]), str(r[3])) for r in rows if r[0] == "request"),
        )

    def delivered(self, run_id: str, command: str) -> None:
        """The command reached the run (one asked since stays)."""
        self._change(
            "DELETE FROM claudeloop_controls WHERE run_id = :r AND command = :c",
            r=run_id,
            c=command,
        )

    # The capacity board (PostgreSQL), read only

    def capacity(self) -> list[AccountCapacity]:
        """Each account's last sighting on the capacity board; none on SQLite (its
        board is a file on each machine)."""
        if self.kind != "postgresql":
            return []
        # The board's table is the board's: its query and its rows' meaning live there.
        from claudeloop.adapters.shared_capacity.postgres_board import (
            EVERY_ACCOUNT,
            account_capacity,
        )

        return [account_capacity(row) for row in self._rows(EVERY_ACCOUNT)]
