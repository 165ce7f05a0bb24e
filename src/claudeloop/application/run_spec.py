"""What a run is made of: its spec from the settings for `run`, and what `resume` may
change of a run that already has one (the merge policy).

The settings come from the configuration adapter (flags over CLAUDELOOP_* variables
over the project's file over the user's), seen through `Settings`: each value says
where it came from, so a refusal can name it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Protocol, TypeVar

from claudeloop.application.errors import UsageError
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.settings import (
    CHECKPOINT,
    CONTINUE_PROMPT,
    CREDITS_PROBE_CEILING,
    CREDITS_PROBE_INTERVAL,
    DONE_MARKER,
    LIMITS,
    MAX_ATTEMPTS,
    MAX_DOLLARS,
    MAX_TURNS,
    MAX_WAIT,
    MODEL,
    PAUSE_AT,
    PERMISSION_MODE,
    PROFILE,
    READY_AHEAD,
    RESET_GRACE,
    REVIEW,
    SAME_FAILURE,
    SANDBOX,
    SANDBOX_ALLOW_DOMAINS,
    SANDBOX_ALLOW_READ,
    SILENCE_TIMEOUT,
    STALL_TURNS,
    UPDATE_PLAN,
    VERIFY,
    VERIFY_TIMEOUT,
    WINDOW_PROBE_INTERVAL,
    WORKTREE,
    WORKTREE_FROM,
    OriginKind,
    Setting,
    Sourced,
)
from claudeloop.domain.budget import Budget
from claudeloop.domain.confinement import Boundary
from claudeloop.domain.limits import (
    GoOn,
    LimitPolicies,
    SwitchProfile,
    parse_action,
)
from claudeloop.domain.loop import VerifyRules, reopen
from claudeloop.domain.overage import PAID_OVERAGE
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.verification import parse_checks
from claudeloop.domain.waiting import WaitPolicyConfig

T = TypeVar("T")

WAIT_SETTINGS: tuple[Setting[timedelta | None], ...] = (
    WINDOW_PROBE_INTERVAL,
    CREDITS_PROBE_INTERVAL,
    CREDITS_PROBE_CEILING,
    RESET_GRACE,
    READY_AHEAD,
    MAX_WAIT,
)
# The sources a new run reads, and a resume: the files were read when the run started,
# and its spec is what they said then.
NEW_SOURCES: tuple[OriginKind, ...] = ("flag", "env", "project", "user", "profile")
RESUME_SOURCES: tuple[OriginKind, ...] = ("flag", "env")


class Settings(Protocol):
    """The effective settings, each typed by its description (`settings.py`) and with
    where it came from, and the profiles defined."""

    @property
    def profiles(self) -> Mapping[str, object]: ...

    def of(self, setting: Setting[T]) -> Sourced[T]: ...


class Overrides:
    """The settings that sources of some kinds set (the command line and the
    environment, say), each to override what a spec already had."""

    def __init__(self, settings: Settings, kinds: tuple[OriginKind, ...]) -> None:
        self.settings = settings
        self.kinds = kinds

    def set(self, setting: Setting[T | None]) -> Sourced[T] | None:
        """The value a source of these kinds gives `setting` (None: none gives one)."""
        sourced = self.settings.of(setting)
        if sourced.value is None or sourced.origin.kind not in self.kinds:
            return None
        return Sourced(sourced.value, sourced.origin)

    def __contains__(self, setting: Setting[object]) -> bool:
        return self.set(setting) is not None

    def value_or(self, setting: Setting[T | None], current: T) -> T:
        """The value set for `setting`, or `current` when none of these sources sets it."""
        given = self.set(setting)
        return current if given is None else given.value


def set_by(settings: Settings, *, kinds: tuple[OriginKind, ...] = NEW_SOURCES) -> Overrides:
    """The settings that a source of the given kinds sets, defaults left out."""
    return Overrides(settings, kinds)


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
    verify, verify_timeout_seconds = verification(given)
    return RunSpec(
        cwd=cwd,
        task=task,
        plan_path=plan_path,
        budget=budget(given),
        wait_policy=wait_policy(given),
        done_marker=settings.of(DONE_MARKER).value,
        marker_fallback=marker_fallback,
        continue_prompt=settings.of(CONTINUE_PROMPT).value,
        model=settings.of(MODEL).value,
        permission_mode=settings.of(PERMISSION_MODE).value,
        profile=settings.of(PROFILE).value,
        pause_at=pause,
        limits=limits,
        update_plan=settings.of(UPDATE_PLAN).value,
        verify=verify,
        verify_timeout_seconds=verify_timeout_seconds,
        silence_seconds=silence_seconds(given),
        # A worktree's run always commits; where the worktree is, the command says.
        checkpoint=settings.of(CHECKPOINT).value,
        sandbox=boundary(given),
    )


def boundary(given: Overrides, base: Boundary | None = None) -> Boundary:
    """Where the model's commands and the checks run: what `given` says over `base` (a
    resume keeps what the run started with unless a flag or variable says otherwise)."""
    start = base or Boundary()
    return Boundary(
        on=given.value_or(SANDBOX, "on" if start.on else "off") == "on",
        allow_domains=tuple(given.value_or(SANDBOX_ALLOW_DOMAINS, list(start.allow_domains))),
        allow_read=tuple(given.value_or(SANDBOX_ALLOW_READ, list(start.allow_read))),
    )


def profile_to_resume_with(record: RunRecord, settings: Settings) -> str | None:
    """The profile whose settings a resume must read instead of `settings`, or None.

    A run keeps its profile unless a flag names another: a profile selected by a file or
    a variable since is a mistake to say, not to act on. With nothing selecting one, the
    run's own profile is read again (it must still be defined)."""
    own = record.spec.profile
    selected = settings.of(PROFILE)
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
    overridden = set_by(settings, kinds=RESUME_SOURCES).set(MODEL)
    if overridden is not None:
        return overridden.value
    if settings.of(PROFILE).value != spec.profile:
        return settings.of(MODEL).value
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
    refuse_new_branch(record, set_by(settings, kinds=("flag",)))
    overrides = set_by(settings, kinds=RESUME_SOURCES)
    profile = settings.of(PROFILE).value
    switched = profile != spec.profile
    new_budget = budget(overrides, spec.budget)
    verify, verify_timeout_seconds = verification(overrides, spec)
    spec = replace(
        spec,
        budget=new_budget,
        wait_policy=wait_policy(overrides, spec.wait_policy),
        model=resumed_model(spec, settings),
        permission_mode=overrides.value_or(PERMISSION_MODE, spec.permission_mode),
        done_marker=overrides.value_or(DONE_MARKER, spec.done_marker),
        continue_prompt=overrides.value_or(CONTINUE_PROMPT, spec.continue_prompt),
        update_plan=overrides.value_or(UPDATE_PLAN, spec.update_plan),
        profile=profile,
        marker_fallback=marker_fallback if switched else spec.marker_fallback,
        verify=verify,
        verify_timeout_seconds=verify_timeout_seconds,
        silence_seconds=silence_seconds(overrides, spec.silence_seconds),
        sandbox=boundary(overrides, spec.sandbox),
    )
    if PAUSE_AT in overrides or LIMITS in overrides:
        pause, limits = pause_and_limits(settings, check_profile)
        spec = replace(
            spec,
            pause_at=pause if PAUSE_AT in overrides else spec.pause_at,
            limits=limits if LIMITS in overrides else spec.limits,
        )
    state = reopen(record.state) if record.state.phase.terminal else record.state
    state = replace(state, ledger=replace(state.ledger, budget=new_budget))
    return replace(record, spec=spec, state=state)


def refuse_new_branch(record: RunRecord, flags: Overrides) -> None:
    """Where a run commits (its worktree, its branch) is chosen when it starts: a flag
    of a resume that would choose otherwise is refused rather than silently ignored.
    (A variable is not refused: it may be set for every run of a shell.)"""
    spec = record.spec
    worktree, checkpoint = flags.set(WORKTREE), flags.set(CHECKPOINT)
    has = f"works in the worktree {spec.worktree}" if spec.worktree else "has no worktree"
    if worktree is not None and worktree.value != (spec.worktree is not None):
        raise UsageError(
            f"{worktree.origin.where}: run {record.run_id} {has}, chosen when it started; "
            "resume it without the flag, or start a new run"
        )
    if WORKTREE_FROM in flags:
        raise UsageError(
            f"--worktree-from: run {record.run_id} {has}, chosen when it started; "
            "resume it without the flag"
        )
    commits = spec.checkpoint or spec.worktree is not None
    if checkpoint is not None and checkpoint.value != commits:
        said = "commits each turn" if commits else "commits no turn"
        raise UsageError(
            f"{checkpoint.origin.where}: run {record.run_id} {said}, chosen when it "
            "started; resume it without the flag, or start a new run"
        )


def pause_and_limits(
    settings: Settings, check_profile: ProfileCheck
) -> tuple[PauseThresholds, LimitPolicies]:
    """The pause thresholds and the limit policies; a switch-profile names a profile that
    must exist and resolve, checked now rather than when the limit is met at 3 a.m."""
    pause = PauseThresholds.parse(settings.of(PAUSE_AT).value or "")
    limits = settings.of(LIMITS)
    actions = tuple((kind, parse_action(action)) for kind, action in (limits.value or {}).items())
    where = limits.origin.describe()
    for kind, action in actions:
        if isinstance(action, GoOn) and kind != PAID_OVERAGE:
            raise UsageError(
                f"limits.{kind} (from {where}): go-on is only for {PAID_OVERAGE} (an answer "
                "on paid overage still comes; a closed window does not); use wait, "
                "wind-down, switch-profile NAME or switch-model MODEL"
            )
    policies = LimitPolicies(actions)
    own = settings.of(PROFILE).value
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


def wait_policy(given: Overrides, base: WaitPolicyConfig | None = None) -> WaitPolicyConfig:
    policy = base or WaitPolicyConfig()
    try:
        return replace(
            policy,
            window_probe_interval=given.value_or(
                WINDOW_PROBE_INTERVAL, policy.window_probe_interval
            ),
            credits_probe_interval=given.value_or(
                CREDITS_PROBE_INTERVAL, policy.credits_probe_interval
            ),
            credits_probe_ceiling=given.value_or(
                CREDITS_PROBE_CEILING, policy.credits_probe_ceiling
            ),
            reset_grace=given.value_or(RESET_GRACE, policy.reset_grace),
            ready_ahead=given.value_or(READY_AHEAD, policy.ready_ahead),
            max_wait=given.value_or(MAX_WAIT, policy.max_wait),
        )
    except ValueError as error:
        origins = ", ".join(
            f"{setting.key} from {sourced.origin.describe()}"
            for setting in WAIT_SETTINGS
            if (sourced := given.set(setting)) is not None
        )
        raise UsageError(f"{error} ({origins})" if origins else str(error)) from None


def budget(given: Overrides, base: Budget | None = None) -> Budget:
    current = base or Budget()
    return replace(
        current,
        max_turns=given.value_or(MAX_TURNS, current.max_turns),
        max_dollars=given.value_or(MAX_DOLLARS, current.max_dollars),
        max_attempts=given.value_or(MAX_ATTEMPTS, current.max_attempts),
    )


def verification(given: Overrides, base: RunSpec | None = None) -> tuple[VerifyRules, float]:
    """The spec's `verify` (what a Done must pass, the brake) and `verify_timeout_seconds`,
    as the settings say over what `base` had. The checks were split once already, when
    the configuration was read (an unsplittable one is refused there)."""
    rules = base.verify if base is not None else VerifyRules()
    timeout = (
        base.verify_timeout_seconds if base is not None else VERIFY_TIMEOUT.default.total_seconds()
    )
    checks = given.set(VERIFY)
    if checks is not None:
        rules = replace(rules, checks=parse_checks(checks.value))
    rules = replace(
        rules,
        review=given.value_or(REVIEW, rules.review),
        stagnation=replace(
            rules.stagnation,
            stall_turns=given.value_or(STALL_TURNS, rules.stagnation.stall_turns),
            same_failure=given.value_or(SAME_FAILURE, rules.stagnation.same_failure),
        ),
    )
    timeout_given = given.set(VERIFY_TIMEOUT)
    if timeout_given is not None:
        timeout = timeout_given.value.total_seconds()
    return rules, timeout


def silence_seconds(given: Overrides, base: float | None = None) -> float | None:
    """How long Claude Code may say nothing in a turn: what `given` says over `base`
    (None: the backend's default, domain.watchdog.silence_for)."""
    silence = given.set(SILENCE_TIMEOUT)
    return base if silence is None else silence.value.total_seconds()


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
