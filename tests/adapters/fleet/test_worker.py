"""What a worker runs for a run it takes: `run` the first time, `resume` once the run
directory holds a record, and a directory left without one set aside, never deleted."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.children import child_command, child_environment, run_cwd
from claudeloop.adapters.fleet.engine import Engine, parse_engine
from claudeloop.adapters.fleet.heartbeat import Heartbeat
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order
from claudeloop.adapters.fleet.worker import (
    Drivers,
    WorkerLock,
    WorkerRunning,
    WorkerSettings,
)
from claudeloop.adapters.run_directory.lock import acquire


def order(cwd: Path) -> Order:
    return Order(str(cwd), ["PLAN.md", "--max-turns", "5"], account="0123456789abcdef")


def test_a_run_taken_the_first_time_is_started_with_its_options(tmp_path: Path) -> None:
    command = child_command("r1", order(tmp_path), tmp_path)
    assert command[1:] == [
        "-m", "claudeloop", "run", "PLAN.md", "--max-turns", "5", "--run-id", "r1",
        "--cwd", str(tmp_path), "--quiet",
    ]  # fmt: skip


def test_a_run_with_a_record_is_resumed_with_the_settings_it_started_with(
    tmp_path: Path,
) -> None:
    run = tmp_path / ".claudeloop" / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "state.json").write_text("{}")
    command = child_command("r1", order(tmp_path), tmp_path)
    assert command[3:] == ["resume", "--run-id", "r1", "--cwd", str(tmp_path), "--quiet"]


def test_a_directory_without_a_record_is_set_aside_and_the_run_started_again(
    tmp_path: Path,
) -> None:
    run = tmp_path / ".claudeloop" / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text('{"type": "run.started"}\n')
    (run / "driver.pid").write_text("999999999")  # its driver died
    command = child_command("r1", order(tmp_path), tmp_path)
    assert command[3] == "run"
    assert not run.exists()
    kept = tmp_path / ".claudeloop" / "unstarted" / "r1-1" / "events.jsonl"
    assert kept.read_text() == '{"type": "run.started"}\n'


def test_a_directory_a_live_process_is_setting_up_is_left_alone(tmp_path: Path) -> None:
    run = tmp_path / ".claudeloop" / "runs" / "r1"
    run.mkdir(parents=True)
    lock = acquire(run / "driver.pid")  # a driver holds the run's lock while it sets up
    try:
        child_command("r1", order(tmp_path), tmp_path)
    finally:
        lock.release()
    assert run.is_dir()


def drivers(tmp_path: Path, said: list[str], work_root: Path | None = None) -> Drivers:
    engine = parse_engine(f"sqlite:///{tmp_path / 'fleet.sqlite'}", "test")
    leases = Leases(engine)
    leases.ensure_schema()
    settings = WorkerSettings(engine, 1, 1, "w1", tmp_path, work_root=work_root)
    leases.start("w1")
    return Drivers(said.append, {}, settings, leases)


def test_a_run_whose_directory_is_gone_ends_with_exit_2_and_says_why(tmp_path: Path) -> None:
    said: list[str] = []
    gone = Order(str(tmp_path / "gone"), ["--prompt", "x"], account="0123456789abcdef")
    assert drivers(tmp_path, said).drive("r1", gone) == 2
    assert said == [
        f"run r1: cannot start in {tmp_path / 'gone'}: No such file or directory",
        "run r1: exit 2",
    ]


def test_a_run_whose_account_is_at_its_limit_waits_for_another_worker_s_run_to_end(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    mine = drivers(tmp_path, said)  # one run per account
    other = Leases(parse_engine(f"sqlite:///{tmp_path / 'fleet.sqlite'}", "test"))
    other.start("w2")
    other.claim("r1", "w2", '{"cwd": "/elsewhere"}', "a")  # w2 runs the account's one
    gone = Order(str(tmp_path / "gone"), ["--prompt", "x"], account="a")
    codes: list[int] = []
    driving = threading.Thread(target=lambda: codes.append(mine.drive("r2", gone)))
    driving.start()
    waiting = "run r2: waits for a slot of account 'a' (1 of its runs running)"
    deadline = threading.Event()
    while waiting not in said and driving.is_alive():
        deadline.wait(0.05)
    assert said == [waiting]
    assert other.queue_rows("r2") == []  # not claimed: nothing of it written
    other.ended("r1", "w2", 0)
    driving.join(timeout=60)
    assert codes == [2]
    assert said[1:] == [f"run r2: cannot start in {tmp_path / 'gone'}: No such file or directory",
                        "run r2: exit 2"]  # fmt: skip
    other.close()


HEARS = """
import signal, sys, time
def heard(number, _frame):
    with open(sys.argv[1], "a") as out:
        out.write(signal.Signals(number).name + "\\n")
signal.signal(signal.SIGTERM, heard)
signal.signal(signal.SIGINT, heard)
open(sys.argv[1], "a").close()
while True:
    time.sleep(1)
"""


def test_a_workers_stop_reaches_its_runs_as_sigterm_then_sigint(tmp_path: Path) -> None:
    # A run takes a SIGTERM after the first for the same stop (a stop sent to the
    # worker's whole group reaches it twice); the second stop must end it at once.
    mine = drivers(tmp_path, [])
    heard = tmp_path / "heard"
    child = subprocess.Popen([sys.executable, "-c", HEARS, str(heard)])
    try:
        while not heard.exists():
            threading.Event().wait(0.05)
        mine.children["r1"] = child
        mine.stop(forward=True)
        while heard.read_text().splitlines() != ["SIGTERM"]:
            threading.Event().wait(0.05)
        mine.stop(forward=True)
        while len(heard.read_text().splitlines()) < 2:
            threading.Event().wait(0.05)
        assert heard.read_text().splitlines() == ["SIGTERM", "SIGINT"]
        mine.stop(forward=False)  # the terminal's Ctrl-C reached the run itself
        assert heard.read_text().splitlines() == ["SIGTERM", "SIGINT"]
    finally:
        child.kill()
        child.wait()


def test_a_checkout_is_driven_under_the_work_root_and_refused_without_one(
    tmp_path: Path,
) -> None:
    assert run_cwd(Order("app", [], "a"), tmp_path) == tmp_path / "app"
    assert run_cwd(Order("/srv/app", [], "a"), tmp_path) == Path("/srv/app")
    said: list[str] = []
    assert drivers(tmp_path, said).drive("r1", Order("app", ["--prompt", "x"], "a")) == 2
    assert said == ["run r1: queued as checkout app; start with --work-root"]


def test_a_second_worker_of_the_same_name_is_refused_and_named_apart_is_not(
    tmp_path: Path,
) -> None:
    first = WorkerLock(tmp_path, "host-1234abcd")
    first.acquire()
    try:
        with pytest.raises(WorkerRunning) as refused:
            WorkerLock(tmp_path, "host-1234abcd").acquire()
        assert refused.value.pid == os.getpid()
        other = WorkerLock(tmp_path, "host-1234abcd-second")
        other.acquire()
        other.release()
    finally:
        first.release()
    again = WorkerLock(tmp_path, "host-1234abcd")  # the first one gone: free again
    again.acquire()
    again.release()


def test_a_run_gets_the_workers_environment_but_not_the_engine_and_its_password() -> None:
    environ = {
        "CLAUDELOOP_ENGINE": "postgresql://fleet:s3cret@db/claudeloop",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "CLAUDELOOP_MAX_TURNS": "5",
    }
    assert child_environment(environ) == {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "CLAUDELOOP_MAX_TURNS": "5",
    }


def test_a_seat_the_workers_own_environment_tells_is_no_childs() -> None:
    # A worker started by a run of a fleet (or an older worker's board URL) passes none
    # of that seat on: each child is told its own, and never the engine's URL.
    environ = {
        "CLAUDELOOP_ENGINE": "postgresql://fleet:s3cret@db/claudeloop",
        "CLAUDELOOP_FLEET_BOARD": "postgresql://old@db/x",
        "CLAUDELOOP_FLEET_SYNC": "5",
    }
    assert child_environment(environ) == {}


class Outage(Leases):
    """The engine's leases, with the database away while `away` is set."""

    away = False

    def beat(self, worker: str) -> bool:
        if self.away:
            raise ConnectionError("connection refused")
        return super().beat(worker)


def judge_beside_other(
    tmp_path: Path, engine: Engine, leases: Leases
) -> tuple[Heartbeat, list[float], list[str]]:
    """Worker "judge" heart-beating on a 4 s lease beside worker "other", on a clock the
    test moves (`now[0]`); what the heartbeat says is in the list returned with it."""
    leases.ensure_schema()
    (tmp_path / "workers").mkdir()
    now = [1000.0]
    settings = WorkerSettings(engine, 1, 1, "judge", tmp_path, lease_seconds=4.0)
    said: list[str] = []
    heartbeat = Heartbeat(settings, leases, said.append, clock=lambda: now[0])
    heartbeat.start()
    leases.start("other", 4_000)
    return heartbeat, now, said


def test_a_worker_back_from_an_outage_takes_over_only_after_a_whole_lease_back(
    tmp_path: Path,
) -> None:
    engine = parse_engine(f"sqlite:///{tmp_path / 'fleet.sqlite'}", "test")
    leases = Outage(engine)
    heartbeat, now, _ = judge_beside_other(tmp_path, engine, leases)
    taken: list[list[str]] = []

    def recover(executors: list[str]) -> list[str]:
        taken.append(executors)
        return []

    def beats_for(seconds: float) -> None:
        for _ in range(int(seconds * 10)):
            now[0] += 0.1
            assert heartbeat.beat() is True
            heartbeat.take_over(recover)

    beats_for(1)
    leases.away = True  # the database down for 6 s: nobody's beat is written
    beats_for(6)
    leases.away = False
    leases._change("UPDATE claudeloop_workers SET beat_at = :now - 7000 WHERE worker = 'other'")
    beats_for(3)  # back 3 s of a 4 s lease: the other may not have reached it yet
    assert taken == []
    assert heartbeat.up_for_ms() >= 2_900
    beats_for(1.5)  # back a whole lease, and the other silent all along: dead
    assert taken == [["other"]]


def test_a_takeover_won_whose_hand_back_failed_is_handed_back_at_the_next_look(
    tmp_path: Path,
) -> None:
    """Won, the dead worker is no other's to take: the winner tries again until the
    engine hands its runs back."""
    engine = parse_engine(f"sqlite:///{tmp_path / 'fleet.sqlite'}", "test")
    leases = Leases(engine)
    heartbeat, now, said = judge_beside_other(tmp_path, engine, leases)
    leases.let_go("other")
    asked: list[list[str]] = []

    def hand_back(executors: list[str]) -> list[str]:
        asked.append(executors)
        if len(asked) == 1:
            raise ConnectionError("the engine went away")
        return ["r1"]

    now[0] += 0.1
    heartbeat.take_over(hand_back)
    assert (asked, said) == ([["other"]], [])
    now[0] += 1.0  # the next look, a heartbeat interval later
    heartbeat.take_over(hand_back)
    assert asked == [["other"], ["other"]]
    assert said == ["worker other stopped heart-beating: taking over 1 run(s)"]
    now[0] += 1.0
    heartbeat.take_over(hand_back)
    assert len(asked) == 2
    leases.close()
