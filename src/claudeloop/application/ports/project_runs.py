"""A project's runs, as the commands that watch and steer them use them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from claudeloop.application.records import RunRecord
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import Steer


class ProjectRuns(Protocol):
    """The run directories of one working directory, as `status`, `runs`, `logs`,
    `stop` and `wind-down` see them: each run by its id, newest first."""

    @property
    def where(self) -> Path:
        """The working directory whose runs these are."""
        ...

    def run_ids(self) -> list[str]:
        """Every run of the directory, newest first."""
        ...

    def watched(self, run_id: str | None) -> str:
        """The run a command means: `run_id`; without one, the run a live driver drives
        (the newest, if several are), else the newest; UsageError when there is none."""
        ...

    def record(self, run_id: str) -> RunRecord:
        """The run's record; UsageError, naming the file, when it cannot be read."""
        ...

    def driver(self, run_id: str) -> int | None:
        """The pid of the live process driving the run, None when none is."""
        ...

    def finish_summary(self, run_id: str, record: RunRecord) -> None:
        """summary.md of a run that ended without one (killed after its last save);
        nothing when its driver is about to write it or it cannot be written."""
        ...

    def control_file(self, run_id: str) -> Path:
        """Where the run's driver reads what it is asked."""
        ...

    def send(self, run_id: str, command: ControlCommand | Steer) -> None:
        """The command, or the request (numbered after the last one the file or the
        record knows), into the run's control file; OSError when it cannot be written."""
        ...

    def events_file(self, run_id: str) -> Path:
        """Where the run's events are (events.jsonl), as a warning names it."""
        ...

    def event_lines(self, run_id: str, offset: int) -> tuple[list[bytes], int]:
        """The whole lines of the run's events from byte `offset`, and the offset after
        the last of them (a line being written is left for later); none before the
        file exists; UsageError, naming it, when it cannot be read."""
        ...

    def ended(self, run_id: str) -> bool:
        """The run's record says it ended (False while it cannot be read)."""
        ...

    def event_tail(self, run_id: str, count: int) -> tuple[list[bytes], int]:
        """The last `count` whole lines of the run's events and the offset after them,
        read from the file's end: as cheap after 100,000 events as after ten."""
        ...

    def claude_sessions(self, limit: int) -> list[ClaudeSession]:
        """Claude Code's own sessions of the working directory, the newest `limit`."""
        ...


@dataclass(frozen=True, slots=True)
class ClaudeSession:
    """A session of Claude Code's own, as `claudeloop sessions` lists it."""

    session_id: str
    summary: str
    last_modified: datetime

    def to_json(self) -> dict[str, str]:
        return {
            "session_id": self.session_id,
            "summary": self.summary,
            "last_modified": self.last_modified.isoformat(),
        }
