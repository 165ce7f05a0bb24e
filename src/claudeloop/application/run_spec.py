"""What a run is made of: its spec from the settings for `run`, and what `resume` may
change of a run that already has one (the merge policy).

The settings come from the configuration adapter (flags over CLAUDELOOP_* variables
over the project's file over the user's), seen through `Settings`: each value says
where it came from, so a refusal can name it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from claudeloop.application.errors import UsageError
from claudeloop.application.records import DEFAULT_VERIFY_TIMEOUT_SECONDS, RunRecord, RunSpec
from claudeloop.domain.budget import Budget
from claudeloop.domain.limits import GoOn, LimitPolicies, SwitchProfile, parse_action
from claudeloop.domain.loop import VerifyRules, reopen
from claudeloop.domain.overage import PAID_OVERAGE
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.verification import parse_checks
from claudeloop.domain.waiting import WaitPolicyConfig

WAIT_KEYS = (
    "window_probe_interval",
    "credits_probe_interval",
    "credits_probe_ceiling",
    "reset_grace",
    "max_wait",
)
BUDGET_KEYS = ("max_turns", "max_dollars", "max_attempts")
# The sources a resume reads: the files were read when the run started, and its spec
# is what they said then.
RESUME_SOURCES = ("flag", "env")


class Origin(Protocol):
    @property
    def kind(self) -> str:
        """flag, env, project, user, profile or default."""
        ...

    def describe(self) -> str:
        """Where the value came from, for a message: `flag --max-turns`, a file."""
        ...


class Setting(Protocol):
    @property
    def value(self) -> Any: ...

    @property
    def origin(self) -> Origin: ...


class Settings(Protocol):
    """The effective settings, each with its origin, and the profiles defined."""

    @property
    def settings(self) -> Mapping[str, Setting]: ...

    @property
    def profiles(self) -> Mapping[str, object]: ...

    @property
    def profile_name(self) -> str: ...

    def value(self, key: str) -> Any: ...


# Checks that the profile named can be used as a backend (its variables resolve); raises
# UsageError naming `where` when not. Used for a switch-profile policy's detour.
ProfileCheck = Callable[[str, str], object]


def new_spec(
    settings: Settings,
    *,
    cwd: Path,
    task: str,
    plan_path: Path | None,
    marker_fallback: bool,
    check_profile: ProfileCheck,
) -> RunSpec:
    """The spec of a new run: every source may say something, defaults fill the rest."""
    given = set_by(settings)
    pause, limits = pause_and_limits(settings, check_profile)
    return RunSpec(
        cwd=cwd,
        task=task,
        plan_path=plan_path,
        budget=budget(given),
        wait_policy=wait_policy(given),
        done_marker=settings.value("done_marker"),
        marker_fallback=marker_fallback,
        continue_prompt=settings.value("continue_prompt"),
        model=settings.value("model"),
        permission_mode=settings.value("permission_mode"),
        profile=settings.profile_name,
        pause_at=pause,
        limits=limits,
        update_plan=bool(settings.value("update_plan")),
        **verification(given),
    )


def profile_to_resume_with(record: RunRecord, settings: Settings) -> str | None:
    """The profile whose settings a resume must read instead of `settings`, or None.

    A run keeps its profile unless a flag names another: a profile selected by a file or
    a variable since is a mistake to say, not to act on. With nothing selecting one, the
    run's own profile is read again (it must still be defined)."""
    own = record.spec.profile
    selected = settings.settings["profile"]
    if selected.value == own:
        return None
    match selected.origin.kind:
        case "flag":
            return None
        case "default":
            if own not in settings.profiles:
                raise UsageError(
                    f"run {record.run_id} was made with profile {own!r}, which no "
                    f"configuration file defines now; define [profiles.{own}] "
                    "again or resume with --profile NAME"
                )
            return own
        case _:
            raise UsageError(
                f"run {record.run_id} was made with profile {own!r} but "
                f"{selected.origin.describe()} selects {selected.value!r}; resume with "
                f"--profile {own} to keep its backend or --profile "
                f"{selected.value} to switch"
            )


def resumed_model(spec: RunSpec, settings: Settings) -> str | None:
    """The model a resumed run asks for: a flag's or a variable's, else the new profile's
    on a switch, else the run's own."""
    overrides = set_by(settings, kinds=RESUME_SOURCES)
    if "model" in overrides:
        return str(overrides["model"].value)
    if settings.profile_name != spec.profile:
        model = settings.value("model")
        return None if model is None else str(model)
    return spec.model


def resumed_record(
    record: RunRecord,
    settings: Settings,
    *,
    marker_fallback: bool,
    check_profile: ProfileCheck,
) -> RunRecord:
    """The record a resume drives on: the run's spec with what the flags and variables
    change of it (a budget raised, a profile switched), and a run that ended short of
    done reopened with its ledger kept and the new budget."""
    spec = record.spec
    overrides = set_by(settings, kinds=RESUME_SOURCES)
    switched = settings.profile_name != spec.profile
    new_budget = budget(overrides, spec.budget)
    spec = replace(
        spec,
        budget=new_budget,
        wait_policy=wait_policy(overrides, spec.wait_policy),
        model=resumed_model(spec, settings),
        permission_mode=_override(overrides, "permission_mode", spec.permission_mode),
        done_marker=_override(overrides, "done_marker", spec.done_marker),
        continue_prompt=_override(overrides, "continue_prompt", spec.continue_prompt),
        update_plan=bool(_override(overrides, "update_plan", spec.update_plan)),
        profile=settings.profile_name,
        marker_fallback=marker_fallback if switched else spec.marker_fallback,
    )
    if "pause_at" in overrides or "limits" in overrides:
        pause, limits = pause_and_limits(settings, check_profile)
        spec = replace(
            spec,
            pause_at=pause if "pause_at" in overrides else spec.pause_at,
            limits=limits if "limits" in overrides else spec.limits,
        )
    spec = replace(spec, **verification(overrides, spec))
    state = reopen(record.state) if record.state.phase.terminal else record.state
    state = replace(state, ledger=replace(state.ledger, budget=new_budget))
    return replace(record, spec=spec, state=state)


def pause_and_limits(
    settings: Settings, check_profile: ProfileCheck
) -> tuple[PauseThresholds, LimitPolicies]:
    """The pause thresholds and the limit policies; a switch-profile names a profile that
    must exist and resolve, checked now rather than when the limit is met at 3 a.m."""
    pause = PauseThresholds.parse(settings.value("pause_at") or "")
    actions = tuple(
        (kind, parse_action(action)) for kind, action in (settings.value("limits") or {}).items()
    )
    where = settings.settings["limits"].origin.describe()
    for kind, action in actions:
        if isinstance(action, GoOn) and kind != PAID_OVERAGE:
            raise UsageError(
                f"limits.{kind} (from {where}): go-on is only for {PAID_OVERAGE} (an answer "
                "on paid overage still comes; a closed window does not); use wait, "
                "wind-down, switch-profile NAME or switch-model MODEL"
            )
    policies = LimitPolicies(actions)
    own = settings.profile_name
    itself = policies.switch_to_itself(own)
    if itself is not None:
        raise UsageError(
            f"limits.{itself} (from {where}): switch-profile {own} is the "
            "run's own profile; name another [profiles.NAME]"
        )
    for kind, action in actions:
        if isinstance(action, SwitchProfile):
            if action.profile not in settings.profiles:
                defined = ", ".join(sorted(settings.profiles)) or "none"
                raise UsageError(
                    f"limits.{kind} (from {where}): switch-profile {action.profile}: no "
                    f"[profiles.{action.profile}] is defined (defined: {defined}); add it to "
                    "claudeloop.toml or the user config.toml"
                )
            check_profile(action.profile, f"limits.{kind} ({where})")
    return pause, policies


def wait_policy(
    values: Mapping[str, Setting], base: WaitPolicyConfig | None = None
) -> WaitPolicyConfig:
    policy = base or WaitPolicyConfig()
    changes = {key: values[key].value for key in WAIT_KEYS if key in values}
    try:
        return replace(policy, **changes)
    except ValueError as error:
        origins = ", ".join(
            f"{key} from {values[key].origin.describe()}" for key in WAIT_KEYS if key in values
        )
        raise UsageError(f"{error} ({origins})" if origins else str(error)) from None


def budget(values: Mapping[str, Setting], base: Budget | None = None) -> Budget:
    current = base or Budget()
    changes = {key: values[key].value for key in BUDGET_KEYS if key in values}
    return replace(current, **changes)


def verification(values: Mapping[str, Setting], base: RunSpec | None = None) -> dict[str, Any]:
    """The spec's `verify` (what a Done must pass, the brake) and `verify_timeout_seconds`,
    as the settings say over what `base` had. The checks were split once already, when
    the configuration was read (an unsplittable one is refused there)."""
    rules = base.verify if base is not None else VerifyRules()
    timeout = base.verify_timeout_seconds if base is not None else DEFAULT_VERIFY_TIMEOUT_SECONDS
    if "verify" in values:
        rules = replace(rules, checks=parse_checks(values["verify"].value))
    if "review" in values:
        rules = replace(rules, review=bool(values["review"].value))
    brake = {key: values[key].value for key in ("stall_turns", "same_failure") if key in values}
    if brake:
        rules = replace(rules, stagnation=replace(rules.stagnation, **brake))
    if "verify_timeout" in values:
        timeout = values["verify_timeout"].value.total_seconds()
    return {"verify": rules, "verify_timeout_seconds": timeout}


def set_by(settings: Settings, *, kinds: tuple[str, ...] | None = None) -> dict[str, Setting]:
    """The settings that a source sets (of the given kinds), defaults left out."""
    return {
        key: setting
        for key, setting in settings.settings.items()
        if setting.value is not None
        and (setting.origin.kind in kinds if kinds else setting.origin.kind != "default")
    }


def _override(values: Mapping[str, Setting], key: str, current: Any) -> Any:
    return values[key].value if key in values else current


def refuse_unwritable_run_files(run_files: str | None) -> None:
    """Refuses a run whose own files cannot be written (`run_files`: why, or None)."""
    if run_files is not None:
        raise UsageError(f"cannot write the run's files: {run_files}")


def refuse_unwritable(
    spec: RunSpec, *, run_files: str | None, why_not_writable: Callable[[Path], str | None]
) -> None:
    """Refuses, before any turn, a run that could not save what it does: its own files
    (`run_files`: why they cannot be written, or None), the files Claude Code edits in
    the working directory, the checkmarks written into the plan."""
    refuse_unwritable_run_files(run_files)
    if spec.permission_mode != "plan" and (problem := why_not_writable(spec.cwd)):
        raise UsageError(
            f"--cwd {problem}, and Claude Code edits files there; fix its permissions or "
            "use --permission-mode plan"
        )
    if spec.update_plan and spec.plan_path and (problem := why_not_writable(spec.plan_path.parent)):
        raise UsageError(
            f"plan file {spec.plan_path}: {problem}, and update_plan writes its checkmarks; "
            "fix the permissions or set update_plan = false"
        )
