"""RunRecord <-> state.json, through the one codec (application/codec.py).

What state.json holds is the record's dataclasses, field by field, except where this
module says otherwise once: the plan as its text (`plan_text`), the ledger's counts in
the state's object and its budget only in the spec's, the pause thresholds, the limit
policies and each check as the words the user gave, a capacity, a verification and a
rejection tagged by `kind`. A renamed field is a decision made here, not an accident.

A record of format 1 written before a key was added reads as that claudeloop meant
it: most keys take their field's default; the few whose meaning another key carries
are filled in from it (`_complete_format_1`). A record of a newer format is refused
(NewerRecordError): fields this claudeloop does not know may carry the run's meaning.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from claudeloop.application.codec import (
    Codec,
    DecodeError,
    Form,
    NewerFormat,
    Shape,
    Tagged,
    Versioned,
)
from claudeloop.application.prompts import plan_task
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    UnknownWindow,
    WindowExhausted,
    service_name,
)
from claudeloop.domain.limits import LimitPolicies, limit_named, parse_action, render_action
from claudeloop.domain.loop import Detour, Outcome, Phase, RunState, VerifyRules
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.verification import (
    CheckCommand,
    CheckFailed,
    ChecksPassed,
    FailureSignature,
    Rejected,
    ReviewDisagreed,
    Verification,
)
from claudeloop.domain.waiting import WaitPolicyConfig

FORMAT_VERSION = 1


class CorruptRecordError(ValueError):
    """state.json exists but cannot be read back as a run."""


class NewerRecordError(CorruptRecordError):
    """state.json was written by a claudeloop newer than this one: its `format` is past
    FORMAT_VERSION, so fields this one does not know may carry the run's meaning."""

    def __init__(self, written: int) -> None:
        super().__init__(f"record format {written}, newer than {FORMAT_VERSION}")
        self.written = written


def _text(read: Any) -> Any:
    """A reader of a value written as text: TypeError for anything else."""

    def reading(value: object) -> Any:
        if not isinstance(value, str):
            raise TypeError("not text")
        return read(value)

    return reading


def _limits_in(value: object) -> LimitPolicies:
    if not isinstance(value, dict):
        raise TypeError("not an object of limit kinds")
    return LimitPolicies(
        tuple(
            (limit_named(str(kind)), _text(parse_action)(action)) for kind, action in value.items()
        )
    )


def _added(*names: str) -> frozenset[str]:
    return frozenset(names)


# Every key must be there but those added since format 1 began (each reads as its
# field's default in a record of before: a wait policy of before knew no reset retries).
RECORD_CODEC = Codec(
    every_key=True,
    shapes={
        RunRecord: Shape(
            renamed={"plan": "plan_text"},
            # Written once a request steered the run, or a run commits per turn: a
            # record of before stays as it was.
            sparse=frozenset(
                {
                    "steered",
                    "answered_turn",
                    "checkpointed_turn",
                    "rewound",
                    "gone_sessions",
                    "sandbox",
                    "blocked",
                    "ended_at",
                }
            ),
            added=_added(
                "turn_in_flight",
                "interrupted_at",
                "lost_sessions",
                "steered",
                "answered_turn",
                "checkpointed_turn",
                "rewound",
                "gone_sessions",
                "sandbox",
                "blocked",
                "ended_at",
            ),
        ),
        RunSpec: Shape(
            sparse=frozenset(
                {"worktree", "base_branch", "checkpoint", "sandbox", "silence_seconds"}
            ),
            added=_added(
                "silence_seconds",
                "pause_at",
                "update_plan",
                "limits",
                "verify",
                "verify_timeout_seconds",
                "worktree",
                "base_branch",
                "checkpoint",
                "sandbox",
            ),
        ),
        Budget: Shape(added=_added("max_turns", "max_dollars", "max_attempts")),
        WaitPolicyConfig: Shape(
            # Written when not its default: a record of before stays as it was.
            sparse=frozenset({"ready_ahead"}),
            added=_added("reset_retry_interval", "reset_retry_window", "max_wait", "ready_ahead"),
        ),
        RunState: Shape(
            flattened=frozenset({"ledger"}),
            # Written once a reset was heard, a turn went silent, a signal stopped the
            # run: a record of before stays as it was.
            sparse=frozenset({"announced_resets", "notes", "silent_turns", "interrupt"}),
            added=_added(
                "errored_turns",
                "overage_turns",
                "detour",
                "verifying",
                "rejection",
                "last_checks",
                "stagnation",
                "announced_resets",
                "notes",
                "silent_turns",
                "interrupt",
            ),
        ),
        # The budget is the spec's: the ledger's is the same, said once.
        BudgetLedger: Shape(
            omitted=frozenset({"budget"}),
            # Written once a probe cost something: a record of before stays as it was.
            sparse=frozenset({"probe_dollars"}),
            added=_added("estimated_dollars", "probe_dollars"),
        ),
        VerifyRules: Shape(flattened=frozenset({"stagnation"})),
        WindowExhausted: Shape(added=_added("paused_at", "detail"), sparse=frozenset({"detail"})),
        CreditsExhausted: Shape(added=_added("detail", "source")),
        # Credentials refused, the kind of before kinds were kept, is written as none.
        AuthenticationFailed: Shape(
            renamed={"kind": "auth"}, sparse=frozenset({"kind"}), added=_added("detail", "kind")
        ),
        BackendMisconfigured: Shape(renamed={"kind": "misconfiguration"}, added=_added("kind")),
        Detour: Shape(added=_added("model")),
    },
    forms={
        WorkPlan: Form(WorkPlan.render, _text(WorkPlan.parse)),
        PauseThresholds: Form(PauseThresholds.render, _text(PauseThresholds.parse)),
        CheckCommand: Form(lambda check: check.text, _text(CheckCommand.parse)),
        # A window the service named that this claudeloop does not know is written by its
        # name, as every version wrote it (and one of before is read as unknown).
        UnknownWindow: Form(service_name, _text(UnknownWindow)),
        LimitPolicies: Form(
            lambda limits: {kind: render_action(action) for kind, action in limits.actions},
            _limits_in,
        ),
    },
    unions=(
        Tagged.covering(
            CapacityState,
            "kind",
            {
                Available: "available",
                WindowExhausted: "window",
                CreditsExhausted: "credits",
                AuthenticationFailed: "auth",
                BackendMisconfigured: "misconfigured",
            },
        ),
        Tagged.covering(
            Verification, "kind", {ChecksPassed: "passed", FailureSignature: "failure"}
        ),
        Tagged.covering(
            Rejected, "kind", {CheckFailed: "check_failed", ReviewDisagreed: "review_disagreed"}
        ),
    ),
)


def _complete_format_1(data: dict[str, Any]) -> dict[str, Any]:
    """A record of format 1 as today's writes it: the keys added since 2026-11-30 whose
    absence a default does not say, filled in as the claudeloop that wrote it meant."""
    data = dict(data)
    spec = data.get("spec")
    state = data.get("state")
    if not isinstance(spec, dict) or not isinstance(state, dict):
        return data  # the codec names what is missing
    spec, state = dict(spec), dict(state)
    data["spec"], data["state"] = spec, state
    # Nulls an older writer left for "none".
    if spec.get("limits", {}) is None:
        spec["limits"] = {}
    for key, holder in (("stagnation", state), ("lost_sessions", data)):
        if key in holder and holder[key] is None:
            del holder[key]
    # Before 2026-12-02 a plan run's task held the plan's whole text as well, beside
    # `plan_text`: a 50 MB plan made a state.json of over 100 MB.
    plan_path, task = spec.get("plan_path"), spec.get("task")
    if isinstance(plan_path, str) and plan_path and isinstance(task, str):
        short = plan_task(Path(plan_path).name)
        if task.startswith(f"{short} Its text:"):
            spec["task"] = short
    # Before the blocker was kept apart from the reason, it was in the reason.
    if "blocked_on" not in state:
        blocked = state.get("outcome") == Outcome.BLOCKED.value
        state["blocked_on"] = (
            str(state.get("reason")).removeprefix("blocked on: ") if blocked else None
        )
    # Before 2026-12-02 only the time slept was counted: a run not waiting has every
    # wait behind it; one saved mid-wait counts the wait going on afresh from its first
    # refusal (and never less than it had said).
    if "earlier_waits_seconds" not in data:
        waiting = state.get("phase") in (Phase.WAITING.value, Phase.PROBING.value)
        data["earlier_waits_seconds"] = 0.0 if waiting else data.get("waited_seconds")
    return data


RECORD_FORMAT = Versioned(key="format", current=FORMAT_VERSION, assumed=FORMAT_VERSION)


def record_to_json(record: RunRecord) -> dict[str, Any]:
    return RECORD_FORMAT.stamp(cast(dict[str, Any], RECORD_CODEC.encode(record)))


def record_from_json(data: dict[str, Any]) -> RunRecord:
    try:
        current = _complete_format_1(RECORD_FORMAT.upgraded(data))
        record = cast(RunRecord, RECORD_CODEC.decode(current, RunRecord, ""))
    except NewerFormat as newer:
        raise NewerRecordError(newer.written) from None
    except DecodeError as error:
        raise CorruptRecordError(str(error)) from error
    if record.turn_in_flight is not None and record.turn_in_flight < 1:
        raise CorruptRecordError(
            f"turn_in_flight must be a turn number, not {record.turn_in_flight!r}"
        )
    # The ledger counts against the spec's budget (written once, in the spec).
    ledger = replace(record.state.ledger, budget=record.spec.budget)
    return replace(record, state=replace(record.state, ledger=ledger))


def capacity_to_json(capacity: CapacityState) -> dict[str, Any]:
    return cast(dict[str, Any], RECORD_CODEC.encode(capacity))


def capacity_from_json(data: dict[str, Any]) -> CapacityState:
    try:
        return cast(CapacityState, RECORD_CODEC.decode(data, CapacityState, "capacity"))
    except DecodeError as error:
        raise CorruptRecordError(str(error)) from error
