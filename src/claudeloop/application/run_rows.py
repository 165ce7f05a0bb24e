"""A run's row in every listing of runs (`runs`, `runs --all`, the dashboard's front
page), as a typed answer: where the run is, and where it stands now (the read model's
facts, application.run_facts), or why that cannot be said (its directory gone, its
record unreadable). One shape, whichever listing it is in."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from claudeloop.application.json_form import Json, JsonObject
from claudeloop.application.run_facts import RunFacts
from claudeloop.application.run_status import RunStatus

# What a row's JSON says of a run that stands somewhere: the read model's facts, as
# every view says them, and where it stands now.
ROW_FIELDS = (
    "run_id",
    "title",
    "started_at",
    "ended_at",
    "duration_seconds",
    "sent",
    "answered",
    "refused",
    "probes",
    "dollars",
    "turn_dollars",
    "probe_dollars",
    "estimated_dollars",
    "waited_seconds",
    "left",
    "left_from",
    "said",
    "phase",
    "outcome",
    "reason",
    "capacity",
    "next_probe_at",
    "next_probe_in_seconds",
    "plan",
    "session_id",
    "driver_alive",
    "overage_in_use",
    "sandbox",
    "blocked",
)


@dataclass(frozen=True, slots=True)
class RunPlace:
    """Where a run is: its working directory, and where the machine's index puts it
    (None for a row of `runs`, which reads one directory and no index)."""

    cwd: str
    key: str | None = None
    directory: str | None = None
    host: str | None = None
    account: str | None = None
    registered_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RunRow:
    """A run in a listing. `status`: where it stands (None: `phase` says why not, gone
    or unreadable, and `problem` what went wrong). `place` None: a row of `runs` whose
    record cannot be read, which knows its id alone."""

    run_id: str
    place: RunPlace | None
    status: RunStatus | None
    phase: str
    problem: str | None = None

    @property
    def facts(self) -> RunFacts | None:
        return self.status.facts if self.status is not None else None

    @property
    def outcome(self) -> str | None:
        return self.status.facts.outcome if self.status is not None else None

    @property
    def driver_alive(self) -> bool:
        return self.status is not None and self.status.driver_alive

    @property
    def started_at(self) -> datetime | None:
        """When the run started, else when the index registered it."""
        if self.status is not None:
            return self.status.facts.started_at
        return self.place.registered_at if self.place is not None else None

    @property
    def rehearsal(self) -> bool:
        """Whether it is a rehearsal's run (`rehearse --keep` kept it)."""
        return self.status is not None and self.status.rehearsal

    @property
    def key(self) -> str | None:
        return self.place.key if self.place is not None else None

    @property
    def account(self) -> str | None:
        return self.place.account if self.place is not None else None

    @property
    def next_probe_at(self) -> datetime | None:
        return self.status.next_probe_at if self.status is not None else None

    def to_json(self) -> JsonObject:
        """The row as `runs --json` and `runs --all --json` write it."""
        if self.place is None:
            return {"run_id": self.run_id, "phase": self.phase, "problem": self.problem}
        place = self.place
        data: dict[str, Json] = {
            "key": place.key,
            "run_id": self.run_id,
            "cwd": place.cwd,
            "directory": place.directory,
            "host": place.host,
            "account": place.account,
        }
        if place.registered_at is not None:
            data["started_at"] = place.registered_at.isoformat()
        data["problem"] = self.problem
        if self.status is None:
            data["phase"] = self.phase
            return data
        status = self.status.to_json()
        return {
            **data,
            **{key: status[key] for key in ROW_FIELDS},
            "waiting_for": self.status.waiting_for,
            "last_verification": self.status.last_verification,
        }
