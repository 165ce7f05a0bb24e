"""A worker's runs forked from a process that has imported them already.

Each run a worker drives is `python -m claudeloop run|resume ...`, and a fresh
interpreter spends about a second of CPU importing claudeloop and the Claude Agent SDK
before its first request (most of it the SDK's pydantic models), far longer on a busy
machine. The worker starts one fork server instead, a child process that imports them
once (`PRELOAD`), and asks it for each run: the server forks, and the forked process
becomes the run (`python -m MODULE ARGS`, with the run's environment, folder and seat),
its exit code sent back to the worker when the server reaps it.

What it keeps safe:
- The server is started with the environment the runs get (`children.child_environment`:
  the worker's without the engine's URL), never the worker's own: a forked process keeps
  its parent's initial environment block (/proc/PID/environ), which must not hold the
  engine's password where a run's tools could read it.
- The worker reaches the server through a socket pair the server inherits: no path, no
  port, nobody else can connect. Each forked run closes its end as it starts, before it
  runs anything of its own.
- The server ignores SIGINT and SIGTERM (a stop sent to the worker's whole process group
  reaches it too): it ends when the worker's end of the pair closes.
- Anything the server cannot do (a request too large for one message, the server gone)
  is said by `start` returning None: the worker starts that run as a fresh process.

The server's loop is `serve`, run by `python -m claudeloop.adapters.fleet.forks`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import queue
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

# What a run imports before its first request; imported once, by the server.
PRELOAD = (
    "claude_agent_sdk",
    "claudeloop.cli.main",
    "claudeloop.cli.run_commands",
    "claudeloop.cli.bootstrap.runs",
    "claudeloop.adapters.claude_code.sdk_gateway",
)
# One message each way (SOCK_SEQPACKET keeps them whole): a run's arguments and
# environment fit with room to spare; a larger request starts its run fresh.
_LARGEST = 256 * 1024
_MOST_FDS = 8


class Child(Protocol):
    """What the worker uses of a run's process: a `subprocess.Popen`, or a `Forked`."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...


class Forked:
    """A run the server forked: what the worker uses of a `subprocess.Popen`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(["claudeloop"], timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:  # once reaped, its pid may be another process's
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def ended(self, code: int) -> None:
        self.returncode = code
        self._ended.set()


class ForkServer:
    """The worker's end: starts the server, asks it for runs, hears how they ended."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        """The server, started with `environ` (the environment its runs get) when the
        first run is asked for: a worker that is handed none never pays its imports."""
        self._environ = dict(environ)
        self._lock = threading.Lock()  # one request at a time, answered in order
        self._answers: queue.Queue[Forked | int | None] = queue.Queue()  # int: errno
        self._runs: dict[int, Forked] = {}
        self._gone = False
        self._server: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None

    @property
    def pid(self) -> int | None:
        """The server's process, once started."""
        return self._server.pid if self._server is not None else None

    def _started(self) -> socket.socket:
        if self._socket is None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            with theirs:
                self._server = subprocess.Popen(
                    [sys.executable, "-m", __name__, str(theirs.fileno())],
                    env=self._environ,
                    stdin=subprocess.DEVNULL,
                    pass_fds=(theirs.fileno(),),
                )
            self._socket = ours
            threading.Thread(target=self._listen, args=(ours,), name="forks", daemon=True).start()
        return self._socket

    def start(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        told: Mapping[str, int] | None = None,
    ) -> Forked | None:
        """`command` (`python -m MODULE ARGS`) forked with `env` in `cwd`; `told`: the
        descriptors it gets, each under the environment variable that tells its number.
        None: the server cannot start it (the worker starts it afresh). OSError: the
        folder is not there, as `subprocess.Popen` would say it."""
        if len(command) < 3 or command[1] != "-m":
            return None
        names = list(told or {})
        fds = [told[name] for name in names] if told else []
        request = json.dumps(
            {"module": command[2], "args": list(command[3:]), "env": dict(env),
             "cwd": str(cwd), "told": names}
        ).encode()  # fmt: skip
        if len(request) > _LARGEST or len(fds) > _MOST_FDS:
            return None
        with self._lock:
            if self._gone:
                return None
            try:
                socket.send_fds(self._started(), [request], fds)
            except OSError:
                return None
            answer = self._answers.get()
        if isinstance(answer, int):
            raise OSError(answer, os.strerror(answer), str(cwd))
        return answer

    def close(self) -> None:
        """The server ends (the runs it forked go on); it is waited for. Not under the
        lock: a run being started as the worker stops is answered None by the end."""
        self._gone = True
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.shutdown(socket.SHUT_RDWR)
        if self._server is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._server.wait(timeout=5)

    def _listen(self, server: socket.socket) -> None:
        while True:
            try:
                message = server.recv(_LARGEST)
            except OSError:
                message = b""
            if not message:
                return self._lost()
            said = json.loads(message)
            if "started" in said:
                forked = Forked(int(said["started"]))
                self._runs[forked.pid] = forked
                self._answers.put(forked)
            elif "refused" in said:
                self._answers.put(int(said["refused"]))
            elif "ended" in said:
                ended = self._runs.pop(int(said["ended"]), None)
                if ended is not None:
                    ended.ended(int(said["code"]))

    def _lost(self) -> None:
        """The server is gone: no run starts through it, and those it forked are
        watched by their pids (their exit codes are lost with it)."""
        self._gone = True
        self._answers.put(None)
        for forked in list(self._runs.values()):
            threading.Thread(target=_watch_orphan, args=(forked,), daemon=True).start()


def _watch_orphan(forked: Forked) -> None:
    while True:
        try:
            os.kill(forked.pid, 0)
        except ProcessLookupError:
            forked.ended(1)
            return
        threading.Event().wait(0.5)


# The server


def serve(control_fd: int) -> None:
    """Import what runs need, then fork a run for each request until the worker's end
    of the pair closes; tell the worker each run's pid and, once reaped, exit code."""
    for name in PRELOAD:
        importlib.import_module(name)
    control = socket.socket(fileno=control_fd)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda _number, _frame: None)
    watching = selectors.DefaultSelector()
    watching.register(control, selectors.EVENT_READ)
    watching.register(wake_read, selectors.EVENT_READ)
    closed = (control_fd, wake_read, wake_write, watching.fileno())  # in each run
    with contextlib.suppress(OSError):  # the worker's end closed: the server ends
        _serve(control, watching, wake_read, closed)


def _serve(
    control: socket.socket,
    watching: selectors.BaseSelector,
    wake_read: int,
    closed: tuple[int, ...],
) -> None:
    running = 0
    while True:
        for key, _ in watching.select():
            if key.fileobj is control:
                message, fds, _, _ = socket.recv_fds(control, _LARGEST, _MOST_FDS)
                if not message:
                    return
                for fd in fds:
                    os.set_inheritable(fd, False)  # the run's, not its own processes'
                answer = _fork(json.loads(message), fds, keep_closed=closed)
                running += "started" in answer
                control.send(json.dumps(answer).encode())
            else:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 512)
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            running -= 1
            code = os.waitstatus_to_exitcode(status)
            control.send(json.dumps({"ended": pid, "code": code}).encode())


def _fork(request: dict[str, Any], fds: list[int], keep_closed: tuple[int, ...]) -> dict[str, Any]:
    """Forks the run `request` asks for; the server's copies of `fds` closed."""
    try:
        os.stat(request["cwd"])
    except OSError as error:  # its folder is gone, or not on this machine
        for fd in fds:
            os.close(fd)
        return {"refused": error.errno}
    pid = os.fork()
    if pid == 0:
        _become_the_run(request, fds, keep_closed)
    for fd in fds:
        os.close(fd)
    return {"started": pid}


def _become_the_run(request: dict[str, Any], fds: list[int], keep_closed: tuple[int, ...]) -> None:
    """In the forked process: `python -m MODULE ARGS` as the request says; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for fd in keep_closed:
            os.close(fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(request["env"])
        for name, fd in zip(request["told"], fds, strict=True):
            os.environ[name] = str(fd)
        os.chdir(request["cwd"])
        sys.argv = [request["module"], *request["args"]]
        code = 0
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
