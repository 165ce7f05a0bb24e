"""Servers the whole test run shares: started once by whichever process asks first (an
xdist worker, or pytest alone), found by every other, stopped when the run ends.

A PostgreSQL cluster or a LiteLLM proxy costs seconds of CPU to start (LiteLLM's import
alone takes half a minute on two busy cores); started once per worker, the suite paid
for three of each. The first process to ask starts the service, under a lock, and
writes what it is (its address) and how to stop it into the run's base temporary
directory, which every worker of the run shares; the others read it. The controller
(or pytest alone) stops every service so written once the run ends
(`stop_shared_services`, called from tests/conftest.py's `pytest_sessionfinish`).

A service's processes live in process groups of their own, so a stop ends their
children too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

_FOLDER = "shared-services"


@dataclass(frozen=True)
class Started:
    """What a service is (`facts`, JSON values) and how it is stopped: commands to run,
    then process groups to end."""

    facts: Mapping[str, Any]
    stop_commands: tuple[tuple[str, ...], ...] = ()
    process_groups: tuple[int, ...] = field(default=())


def _root(factory: pytest.TempPathFactory) -> Path:
    """The folder every process of this run shares: an xdist worker's base temporary
    directory is a folder of the controller's."""
    base = factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / _FOLDER
    folder.mkdir(exist_ok=True)
    return folder


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shared_service(
    name: str, factory: pytest.TempPathFactory, start: Callable[[Path], Started]
) -> Mapping[str, Any]:
    """The facts of the service `name`, started by `start` (given a folder of its own)
    when no process of this run has started it yet. A start that failed is not tried
    again by every worker: its error is kept and raised in each."""
    root = _root(factory)
    record = root / f"{name}.json"
    with _locked(root / f"{name}.lock"):
        if not record.exists():
            folder = root / name
            folder.mkdir(exist_ok=True)
            try:
                started = start(folder)
            except BaseException as error:
                record.write_text(json.dumps({"failed": f"{type(error).__name__}: {error}"}))
                raise
            record.write_text(
                json.dumps(
                    {
                        "facts": dict(started.facts),
                        "stop_commands": [list(c) for c in started.stop_commands],
                        "process_groups": list(started.process_groups),
                    }
                )
            )
    kept = json.loads(record.read_text())
    if "failed" in kept:
        pytest.fail(f"the shared {name} did not start in another process: {kept['failed']}")
    facts: Mapping[str, Any] = kept["facts"]
    return facts


def stop_shared_services(config: pytest.Config) -> None:
    """Stops every service a process of this run started; in the controller, or in
    pytest alone (an xdist worker leaves them to the controller: another worker may
    still use them)."""
    if hasattr(config, "workerinput"):
        return
    factory: pytest.TempPathFactory | None = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return
    try:
        root = factory.getbasetemp() / _FOLDER
    except OSError:
        return
    for record in sorted(root.glob("*.json")) if root.is_dir() else ():
        kept = json.loads(record.read_text())
        for command in kept.get("stop_commands", ()):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(command, capture_output=True, timeout=60, check=False)
        for group in kept.get("process_groups", ()):
            end_process_group(group)
        record.unlink()


def end_process_group(group: int, patience: float = 20) -> None:
    """SIGTERM to the group, then SIGKILL to what is left once `patience` is over."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        if not _running_in(group):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def _running_in(group: int) -> bool:
    """Whether a process of `group` still runs: one that ended and that nobody reaped
    (its parent, a worker, is gone) is no longer running."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group and fields[0] != "Z":
                return True
    return False
