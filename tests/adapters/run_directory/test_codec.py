"""state.json holds everything resume needs, and reads back to the same run."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory.codec import (
    CorruptRecordError,
    capacity_from_json,
    record_from_json,
    record_to_json,
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
)
from claudeloop.domain.limits import LimitPolicies, SwitchProfile, WindDown
from claudeloop.domain.loop import Detour, Interrupt, Outcome, Phase, RunState
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.waiting import AnnouncedReset, WaitPolicyConfig

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def full_record(capacity: CapacityState) -> RunRecord:
    budget = Budget(max_turns=9, max_dollars=2.5, max_attempts=20)
    spec = RunSpec(
        cwd=Path("/tmp/project"),
        task="Carry out the plan",
        plan_path=Path("/tmp/project/PLAN.md"),
        budget=budget,
        wait_policy=WaitPolicyConfig(max_wait=timedelta(hours=8)),
        done_marker="ALL_DONE",
        marker_fallback=False,
        continue_prompt="Go on.",
        model="claude-sonnet-4-5",
        permission_mode="bypassPermissions",
        profile="work",
        pause_at=PauseThresholds.parse("5h=90%,7d=95%"),
        limits=LimitPolicies((("five_hour", SwitchProfile("local")), ("credits", WindDown()))),
    )
    state = RunState(
        phase=Phase.RUNNING,
        ledger=BudgetLedger(budget=budget, turns=3, attempts=4, dollars=0.75),
        capacity=capacity,
        probes=2,
        wait_probes=1,
        errored_turns=1,
        remaining_work=("b", "c"),
        summary="wrote a",
        detour=Detour(
            profile="local",
            awaiting=WindowExhausted("five_hour", NOW + timedelta(hours=2)),
            since=NOW,
            check_at=NOW + timedelta(minutes=5),
            checks=1,
        ),
    )
    return RunRecord(
        run_id="20261130-100000-abcdef",
        spec=spec,
        state=state,
        started_at=NOW,
        session_id="session-1",
        plan=WorkPlan.parse("- [x] a\n- [ ] b\n- [ ] c\n"),
        waited_seconds=12.5,
        last_turn_started_at=NOW,
        turn_in_flight=3,
        interrupted_at=NOW - timedelta(minutes=2),
        lost_sessions=("session-0",),
    )


@pytest.mark.parametrize(
    "capacity",
    [
        Available(),
        WindowExhausted("five_hour", NOW, paused_at=0.93),
        WindowExhausted("unknown"),
        WindowExhausted(UnknownWindow("seven_day_cowork"), NOW),
        CreditsExhausted("Credit balance is too low"),
        CreditsExhausted("Budget has been exceeded!", "proxy_budget"),
        WindowExhausted("upstream_unreachable"),
        AuthenticationFailed("Invalid API key"),
        AuthenticationFailed("Your account is on hold", kind="account_on_hold"),
        BackendMisconfigured("the model was not found (qwen9)", "not_found"),
        BackendMisconfigured("the model was not found"),  # written before kinds were kept
    ],
)
def test_a_record_reads_back_as_it_was_written(capacity: CapacityState) -> None:
    record = full_record(capacity)
    assert record_from_json(json.loads(json.dumps(record_to_json(record)))) == record


def test_a_window_of_a_name_claudeloop_does_not_know_is_kept_by_that_name() -> None:
    """As every version wrote it: the service's name, in state.json and in the windows
    whose resets were heard, so a record of before reads, and writes back the same."""
    written = record_to_json(full_record(WindowExhausted("five_hour")))
    written["state"]["capacity"]["rate_limit_type"] = "seven_day_cowork"
    written["state"]["announced_resets"] = [
        {"window": "seven_day_cowork", "at": NOW.isoformat()},
        {"window": "five_hour", "at": NOW.isoformat()},
    ]
    read = record_from_json(json.loads(json.dumps(written)))
    assert read.state.capacity == WindowExhausted(UnknownWindow("seven_day_cowork"))
    assert [reset.window for reset in read.state.announced_resets] == [
        UnknownWindow("seven_day_cowork"),
        "five_hour",
    ]
    assert json.dumps(record_to_json(read)) == json.dumps(written)


def test_credits_written_before_their_source_was_kept_are_the_accounts() -> None:
    data = record_to_json(full_record(CreditsExhausted("Credit balance is too low")))
    del data["state"]["capacity"]["source"]
    read = record_from_json(data).state.capacity
    assert read == CreditsExhausted("Credit balance is too low", "account")


def test_an_authentication_failure_of_before_kinds_reads_as_refused() -> None:
    assert capacity_from_json({"kind": "auth", "detail": "401"}) == AuthenticationFailed("401")
    with pytest.raises(ValueError, match="banned"):
        capacity_from_json({"kind": "auth", "detail": "", "auth": "banned"})


def test_a_record_written_before_lost_sessions_were_kept_has_none() -> None:
    data = record_to_json(full_record(Available()))
    assert data["lost_sessions"] == ["session-0"]
    del data["lost_sessions"]
    read = record_from_json(data)
    assert (read.lost_sessions, read.session_id) == ((), "session-1")


@pytest.mark.parametrize("value", ["session-0", [1], {"a": 1}])
def test_lost_sessions_that_are_no_list_of_ids_are_corrupt(value: object) -> None:
    data = record_to_json(full_record(Available()))
    data["lost_sessions"] = value
    with pytest.raises(CorruptRecordError, match="lost_sessions"):
        record_from_json(data)


def test_a_finished_record_keeps_its_outcome() -> None:
    record = full_record(Available())
    ended = RunRecord(
        **{
            **{f: getattr(record, f) for f in record.__dataclass_fields__},
            "state": RunState(phase=Phase.COMPLETE, outcome=Outcome.DONE, reason="ok"),
        }
    )
    assert record_from_json(record_to_json(ended)).state.outcome is Outcome.DONE


def test_a_blocked_record_keeps_its_blocker_and_an_older_one_finds_it_in_the_reason() -> None:
    record = full_record(Available())
    blocked = RunState(
        phase=Phase.FAILED,
        outcome=Outcome.BLOCKED,
        reason="blocked on: the staging password",
        blocked_on="the staging password",
    )
    data = record_to_json(replace(record, state=blocked))
    assert record_from_json(data).state.blocked_on == "the staging password"
    del data["state"]["blocked_on"]  # as a file written before the field was
    assert record_from_json(data).state.blocked_on == "the staging password"
    done = record_to_json(record)
    del done["state"]["blocked_on"]
    assert record_from_json(done).state.blocked_on is None


def test_a_misconfiguration_of_a_kind_no_claudeloop_knows_is_corrupt() -> None:
    data = record_to_json(full_record(BackendMisconfigured("odd", "load_failed")))
    data["state"]["capacity"]["misconfiguration"] = "gremlins"
    with pytest.raises(CorruptRecordError, match="gremlins"):
        record_from_json(data)


def test_a_record_missing_a_key_is_corrupt_not_a_crash() -> None:
    data = record_to_json(full_record(Available()))
    del data["spec"]
    with pytest.raises(CorruptRecordError):
        record_from_json(data)


def test_an_older_record_without_the_newer_fields_still_reads() -> None:
    data = record_to_json(full_record(Available()))
    for key in ("pause_at", "limits"):
        del data["spec"][key]
    del data["state"]["detour"]
    del data["turn_in_flight"]
    # What older files held, no longer read.
    data["session_cost_usd"] = 0.7
    data["extra"] = {"note": "kept by a version that never used it"}
    record = record_from_json(data)
    assert "extra" not in record_to_json(record)
    assert record.turn_in_flight is None
    assert record.spec.pause_at == PauseThresholds()
    assert record.spec.limits == LimitPolicies()
    assert record.state.detour is None


@pytest.mark.parametrize("value", [0, -1, "2", True, 1.5])
def test_a_turn_in_flight_that_is_no_turn_number_is_corrupt(value: object) -> None:
    data = record_to_json(full_record(Available()))
    data["turn_in_flight"] = value
    with pytest.raises(CorruptRecordError):
        record_from_json(data)


def test_a_check_round_in_flight_and_the_brake_read_back_the_same() -> None:
    from claudeloop.domain.loop import Verifying, VerifyRules
    from claudeloop.domain.stagnation import Answered, Stagnation, StagnationSettings
    from claudeloop.domain.verification import (
        CheckCommand,
        CheckFailed,
        CheckResult,
        ChecksPassed,
        ReviewDisagreed,
    )

    test = CheckCommand.parse("make 'the tests'")
    failed = CheckResult(
        command=test, exit_code=None, seconds=600.0, output_tail="slow", output_bytes=9,
        output_path=Path("/r/checks/turn-3-check-1.log"), timed_out=True,
    )  # fmt: skip
    passed = CheckResult(command=test, exit_code=0, seconds=1.5)
    rules = VerifyRules(checks=(test,), review=True, stagnation=StagnationSettings(2, 0))
    signature = failed.failure_signature()
    assert signature is not None
    base = full_record(Available())
    for rejection in (CheckFailed(failed), ReviewDisagreed(("x",), "a key", "no"), None):
        state = replace(
            base.state,
            phase=Phase.VERIFYING,
            verifying=Verifying(
                summary="all done",
                seen=Answered(frozenset({"a"}), "t1", ("r",), ChecksPassed()),
                rules=rules,
                results=(passed,),
            ),
            rejection=rejection,
            last_checks=(failed, passed),
            stagnation=Stagnation(2, 1, frozenset({"a"}), "t0", frozenset({"b"}), signature),
        )
        record = replace(
            base, spec=replace(base.spec, verify=rules, verify_timeout_seconds=30.0), state=state
        )
        assert record_from_json(json.loads(json.dumps(record_to_json(record)))) == record


def test_a_record_from_before_verification_reads_with_the_defaults() -> None:
    from claudeloop.domain.loop import VerifyRules
    from claudeloop.domain.stagnation import Stagnation

    data = record_to_json(full_record(Available()))
    for key in ("verify", "verify_timeout_seconds"):
        del data["spec"][key]
    for key in ("verifying", "rejection", "last_checks", "stagnation"):
        del data["state"][key]
    record = record_from_json(data)
    assert record.spec.verify == VerifyRules()
    assert record.spec.verify_timeout_seconds == 600.0
    assert record.state.verifying is None
    assert record.state.rejection is None
    assert record.state.stagnation == Stagnation()


@pytest.mark.parametrize("where", ["verifying", "rejection", "stagnation"])
def test_an_unknown_kind_in_the_new_fields_is_a_corrupt_record(where: str) -> None:
    data = record_to_json(full_record(Available()))
    data["state"][where] = {
        "verifying": {"summary": "", "seen": {}, "rules": {}, "results": []},
        "rejection": {"kind": "elsewise"},
        "stagnation": {
            "turns_without_progress": 0, "same_failure_rounds": 0, "checked_items": [],
            "tree": None, "remaining_work": [], "verification": {"kind": "elsewise"},
        },
    }[where]  # fmt: skip
    with pytest.raises(CorruptRecordError):
        record_from_json(data)


def test_a_plan_runs_state_holds_the_plans_text_once() -> None:
    plan = WorkPlan.parse("# Plan\n\nTHE ONLY COPY OF THIS LINE\n\n- [x] a\n- [ ] b\n")
    record = replace(full_record(Available()), plan=plan)
    record = replace(record, spec=replace(record.spec, task=plan_task("PLAN.md")))
    written = json.dumps(record_to_json(record))
    assert written.count("THE ONLY COPY OF THIS LINE") == 1
    assert record_from_json(json.loads(written)) == record


def test_a_plan_runs_task_written_before_with_the_plans_text_reads_as_the_task_alone() -> None:
    data = record_to_json(full_record(Available()))
    data["spec"]["task"] = "Carry out the plan in PLAN.md. Its text:\n\n- [ ] a\n- [ ] b"
    assert record_from_json(data).spec.task == "Carry out the plan in PLAN.md."
    prompt_run = record_to_json(
        replace(
            full_record(Available()),
            spec=replace(
                full_record(Available()).spec,
                plan_path=None,
                task="Carry out the plan in X. Its text: y",
            ),
        )
    )
    assert record_from_json(prompt_run).spec.task == "Carry out the plan in X. Its text: y"


def test_the_resets_last_announced_read_back_and_a_record_from_before_has_none() -> None:
    announced = (
        AnnouncedReset("five_hour", NOW + timedelta(minutes=40)),
        AnnouncedReset("seven_day", NOW + timedelta(days=3)),
    )
    record = full_record(WindowExhausted("five_hour"))
    record = replace(record, state=replace(record.state, announced_resets=announced))
    data = json.loads(json.dumps(record_to_json(record)))
    assert record_from_json(data) == record
    del data["state"]["announced_resets"]
    assert record_from_json(data).state.announced_resets == ()


@pytest.mark.parametrize(
    "value",
    [
        ["five_hour"],
        {"five_hour": "2026-12-02T10:00:00+00:00"},
        [{"window": "five_hour", "at": "soon"}],
        [{"window": "five_hour", "at": "2026-12-02T10:00:00"}],
    ],
)
def test_announced_resets_that_are_no_table_of_aware_instants_are_corrupt(value: object) -> None:
    data = record_to_json(full_record(Available()))
    data["state"]["announced_resets"] = value
    with pytest.raises(CorruptRecordError):
        record_from_json(data)


def test_a_run_a_signal_stopped_with_its_silent_turns_and_silence_reads_back() -> None:
    record = full_record(Available())
    stopped = replace(
        record,
        spec=replace(record.spec, silence_seconds=45.0),
        state=replace(
            record.state,
            phase=Phase.FAILED,
            outcome=Outcome.STOPPED,
            interrupt=Interrupt.TERMINATE,
            silent_turns=2,
        ),
    )
    data = json.loads(json.dumps(record_to_json(stopped)))
    assert (data["state"]["interrupt"], data["state"]["silent_turns"]) == ("SIGTERM", 2)
    assert data["spec"]["silence_seconds"] == 45.0
    assert record_from_json(data) == stopped
    assert record_from_json(data).state.exit_code == 143


def test_a_record_of_before_the_watchdog_is_written_as_it_was() -> None:
    data = record_to_json(full_record(Available()))
    # None of them is written while it holds its default: a record of before reads, and
    # is written again, the same.
    assert {"interrupt", "silent_turns"}.isdisjoint(data["state"])
    assert "silence_seconds" not in data["spec"]
    read = record_from_json(data)
    assert (read.state.interrupt, read.state.silent_turns, read.spec.silence_seconds) == (
        None,
        0,
        None,
    )
