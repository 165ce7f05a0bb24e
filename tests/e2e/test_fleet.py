"""A fleet: `queue add`, `queue cancel`, `worker`, with the real bundled CLI and the
rehearsal API, on both engines (a SQLite file, and PostgreSQL), and workers that are
machines of their own sharing one account through PostgreSQL.

Each test gets a database of its own (on PostgreSQL a fresh database that `queue add`
creates), so no queue or executor is shared between tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.leases import CANCELLED, FAILED, FINISHED, Leases
from claudeloop.adapters.fleet.worker import WORKER_APPLICATION
from claudeloop.adapters.shared_capacity import account_key
from tests.e2e.conftest import FAST_WAITS, Rehearsal, cli_env, wait_for, write_plan
from tests.postgres_server import PostgresServer

pytestmark = pytest.mark.e2e

RUN_OPTIONS = ["--permission-mode", "bypassPermissions", *FAST_WAITS]
ENDED = (FINISHED, FAILED, CANCELLED)  # a run's status in claudeloop's queue, ended


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.sqlite'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return f"{server.dsn.rsplit('/', 1)[0]}/fleet_{uuid.uuid4().hex[:12]}"


@dataclass
class Fleet:
    rehearsal: Rehearsal
    engine: str
    root: Path
    started: list[subprocess.Popen[str]]

    def claudeloop(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "claudeloop", *args, "--engine", self.engine],
            env=self.rehearsal.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def claudeloop_on(
        self, env: dict[str, str], cwd: Path, *args: str
    ) -> subprocess.CompletedProcess[str]:
        """A command of another machine: its own environment and directory."""
        return subprocess.run(
            [sys.executable, "-m", "claudeloop", *args, "--engine", self.engine],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def project(self, name: str, items: int = 3) -> Path:
        project = self.root / name
        project.mkdir()
        write_plan(project, items)
        return project

    def add(self, project: Path) -> str:
        added = self.claudeloop(*self._add(project))
        assert added.returncode == 0, added.stderr
        return added.stdout.strip()

    def add_at_once(self, projects: list[Path], *options: str) -> list[str]:
        """`queue add` for every project, all at once (a fresh database: they race to
        set it up), with `options` beside the run options."""
        adding = [
            subprocess.Popen(
                [sys.executable, "-m", "claudeloop", *self._add(p, *options), *self._on],
                env=self.rehearsal.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for p in projects
        ]
        run_ids = []
        for process in adding:
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
            run_ids.append(out.strip())
        return run_ids

    def _add(self, project: Path, *options: str) -> list[str]:
        where = ["--cwd", str(project)]
        return ["queue", "add", str(project / "PLAN.md"), *where, *RUN_OPTIONS, *options]

    @property
    def _on(self) -> list[str]:
        return ["--engine", self.engine]

    def runs(self) -> dict[str, dict[str, Any]]:
        listed = self.claudeloop("queue", "ls", "--json")
        assert listed.returncode == 0, listed.stderr
        return {run["run_id"]: run for run in json.loads(listed.stdout)["runs"]}

    def worker(
        self, *args: str, machine: Path | None = None, state: Path | None = None
    ) -> subprocess.Popen[str]:
        """A worker in its own process group, its output in a file (never a full pipe).
        `machine`: a directory of its own for its HOME, configuration, state and work
        directory, as on a machine of its own; `state`: a state directory shared with
        the workers of its machine instead."""
        env = self.rehearsal.env
        if machine is not None:
            env = cli_env(self.rehearsal.server.base_url, machine / "home")
            env["CLAUDELOOP_CONFIG_DIR"] = str(machine / "config")
            env["CLAUDELOOP_STATE_DIR"] = str(state or machine / "state")
            (machine / "work").mkdir(parents=True)
        with (self.root / f"worker-{len(self.started)}.log").open("w") as log:
            worker = subprocess.Popen(
                [sys.executable, "-m", "claudeloop", "worker", "--engine", self.engine, *args],
                env=env,
                cwd=machine / "work" if machine is not None else None,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        self.started.append(worker)
        return worker

    def states(self, run_ids: list[str]) -> list[str]:
        runs = self.runs()
        return [runs[run_id]["state"] for run_id in run_ids]

    def ended(self, run_ids: list[str]) -> bool:
        """Whether the queue has each run ended (finished, failed or cancelled), read
        from its table in the engine: what to poll, where polling `queue ls` would start
        a process every tenth of a second, a CPU's worth beside the runs it waits for.
        What the user sees of them is asserted once after, with `states`."""
        looking = Leases(parse_engine(self.engine, "test"), pooled=False)
        try:
            statuses = {row.run_id: row.status for row in looking.queue_rows()}
        except Exception:  # the database set up by the first `queue add`, or away
            return False
        finally:
            looking.close()
        return all(statuses.get(run_id) in ENDED for run_id in run_ids)


@pytest.fixture
def fleet(rehearsal: Rehearsal, engine: str, tmp_path: Path) -> Iterator[Fleet]:
    root = tmp_path / "fleet"
    root.mkdir()
    fleet = Fleet(rehearsal, engine, root, [])
    yield fleet
    for worker in fleet.started:  # a failed test leaves no worker behind
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
    # What a worker and its runs said is lines, never a traceback (a run stopped as it
    # closed once printed asyncio's, of a Claude Code process its event loop outlived).
    for log in sorted(root.glob("worker-*.log")):
        said = log.read_text()
        assert "Traceback" not in said, f"{log}:\n{said}"
        assert "Exception ignored" not in said, f"{log}:\n{said}"


def run_record(project: Path, run_id: str) -> dict[str, Any]:
    return dict(json.loads((project / ".claudeloop" / "runs" / run_id / "state.json").read_text()))


def finished(project: Path, run_id: str) -> bool:
    """The run's record says it ended (read from disk: polling the queue would start a
    process each time)."""
    try:
        return run_record(project, run_id)["state"]["outcome"] is not None
    except (OSError, ValueError):
        return False


def events(project: Path, run_id: str) -> list[dict[str, Any]]:
    lines = (project / ".claudeloop" / "runs" / run_id / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    """The most spans that hold at one instant (a start and an end at one instant: the
    end first)."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def stop(worker: subprocess.Popen[str]) -> int:
    os.killpg(worker.pid, signal.SIGTERM)
    return worker.wait(timeout=60)


@pytest.mark.scenario("one_step")
# A worker's slots are its own, not the engine's: one engine proves them (both engines
# run the three-worker case below, which limits an account across workers).
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_one_worker_with_two_slots_finishes_three_runs_never_more_than_two_at_once(
    fleet: Fleet,
) -> None:
    projects = [fleet.project(name, items=1) for name in ("alpha", "beta", "gamma", "delta")]
    run_ids = fleet.add_at_once(projects)
    cancelled = fleet.claudeloop("queue", "cancel", run_ids[3])
    assert cancelled.returncode == 0, cancelled.stderr
    worker = fleet.worker("--slots", "2", "--per-account", "2")
    try:
        wait_for(lambda: fleet.ended(run_ids[:3]), "the three runs to finish", 120)
        assert fleet.states(run_ids) == ["done"] * 3 + ["cancelled"]
    finally:
        code = stop(worker)
    assert code == 130
    spans = []
    for project, run_id in zip(projects[:3], run_ids[:3], strict=True):
        record = run_record(project, run_id)
        assert record["state"]["outcome"] == "done"
        assert (project / "step1.txt").exists()
        stamps = [datetime.fromisoformat(e["ts"]) for e in events(project, run_id)]
        spans.append((min(stamps), max(stamps)))
    assert most_at_once(spans) <= 2
    # The cancelled run never started: no run directory, no file written.
    assert fleet.states([run_ids[3]]) == ["cancelled"]
    assert not (projects[3] / ".claudeloop").exists()
    assert not (projects[3] / "step1.txt").exists()


@pytest.mark.scenario("one_step")
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)  # a setting of the queue
def test_one_account_runs_one_at_a_time_by_default_with_slots_to_spare(fleet: Fleet) -> None:
    projects = [fleet.project(name, items=1) for name in ("alpha", "beta")]
    run_ids = fleet.add_at_once(projects)  # the same credentials: one account
    worker = fleet.worker("--slots", "2")
    try:
        wait_for(
            lambda: all(finished(p, r) for p, r in zip(projects, run_ids, strict=True)),
            "both runs to finish",
            120,
        )
    finally:
        stop(worker)
    spans = []
    for project, run_id in zip(projects, run_ids, strict=True):
        stamps = [datetime.fromisoformat(e["ts"]) for e in events(project, run_id)]
        spans.append((min(stamps), max(stamps)))
    assert most_at_once(spans) == 1


@pytest.mark.scenario("stall_at_2")
# The same machine's worker started again; the takeover by another machine after kill -9
# runs on both engines in test_fleet_takeover.py. PostgreSQL is where the first worker
# races `queue add` to create the database itself.
@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
def test_a_worker_killed_mid_run_is_replaced_and_the_run_resumes_on_its_session(
    fleet: Fleet,
) -> None:
    project = fleet.project("alpha")
    first = fleet.worker()  # on a fresh database, racing the first `queue add`
    run_id = fleet.add(project)
    wait_for(
        lambda: any(r["gate"] == "stall" for r in fleet.rehearsal.requests()),
        "turn 2 to be in flight",
    )
    os.killpg(first.pid, signal.SIGKILL)  # the worker, its run and its CLI: a crash
    first.wait(timeout=10)
    before = run_record(project, run_id)
    assert before["state"]["turns"] == 1
    assert fleet.states([run_id]) == ["running"]  # unfinished, held by the dead worker

    second = fleet.worker()
    try:
        wait_for(lambda: finished(project, run_id), "the run to finish", 120)
        wait_for(lambda: fleet.ended([run_id]), "the queue to say so", 30)
        assert fleet.states([run_id]) == ["done"]
    finally:
        stop(second)
    after = run_record(project, run_id)
    assert after["state"]["outcome"] == "done"
    assert after["session_id"] == before["session_id"]
    kinds = [event["type"] for event in events(project, run_id)]
    assert kinds.count("run.resumed") == 1
    assert (project / "step3.txt").exists()


@pytest.mark.scenario("window_until_lift_at_2")
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)  # the worker's signals: any engine
def test_a_cancelled_run_and_one_stopped_from_elsewhere_end_and_sigterm_hands_one_back(
    fleet: Fleet,
) -> None:
    kept, cancelled, stopped = (fleet.project(n) for n in ("kept", "cancelled", "stopped"))
    kept_id, cancelled_id, stopped_id = fleet.add_at_once([kept, cancelled, stopped])
    first = fleet.worker("--slots", "3", "--per-account", "3")
    wait_for(
        lambda: (
            [project_phase(p, r) for p, r in [(kept, kept_id), (cancelled, cancelled_id)]]
            + [project_phase(stopped, stopped_id)]
            == ["waiting"] * 3
        ),
        "the three runs to wait for the window",
        150,  # three runs' first two turns at once: a loaded machine took over 60 s
    )
    session = run_record(kept, kept_id)["session_id"]
    assert fleet.claudeloop("queue", "cancel", cancelled_id).returncode == 0
    # Another machine (its own HOME and state directory, no run directory) sees the run
    # through the engine and stops it; its worker passes the stop on.
    elsewhere = fleet.root / "elsewhere"
    elsewhere.mkdir()
    other = {**fleet.rehearsal.env, "HOME": str(elsewhere)}
    other["CLAUDELOOP_STATE_DIR"] = str(elsewhere / "state")
    seen = fleet.claudeloop_on(other, elsewhere, "status", "--run-id", stopped_id, "--json")
    assert seen.returncode == 0, seen.stderr
    shown = json.loads(seen.stdout)
    # Waiting for the window, between probes or in one (a probe may be out as it looks).
    assert (shown["phase"], shown["state"]) in {("waiting", "running"), ("probing", "running")}
    assert shown["worker"] == fleet.runs()[stopped_id]["worker"]
    # A note first, through the engine: its worker passes it on, the waiting run takes it.
    noted = fleet.claudeloop_on(other, elsewhere, "note", stopped_id, "look at step 2")
    assert noted.returncode == 0, noted.stderr
    wait_for(lambda: "note.added" in kinds_of(stopped, stopped_id), "the note to reach the run", 60)
    asked = fleet.claudeloop_on(other, elsewhere, "stop", "--run-id", stopped_id)
    assert asked.returncode == 0, asked.stderr
    wait_for(lambda: finished(cancelled, cancelled_id), "the cancelled run to stop")
    assert run_record(cancelled, cancelled_id)["state"]["outcome"] == "stopped"
    wait_for(lambda: fleet.ended([stopped_id]), "the stopped run to end", 60)
    assert fleet.states([stopped_id]) == ["exit 130"]
    assert run_record(stopped, stopped_id)["state"]["outcome"] == "stopped"

    # Followed from the other machine across the hand-back, to its end on the second worker.
    followed = elsewhere / "kept-logs.jsonl"
    logs = ["logs", "-f", "--json", "--run-id", kept_id, "--engine", fleet.engine]
    with followed.open("w") as out:
        following = subprocess.Popen(
            [sys.executable, "-m", "claudeloop", *logs],
            env=other,
            cwd=elsewhere,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
        )
    first.send_signal(signal.SIGTERM)  # the worker only: it passes the stop on
    assert first.wait(timeout=60) == 130
    assert run_record(kept, kept_id)["state"]["outcome"] == "stopped"
    # Not ended in the queue: handed back, for a worker of this machine to resume.
    assert fleet.states([kept_id, cancelled_id]) == ["running", "cancelled"]

    second = fleet.worker()
    try:
        fleet.rehearsal.server.lift()
        wait_for(lambda: finished(kept, kept_id), "the run to finish", 120)
        wait_for(lambda: fleet.ended([kept_id]), "the queue to say so", 30)
        assert fleet.states([kept_id]) == ["done"]
        _, err = following.communicate(timeout=30)  # ended on its own with the run
    finally:
        stop(second)
        if following.poll() is None:  # the test failed first: no follower left behind
            following.kill()
            following.wait(timeout=10)
    assert following.returncode == 0, err
    seen_kinds = [json.loads(line)["type"] for line in followed.read_text().splitlines()]
    assert seen_kinds == kinds_of(kept, kept_id)  # every event once, in order
    assert seen_kinds.count("run.finished") == 2  # stopped on the first worker, done on the second
    after = run_record(kept, kept_id)
    assert after["state"]["outcome"] == "done"
    assert after["session_id"] == session
    kinds = kinds_of(kept, kept_id)
    assert kinds.count("run.started") + kinds.count("run.resumed") == 2  # once by each worker
    # Neither the cancelled run nor the stopped one was taken again.
    assert kinds_of(cancelled, cancelled_id).count("run.started") == 1
    assert run_record(cancelled, cancelled_id)["state"]["outcome"] == "stopped"
    assert kinds_of(stopped, stopped_id).count("run.started") == 1
    assert fleet.states([stopped_id]) == ["exit 130"]


def project_phase(project: Path, run_id: str) -> str | None:
    try:
        return str(run_record(project, run_id)["state"]["phase"])
    except (OSError, ValueError):
        return None


def kinds_of(project: Path, run_id: str) -> list[str]:
    try:
        return [event["type"] for event in events(project, run_id)]
    except OSError:
        return []


def probe_results(project: Path, run_id: str) -> list[str]:
    """The capacity each probe of the run found, so far (a line being written skipped)."""
    path = project / ".claudeloop" / "runs" / run_id / "events.jsonl"
    found = []
    for line in path.read_text().splitlines() if path.exists() else ():
        with contextlib.suppress(json.JSONDecodeError):
            event = json.loads(line)
            if event["type"] == "probe.finished":
                found.append(str(event["capacity"]))
    return found


def closed_probes(project: Path, run_id: str) -> int:
    return sum(1 for capacity in probe_results(project, run_id) if capacity != "available")


def worker_connections(engine: str) -> int:
    """The connections the workers of `engine`'s database hold now (PostgreSQL)."""
    if not engine.startswith("postgresql"):
        return 0
    with psycopg.connect(engine, autocommit=True) as looking:
        row = looking.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            (WORKER_APPLICATION,),
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.scenario("two_steps_window_until_lift_at_2")
def test_three_workers_run_one_accounts_three_runs_two_at_a_time_through_a_closed_window(
    fleet: Fleet, engine: str
) -> None:
    """The account limit holds across workers, no turn goes into the closed window but
    those already in flight, one run probes for the account at a time (the others take
    its result), and every run finishes after the lift. On PostgreSQL each worker is a
    machine of its own (its own HOME, configuration, state and work directory): what
    the runs share goes through the engine's board. On SQLite the workers are one
    machine's, sharing its state directory (and its file board)."""
    projects = [fleet.project(name, items=2) for name in ("alpha", "beta", "gamma")]
    pairs = list(zip(projects, fleet.add_at_once(projects), strict=True))
    one_machine = engine.startswith("sqlite")
    workers = []
    for number in range(3):
        named = ["--name", f"w{number}"] if one_machine else []
        machine, state = fleet.root / f"machine{number}", fleet.root / "state"
        # One slot each: the account's two running runs are on two workers.
        limits = ["--slots", "1", "--per-account", "2"]
        shared = state if one_machine else None
        workers.append(fleet.worker(*limits, *named, machine=machine, state=shared))
    connections: list[int] = []  # of the three workers, seen as the runs go

    def seen(condition: bool) -> bool:
        connections.append(worker_connections(engine))
        return condition

    try:
        wait_for(
            lambda: seen(
                sum(1 for project, run_id in pairs if closed_probes(project, run_id)) >= 2
            ),
            "two runs to wait for the window",
            150,
        )
        # The account's third run waits in the queue, a worker's slot to spare.
        assert sum(1 for project, run_id in pairs if kinds_of(project, run_id)) == 2
        fleet.rehearsal.server.lift()
        wait_for(
            lambda: seen(all(finished(project, run_id) for project, run_id in pairs)),
            "every run to finish",
            180,
        )
    finally:
        codes = [stop(worker) for worker in workers]
    assert codes == [130, 130, 130]
    if not one_machine:
        # At most 3 connections a worker, whatever its runs do; none of a run's own.
        assert 0 < max(connections) <= 3 * len(workers), connections
    served = fleet.rehearsal.server.state()
    lifted = datetime.fromisoformat(served["lifted_at"])
    spans = []
    for project, run_id in pairs:
        record = run_record(project, run_id)
        assert record["state"]["outcome"] == "done", record["state"]
        assert (project / "step2.txt").read_text() == "step 2\n"
        stamps = [datetime.fromisoformat(e["ts"]) for e in events(project, run_id)]
        spans.append((min(stamps), max(stamps)))
        assert max(stamps) > lifted  # it finished after the lift
    assert most_at_once(spans) == 2

    requests = served["requests"]
    by_directory = {str(project.resolve()): (project, run_id) for project, run_id in pairs}
    gate_turns = [r for r in requests if r["kind"] == "turn" and r["gate"]]
    gate_probes = [r for r in requests if r["kind"] == "probe" and r["gate"]]
    assert gate_turns, "the window closed on a turn"
    # Turns into the closed window: one per run at most, each begun before any run had
    # finished a refused turn (in flight before anyone could know).
    per_run = Counter(r["cwd"] for r in gate_turns)
    assert set(per_run) <= set(by_directory)
    assert max(per_run.values()) == 1, per_run
    refused = {
        directory: next((e for e in events(project, run_id) if e.get("verdict") == "refused"), None)
        for directory, (project, run_id) in by_directory.items()
    }
    known_closed = min(
        datetime.fromisoformat(event["ts"]) for event in refused.values() if event is not None
    )
    for directory in per_run:
        project, run_id = by_directory[directory]
        turn = refused[directory]
        assert turn is not None, directory
        started = next(
            e
            for e in events(project, run_id)
            if e["type"] == "turn.started" and e["turn"] == turn["turn"]
        )
        assert datetime.fromisoformat(started["ts"]) < known_closed, (directory, refused)
    # One probe at a time for the account: the closed window saw no more probes than one
    # run's share of the results, and every waiting run had results of its own.
    shares = [closed_probes(project, run_id) for project, run_id in pairs]
    waited = [share for share in shares if share]
    assert len(waited) == 2, shares
    assert len(gate_probes) <= max(waited) < sum(waited), (len(gate_probes), shares)
    account = account_key(fleet.rehearsal.env, None)
    if one_machine:
        assert (fleet.root / "state" / "capacity" / f"{account}.json").exists()
    else:  # no machine's file record: the engine's board
        assert not any(fleet.root.glob("machine*/state/capacity/*.json"))
        import psycopg

        with psycopg.connect(engine) as connection:
            row = connection.execute(
                "SELECT seq, standing FROM claudeloop_capacity WHERE account = %s", (account,)
            ).fetchone()
        assert row is not None
        assert row[0] >= len(gate_probes) + 1
        assert row[1] == "open"
