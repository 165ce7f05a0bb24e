"""A long-lived git process that answers a request at a time on its stdin.

A checkpoint of a big repository is a handful of git commands, and each one's start
(about 2 ms here, 4 ms with its first reads) is most of what the small ones cost. Two of
them take their requests one after another from a single process, as git made them
to: `git mktree --batch` (a tree per request, its hash answered) and
`git update-ref --stdin` (a transaction per request: `start`, `update`, `prepare`,
`commit`, each answered `...: ok`). A run keeps one of each (adapters/git_checkpoint/plumbing.py).

A process that fails, ends or says anything but what was asked is ended and the request
answered None; the next request starts another. git ends `update-ref --stdin` itself
when a transaction cannot be made (the branch moved under it, say), so None is also
how a refused update is told.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path


class GitStream:
    """`git -C top ARGS`, started at the first request (see the module's docstring)."""

    def __init__(self, top: Path, *args: str) -> None:
        self._command = ["git", "-C", str(top), *args]
        self._process: subprocess.Popen[bytes] | None = None

    def ask(self, request: bytes, *, lines: int) -> list[bytes] | None:
        """`request` written, and the `lines` lines it is answered with (without their
        newlines); None when the process could not answer them all."""
        process = self._process
        try:
            if process is None or process.poll() is not None:
                process = self._process = subprocess.Popen(
                    self._command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            assert process.stdin is not None  # pipes, as started
            assert process.stdout is not None
            process.stdin.write(request)
            process.stdin.flush()
            answer = [process.stdout.readline() for _ in range(lines)]
        except OSError:
            self.close()
            return None
        if not all(line.endswith(b"\n") for line in answer):
            self.close()  # ended before answering: it said why on its stderr
            return None
        return [line[:-1] for line in answer]

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # its end already gone
                    pipe.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
