"""One run's directory on disk, and the runs of a working directory.

events.jsonl is append-only; state.json is replaced atomically (temp file, fsync,
rename) so a crash at any moment leaves either the old state or the new, never half.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.adapters.private_file import make_private_directory, open_for_appending
from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory.codec import (
    CorruptRecordError,
    record_from_json,
    record_to_json,
)
from claudeloop.adapters.run_directory.control import (
    add_command,
    add_request,
    let_go,
    read_control,
)
from claudeloop.adapters.run_directory.live import LOCK_FILE
from claudeloop.adapters.run_directory.live import runs_root as _runs_root
from claudeloop.adapters.run_directory.redacted import redacted_record
from claudeloop.application.events import Event, event_fields
from claudeloop.application.ports import Clock, Request
from claudeloop.application.records import RunRecord
from claudeloop.application.summary import summary_markdown
from claudeloop.domain.loop import ControlCommand, Interrupt
from claudeloop.domain.steering import Steer

# Where a working directory's runs are (said once, in live.py, which reads no record).
runs_root = _runs_root

# Long text (a summary, a model's answer) is capped in events: the log is for reading.
MAX_FIELD_CHARS = 2000
# How often a check in flight looks for a stop in the control file.
STOP_POLL_SECONDS = 0.5


# What `.claudeloop/.gitignore` says: everything in the folder, itself too, is kept out
# of git, as other tools keep their folders (.pytest_cache, .ruff_cache); a run's logs
# are never one `git add .` from a commit, and the user's own .gitignore is not touched.
IGNORE_EVERYTHING = "# Written by claudeloop: its runs are no part of the project.\n*\n"


def keep_out_of_git(cwd: Path) -> None:
    """`.claudeloop/.gitignore` ignoring the folder's every file, written when there is
    none (a new folder, or one an older claudeloop made); one already there, the user's
    edit perhaps, is left as it is. Best effort: a folder it cannot be written in still
    holds runs."""
    path = cwd / ".claudeloop" / ".gitignore"
    with contextlib.suppress(OSError):
        # Owner-only, as every file of the folder is; O_EXCL never follows a link.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(IGNORE_EVERYTHING)


def new_run_id(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()


# One directory name under runs/ that a shell command can carry unquoted (the command
# to continue a run names it): no separator, no `.` or `..`, no blank, no newline.
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_RUN_ID_CHARS = 100
RUN_ID_RULE = (
    f"letters, digits, '.', '_' and '-', starting with a letter or digit, "
    f"at most {MAX_RUN_ID_CHARS} characters"
)


def run_id_problem(run_id: str) -> str | None:
    """What is wrong with `run_id` as the name of a run's directory; None if nothing."""
    if len(run_id) > MAX_RUN_ID_CHARS:
        return f"is {len(run_id)} characters long; a run id is {RUN_ID_RULE}"
    if _RUN_ID.fullmatch(run_id) is None:
        return f"is not a run id; a run id is {RUN_ID_RULE}"
    return None


class UnreadableEventLine(UserWarning):
    """A line of events.jsonl that is not JSON (a crash mid-write)."""


@dataclass
class HeardSignal:
    """The signal this process's driver received (None: none yet): one note shared by
    every copy of a run's directory the process holds."""

    interrupt: Interrupt | None = None


@dataclass(frozen=True)
class RunDirectory:
    path: Path
    # What state.json masks of the model's words (the driver gives the run's own).
    redactor: Redactor = field(default_factory=Redactor, compare=False, repr=False)
    # What this process heard: in memory, not in the control file, which other
    # processes write (a `claudeloop stop` is a stop at a safe point, no signal).
    heard: HeardSignal = field(default_factory=HeardSignal, compare=False, repr=False)

    @classmethod
    def create(cls, cwd: Path, run_id: str) -> RunDirectory:
        problem = run_id_problem(run_id)
        if problem is not None:
            raise ValueError(f"run id {run_id!r} {problem}")
        root = runs_root(cwd)
        make_private_directory(root)
        with contextlib.suppress(OSError):
            (cwd / ".claudeloop").chmod(0o700)
        keep_out_of_git(cwd)
        path = root / run_id
        path.mkdir(mode=0o700)
        return cls(path)

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def events_path(self) -> Path:
        return self.path / "events.jsonl"

    @property
    def state_path(self) -> Path:
        return self.path / "state.json"

    @property
    def control_path(self) -> Path:
        return self.path / "control"

    @property
    def lock_path(self) -> Path:
        return self.path / LOCK_FILE

    @property
    def summary_path(self) -> Path:
        return self.path / "summary.md"

    @property
    def debug_log_path(self) -> Path:
        return self.path / "debug.log"

    @property
    def responses_log_path(self) -> Path:
        """The usage of each answer as it streamed in (adapters/claude_code/responses.py)."""
        return self.path / "responses.jsonl"

    # state.json

    def save(self, record: RunRecord) -> None:
        """state.json replaced by `record`, the model's words in it redacted."""
        masked = redacted_record(record, self.redactor)
        data = json.dumps(record_to_json(masked), indent=2, sort_keys=True)
        write_atomically(self.state_path, data)

    def load(self) -> RunRecord:
        """The persisted record; CorruptRecordError or FileNotFoundError when there is none."""
        try:
            text = self.state_path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise CorruptRecordError(f"not UTF-8 text ({error.reason})") from error
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise CorruptRecordError(f"not JSON ({error.msg} at line {error.lineno})") from error
        if not isinstance(data, dict):
            raise CorruptRecordError("not a JSON object")
        return record_from_json(data)

    # summary.md

    def write_summary(self, record: RunRecord) -> None:
        """summary.md of `record`, masked. Replaced, not written through: a link planted
        as summary.md is replaced, never followed, and the new file is owner-only."""
        write_atomically(self.summary_path, self.redactor.text(summary_markdown(record)))

    # control inbox

    def send(self, command: ControlCommand | Steer) -> None:
        """A stop or wind-down, or a request numbered after the last one the file or
        the record knows, into the control file (adapters/run_directory/control.py)."""
        if isinstance(command, ControlCommand):
            add_command(self.control_path, command)
            return
        try:
            after = self.load().steered
        except (OSError, CorruptRecordError):
            after = 0
        add_request(self.control_path, command, after=after)

    def interrupt(self, interrupt: Interrupt) -> None:
        """A signal this process's driver received: a stop, in the control file as any
        stop is, and the signal it came by, which cuts off a turn in flight at once
        and is the run's exit code. The first one counts."""
        if self.heard.interrupt is None:
            self.heard.interrupt = interrupt
        add_command(self.control_path, ControlCommand.STOP)

    def interrupted(self) -> Interrupt | None:
        return self.heard.interrupt

    def pending(self) -> ControlCommand | None:
        return read_control(self.control_path).command

    def requests(self) -> tuple[Request, ...]:
        return read_control(self.control_path).requests

    def consumed(self, through: int) -> None:
        with contextlib.suppress(OSError):  # applied and saved: the record knows
            let_go(self.control_path, through)

    async def stop_asked(self) -> None:
        import anyio  # only a driver waits on it: `status` and `stop` stay fast

        while self.pending() is not ControlCommand.STOP:
            await anyio.sleep(STOP_POLL_SECONDS)

    def clear_control(self) -> None:
        self.control_path.unlink(missing_ok=True)
        self.control_path.with_name(f".{self.control_path.name}.lock").unlink(missing_ok=True)

    # events.jsonl

    def read_events(self) -> Iterator[dict[str, Any]]:
        """Every event, skipping (with a warning) a line a crash left half-written."""
        import warnings

        try:
            handle = self.events_path.open(encoding="utf-8")
        except FileNotFoundError:
            return
        with handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    warnings.warn(
                        f"{self.events_path}:{number}: skipped an unreadable event line",
                        UnreadableEventLine,
                        stacklevel=2,
                    )
                    continue
                if isinstance(event, dict):
                    yield event


class EventLog:
    """Appends events to events.jsonl as they happen, redacted and capped."""

    def __init__(self, directory: RunDirectory, clock: Clock, redactor: Redactor) -> None:
        self._directory = directory
        self._clock = clock
        self._redactor = redactor
        # Owner-only, and OSError rather than writing through a planted symbolic link.
        self._handle = open_for_appending(directory.events_path)
        if _ends_mid_line(directory.events_path):
            # A kill mid-write left half a line: end it, or the next event joins it and
            # both are lost to every reader.
            self._handle.write("\n")
            self._handle.flush()

    def emit(self, event: Event) -> None:
        # Masked before it is capped: a cap that fell inside a secret would leave its
        # beginning, which no mask knows for one.
        masked = self._redactor.data(event_fields(event))
        line_fields = {
            **{key: _capped(value) for key, value in masked.items()},
            "ts": self._clock.now().isoformat(),
            "run_id": self._directory.run_id,
            "type": event.type,
        }
        line = json.dumps(line_fields, ensure_ascii=False)
        self._handle.write(line + "\n")
        self._handle.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):  # a full disk: what could not be written is lost
            self._handle.close()


def _ends_mid_line(path: Path) -> bool:
    with path.open("rb") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return False
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"


def _capped(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
        return value[:MAX_FIELD_CHARS] + f"... [{len(value) - MAX_FIELD_CHARS} more chars]"
    if isinstance(value, list):
        return [_capped(item) for item in value]
    return value


def list_runs(cwd: Path) -> list[RunDirectory]:
    """Runs of `cwd`, newest first (run ids start with their UTC start time)."""
    root = runs_root(cwd)
    if not root.is_dir():
        return []
    return [
        RunDirectory(path)
        for path in sorted(root.iterdir(), key=lambda p: p.name, reverse=True)
        if path.is_dir()
    ]
