"""RunRecord <-> JSON. Explicit, so a renamed field is a decision, not an accident."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, assert_never, cast, get_args

from claudeloop.application.prompts import plan_task
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    AuthFailureKind,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    MisconfigurationKind,
    WindowExhausted,
)
from claudeloop.domain.limits import LimitPolicies, parse_action, render_action
from claudeloop.domain.loop import Detour, Outcome, Phase, RunState, Verifying, VerifyRules
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.stagnation import Answered, Stagnation, StagnationSettings
from claudeloop.domain.verification import (
    CheckCommand,
    CheckFailed,
    CheckResult,
    ChecksPassed,
    FailureSignature,
    Rejected,
    ReviewDisagreed,
    Verification,
)
from claudeloop.domain.waiting import AnnouncedReset, WaitPolicyConfig

FORMAT_VERSION = 1


class CorruptRecordError(ValueError):
    """state.json exists but cannot be read back as a run."""


class NewerRecordError(CorruptRecordError):
    """state.json was written by a claudeloop newer than this one: its `format` is past
    FORMAT_VERSION, so fields this one does not know may carry the run's meaning."""

    def __init__(self, written: int) -> None:
        super().__init__(f"record format {written}, newer than {FORMAT_VERSION}")
        self.written = written


def record_to_json(record: RunRecord) -> dict[str, Any]:
    spec = record.spec
    state = record.state
    return {
        "format": FORMAT_VERSION,
        "run_id": record.run_id,
        "session_id": record.session_id,
        "started_at": record.started_at.isoformat(),
        "waited_seconds": record.waited_seconds,
        "earlier_waits_seconds": record.earlier_waits_seconds,
        "last_turn_started_at": _instant_out(record.last_turn_started_at),
        "turn_in_flight": record.turn_in_flight,
        "interrupted_at": _instant_out(record.interrupted_at),
        "lost_sessions": list(record.lost_sessions),
        "plan_text": record.plan.render() if record.plan is not None else None,
        "spec": {
            "cwd": str(spec.cwd),
            "task": spec.task,
            "plan_path": str(spec.plan_path) if spec.plan_path else None,
            "budget": {
                "max_turns": spec.budget.max_turns,
                "max_dollars": spec.budget.max_dollars,
                "max_attempts": spec.budget.max_attempts,
            },
            "wait_policy": _policy_out(spec.wait_policy),
            "done_marker": spec.done_marker,
            "marker_fallback": spec.marker_fallback,
            "continue_prompt": spec.continue_prompt,
            "model": spec.model,
            "permission_mode": spec.permission_mode,
            "profile": spec.profile,
            "pause_at": spec.pause_at.render(),
            "update_plan": spec.update_plan,
            "limits": {kind: render_action(action) for kind, action in spec.limits.actions},
            "verify": _rules_out(spec.verify),
            "verify_timeout_seconds": spec.verify_timeout_seconds,
        },
        "state": {
            "phase": state.phase.value,
            "turns": state.ledger.turns,
            "attempts": state.ledger.attempts,
            "dollars": state.ledger.dollars,
            "estimated_dollars": state.ledger.estimated_dollars,
            "capacity": capacity_to_json(state.capacity),
            "probes": state.probes,
            "wait_probes": state.wait_probes,
            "errored_turns": state.errored_turns,
            "overage_turns": state.overage_turns,
            "waiting_since": _instant_out(state.waiting_since),
            "next_probe_at": _instant_out(state.next_probe_at),
            "remaining_work": list(state.remaining_work),
            "summary": state.summary,
            "outcome": state.outcome.value if state.outcome else None,
            "reason": state.reason,
            "blocked_on": state.blocked_on,
            "detour": _detour_out(state.detour),
            "verifying": _verifying_out(state.verifying),
            "rejection": _rejection_out(state.rejection),
            "last_checks": [_result_out(result) for result in state.last_checks],
            "stagnation": _stagnation_out(state.stagnation),
            "announced_resets": {r.window: _instant_out(r.at) for r in state.announced_resets},
        },
    }


def record_from_json(data: dict[str, Any]) -> RunRecord:
    written = data.get("format", FORMAT_VERSION)
    if type(written) is not int or written < 1:
        raise CorruptRecordError(f"format {written!r} is not a record format")
    if written > FORMAT_VERSION:
        raise NewerRecordError(written)
    try:
        raw_spec = data["spec"]
        budget = Budget(**raw_spec["budget"])
        plan_path = Path(raw_spec["plan_path"]) if raw_spec["plan_path"] else None
        spec = RunSpec(
            cwd=Path(raw_spec["cwd"]),
            task=_task_in(raw_spec["task"], plan_path),
            plan_path=plan_path,
            budget=budget,
            wait_policy=_policy_in(raw_spec["wait_policy"]),
            done_marker=raw_spec["done_marker"],
            marker_fallback=raw_spec["marker_fallback"],
            continue_prompt=raw_spec["continue_prompt"],
            model=raw_spec["model"],
            permission_mode=raw_spec["permission_mode"],
            profile=raw_spec["profile"],
            pause_at=PauseThresholds.parse(raw_spec.get("pause_at", "")),
            update_plan=raw_spec.get("update_plan", False),
            limits=LimitPolicies(
                tuple(
                    (kind, parse_action(action))
                    for kind, action in (raw_spec.get("limits") or {}).items()
                )
            ),
            # Written since 2026-12-01: a record from before has the defaults.
            verify=_rules_in(raw_spec["verify"]) if "verify" in raw_spec else VerifyRules(),
            verify_timeout_seconds=float(raw_spec.get("verify_timeout_seconds", 600.0)),
        )
        raw = data["state"]
        state = RunState(
            phase=Phase(raw["phase"]),
            ledger=BudgetLedger(
                budget=budget,
                turns=raw["turns"],
                attempts=raw["attempts"],
                dollars=raw["dollars"],
                # Written since 2026-12-02: a record from before estimated nothing.
                estimated_dollars=raw.get("estimated_dollars", 0.0),
            ),
            capacity=capacity_from_json(raw["capacity"]),
            probes=raw["probes"],
            wait_probes=raw["wait_probes"],
            errored_turns=raw.get("errored_turns", 0),
            # Written since 2026-12-02: a record from before counted none.
            overage_turns=raw.get("overage_turns", 0),
            waiting_since=_instant_in(raw["waiting_since"]),
            next_probe_at=_instant_in(raw["next_probe_at"]),
            remaining_work=tuple(raw["remaining_work"]),
            summary=raw["summary"],
            outcome=Outcome(raw["outcome"]) if raw["outcome"] else None,
            reason=raw["reason"],
            blocked_on=_blocked_on(raw),
            detour=_detour_in(raw.get("detour")),
            verifying=_verifying_in(raw.get("verifying")),
            rejection=_rejection_in(raw.get("rejection")),
            last_checks=tuple(_result_in(result) for result in raw.get("last_checks", ())),
            stagnation=_stagnation_in(raw.get("stagnation")),
            # Written since 2026-12-02: a record from before heard no reset announced.
            announced_resets=tuple(
                AnnouncedReset(str(window), datetime.fromisoformat(at))
                for window, at in (raw.get("announced_resets") or {}).items()
            ),
        )
        plan_text = data["plan_text"]
        record = RunRecord(
            run_id=data["run_id"],
            spec=spec,
            state=state,
            started_at=datetime.fromisoformat(data["started_at"]),
            session_id=data["session_id"],
            plan=WorkPlan.parse(plan_text) if plan_text is not None else None,
            waited_seconds=data["waited_seconds"],
            # Older files also hold `session_cost_usd` and `extra`, no longer used: ignored.
            last_turn_started_at=_instant_in(data["last_turn_started_at"]),
            turn_in_flight=_turn_number(data.get("turn_in_flight")),
            earlier_waits_seconds=_earlier_waits(data, state),
            # Written since 2026-12-02: a record from before owes nothing it knows of.
            interrupted_at=_instant_in(data.get("interrupted_at")),
            # Written since 2026-12-02: a record from before knows of no lost transcript.
            lost_sessions=_sessions_in(data.get("lost_sessions")),
        )
        return _well_typed(record)
    # A value of the wrong type (a list where a table belongs, text for a number) fails
    # in whatever way the first use of it does: each is the same unreadable record.
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as error:
        raise CorruptRecordError(f"{type(error).__name__}: {error}") from error


def _earlier_waits(data: dict[str, Any], state: RunState) -> float:
    """Written since 2026-12-02. A record from before counted only the time slept: a run
    not waiting has every wait behind it; one saved mid-wait counts the wait going on
    afresh from its first refusal (and never less than it had said)."""
    if "earlier_waits_seconds" in data:
        return cast(float, data["earlier_waits_seconds"])  # its type checked with the rest
    return 0.0 if state.phase in (Phase.WAITING, Phase.PROBING) else data["waited_seconds"]


def _sessions_in(value: Any) -> tuple[str, ...]:
    """`lost_sessions`: a list of session ids (absent or null: none)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TypeError(f"lost_sessions is {value!r}")
    return tuple(value)  # each item's type checked with the rest


def _task_in(task: Any, plan_path: Path | None) -> Any:
    """The task of a plan run, once. Before 2026-12-02 it held the plan's whole text as
    well, beside `plan_text`: a 50 MB plan made a state.json of over 100 MB."""
    if plan_path is None or not isinstance(task, str):
        return task
    short = plan_task(plan_path.name)
    return short if task.startswith(f"{short} Its text:") else task


_NUMBER = (int, float)
_TEXT_OR_NONE = (str, type(None))


def _well_typed(record: RunRecord) -> RunRecord:
    """`record`, once the values that status, runs and summary.md use have their types;
    a TypeError naming the first that does not."""
    state, spec, budget = record.state, record.spec, record.spec.budget
    expected: list[tuple[str, object, type | tuple[type, ...]]] = [
        ("run_id", record.run_id, str),
        ("session_id", record.session_id, _TEXT_OR_NONE),
        ("waited_seconds", record.waited_seconds, _NUMBER),
        ("earlier_waits_seconds", record.earlier_waits_seconds, _NUMBER),
        ("spec.task", spec.task, str),
        ("spec.model", spec.model, _TEXT_OR_NONE),
        ("spec.done_marker", spec.done_marker, str),
        ("spec.continue_prompt", spec.continue_prompt, _TEXT_OR_NONE),
        ("spec.permission_mode", spec.permission_mode, str),
        ("spec.profile", spec.profile, str),
        ("spec.budget.max_turns", budget.max_turns, (int, type(None))),
        ("spec.budget.max_dollars", budget.max_dollars, (*_NUMBER, type(None))),
        ("spec.budget.max_attempts", budget.max_attempts, (int, type(None))),
        ("state.turns", state.ledger.turns, int),
        ("state.attempts", state.ledger.attempts, int),
        ("state.dollars", state.ledger.dollars, _NUMBER),
        ("state.estimated_dollars", state.ledger.estimated_dollars, _NUMBER),
        ("state.probes", state.probes, int),
        ("state.wait_probes", state.wait_probes, int),
        ("state.errored_turns", state.errored_turns, int),
        ("state.overage_turns", state.overage_turns, int),
        ("state.summary", state.summary, _TEXT_OR_NONE),
        ("state.reason", state.reason, _TEXT_OR_NONE),
        ("state.blocked_on", state.blocked_on, _TEXT_OR_NONE),
    ]
    expected += [("state.remaining_work[]", item, str) for item in state.remaining_work]
    expected += [("lost_sessions[]", session, str) for session in record.lost_sessions]
    for name, value, kinds in expected:
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise TypeError(f"{name} is {value!r}")
    instants = [record.started_at, record.last_turn_started_at, record.interrupted_at]
    instants += [state.waiting_since, state.next_probe_at]
    for instant in instants:
        if instant is not None and instant.utcoffset() is None:
            raise ValueError(f"{instant.isoformat()} has no time zone")
    return record


def _blocked_on(raw: dict[str, Any]) -> str | None:
    if "blocked_on" in raw:
        return raw["blocked_on"]  # type: ignore[no-any-return]
    # Written before the blocker was kept apart from the reason: it is in the reason.
    if raw.get("outcome") == Outcome.BLOCKED.value:
        return str(raw["reason"]).removeprefix("blocked on: ")
    return None


def capacity_to_json(capacity: CapacityState) -> dict[str, Any]:
    match capacity:
        case Available():
            return {"kind": "available"}
        case WindowExhausted(rate_limit_type=kind, resets_at=resets_at, paused_at=paused_at):
            return {
                "kind": "window",
                "rate_limit_type": kind,
                "resets_at": _instant_out(resets_at),
                "paused_at": paused_at,
            }
        case CreditsExhausted(detail=detail, source=source):
            return {"kind": "credits", "detail": detail, "source": source}
        case AuthenticationFailed(detail=detail, kind="refused"):
            return {"kind": "auth", "detail": detail}
        case AuthenticationFailed(detail=detail, kind=why):
            return {"kind": "auth", "detail": detail, "auth": why}
        case BackendMisconfigured(reason=reason, kind=misconfiguration):
            return {"kind": "misconfigured", "reason": reason, "misconfiguration": misconfiguration}
        case _:
            assert_never(capacity)


def capacity_from_json(data: dict[str, Any]) -> CapacityState:
    kind = data["kind"]
    if kind == "available":
        return Available()
    if kind == "window":
        return WindowExhausted(
            data["rate_limit_type"], _instant_in(data["resets_at"]), data.get("paused_at")
        )
    if kind == "credits":
        # A record written before the source was kept is the account's.
        if data.get("source") == "proxy_budget":
            return CreditsExhausted(detail=data.get("detail", ""), source="proxy_budget")
        return CreditsExhausted(detail=data.get("detail", ""))
    if kind == "auth":
        return AuthenticationFailed(
            detail=data.get("detail", ""), kind=_auth_kind(data.get("auth"))
        )
    if kind == "misconfigured":
        # A record written before the kind was kept has none: its reason tells it.
        return BackendMisconfigured(reason=data["reason"], kind=_misconfiguration(data))
    raise ValueError(f"unknown capacity kind {kind!r}")


def _auth_kind(kind: object) -> AuthFailureKind:
    # A record written before the kinds were kept has none: its credentials were refused.
    if kind is None:
        return "refused"
    if kind not in get_args(AuthFailureKind):
        raise ValueError(f"unknown authentication failure {kind!r}")
    return cast(AuthFailureKind, kind)


def _misconfiguration(data: dict[str, Any]) -> MisconfigurationKind | None:
    kind = data.get("misconfiguration")
    if kind is None:
        return None
    if kind not in get_args(MisconfigurationKind):
        raise ValueError(f"unknown misconfiguration {kind!r}")
    return cast(MisconfigurationKind, kind)


def _detour_out(detour: Detour | None) -> dict[str, Any] | None:
    if detour is None:
        return None
    return {
        "profile": detour.profile,
        "awaiting": capacity_to_json(detour.awaiting),
        "since": detour.since.isoformat(),
        "check_at": detour.check_at.isoformat(),
        "checks": detour.checks,
        "model": detour.model,
    }


def _detour_in(data: dict[str, Any] | None) -> Detour | None:
    if data is None:
        return None
    awaiting = capacity_from_json(data["awaiting"])
    if not isinstance(awaiting, WindowExhausted | CreditsExhausted):
        raise ValueError("a detour awaits a window or credits")
    return Detour(
        profile=data["profile"],
        awaiting=awaiting,
        since=datetime.fromisoformat(data["since"]),
        check_at=datetime.fromisoformat(data["check_at"]),
        checks=data["checks"],
        # Written since 2026-12-02: a detour from before went to a profile.
        model=data.get("model"),
    )


def _rules_out(rules: VerifyRules) -> dict[str, Any]:
    return {
        "checks": [check.text for check in rules.checks],
        "review": rules.review,
        "stall_turns": rules.stagnation.stall_turns,
        "same_failure": rules.stagnation.same_failure,
    }


def _rules_in(data: dict[str, Any]) -> VerifyRules:
    return VerifyRules(
        checks=tuple(CheckCommand.parse(text) for text in data["checks"]),
        review=bool(data["review"]),
        stagnation=StagnationSettings(
            stall_turns=data["stall_turns"], same_failure=data["same_failure"]
        ),
    )


def _result_out(result: CheckResult) -> dict[str, Any]:
    return {
        "command": result.command.text,
        "exit_code": result.exit_code,
        "seconds": result.seconds,
        "output_tail": result.output_tail,
        "output_bytes": result.output_bytes,
        "output_path": str(result.output_path) if result.output_path else None,
        "timed_out": result.timed_out,
        "start_error": result.start_error,
    }


def _result_in(data: dict[str, Any]) -> CheckResult:
    path = data["output_path"]
    return CheckResult(
        command=CheckCommand.parse(data["command"]),
        exit_code=data["exit_code"],
        seconds=float(data["seconds"]),
        output_tail=data["output_tail"],
        output_bytes=data["output_bytes"],
        output_path=Path(path) if path else None,
        timed_out=bool(data["timed_out"]),
        start_error=data["start_error"],
    )


def _verification_out(verification: Verification | None) -> dict[str, Any] | None:
    match verification:
        case None:
            return None
        case ChecksPassed():
            return {"kind": "passed"}
        case FailureSignature():
            return {
                "kind": "failure",
                "command": verification.command,
                "exit_code": verification.exit_code,
                "timed_out": verification.timed_out,
                "output": verification.output,
            }
        case _:
            assert_never(verification)


def _verification_in(data: dict[str, Any] | None) -> Verification | None:
    if data is None:
        return None
    if data["kind"] == "passed":
        return ChecksPassed()
    if data["kind"] == "failure":
        return FailureSignature(
            command=data["command"],
            exit_code=data["exit_code"],
            timed_out=bool(data["timed_out"]),
            output=data["output"],
        )
    raise ValueError(f"unknown verification kind {data['kind']!r}")


def _verifying_out(verifying: Verifying | None) -> dict[str, Any] | None:
    if verifying is None:
        return None
    seen = verifying.seen
    return {
        "summary": verifying.summary,
        "seen": {
            "checked_items": sorted(seen.checked_items),
            "tree": seen.tree,
            "remaining_work": list(seen.remaining_work),
            "verification": _verification_out(seen.verification),
        },
        "rules": _rules_out(verifying.rules),
        "results": [_result_out(result) for result in verifying.results],
    }


def _verifying_in(data: dict[str, Any] | None) -> Verifying | None:
    if data is None:
        return None
    seen = data["seen"]
    return Verifying(
        summary=data["summary"],
        seen=Answered(
            checked_items=frozenset(seen["checked_items"]),
            tree=seen["tree"],
            remaining_work=tuple(seen["remaining_work"]),
            verification=_verification_in(seen["verification"]),
        ),
        rules=_rules_in(data["rules"]),
        results=tuple(_result_in(result) for result in data["results"]),
    )


def _rejection_out(rejection: Rejected | None) -> dict[str, Any] | None:
    match rejection:
        case None:
            return None
        case CheckFailed(result=result):
            return {"kind": "check_failed", "result": _result_out(result)}
        case ReviewDisagreed():
            return {
                "kind": "review_disagreed",
                "remaining_work": list(rejection.remaining_work),
                "blocked_on": rejection.blocked_on,
                "summary": rejection.summary,
            }
        case _:
            assert_never(rejection)


def _rejection_in(data: dict[str, Any] | None) -> Rejected | None:
    if data is None:
        return None
    if data["kind"] == "check_failed":
        return CheckFailed(_result_in(data["result"]))
    if data["kind"] == "review_disagreed":
        return ReviewDisagreed(
            remaining_work=tuple(data["remaining_work"]),
            blocked_on=data["blocked_on"],
            summary=data["summary"],
        )
    raise ValueError(f"unknown rejection kind {data['kind']!r}")


def _stagnation_out(stagnation: Stagnation) -> dict[str, Any]:
    return {
        "turns_without_progress": stagnation.turns_without_progress,
        "same_failure_rounds": stagnation.same_failure_rounds,
        "checked_items": sorted(stagnation.checked_items),
        "tree": stagnation.tree,
        "remaining_work": sorted(stagnation.remaining_work),
        "verification": _verification_out(stagnation.verification),
    }


def _stagnation_in(data: dict[str, Any] | None) -> Stagnation:
    if data is None:
        return Stagnation()  # a record from before the brake: its count starts now
    return Stagnation(
        turns_without_progress=data["turns_without_progress"],
        same_failure_rounds=data["same_failure_rounds"],
        checked_items=frozenset(data["checked_items"]),
        tree=data["tree"],
        remaining_work=frozenset(data["remaining_work"]),
        verification=_verification_in(data["verification"]),
    )


def _policy_out(policy: WaitPolicyConfig) -> dict[str, float | None]:
    return {
        "window_probe_interval": policy.window_probe_interval.total_seconds(),
        "reset_grace": policy.reset_grace.total_seconds(),
        "reset_retry_interval": policy.reset_retry_interval.total_seconds(),
        "reset_retry_window": policy.reset_retry_window.total_seconds(),
        "credits_probe_interval": policy.credits_probe_interval.total_seconds(),
        "credits_probe_factor": policy.credits_probe_factor,
        "credits_probe_ceiling": policy.credits_probe_ceiling.total_seconds(),
        "max_wait": policy.max_wait.total_seconds() if policy.max_wait else None,
    }


def _policy_in(data: dict[str, Any]) -> WaitPolicyConfig:
    max_wait = data.get("max_wait")
    defaults = WaitPolicyConfig()
    return WaitPolicyConfig(
        reset_retry_interval=timedelta(
            seconds=data.get("reset_retry_interval", defaults.reset_retry_interval.total_seconds())
        ),
        reset_retry_window=timedelta(
            seconds=data.get("reset_retry_window", defaults.reset_retry_window.total_seconds())
        ),
        window_probe_interval=timedelta(seconds=data["window_probe_interval"]),
        reset_grace=timedelta(seconds=data["reset_grace"]),
        credits_probe_interval=timedelta(seconds=data["credits_probe_interval"]),
        credits_probe_factor=data["credits_probe_factor"],
        credits_probe_ceiling=timedelta(seconds=data["credits_probe_ceiling"]),
        max_wait=timedelta(seconds=max_wait) if max_wait is not None else None,
    )


def _instant_out(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _instant_in(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def _turn_number(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"turn_in_flight must be a turn number, not {value!r}")
    return value
