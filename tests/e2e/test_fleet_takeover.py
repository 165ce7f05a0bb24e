"""Nothing lost when a worker dies, with the real bundled CLI and the rehearsal API, on
both engines: workers are separate processes with separate HOME, state and work
directories (each machine has its own checkout of the project), so a run that moves
from one to another moves through the engine, never through a shared path.

A waiting run, two machines: B's worker is paused (SIGSTOP) past its lease while the
run waits for a closed window, and C takes the run over from the engine's record (same
session, no probe before the saved instant); B, continued, is fenced: it sends nothing
more for the run. The run finishes on C after the window lifts; B, fenced, starts again
and takes runs again. A worker killed (kill -9) is taken over on both engines too: right
after a turn finished, and in its first turn.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.run_archive import unpack_record
from tests.e2e.conftest import cli_env, wait_for, write_plan
from tests.e2e.test_fleet import RUN_OPTIONS, Fleet, engine, fleet  # noqa: F401

pytestmark = pytest.mark.e2e

LEASE = "4s"
# Longer than a takeover takes, so a probe sent at once by the new worker would show.
PROBE_INTERVAL = "8s"
# The lease of the workers of the run whose worker alone is killed (below).
ALONE_LEASE = "12s"


@dataclass
class Machine:
    name: str
    env: dict[str, str]
    checkout: Path  # this machine's copy of the project
    credentials: str  # how its requests authenticate: the ledger tells them apart

    def record(self, run_id: str) -> dict[str, Any] | None:
        try:
            path = self.checkout / ".claudeloop" / "runs" / run_id / "state.json"
            return dict(json.loads(path.read_text()))
        except (OSError, ValueError):
            return None

    def events(self, run_id: str) -> list[dict[str, Any]]:
        try:
            path = self.checkout / ".claudeloop" / "runs" / run_id / "events.jsonl"
            lines = path.read_text().splitlines()
        except OSError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def kinds(self, run_id: str) -> list[str]:
        return [event["type"] for event in self.events(run_id)]


def machine(of: Fleet, name: str, credentials: str = "oauth") -> Machine:
    root = of.root / f"machine-{name}"
    checkout = root / "work" / "app"
    checkout.mkdir(parents=True)
    write_plan(checkout, 3)
    env = cli_env(of.rehearsal.server.base_url, root / "home", credentials=credentials)
    env["CLAUDELOOP_STATE_DIR"] = str(root / "state")
    env["XDG_CONFIG_HOME"] = str(root / "config")
    return Machine(name, env, checkout, credentials)


def start_worker(of: Fleet, on: Machine, lease: str = LEASE) -> subprocess.Popen[str]:
    with (of.root / f"worker-{on.name}.log").open("w") as log:
        worker = subprocess.Popen(
            [
                sys.executable, "-m", "claudeloop", "worker", "--engine", of.engine,
                "--lease", lease, "--work-root", str(on.checkout.parent),
            ],
            env=on.env,
            cwd=on.checkout.parent,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )  # fmt: skip
    of.started.append(worker)  # killed at the end if a test fails
    return worker


def pause(worker: subprocess.Popen[str], url: str) -> None:
    """SIGSTOP `worker`. On SQLite, at a moment it holds no write lock: a process paused
    mid-write holds the file's lock for every process of the machine until it goes on
    (PostgreSQL ends such a transaction itself), a limit of the one-machine engine."""
    for _ in range(20):
        os.kill(worker.pid, signal.SIGSTOP)
        if not url.startswith("sqlite:///"):
            return
        try:
            with contextlib.closing(sqlite3.connect(url[len("sqlite:///") :], timeout=2)) as db:
                db.execute("BEGIN IMMEDIATE")
                db.rollback()
            return
        except sqlite3.OperationalError:  # paused mid-write: let it finish, pause again
            os.kill(worker.pid, signal.SIGCONT)
            time.sleep(0.2)
    pytest.fail("the worker held the SQLite lock at every pause")


def child_of(of: Fleet, on: Machine) -> int:
    """The pid of the run's child process, as `on`'s worker said it started it."""
    said = re.findall(r"\(pid (\d+)\)", (of.root / f"worker-{on.name}.log").read_text())
    return int(said[-1])


def alive(pid: int) -> bool:
    """Running (a zombie, ended but not yet reaped by its paused parent, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def requests_from(of: Fleet, on: Machine) -> list[dict[str, Any]]:
    """The requests `on` sent (a probe names no directory; its credentials tell)."""
    return [r for r in of.rehearsal.requests() if r["credentials"] == on.credentials]


def queue_add(of: Fleet, on: Machine, *options: str) -> str:
    """`claudeloop queue add PLAN.md OPTIONS` from machine `on`; the run's id."""
    added = subprocess.run(
        [sys.executable, "-m", "claudeloop", "queue", "add", "PLAN.md", *options,
         "--engine", of.engine],
        env=on.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    return added.stdout.strip()


@pytest.mark.scenario("window_until_lift_at_2")
def test_a_paused_workers_waiting_run_is_taken_over_and_the_paused_one_is_fenced(
    fleet: Fleet,  # noqa: F811
    tmp_path: Path,
) -> None:
    # B alone signs in with an API key, C with the subscription's token.
    b, c = machine(fleet, "b", "api_key"), machine(fleet, "c")
    first = start_worker(fleet, b)
    run_id = queue_add(
        fleet, b, "--checkout", "app", *RUN_OPTIONS, "--window-probe-interval", PROBE_INTERVAL
    )
    wait_for(lambda: "turn.started" in b.kinds(run_id), "B to send turn 1", 90)
    # Once B holds the run, C starts: it takes it only over, and it judges B by B's
    # lease once it has itself been up that long, which it is by the time B is paused.
    second = start_worker(fleet, c)
    leases = Leases(parse_engine(fleet.engine, "test"))
    try:

        def stored_phase() -> str | None:
            stored = leases.stored(run_id)
            return stored.phase if stored else None

        wait_for(lambda: stored_phase() == "waiting", "the engine to hold the waiting run", 90)
        stored = leases.stored(run_id)
        assert stored is not None
        assert stored.record is not None
        unpack_record(stored.record, tmp_path / "saved")
        saved = json.loads((tmp_path / "saved" / "state.json").read_text())
        probe_at = datetime.fromisoformat(saved["state"]["next_probe_at"])

        # B paused past its lease: C takes the run over. B's child, which SIGSTOP of
        # its worker does not stop, has ended on its own by then.
        pause(first, fleet.engine)
        wait_for(lambda: "run.resumed" in c.kinds(run_id), "C to take the run over", 90)
        assert not alive(child_of(fleet, b))
        sent_by_b = len(requests_from(fleet, b))
        fleet.rehearsal.server.lift()  # the window opens while B is still paused
        # B goes on as C runs the run in the open window: fenced, B leaves the run and
        # starts again in place (a new life, same process), sending nothing for it.
        os.kill(first.pid, signal.SIGCONT)
        wait_for(
            lambda: (c.record(run_id) or {}).get("state", {}).get("outcome") is not None,
            "the run to finish on C",
            120,
        )
        wait_for(
            lambda: (fleet.root / "worker-b.log").read_text().count("taking runs from") == 2,
            "B to take runs again",
            60,
        )
        wait_for(lambda: fleet.ended([run_id]), "the queue to say so", 30)
        assert fleet.states([run_id]) == ["done"]
        assert first.poll() is None
        os.killpg(first.pid, signal.SIGTERM)
        assert first.wait(timeout=60) == 130
        os.killpg(second.pid, signal.SIGTERM)
        second.wait(timeout=60)
    finally:
        leases.close()
    assert len(requests_from(fleet, b)) == sent_by_b  # nothing more from the fenced one
    # C probed no sooner than the instant the run had saved (PROBE_INTERVAL on: a probe
    # sent at once on taking the run over would show).
    assert all(datetime.fromisoformat(r["at"]) >= probe_at for r in requests_from(fleet, c))
    final = c.record(run_id)
    assert final is not None
    assert final["state"]["outcome"] == "done"
    assert final["session_id"] == saved["session_id"]
    assert c.kinds(run_id).count("run.resumed") == 1  # once, on C
    assert (c.checkout / "step3.txt").exists()
    log = (fleet.root / "worker-b.log").read_text()
    assert "fenced" in log


@pytest.mark.scenario("slow_turn_2")
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)  # the worker's own lease
def test_a_stopping_worker_keeps_its_lease_while_its_run_cuts_its_turn_off(
    fleet: Fleet,  # noqa: F811
) -> None:
    project = fleet.project("alpha")
    run_id = fleet.add(project)
    worker = fleet.worker("--lease", "2s")  # shorter than the turn in flight (3 s)
    wait_for(
        lambda: any(r["gate"] == "stall" for r in fleet.rehearsal.requests()),
        "turn 2 to be in flight",
    )
    worker.send_signal(signal.SIGTERM)  # the worker only: it passes the stop on
    assert worker.wait(timeout=60) == 130
    record = json.loads((project / ".claudeloop" / "runs" / run_id / "state.json").read_text())
    # The run's SIGTERM cut the turn in flight off at once (issue 40): it is kept for
    # whichever worker resumes the run, on its session.
    assert record["state"]["turns"] == 1
    assert record["turn_in_flight"] == 2
    assert record["state"]["outcome"] == "stopped"
    assert "lease on this run is over" not in (fleet.root / "worker-0.log").read_text()


@pytest.mark.scenario("window_until_lift_at_2")
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)  # git's part: any engine
def test_a_repo_run_works_in_a_clone_and_pushes_its_branch_after_each_turn(
    fleet: Fleet,  # noqa: F811
    tmp_path: Path,
) -> None:
    seed = tmp_path / "seed"
    seed.mkdir()
    write_plan(seed, 3)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@localhost"]
    for step in (["init", "--quiet"], ["add", "PLAN.md"], ["commit", "--quiet", "-m", "plan"]):
        subprocess.run([*git, "-C", str(seed), *step], check=True)
    remote = tmp_path / "remote.git"
    subprocess.run([*git, "clone", "--quiet", "--bare", str(seed), str(remote)], check=True)
    a = machine(fleet, "a")
    run_id = queue_add(fleet, a, "--repo", f"file://{remote}", *RUN_OPTIONS)
    branch = f"claudeloop/{run_id}"

    def files() -> list[str]:
        done = subprocess.run(
            ["git", "--git-dir", str(remote), "ls-tree", "--name-only", branch],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.split()

    worker = start_worker(fleet, a, lease="30s")
    try:
        # Turn 1 done, the run waiting for the window: its work is pushed already.
        wait_for(lambda: files() == ["PLAN.md", "step1.txt"], "turn 1's work on the branch", 90)
        # A lift ends the window only once it closed: the push after turn 1 may come
        # before turn 2 meets it, on a loaded machine.
        wait_for(
            lambda: any(r["gate"] for r in fleet.rehearsal.requests()), "turn 2 to be refused", 90
        )
        fleet.rehearsal.server.lift()
        wait_for(lambda: fleet.ended([run_id]), "the run to finish", 120)
        assert fleet.states([run_id]) == ["done"]
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)
    assert files() == ["PLAN.md", "step1.txt", "step2.txt", "step3.txt"]
    # The run committed each answered turn itself (--checkpoint, the same code as a
    # --worktree run's), trailers naming it; the worker only pushed.
    log = subprocess.run(
        [
            "git",
            "--git-dir",
            str(remote),
            "log",
            "--format=%(trailers:key=Claudeloop-Run,valueonly,separator=)",
            branch,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert log == [run_id] * 3  # the seed's commit names no run
    # The clone is the worker's own, under its work root; the run's files stay out of git.
    clone = a.checkout.parent / "clones" / run_id
    assert (clone / ".claudeloop" / "runs" / run_id / "state.json").is_file()


def finished_turns(on: Machine, run_id: str) -> list[int]:
    path = on.checkout / ".claudeloop" / "runs" / run_id / "events.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    events = [json.loads(line) for line in lines if line.strip()]
    return [e["turn"] for e in events if e["type"] == "turn.finished"]


def finish_on(on: Machine, worker: subprocess.Popen[str], run_id: str) -> None:
    """Waits for the run to end on `on`, then stops `on`'s worker as SIGTERM does."""
    wait_for(
        lambda: (on.record(run_id) or {}).get("state", {}).get("outcome") is not None,
        f"the run to finish on {on.name.upper()}",
        150,
    )
    os.killpg(worker.pid, signal.SIGTERM)
    worker.wait(timeout=60)


@pytest.mark.scenario("three_steps")
def test_a_worker_killed_right_after_a_turn_finished_leaves_that_turn_done_and_paid_for(
    fleet: Fleet,  # noqa: F811
) -> None:
    a, b = machine(fleet, "a"), machine(fleet, "b")
    first = start_worker(fleet, a)
    run_id = queue_add(fleet, a, "--checkout", "app", *RUN_OPTIONS)
    wait_for(lambda: "turn.started" in a.kinds(run_id), "A to send turn 1", 90)
    second = start_worker(fleet, b)  # once A holds the run: B takes it only over
    # Machine A dies (its worker, its run and its CLI) the moment turn 1 is said finished:
    # before the worker's half-second copy of the record could come round.
    deadline = time.monotonic() + 90
    while finished_turns(a, run_id) != [1]:
        assert time.monotonic() < deadline, "turn 1 did not finish on A"
        time.sleep(0.002)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    answered_on_a = [r for r in fleet.rehearsal.requests() if r["answered"]]
    finish_on(b, second, run_id)

    final = b.record(run_id)
    assert final is not None
    assert final["state"]["outcome"] == "done"
    served = fleet.rehearsal.server.state()
    turns = [r for r in served["requests"] if r["kind"] == "turn"]
    # Turn 1 was sent once, in one session that B goes on with: B sent turns 2 and 3.
    assert [r["turn"] for r in turns if r["step"] == 0] == [1, 2, 3]
    # Turn 1 is never sent again. On a loaded machine A's run may have begun turn 2 (saved
    # in flight, its request not sent) before the kill reached it: B says so and sends it.
    interrupted = [e["turn"] for e in b.events(run_id) if e["type"] == "turn.interrupted"]
    assert interrupted in ([], [2]), interrupted
    assert finished_turns(b, run_id)[-2:] == [2, 3]
    a_events = [
        json.loads(line)
        for line in (a.checkout / ".claudeloop" / "runs" / run_id / "events.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    ]
    (turn_1,) = [e for e in a_events if e["type"] == "turn.finished"]
    assert final["session_id"] == turn_1["session_id"]
    # The ledger: every answered request once, turn 1's on A among them.
    answered = [r for r in served["requests"] if r["answered"] and r["kind"] in ("turn", "probe")]
    first_answers = [r for r in answered if r["kind"] == "turn" and r["turn"] == 1]
    assert len(first_answers) == len(answered_on_a)
    price = turn_1["cost_usd"] / len(first_answers)
    assert final["state"]["turns"] == served["verdicts"] == 3
    assert final["state"]["dollars"] == pytest.approx(price * len(answered), rel=1e-6)


@pytest.mark.scenario("slow_turn_2_until_lift")
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)  # the child's side: any engine
def test_a_run_whose_worker_alone_was_killed_sends_no_turn_after_the_one_in_flight(
    fleet: Fleet,  # noqa: F811
) -> None:
    # Turn 2 stalls until the test lifts it, once A's worker is dead: whatever the load,
    # A's run finishes turn 2 only after its worker is gone, and its save of it, which
    # no worker can store in the engine, ends it. Before, it went on with turn 3 for the
    # rest of its lease, a turn its successor sent again.
    # A lease long enough for that turn 3 to be sent before the run's own lease ended it.
    # B signs in with an API key: the rehearsal tells the machines' requests apart.
    a, b = machine(fleet, "a"), machine(fleet, "b", "api_key")
    first = start_worker(fleet, a, lease=ALONE_LEASE)
    run_id = queue_add(fleet, a, "--checkout", "app", *RUN_OPTIONS)
    wait_for(lambda: "turn.started" in a.kinds(run_id), "A to send turn 1", 90)
    # Once A holds the run, B starts: it takes the run over once A's lease ran out in
    # the engine, and it has been up that long itself by then.
    second = start_worker(fleet, b, lease=ALONE_LEASE)
    wait_for(
        lambda: any(r["gate"] == "stall" for r in fleet.rehearsal.requests()),
        "turn 2 to be in flight on A",
        90,
    )
    child = child_of(fleet, a)
    os.kill(first.pid, signal.SIGKILL)  # the worker alone: its run and CLI go on
    first.wait(timeout=10)
    fleet.rehearsal.server.lift()  # A's stream is cut, and the CLI's own try answered
    wait_for(lambda: not alive(child), "A's run to stop", 60)
    finish_on(b, second, run_id)
    from_a = [r["turn"] for r in requests_from(fleet, a) if r["kind"] == "turn" and r["step"] == 0]
    # Turn 2 in flight (the stalled request, and the CLI's own try after the cut
    # stream) and nothing after it: turn 3 is B's alone.
    assert set(from_a) == {1, 2}
    assert "turn.interrupted" in b.kinds(run_id)  # turn 2, its outcome never stored
    final = b.record(run_id)
    assert final is not None
    assert final["state"]["outcome"] == "done"
    assert final["state"]["turns"] == 3


@pytest.mark.scenario("slow_first_turn")
# What the transcript held, and so how B goes on: any engine. Both engines store a
# run's record and hand it over in the paused worker's test and the killed one's above.
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_a_run_taken_over_in_its_first_turn_finishes_whatever_its_transcript_held(
    fleet: Fleet,  # noqa: F811
) -> None:
    # Turn 1's first request stalls 4 s: machine A dies (its worker, its run and its CLI)
    # the moment the run has recorded the session the CLI named, before the session's
    # transcript could travel whole (CLI 2.1.337 writes its own lines before the prompt;
    # B may find none of it, that much, or the prompt). B takes the run over and must
    # end it done: the session resumed, started afresh, or replaced, never exit 1.
    a, b = machine(fleet, "a"), machine(fleet, "b", "api_key")
    first = start_worker(fleet, a)
    run_id = queue_add(fleet, a, "--checkout", "app", *RUN_OPTIONS)
    wait_for(
        lambda: (a.record(run_id) or {}).get("session_id") is not None,
        "A's run to record its session",
        90,
    )
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    session = (a.record(run_id) or {}).get("session_id")
    second = start_worker(fleet, b)
    finish_on(b, second, run_id)

    final = b.record(run_id)
    assert final is not None
    assert final["state"]["outcome"] == "done", final["state"].get("reason")
    assert "turn.failed" not in b.kinds(run_id)
    assert final["state"]["turns"] >= 1
    # B's turns went on a session of its own unless A's had travelled whole.
    assert final["session_id"] is not None
    assert session is not None
