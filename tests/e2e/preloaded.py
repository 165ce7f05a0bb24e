"""`claudeloop ARGS` run to its end in a process forked from one that has already
imported claudeloop and the Claude Agent SDK.

Every `claudeloop run` imports the SDK first (a second of CPU, mostly mcp's pydantic
models), and the end-to-end tests start a few hundred of them: on two cores that was two
minutes of the suite. Here a fork server per test process (multiprocessing's, which
imports PRELOAD once) forks each command instead. The forked process is a process of its
own, as `python -m claudeloop` would be: its own pid, environment, working directory,
stdout and stderr, exit code and signals; it runs the same `main(argv)`, then starts the
real Claude Code CLI, which talks to the rehearsal API.

Only commands a test runs to their end come through here. Those it signals, kills or
reads while they run are started with `subprocess.Popen` as before, and so is everything
when E2E_FRESH_PROCESSES=1, to see a failure the fork could hide.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

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


def _claudeloop(argv: list[str], env: dict[str, str], cwd: str, out: str, err: str) -> None:
    """The forked process: the environment, folder and output of `python -m claudeloop`
    started with `env` in `cwd`, then claudeloop's own entry point."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    for name, fd in ((out, 1), (err, 2)):
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
            target=_claudeloop, args=(list(args), dict(env), where, str(out), str(err))
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
