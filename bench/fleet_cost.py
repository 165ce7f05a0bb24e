"""What a fleet costs its PostgreSQL: connections, commits per second and write-ahead
log per second, per worker and per run, during turns and during waits.

Each setting is one or two real workers (`claudeloop worker`, each a machine of its own:
its HOME, state directory and projects) on a database of its own on one throwaway
PostgreSQL, driving runs of the real bundled Claude Code CLI against the rehearsal API
on 127.0.0.1. The scenario: TURNS turns, each writing a file, then a window that closes
until lifted (never, here): the runs wait. Once a second the sampler reads the server's
own counters: `pg_stat_activity` (the setting's connections), `pg_stat_database`
(`xact_commit` of its database) and `pg_current_wal_lsn()` (WAL bytes, the whole
server's: the settings run one after another, and the sampler only reads).

An interval counts as "turns" when every run of the setting is in its turns, as
"waits" when every run waits. A line fitted through the one-worker settings (1, 2, 4
runs; 8 with FLEET_COST_RUNS=1,2,4,8) gives the cost of a worker (its intercept) and of
a run (its slope), checked against two workers; both extrapolated to 50 workers and
1,000 runs, beside what issue 27 measured before (its quoted figures). One run's WAL per
second early in its turns and late in them says whether a run's cost grows with its age.

The server is the test suite's (no fsync, full_page_writes off): WAL bytes are what the
statements write, without the full-page images a checkpoint adds on a real server.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.overhead import environment
from claudeloop.rehearsal import RehearsalServer, parse_scenario

TURNS = int(os.environ.get("FLEET_COST_TURNS", "20"))  # turns of each run before it waits
LONG_TURNS = int(os.environ.get("FLEET_COST_LONG_TURNS", "50"))  # the one run's, for age
RUNS = tuple(int(n) for n in os.environ.get("FLEET_COST_RUNS", "1,2,4,8").split(","))
WAIT_SECONDS = 12.0  # sampled while every run waits
IDLE_SECONDS = 6.0  # sampled while the workers wait for runs
SAMPLE_SECONDS = 1.0
EARLY = (2, 7)  # turns answered, early in a run
# This benchmark's own figures for the code before issue 27's changes (main at 2836d6d,
# this machine, 2026-12-02): per worker and per run, fitted as below; the old path
# cannot run beside the new one, so they are kept here.
BEFORE_MEASURED = {
    "connections, turns": (7.21, 1.90),
    "connections, waits": (7.50, 3.07),
    "commits/s, turns": (37.43, 2.73),
    "commits/s, waits": (20.15, 6.47),
}
BEFORE_WAL_PER_TURN_KIB = {1: 142.0, 2: 208.0, 4: 232.0}
BEFORE_AGE_KIB = (155.0, 242.0)  # a turn's WAL after 2-7 answered turns, after 44-49
# Issue 27's figures for the path before (PostgreSQL 15, the same way of measuring).
BEFORE_CONNECTIONS = "8 per worker + 1 per running run (2 per waiting)"
BEFORE_COMMITS = (20.2, 6.0)  # per worker (0.2 + 20), per run, per second
BEFORE_CONNECTION_FIT = (8.0, 2.0)  # while the runs wait
BEFORE_WAL_KIB = {1: 98.0, 4: 669.0}  # KiB/s while 1 (4) runs take turns
BEFORE_SCALE_WAL = "175 MB/s at 1,000 runs of ~20 turns, ~1 GB/s of ~120"
BEFORE_SCALE_COMMITS = 7000.0
FLEET_WORKERS, FLEET_RUNS = 50, 1000


def scenario(turns: int) -> dict[str, Any]:
    """`turns` turns that each write a file and say there is more; then the window closes."""
    steps = [
        {
            "steps": [
                {
                    "kind": "tool",
                    "name": "Write",
                    "input": {
                        "file_path": f"{{cwd}}/notes/turn{n}.md",
                        "content": f"# Turn {n}\n\n" + "Some notes of this turn. " * 40 + "\n",
                    },
                },
                {
                    "kind": "verdict",
                    "complete": False,
                    "remaining_work": ["more notes"],
                    "summary": f"Wrote notes/turn{n}.md.",
                },
            ]
        }
        for n in range(1, turns + 1)
    ]
    return {
        "description": f"{turns} turns of notes, then a window closed until lifted.",
        "turns": steps,
        "gates": [{"kind": "window_silent", "at_turn": turns + 1, "until_lift": True}],
    }


@dataclass
class Sample:
    at: float
    connections: int
    commits: int
    wal: int
    phases: list[str | None]
    turns: list[int]


@dataclass(frozen=True)
class Rates:
    """Means over the intervals of one kind (NaN: none of that kind)."""

    connections: float
    commits: float  # per second
    wal: float  # bytes per second
    seconds: float
    wal_per_turn: float = float("nan")  # bytes per turn answered
    commits_per_turn: float = float("nan")


@dataclass(frozen=True)
class Setting:
    workers: int
    runs: int
    idle: Rates
    turns: Rates
    waits: Rates
    samples: list[Sample] = field(repr=False)
    record: bytes = field(default=b"", repr=False)  # its first run's, packed as stored


class Counters:
    """The server's counters for one database, read from another (the sampler's own
    connection is not counted)."""

    def __init__(self, admin_dsn: str, database: str) -> None:
        import psycopg

        self._connection = psycopg.connect(admin_dsn, autocommit=True)
        self._database = database

    def read(self) -> tuple[int, int, int]:
        c = self._connection
        c.execute("SELECT pg_stat_clear_snapshot()")
        row = c.execute(
            "SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
            "        AND pid <> pg_backend_pid()),"
            " (SELECT xact_commit FROM pg_stat_database WHERE datname = %s),"
            " pg_current_wal_lsn() - '0/0'::pg_lsn",
            (self._database, self._database),
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1] or 0), int(row[2])

    def close(self) -> None:
        self._connection.close()


class Machine:
    """One worker's machine: its HOME, state directory and projects."""

    def __init__(self, root: Path, base_url: str, engine: str, name: str) -> None:
        root.mkdir(parents=True)
        self.root = root
        self.name = name
        self.env = environment(base_url, root / "home")
        self.env["CLAUDELOOP_STATE_DIR"] = str(root / "state")
        self.env["IS_SANDBOX"] = "1"
        self.engine = engine
        self.log = root / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.projects: list[Path] = []

    def start(self, slots: int, per_account: int) -> None:
        with self.log.open("w") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "claudeloop", "worker", "--engine", self.engine,
                 "--name", self.name, "--slots", str(slots), "--per-account", str(per_account)],
                env=self.env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def up(self) -> bool:
        return "taking runs" in self.log.read_text()

    def add(self, run_id: str) -> subprocess.Popen[bytes]:
        """Queue a run (the `queue add` goes on meanwhile: the runs of a setting are
        queued at once, so they take their turns together)."""
        project = self.root / run_id
        (project / "notes").mkdir(parents=True)
        (project / "PLAN.md").write_text("# Plan\n\n- [ ] Write the notes\n")
        self.projects.append(project)
        return subprocess.Popen(
            [sys.executable, "-m", "claudeloop", "queue", "add", str(project / "PLAN.md"),
             "--cwd", str(project), "--engine", self.engine, "--run-id", run_id,
             "--permission-mode", "bypassPermissions", "--max-turns", "500"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def _state(project: Path) -> tuple[str | None, int]:
    states = list((project / ".claudeloop" / "runs").glob("*/state.json"))
    try:
        inner = json.loads(states[0].read_text())["state"]
        return str(inner["phase"]), int(inner["turns"])
    except (IndexError, OSError, ValueError, KeyError, TypeError):
        return None, 0


def _until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the fleet cost benchmark: {what}")
        time.sleep(0.2)


WAITING = ("waiting", "probing")


def _rates(samples: list[Sample], kind: Callable[[Sample, Sample], bool]) -> Rates:
    pairs = [(a, b) for a, b in itertools.pairwise(samples) if kind(a, b)]
    if not pairs:
        return Rates(float("nan"), float("nan"), float("nan"), 0.0)
    seconds = sum(b.at - a.at for a, b in pairs)
    wal = sum(b.wal - a.wal for a, b in pairs)
    answered = sum(sum(b.turns) - sum(a.turns) for a, b in pairs)
    commits = sum(b.commits - a.commits for a, b in pairs)
    return Rates(
        statistics.mean(b.connections for _, b in pairs),
        commits / seconds,
        wal / seconds,
        seconds,
        wal / answered if answered else float("nan"),
        commits / answered if answered else float("nan"),
    )


def _in_turns(a: Sample, b: Sample) -> bool:
    return bool(a.phases) and all(p == "running" for p in a.phases + b.phases)


def _waiting(a: Sample, b: Sample) -> bool:
    return bool(a.phases) and all(p in WAITING for p in a.phases + b.phases)


def measure(admin_dsn: str, server_dsn: Callable[[str], str], root: Path, base_url: str,
            *, workers: int, runs: int, turns: int) -> Setting:  # fmt: skip
    """One setting on a fresh database: idle workers, then `runs` runs spread over them
    taking turns, then waiting."""
    import psycopg

    database = f"fleet_{workers}w_{runs}r_{int(time.time())}"
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    engine = server_dsn(database)
    machines = [
        Machine(root / database / f"m{n}", base_url, engine, f"bench-{n}") for n in range(workers)
    ]
    counters = Counters(admin_dsn, database)
    samples: list[Sample] = []

    def sample() -> None:
        connections, commits, wal = counters.read()
        states = [_state(p) for m in machines for p in m.projects]
        samples.append(
            Sample(
                time.monotonic(),
                connections,
                commits,
                wal,
                [s[0] for s in states],
                [s[1] for s in states],
            )
        )

    try:
        # The schema first (DBOS's and the fleet's), so the idle workers only idle.
        subprocess.run(
            [sys.executable, "-m", "claudeloop", "fleet", "init", "--engine", engine],
            env=machines[0].env, check=True, capture_output=True,
        )  # fmt: skip
        per_worker = -(-runs // workers)
        for machine in machines:
            machine.start(per_worker, runs)  # the account's runs all at once
        _until(lambda: all(m.up() for m in machines), 180, "a worker did not start")
        time.sleep(2)
        idle_until = time.monotonic() + IDLE_SECONDS
        while time.monotonic() < idle_until:
            sample()
            time.sleep(SAMPLE_SECONDS)
        idle = _rates(samples, lambda a, b: not a.phases and not b.phases)
        adding = [machines[n % workers].add(f"run{n}") for n in range(runs)]
        if any(added.wait() != 0 for added in adding):
            raise RuntimeError("the fleet cost benchmark: a `queue add` failed")
        # Every run started, through its turns, then waiting for WAIT_SECONDS.
        waited_from: float | None = None
        deadline = time.monotonic() + 60 + 25 * turns * runs
        while time.monotonic() < deadline:
            sample()
            if all(p in WAITING for p in samples[-1].phases):
                waited_from = waited_from or time.monotonic()
                if time.monotonic() - waited_from > WAIT_SECONDS:
                    break
            time.sleep(SAMPLE_SECONDS)
        else:
            raise TimeoutError("the fleet cost benchmark: the runs did not all come to wait")
        taking = _rates(samples, _in_turns)
        waits = _rates(samples, _waiting)
        from claudeloop.adapters.fleet import run_archive

        first = machines[0].projects[0] / ".claudeloop" / "runs" / "run0"
        return Setting(workers, runs, idle, taking, waits, samples, run_archive.pack_record(first))
    finally:
        counters.close()
        for machine in machines:
            machine.stop()


@dataclass(frozen=True)
class Age:
    """One run's WAL per second by how many turns it has answered."""

    early_turns: tuple[int, int]
    late_turns: tuple[int, int]
    early: float
    late: float
    early_per_turn: float
    late_per_turn: float

    @property
    def ratio(self) -> float:
        """Late over early, per turn answered: a turn's WAL whatever the machine's pace
        (per second, a loaded machine's slower turns look cheaper)."""
        return self.late_per_turn / self.early_per_turn


def age(setting: Setting, turns: int) -> Age:
    late = (turns - 6, turns - 1)

    def rate(span: tuple[int, int]) -> tuple[float, float]:
        # The samples a second apart that cover some of the span: a fast machine
        # answers several turns between two of them.
        pairs = [
            (a, b)
            for a, b in itertools.pairwise(setting.samples)
            if _in_turns(a, b) and a.turns[0] <= span[1] and b.turns[0] >= span[0]
        ]
        seconds = sum(b.at - a.at for a, b in pairs)
        wal = sum(b.wal - a.wal for a, b in pairs)
        answered = sum(b.turns[0] - a.turns[0] for a, b in pairs)
        nan = float("nan")
        return (wal / seconds if seconds else nan, wal / answered if answered else nan)

    (early, early_turn), (later, late_turn) = rate(EARLY), rate(late)
    return Age(EARLY, late, early, later, early_turn, late_turn)


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares: (intercept, slope)."""
    if len(points) == 1:
        return 0.0, points[0][1] / points[0][0]
    slope, intercept = statistics.linear_regression([x for x, _ in points], [y for _, y in points])
    return intercept, slope


@dataclass(frozen=True)
class StatusAtScale:
    """`status --engine` with `runs` started runs (each with a stored record)."""

    runs: int
    record_bytes: int
    command_seconds: float  # `claudeloop status --engine --json`, median, with start-up
    output_bytes: int
    read_seconds: float  # the overview in process (what the command reads), median
    read_before_seconds: float  # the path before: every record fetched and read


def _queue_and_store(
    engine: Any, leases: Any, runs: int, record: bytes, summary: str | None
) -> None:
    """`runs` runs queued as `queue add` queues them, each claimed and stored as a worker
    does: one DBOS client for all (queue.add makes one a run, and sets the schema up
    again)."""
    from claudeloop.adapters.fleet import dbos_app, queue

    with dbos_app.client(engine) as client:
        for number in range(runs):
            run_id = f"run{number:04d}"
            order = queue.Order(f"/work/{run_id}", ["PLAN.md"], "bench").to_json()
            options: Any = {
                "workflow_name": dbos_app.WORKFLOW,
                "queue_name": dbos_app.QUEUE,
                "workflow_id": run_id,
                "queue_partition_key": "bench",
                "application_name": dbos_app.APPLICATION,
            }
            leases.add_to_queue(
                run_id,
                json.dumps(order),
                "bench",
                lambda connection, options=options, order=order: client.enqueue_in_transaction(
                    connection, options, order
                ),
            )
            epoch = leases.claim(run_id, "bench")
            leases.store(
                run_id, epoch, "bench", phase="waiting", record=record, transcript=None,
                summary=summary,
            )  # fmt: skip


def status_at_scale(
    admin_dsn: str, url: str, record: bytes, runs: int = 1000
) -> StatusAtScale | None:
    """Queue `runs` runs, store each a record and its summary as a worker does, and time
    the fleet's overview, beside the path before it read summaries (every record)."""
    from datetime import UTC, datetime

    import psycopg

    from claudeloop.adapters.fleet import queue
    from claudeloop.adapters.fleet.engine import parse_engine
    from claudeloop.adapters.fleet.engine_fleet import EngineFleet, _stored
    from claudeloop.adapters.fleet.leases import Leases
    from claudeloop.adapters.fleet.leases import StoredRow as Row
    from claudeloop.application.fleet import overview

    try:
        status_object = importlib.import_module("claudeloop.application.run_status").run_status_of
    except ImportError:  # the code of before issue 49 said a status as a dict
        status_object = importlib.import_module("claudeloop.application.summary").status_object

    try:
        run_archive = importlib.import_module("claudeloop.adapters.fleet.run_archive")
    except ImportError:  # the code of before issue 41 named it travel
        run_archive = importlib.import_module("claudeloop.adapters.fleet.travel")
    if not hasattr(run_archive, "summary_of"):  # the code of before issue 27 keeps none
        return None
    database = f"fleet_status_{int(time.time())}"
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    engine = parse_engine(url.rsplit("/", 1)[0] + "/" + database, "bench")
    queue.init_schema(engine)
    summary = run_archive.summary_of(run_archive.state_in(record))
    leases = Leases(engine)
    leases.start("bench")
    _queue_and_store(engine, leases, runs, record, summary)
    fleet = EngineFleet(engine)

    def read() -> None:
        overview(fleet, now=datetime.now(UTC), mask=lambda view: view)

    def read_before() -> None:
        fleet.queue()
        now = datetime.now(UTC)
        rows = leases._rows(
            "SELECT run_id, epoch, holder, saved_by, phase, record FROM claudeloop_runs"
        )
        for row in rows:
            stored = _stored(Row(row[1], row[2], row[3], row[4], bytes(row[5]), None))
            if stored.record is not None:
                status_object(stored.record, now=now, driver_pid=None)

    def timed(action: Callable[[], object]) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            action()
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    output = b""

    def command() -> None:
        nonlocal output
        output = subprocess.run(
            [sys.executable, "-m", "claudeloop", "status", "--engine", engine.url, "--json"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip

    figures = StatusAtScale(
        runs, len(record), timed(command), len(output), timed(read), timed(read_before)
    )
    leases.close()
    return figures


@dataclass(frozen=True)
class Figures:
    settings: list[Setting]
    age: Age | None
    status: StatusAtScale | None = None


def run() -> Figures:
    from tests.postgres_server import throwaway_postgres

    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-fleet-cost-"))
    settings: list[Setting] = []
    found_age: Age | None = None
    try:
        with throwaway_postgres() as server:
            admin = server.dsn

            def dsn(database: str) -> str:
                return admin.rsplit("/", 1)[0] + "/" + database

            plan: list[tuple[int, int, int]] = [(1, runs, TURNS) for runs in RUNS]
            plan.insert(0, (1, 1, LONG_TURNS))
            plan.append((2, 4, TURNS))
            for workers, runs, turns in plan:
                with RehearsalServer(
                    parse_scenario(json.dumps(scenario(turns)), source="bench", fmt="json")
                ) as rehearsal:
                    print(f"  {workers} worker(s), {runs} run(s) of {turns} turns", flush=True)
                    setting = measure(
                        admin,
                        dsn,
                        work,
                        rehearsal.base_url,
                        workers=workers,
                        runs=runs,
                        turns=turns,
                    )
                if turns == LONG_TURNS and runs == 1 and found_age is None:
                    found_age = age(setting, turns)
                    if 1 in RUNS:
                        continue  # the short one of 1 run is measured too
                settings.append(setting)
            print("  status --engine with 1,000 started runs", flush=True)
            status = status_at_scale(admin, admin, settings[-1].record)
        return Figures(settings, found_age, status)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _kib(value: float) -> str:
    return f"{value / 1024:.1f} KiB/s"


def _second_worker(one: list[Setting], two: list[Setting], waits: tuple[float, float]) -> list[str]:
    """What a second worker adds while the runs wait, measured: two workers against one
    with the same runs. The rest of the one-worker intercept is the fleet's, paid once
    whatever its workers (DBOS's background jobs, which one worker at a time takes)."""
    same = [s for s in one if two and s.runs == two[0].runs]
    if not same:
        return []
    added = two[0].waits.commits - same[0].waits.commits
    worker, per_run = waits
    once = worker - added
    scale = once + FLEET_WORKERS * added + FLEET_RUNS * per_run
    return [
        "",
        f"While the runs wait, a second worker adds {added:.1f} commits/s ({two[0].runs} "
        f"runs on two workers, {two[0].waits.commits:.1f}; on one, "
        f"{same[0].waits.commits:.1f}): of a worker's intercept, {once:.1f} is the "
        f"fleet's, paid once. So {once:.1f} + {added:.1f} a worker + {per_run:.2f} a "
        f"run: {scale:,.0f} commits/s at {FLEET_WORKERS} x {FLEET_RUNS:,}. Each worker "
        "here is less than a minute old: DBOS looks for schedules once a second in a "
        "worker's first minute, then every 30 s.",
    ]


def section(figures: Figures) -> list[str]:
    """The figures as RESULTS.md's section."""
    lines = [
        "## A fleet's cost on PostgreSQL",
        "",
        f"Real workers and the real CLI on a throwaway PostgreSQL, each run {TURNS} turns "
        "then waiting on a closed window (bench/fleet_cost.py). Per setting: connections "
        "(mean), commits per second and WAL per second, while the workers are idle, while "
        "every run takes turns, while every run waits.",
        "",
        "| workers | runs | idle conn | idle commits/s | turns conn | turns commits/s "
        "| turns WAL | waits conn | waits commits/s | waits WAL |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in figures.settings:
        lines.append(
            f"| {s.workers} | {s.runs} | {s.idle.connections:.1f} | {s.idle.commits:.1f} | "
            f"{s.turns.connections:.1f} | {s.turns.commits:.1f} "
            f"({s.turns.commits_per_turn:.1f} a turn) | {_kib(s.turns.wal)} "
            f"({s.turns.wal_per_turn / 1024:.0f} KiB a turn) | "
            f"{s.waits.connections:.1f} | {s.waits.commits:.1f} | {_kib(s.waits.wal)} |"
        )
    one = [s for s in figures.settings if s.workers == 1]
    two = [s for s in figures.settings if s.workers == 2]

    def fitted(value: Callable[[Setting], float]) -> tuple[float, float]:
        return fit([(s.runs, value(s)) for s in one])

    rows = [
        ("connections, turns", fitted(lambda s: s.turns.connections), ""),
        ("connections, waits", fitted(lambda s: s.waits.connections), ""),
        ("commits/s, turns", fitted(lambda s: s.turns.commits), ""),
        ("commits/s, waits", fitted(lambda s: s.waits.commits), ""),
        ("WAL KiB/s, turns", fitted(lambda s: s.turns.wal / 1024), ""),
        ("WAL KiB/s, waits", fitted(lambda s: s.waits.wal / 1024), ""),
    ]
    lines += [
        "",
        "Fitted through the one-worker settings (a worker: the intercept; a run: the "
        f"slope), extrapolated to {FLEET_WORKERS} workers x {FLEET_RUNS:,} runs, beside "
        "the same fit of this benchmark on the code before issue 27's changes:",
        "",
        "| cost | per worker | per run | 50 x 1,000 | two workers, measured / fitted "
        "| before: per worker, per run, 50 x 1,000 | now / before at 50 x 1,000 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (worker, per_run), _ in rows:
        scale = FLEET_WORKERS * worker + FLEET_RUNS * per_run
        check = ""
        if two:
            s = two[0]
            measured = {
                "connections, turns": s.turns.connections,
                "connections, waits": s.waits.connections,
                "commits/s, turns": s.turns.commits,
                "commits/s, waits": s.waits.commits,
                "WAL KiB/s, turns": s.turns.wal / 1024,
                "WAL KiB/s, waits": s.waits.wal / 1024,
            }[name]
            predicted = 2 * worker + s.runs * per_run
            check = f"{measured:.1f} / {predicted:.1f}"
        fitted_before = BEFORE_MEASURED.get(name)
        then = ""
        ratio = ""
        if fitted_before is not None:
            at_scale = FLEET_WORKERS * fitted_before[0] + FLEET_RUNS * fitted_before[1]
            then = f"{fitted_before[0]:.2f}, {fitted_before[1]:.2f}, {at_scale:,.0f}"
            ratio = f"{scale / at_scale:.2f}"
        lines.append(
            f"| {name} | {worker:.2f} | {per_run:.2f} | {scale:,.0f} | {check} | {then} | {ratio} |"
        )
    lines += _second_worker(one, two, fitted(lambda s: s.waits.commits))
    conn_w, conn_r = fitted(lambda s: max(s.turns.connections, s.waits.connections))
    commit_w, commit_r = fitted(lambda s: max(s.turns.commits, s.waits.commits))
    scale_conn = FLEET_WORKERS * conn_w + FLEET_RUNS * conn_r
    scale_commits = FLEET_WORKERS * commit_w + FLEET_RUNS * commit_r
    before_conn = FLEET_WORKERS * BEFORE_CONNECTION_FIT[0] + FLEET_RUNS * BEFORE_CONNECTION_FIT[1]
    lines += [
        "",
        "Against issue 27's figures for the path before (quoted: the old path is not kept):",
        "",
        "| cost | before (issue 27) | now | now / before |",
        "|---|---|---|---|",
        f"| connections at 50 x 1,000 | {before_conn:,.0f} ({BEFORE_CONNECTIONS}) | "
        f"{scale_conn:,.0f} | {scale_conn / before_conn:.2f} |",
        f"| commits/s at 50 x 1,000 | {BEFORE_SCALE_COMMITS:,.0f} | {scale_commits:,.0f} | "
        f"{scale_commits / BEFORE_SCALE_COMMITS:.2f} |",
    ]
    for runs, before in BEFORE_WAL_KIB.items():
        match = [s for s in one if s.runs == runs]
        if match:
            now = match[0].turns.wal / 1024
            lines.append(
                f"| WAL while {runs} run(s) take turns | {before:.0f} KiB/s | {now:.1f} KiB/s "
                f"| {now / before:.2f} |"
            )
    for runs, before in BEFORE_WAL_PER_TURN_KIB.items():
        match = [s for s in one if s.runs == runs]
        if match:
            now = match[0].turns.wal_per_turn / 1024
            lines.append(
                f"| WAL per turn, {runs} run(s) (this benchmark before) | {before:.0f} KiB | "
                f"{now:.1f} KiB | {now / before:.2f} |"
            )
    if figures.status is not None:
        t = figures.status
        lines += [
            "",
            f"`status --engine` with {t.runs:,} started runs (each a stored record of "
            f"{t.record_bytes / 1024:.1f} KiB and its summary): the command "
            f"{t.command_seconds:.2f} s (with its start-up), {t.output_bytes / 1024:.0f} KiB "
            f"of JSON; what it reads, in process, {t.read_seconds:.2f} s; the path before "
            f"(every record fetched and read) {t.read_before_seconds:.2f} s, "
            f"{t.read_before_seconds / t.read_seconds:.1f}x.",
        ]
    if figures.age is not None:
        a = figures.age
        lines += [
            "",
            f"One run of {LONG_TURNS} turns: WAL per second after {a.early_turns[0]}-"
            f"{a.early_turns[1]} answered turns {_kib(a.early)}, after {a.late_turns[0]}-"
            f"{a.late_turns[1]} {_kib(a.late)}; per turn answered "
            f"{a.early_per_turn / 1024:.0f} KiB, then "
            f"{a.late_per_turn / 1024:.0f} KiB: late / early per turn {a.ratio:.2f} "
            f"(before: {BEFORE_AGE_KIB[0]:.0f} KiB, then {BEFORE_AGE_KIB[1]:.0f} KiB, "
            f"{BEFORE_AGE_KIB[1] / BEFORE_AGE_KIB[0]:.2f}).",
        ]
    return lines


def main() -> None:
    """This benchmark alone (`make bench` runs it with the others)."""
    print("\n".join(section(run())))


if __name__ == "__main__":
    main()
