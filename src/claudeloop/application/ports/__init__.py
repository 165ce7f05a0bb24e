"""The ports the runner and the use cases talk to the world through, by concern.
Adapters implement them; tests fake them. This package is their one public face: code
imports a port from `claudeloop.application.ports`, whichever module holds it."""

from claudeloop.application.ports.capacity import (
    CapacityBoard,
    ProbeHold,
    Sighting,
    Source,
    Standing,
)
from claudeloop.application.ports.doctor import CheckStatus, DoctorCheck, DoctorChecks
from claudeloop.application.ports.fleet import (
    AccountCapacity,
    Fleet,
    QueuedRun,
    RunIdTaken,
    RunSummary,
    StoredRun,
    StoredSummary,
    WorkerHost,
    WorkerOptions,
)
from claudeloop.application.ports.machine_runs import (
    AccountBoards,
    AccountSighting,
    IndexedRun,
    RunIndex,
)
from claudeloop.application.ports.project_runs import ClaudeSession, ProjectRuns
from claudeloop.application.ports.run import (
    Advisor,
    Checkpoint,
    Checkpoints,
    Checks,
    Clock,
    ControlInbox,
    EventSink,
    Gateway,
    PlanFiles,
    ProbeOutcome,
    Request,
    RunStore,
    Sleeper,
    TurnOutcome,
    WorkingTree,
)

__all__ = [
    "AccountBoards",
    "AccountCapacity",
    "AccountSighting",
    "Advisor",
    "CapacityBoard",
    "CheckStatus",
    "Checkpoint",
    "Checkpoints",
    "Checks",
    "ClaudeSession",
    "Clock",
    "ControlInbox",
    "DoctorCheck",
    "DoctorChecks",
    "EventSink",
    "Fleet",
    "Gateway",
    "IndexedRun",
    "PlanFiles",
    "ProbeHold",
    "ProbeOutcome",
    "ProjectRuns",
    "QueuedRun",
    "Request",
    "RunIdTaken",
    "RunIndex",
    "RunStore",
    "RunSummary",
    "Sighting",
    "Sleeper",
    "Source",
    "Standing",
    "StoredRun",
    "StoredSummary",
    "TurnOutcome",
    "WorkerHost",
    "WorkerOptions",
    "WorkingTree",
]
