"""The run's lock: one holder however many processes race for it, released by the
kernel when its holder dies, and a pid in the file never taken for a holder."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.run_directory.lock import RunLocked, acquire, live_driver

RACERS = 4
TRIALS = 60


def _race(
    directory: str,
    start: Any,
    done: Any,
    results: Any,
) -> None:
    """One racer: at each trial's start, try to take that trial's lock; hold it until
    every racer has tried; report whether it was taken."""
    for trial in range(TRIALS):
        start.wait(30)
        try:
            lock = acquire(Path(directory) / f"driver-{trial}.pid")
        except RunLocked:
            results.put((trial, False))
            done.wait(30)
            continue
        results.put((trial, True))
        done.wait(30)
        lock.release()


def test_racing_processes_never_both_hold_the_lock(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    start, done = context.Barrier(RACERS), context.Barrier(RACERS)
    results: Any = context.Queue()
    racers = [
        context.Process(target=_race, args=(str(tmp_path), start, done, results))
        for _ in range(RACERS)
    ]
    for racer in racers:
        racer.start()
    try:
        taken: dict[int, int] = {}
        for _ in range(TRIALS * RACERS):
            trial, won = results.get(timeout=60)
            taken[trial] = taken.get(trial, 0) + int(won)
    finally:
        for racer in racers:
            racer.join(30)
            if racer.is_alive():
                racer.kill()
    assert [racer.exitcode for racer in racers] == [0] * RACERS
    assert taken == dict.fromkeys(range(TRIALS), 1)


def test_a_second_taker_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    path = tmp_path / "driver.pid"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLocked) as refused:
            acquire(path)
        assert refused.value.pid == holder.pid
        assert live_driver(path) == holder.pid
    finally:
        holder.kill()
        holder.wait(10)


def test_a_killed_holders_lock_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "driver.pid"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    # Its pid is still in the file; the kernel dropped its lock with it.
    assert path.read_text() == str(holder.pid)
    assert live_driver(path) is None
    lock = acquire(path)
    assert path.read_text() == str(os.getpid())
    lock.release()


def test_a_child_outliving_its_driver_does_not_keep_the_lock(tmp_path: Path) -> None:
    # Claude Code runs as the driver's child; killed alone, the driver must not leave
    # the run locked by the turn still running under it.
    path = tmp_path / "driver.pid"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WITH_CHILD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    child = int(holder.stdout.readline())
    try:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        os.kill(child, 0)  # still running
        assert live_driver(path) is None
        acquire(path).release()
    finally:
        os.kill(child, signal.SIGKILL)


def test_a_live_unrelated_pid_in_the_file_is_not_a_driver(tmp_path: Path) -> None:
    # After a reboot the pid a dead driver wrote can belong to any live process; an older
    # claudeloop left such files too.
    path = tmp_path / "driver.pid"
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path.write_text(str(unrelated.pid))
        assert live_driver(path) is None
        lock = acquire(path)
        lock.release()
    finally:
        unrelated.kill()
        unrelated.wait(10)


def test_looking_does_not_keep_a_driver_out(tmp_path: Path) -> None:
    path = tmp_path / "driver.pid"
    lock = acquire(path)
    assert live_driver(path) == os.getpid()
    lock.release()
    assert live_driver(path) is None
    assert path.read_text() == ""
    acquire(path).release()


def test_no_file_is_no_driver(tmp_path: Path) -> None:
    assert live_driver(tmp_path / "driver.pid") is None


_HOLD = """
import sys, time
from pathlib import Path
from claudeloop.adapters.run_directory.lock import acquire
lock = acquire(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(60)
"""

_HOLD_WITH_CHILD = """
import subprocess, sys, time
from pathlib import Path
from claudeloop.adapters.run_directory.lock import acquire
lock = acquire(Path(sys.argv[1]))
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], close_fds=False)
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_link_planted_as_the_lock_file_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses-file"
    target.write_text("keep me")
    lock_path = tmp_path / "driver.pid"
    lock_path.symlink_to(target)
    with pytest.raises(OSError, match=r"symbolic link|Too many levels"):
        acquire(lock_path)
    assert live_driver(lock_path) is None
    assert target.read_text() == "keep me"
