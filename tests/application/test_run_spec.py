"""Building a run's spec: from the settings for `run`, and what `resume` may change."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from claudeloop.application.errors import UsageError
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.run_spec import (
    new_spec,
    profile_to_resume_with,
    refuse_unwritable,
    resumed_model,
    resumed_record,
)
from claudeloop.application.settings import SETTINGS, Origin, OriginKind, Setting, Sourced
from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.limits import SwitchProfile, Wait, WindDown
from claudeloop.domain.loop import Outcome, Phase, RunState
from tests.application.fakes import START

CWD = Path("/work/app")
T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """The effective settings as the configuration adapter gives them: by key, each with
    where it came from; read typed through each setting's description."""

    settings: Mapping[str, Sourced[object]]
    profiles: Mapping[str, object] = field(default_factory=dict)

    def of(self, setting: Setting[T]) -> Sourced[T]:
        return cast(Sourced[T], self.settings[setting.key])


def settings(profiles: tuple[str, ...] = (), **given: tuple[Any, OriginKind]) -> Settings:
    """The defaults, with each `key=(value, "flag" | "env" | "project" | ...)` over them."""
    values = {setting.key: Sourced(setting.default, Origin("default")) for setting in SETTINGS}
    for key, (value, kind) in given.items():
        where = f"--{key.replace('_', '-')}" if kind == "flag" else f"CLAUDELOOP_{key.upper()}"
        values[key] = Sourced(value, Origin(kind, where if kind in ("flag", "env") else kind))
    return Settings(values, profiles={name: object() for name in profiles})


def no_check(name: str, where: str) -> None:
    return None


def spec_of(config: Settings, check: Any = no_check) -> RunSpec:
    return new_spec(
        config, cwd=CWD, task="Build it.", plan_path=None, marker_fallback=True,
        check_profile=check,
    )  # fmt: skip


def run_of(spec: RunSpec, state: RunState | None = None) -> RunRecord:
    state = state or RunState(ledger=BudgetLedger(budget=spec.budget))
    return RunRecord(run_id="run-1", spec=spec, state=state, started_at=START)


def resumed(record: RunRecord, config: Settings, *, marker_fallback: bool = True) -> RunRecord:
    return resumed_record(record, config, marker_fallback=marker_fallback, check_profile=no_check)


# run ------------------------------------------------------------------------------------


def test_a_new_run_takes_what_any_source_says_and_defaults_for_the_rest() -> None:
    spec = spec_of(
        settings(
            max_turns=(5, "project"), model=("opus", "env"), max_wait=(timedelta(hours=2), "flag")
        )
    )
    assert spec.budget == Budget(max_turns=5)
    assert spec.model == "opus"
    assert spec.wait_policy.max_wait == timedelta(hours=2)
    assert spec.permission_mode == "acceptEdits"
    assert spec.profile == "default"


def test_a_wait_policy_that_cannot_hold_names_where_each_value_came_from() -> None:
    config = settings(
        credits_probe_interval=(timedelta(hours=2), "flag"),
        credits_probe_ceiling=(timedelta(hours=1), "project"),
    )
    with pytest.raises(UsageError, match="credits_probe_interval from flag") as raised:
        spec_of(config)
    assert "credits_probe_ceiling from project" in str(raised.value)


def test_a_switch_profile_to_the_runs_own_profile_is_refused() -> None:
    config = settings(
        ("work",), profile=("work", "flag"), limits=({"five_hour": "switch-profile work"}, "flag")
    )
    with pytest.raises(
        UsageError, match=r"limits.five_hour .*switch-profile work is the run's own"
    ):
        spec_of(config)


def test_a_switch_profile_to_an_undefined_profile_names_those_defined() -> None:
    config = settings(("work",), limits=({"credits": "switch-profile spare"}, "project"))
    with pytest.raises(UsageError, match=r"no \[profiles.spare\] is defined \(defined: work\)"):
        spec_of(config)


def test_a_switch_profile_is_checked_to_resolve_before_the_run_starts() -> None:
    checked: list[tuple[str, str]] = []
    config = settings(("spare",), limits=({"credits": "switch-profile spare"}, "project"))
    spec = spec_of(config, check=lambda name, where: checked.append((name, where)))
    assert checked == [("spare", "limits.credits (project)")]
    assert spec.limits.actions == (("credits", SwitchProfile("spare")),)


def test_a_window_the_service_did_not_name_or_claudeloop_does_not_know_takes_a_policy() -> None:
    spec = spec_of(settings(limits=({"unknown": "wind-down"}, "project")))
    assert spec.limits.actions == (("unknown", WindDown()),)


# resume: which profile ------------------------------------------------------------------


def test_a_resume_keeps_the_profile_when_nothing_selects_another() -> None:
    record = run_of(replace(spec_of(settings()), profile="work"))
    assert profile_to_resume_with(record, settings(("work",))) == "work"
    assert profile_to_resume_with(record, settings(("work",), profile=("work", "env"))) is None


def test_a_resume_switches_profile_only_on_a_flag() -> None:
    record = run_of(replace(spec_of(settings()), profile="work"))
    assert profile_to_resume_with(record, settings(("work",), profile=("spare", "flag"))) is None
    with pytest.raises(UsageError, match="env CLAUDELOOP_PROFILE selects 'spare'"):
        profile_to_resume_with(record, settings(("work",), profile=("spare", "env")))


def test_a_resume_of_a_profile_no_file_defines_now_is_refused() -> None:
    record = run_of(replace(spec_of(settings()), profile="work"))
    with pytest.raises(UsageError, match=r"define \[profiles.work\] again"):
        profile_to_resume_with(record, settings())


# resume: what may change -----------------------------------------------------------------


def test_only_flags_and_variables_change_a_resumed_run() -> None:
    record = run_of(spec_of(settings(max_turns=(5, "flag"))))
    again = resumed(record, settings(max_turns=(50, "project"), done_marker=("FIN", "project")))
    assert again.spec == record.spec
    raised = resumed(record, settings(max_turns=(9, "env"), done_marker=("FIN", "flag")))
    assert raised.spec.budget == Budget(max_turns=9)
    assert raised.spec.done_marker == "FIN"


def test_a_raised_budget_reopens_an_exhausted_run_with_its_ledger_kept() -> None:
    spec = spec_of(settings(max_turns=(2, "flag")))
    ledger = BudgetLedger(budget=spec.budget, turns=2, attempts=3, dollars=0.5)
    ended = RunState(
        phase=Phase.FAILED, outcome=Outcome.BUDGET_EXHAUSTED, reason="budget", ledger=ledger
    )
    again = resumed(run_of(spec, ended), settings(max_turns=(4, "flag")))
    assert again.state.phase is Phase.PREFLIGHT
    assert again.state.outcome is None
    assert (again.state.ledger.turns, again.state.ledger.dollars) == (2, 0.5)
    assert again.state.ledger.budget == Budget(max_turns=4)


def test_a_run_waiting_when_it_stopped_keeps_its_phase() -> None:
    spec = spec_of(settings())
    waiting = RunState(phase=Phase.WAITING, ledger=BudgetLedger(budget=spec.budget))
    assert resumed(run_of(spec, waiting), settings()).state.phase is Phase.WAITING


def test_a_profile_switch_takes_the_new_profiles_model_and_marker_rule() -> None:
    spec = replace(spec_of(settings(model=("opus", "flag"))), marker_fallback=True)
    switched = settings(("local",), profile=("local", "flag"), model=("qwen", "profile"))
    assert resumed_model(spec, switched) == "qwen"
    again = resumed(run_of(spec), switched, marker_fallback=False)
    assert (again.spec.profile, again.spec.model, again.spec.marker_fallback) == (
        "local",
        "qwen",
        False,
    )
    kept = resumed(run_of(spec), settings(), marker_fallback=False)
    assert (kept.spec.model, kept.spec.marker_fallback) == ("opus", True)
    assert resumed_model(spec, settings(model=("haiku", "env"))) == "haiku"


def test_limits_and_pause_change_only_when_a_flag_or_variable_gives_them() -> None:
    spec = spec_of(settings(("spare",), limits=({"credits": "switch-profile spare"}, "flag")))
    again = resumed(run_of(spec), settings(("spare",), pause_at=("5h=90%", "env")))
    assert again.spec.limits == spec.limits
    assert again.spec.pause_at != spec.pause_at
    waits = resumed(run_of(spec), settings(limits=({"credits": "wait"}, "flag")))
    assert waits.spec.limits.actions == (("credits", Wait()),)
    assert waits.spec.pause_at == spec.pause_at


def test_update_plan_is_turned_on_by_a_flag_on_resume() -> None:
    spec = spec_of(settings())
    assert resumed(run_of(spec), settings(update_plan=(True, "flag"))).spec.update_plan


def test_a_resume_that_would_choose_another_branch_is_refused_naming_the_flag() -> None:
    plain = run_of(spec_of(settings()))
    with pytest.raises(UsageError, match=r"^--worktree: run run-1 has no worktree, chosen"):
        resumed(plain, settings(worktree=(True, "flag")))
    with pytest.raises(UsageError, match=r"^--checkpoint: run run-1 commits no turn"):
        resumed(plain, settings(checkpoint=(True, "flag")))
    inside = run_of(replace(spec_of(settings()), worktree=Path("/state/wt/run-1")))
    with pytest.raises(UsageError, match=r"works in the worktree /state/wt/run-1"):
        resumed(inside, settings(worktree=(False, "flag")))
    with pytest.raises(UsageError, match=r"^--worktree-from: run run-1 works in"):
        resumed(inside, settings(worktree_from=("working-tree", "flag")))


def test_a_resume_saying_what_the_run_already_does_or_a_variable_goes_on() -> None:
    inside = run_of(replace(spec_of(settings()), worktree=Path("/state/wt/run-1")))
    again = resumed(inside, settings(worktree=(True, "flag"), checkpoint=(True, "flag")))
    assert again.spec.worktree == Path("/state/wt/run-1")
    plain = run_of(spec_of(settings()))
    assert resumed(plain, settings(worktree=(True, "env"))).spec.worktree is None


# the files a run writes ------------------------------------------------------------------


def test_a_run_that_could_not_save_its_files_is_refused_before_any_turn() -> None:
    spec = replace(spec_of(settings()), plan_path=CWD / "plans" / "PLAN.md", update_plan=True)

    def fine(where: Path) -> str | None:
        return None

    def read_only(where: Path) -> str | None:
        return "is read-only" if where == CWD / "plans" else None

    with pytest.raises(UsageError, match="cannot write the run's files: disk full"):
        refuse_unwritable(spec, run_files="disk full", why_not_writable=fine)
    with pytest.raises(UsageError, match=r"plan file .*PLAN.md: is read-only, and update_plan"):
        refuse_unwritable(spec, run_files=None, why_not_writable=read_only)
    with pytest.raises(UsageError, match="--cwd is read-only, and Claude Code edits"):
        refuse_unwritable(spec, run_files=None, why_not_writable=lambda _: "is read-only")
    planning = replace(spec, permission_mode="plan", update_plan=False)
    refuse_unwritable(planning, run_files=None, why_not_writable=lambda _: "is read-only")


def test_the_silence_a_turn_may_keep_is_the_runs_and_a_resume_may_change_it() -> None:
    assert spec_of(settings()).silence_seconds is None  # the backend's default
    spec = spec_of(settings(silence_timeout=(timedelta(minutes=2), "project")))
    assert spec.silence_seconds == 120.0
    kept = resumed(run_of(spec), settings())
    assert kept.spec.silence_seconds == 120.0
    changed = resumed(run_of(spec), settings(silence_timeout=(timedelta(seconds=30), "env")))
    assert changed.spec.silence_seconds == 30.0
