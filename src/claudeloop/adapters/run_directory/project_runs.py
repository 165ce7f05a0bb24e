"""The `ProjectRuns` port on a working directory's `.claudeloop/runs/`."""

from __future__ import annotations

import itertools
from pathlib import Path

from claudeloop.adapters.run_directory.codec import CorruptRecordError
from claudeloop.adapters.run_directory.finding import (
    find_run,
    load_record,
    watched_run,
    write_missing_summary,
)
from claudeloop.adapters.run_directory.layout import list_runs
from claudeloop.adapters.run_directory.lock import live_driver
from claudeloop.application.errors import UsageError
from claudeloop.application.ports import ClaudeSession
from claudeloop.application.records import RunRecord
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import Steer


class ProjectRunDirectories:
    """The runs of `cwd`, each a directory under its `.claudeloop/runs/`."""

    def __init__(self, cwd: Path) -> None:
        self.where = cwd

    def run_ids(self) -> list[str]:
        return [directory.run_id for directory in list_runs(self.where)]

    def watched(self, run_id: str | None) -> str:
        return watched_run(self.where, run_id).run_id

    def record(self, run_id: str) -> RunRecord:
        return load_record(find_run(self.where, run_id, None))

    def driver(self, run_id: str) -> int | None:
        return live_driver(find_run(self.where, run_id, None).lock_path)

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

    def claude_sessions(self, limit: int) -> list[ClaudeSession]:
        # The SDK is imported only here: `status` and `runs` stay fast.
        from claudeloop.adapters.claude_sessions import list_claude_sessions

        return list_claude_sessions(self.where, limit)
