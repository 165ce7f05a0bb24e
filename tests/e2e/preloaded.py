"""`claudeloop ARGS` run to its end in a process forked from one that has already
imported claudeloop and the Claude Agent SDK.

Every `claudeloop run` imports the SDK first (a second of CPU, mostly mcp's pydantic
models), and the end-to-end tests start a few hundred of them: on two cores that was two
minutes of the suite. Here a fork server per test process (multiprocessing's, which
imports PRELOAD once) forks each command instead. The forked process is a process of its
own, as `python -m claudeloop` would be: its own pid, environment, working directory,
stdout and stderr, exit code and signals; it runs the same `main(argv)`, then starts the
real Claude Code CLI, which talks to the rehearsal API.

Commands a test runs to their end come through `run_claudeloop`; those it signals or
kills while they run through `start_claudeloop`, which answers what the tests use of a
`subprocess.Popen` (the pid of a process group of its own, signals, waiting, the exit
code, the output once it ended). Everything is started with `subprocess` as before when
E2E_FRESH_PROCESSES=1, to see a failure the fork could hide.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Protocol

# What a `claudeloop run` imports before its first turn: imported once, in the server.
PRELOAD = [
    "claude_agent_sdk",
    "claudeloop.cli.main",
    "claudeloop.cli.run_commands",
    "claudeloop.cli.inspect_commands",
    "claudeloop.cli.steer_commands",
    "claudeloop.cli.setup_commands",
    "claudeloop.cli.branch_commands",
    "claudeloop.cli.inspect",
    "claudeloop.cli.bootstrap",
    "claudeloop.cli.bootstrap.runs",
    "claudeloop.adapters.claude_code.sdk_gateway",
    "tests.e2e.preloaded",
]

FRESH = os.environ.get("E2E_FRESH_PROCESSES") == "1"

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


def _claudeloop(
    argv: list[str], env: dict[str, str], cwd: str, output: tuple[str, str], session: bool = False
) -> None:
    """The forked process: the environment, folder and output of `python -m claudeloop`
    started with `env` in `cwd` (`session`: in a process group of its own, as
    `start_new_session=True` starts it), then claudeloop's own entry point."""
    if session:
        os.setsid()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    for name, fd in zip(output, (1, 2), strict=True):
        target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    from claudeloop.cli.main import main

    main(argv)


def run_claudeloop(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """`python -m claudeloop ARGS` with `env`, to its end, its output captured as text:
    what `subprocess.run(..., capture_output=True, text=True)` answers."""
    command = [sys.executable, "-m", "claudeloop", *args]
    where = str(cwd or Path.cwd())
    if FRESH:
        return subprocess.run(
            command,
            env=dict(env),
            cwd=where,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    with tempfile.TemporaryDirectory(prefix="claudeloop-output-") as folder:
        out, err = Path(folder, "stdout"), Path(folder, "stderr")
        process = _context.Process(
            target=_claudeloop, args=(list(args), dict(env), where, (str(out), str(err)))
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(command, timeout, _read(out), _read(err))
        return subprocess.CompletedProcess(command, process.exitcode, _read(out), _read(err))


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


class Running(Protocol):
    """What the tests use of a `claudeloop` started in the background: a
    `subprocess.Popen[str]`, or the fork server's `Started`."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def kill(self) -> None: ...

    def terminate(self) -> None: ...

    def communicate(self, input: None = None, timeout: float | None = None) -> tuple[str, str]: ...


class Started:
    """A `claudeloop` forked in the background, in a process group of its own; its
    output kept in files until it has ended."""

    def __init__(self, command: list[str], process: BaseProcess, folder: Path) -> None:
        self.args = command
        self._process = process
        self._folder = folder
        weakref.finalize(self, shutil.rmtree, folder, True)

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        # As Popen's: the exit code, or minus the signal that ended it.
        return self._process.exitcode

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def communicate(self, input: None = None, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return _read(self._folder / "stdout"), _read(self._folder / "stderr")


def start_claudeloop(args: Sequence[str], env: Mapping[str, str], *, cwd: Path) -> Running:
    """`python -m claudeloop ARGS` with `env` in `cwd`, in the background and in a process
    group of its own (so a test can kill it and its Claude Code child at once)."""
    command = [sys.executable, "-m", "claudeloop", *args]
    if FRESH:
        return subprocess.Popen(
            command,
            env=dict(env),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    folder = Path(tempfile.mkdtemp(prefix="claudeloop-output-"))
    out, err = folder / "stdout", folder / "stderr"
    process = _context.Process(
        target=_claudeloop, args=(list(args), dict(env), str(cwd), (str(out), str(err)), True)
    )
    process.start()
    return Started(command, process, folder)
