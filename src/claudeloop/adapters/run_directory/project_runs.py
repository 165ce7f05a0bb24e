"""The `ProjectRuns` port on a working directory's `.claudeloop/runs/`."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from claudeloop.adapters.run_directory.codec import CorruptRecordError
from claudeloop.adapters.run_directory.finding import (
    find_run,
    load_record,
    watched_run,
    write_missing_summary,
)
from claudeloop.adapters.run_directory.layout import RunDirectory, list_runs
from claudeloop.adapters.run_directory.lock import live_driver
from claudeloop.application.errors import UsageError
from claudeloop.application.ports import ClaudeSession
from claudeloop.application.records import RunRecord
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import Steer

# How much of events.jsonl `event_tail` reads back from its end at a time.
_TAIL_BLOCK = 64 * 1024


class ProjectRunDirectories:
    """The runs of `cwd`, each a directory under its `.claudeloop/runs/`."""

    def __init__(self, cwd: Path) -> None:
        self.where = cwd
        # Each run's record as last decoded, by what its state.json was then (replaced
        # atomically, so a new save is a new inode): a page that lists a thousand runs
        # decodes only those saved since it last looked.
        self._records: dict[str, tuple[tuple[int, int, int], RunRecord]] = {}
        self._found: dict[str, RunDirectory] = {}

    def _run(self, run_id: str) -> RunDirectory:
        """The run's directory, found once (a run removed since fails its next read)."""
        found = self._found.get(run_id)
        if found is None:
            found = self._found[run_id] = find_run(self.where, run_id, None)
        return found

    def run_ids(self) -> list[str]:
        return [directory.run_id for directory in list_runs(self.where)]

    def watched(self, run_id: str | None) -> str:
        return watched_run(self.where, run_id).run_id

    def record(self, run_id: str) -> RunRecord:
        directory = self._run(run_id)
        try:
            seen = directory.state_path.stat()
        except OSError:
            return load_record(directory)  # it says what is wrong with the file
        version = (seen.st_ino, seen.st_mtime_ns, seen.st_size)
        cached = self._records.get(run_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        record = load_record(directory)
        self._records[run_id] = (version, record)
        return record

    def driver(self, run_id: str) -> int | None:
        return live_driver(self._run(run_id).lock_path)

    def finish_summary(self, run_id: str, record: RunRecord) -> None:
        write_missing_summary(find_run(self.where, run_id, None), record)

    def control_file(self, run_id: str) -> Path:
        return find_run(self.where, run_id, None).control_path

    def send(self, run_id: str, command: ControlCommand | Steer) -> None:
        find_run(self.where, run_id, None).send(command)

    def events_file(self, run_id: str) -> Path:
        return find_run(self.where, run_id, None).events_path

    def event_lines(self, run_id: str, offset: int) -> tuple[list[bytes], int]:
        path = self.events_file(run_id)
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return [], offset
        except OSError as error:
            raise UsageError(f"{path}: cannot be read ({error.strerror})") from None
        with handle:
            handle.seek(offset)
            whole = list(itertools.takewhile(lambda raw: raw.endswith(b"\n"), handle))
        return whole, offset + sum(len(raw) for raw in whole)

    def ended(self, run_id: str) -> bool:
        try:
            return find_run(self.where, run_id, None).load().state.phase.terminal
        except (OSError, CorruptRecordError):
            return False

    def event_tail(self, run_id: str, count: int) -> tuple[list[bytes], int]:
        path = self.events_file(run_id)
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return [], 0
        except OSError as error:
            raise UsageError(f"{path}: cannot be read ({error.strerror})") from None
        with handle:
            end = handle.seek(0, os.SEEK_END)
            # Back from the end a block at a time until `count` whole lines are in hand.
            start, chunk = end, b""
            while start > 0 and chunk.count(b"\n") <= count:
                start = max(0, start - _TAIL_BLOCK)
                handle.seek(start)
                chunk = handle.read(end - start)
        whole = chunk[: chunk.rfind(b"\n") + 1]
        lines = whole.splitlines(keepends=True)
        if start > 0:
            lines = lines[1:]  # the first may be the end of a line cut in half
        return (lines[-count:] if count else []), start + len(whole)

    def claude_sessions(self, limit: int) -> list[ClaudeSession]:
        # The SDK is imported only here: `status` and `runs` stay fast.
        from claudeloop.adapters.claude_sessions import list_claude_sessions

        return list_claude_sessions(self.where, limit)
