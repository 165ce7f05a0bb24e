"""A fleet-driven run obeys its worker's lease: past it, it saves nothing, stops its
children and ends with the fenced exit code; without a worker, nothing changes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from claudeloop.adapters.fleet.lease_file import (
    FENCED_EXIT,
    fenced_by_lease,
    lease_holds,
    write_lease,
)
from claudeloop.application.fleet_seat import LEASE_VARIABLE, NO_SEAT


def test_a_lease_holds_until_its_instant_and_a_missing_one_does_not(tmp_path: Path) -> None:
    lease = tmp_path / "w1.lease"
    assert not lease_holds(lease)
    write_lease(lease, 1000.0)
    assert lease_holds(lease, now=999.0)
    assert not lease_holds(lease, now=1000.0)


def test_a_run_no_worker_drives_keeps_its_own_store_and_watches_no_lease() -> None:
    store = object()
    assert fenced_by_lease(store, NO_SEAT) is store  # type: ignore[arg-type]
    assert "fleet-lease" not in {thread.name for thread in threading.enumerate()}


def _child(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        from pathlib import Path
        from claudeloop.adapters.fleet.lease_file import fenced_by_lease
        from claudeloop.application.fleet_seat import take_fleet_seat
        seat = take_fleet_seat(os.environ)
        saved = Path({str(tmp_path / "saved")!r})
        class Store:
            def save(self, record):
                with saved.open("a") as file:
                    file.write("saved\\n")
        """
    ) + textwrap.dedent(body)
    env = {LEASE_VARIABLE: str(tmp_path / "w1.lease"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_past_its_lease_a_run_saves_nothing_and_ends_fenced(tmp_path: Path) -> None:
    write_lease(tmp_path / "w1.lease", time.time() - 1)
    ended = _child(tmp_path, "fenced_by_lease(Store(), seat).save(None)\n")
    assert ended.returncode == FENCED_EXIT, ended.stderr
    assert "lease on this run is over" in ended.stderr
    assert not (tmp_path / "saved").exists()


def test_a_lease_running_out_mid_turn_stops_the_cli_and_the_run(tmp_path: Path) -> None:
    write_lease(tmp_path / "w1.lease", time.time() + 60)
    ended = _child(
        tmp_path,
        """
        store = fenced_by_lease(Store(), seat)
        store.save(None)  # the lease holds: saved
        cli = subprocess.Popen(["sleep", "300"])
        Path(str(saved) + ".pid").write_text(str(cli.pid))
        seat.lease.write_text("0\\n")  # not renewed
        cli.wait()
        store.save(None)  # the runner, seeing its CLI end, saves: refused
        sys.exit(0)
        """,
    )
    assert ended.returncode == FENCED_EXIT, ended.stderr
    assert (tmp_path / "saved").read_text() == "saved\n"  # the save before, only
    cli = int((tmp_path / "saved.pid").read_text())
    # SIGKILL is sent before the run ends; the kernel may take a moment to end the CLI.
    deadline = time.monotonic() + 10
    while _process_state(cli) not in ("gone", "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _process_state(cli) in ("gone", "Z")


def _process_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
