"""What `run`, `resume` and `sessions` do, between parsing and the composition root."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory, runs_root
from claudeloop.adapters.run_directory.codec import CorruptRecordError
from claudeloop.adapters.run_directory.layout import list_runs, run_id_problem
from claudeloop.adapters.run_directory.lock import live_driver
from claudeloop.adapters.run_directory.writable import why_no_runs_root, why_not_writable
from claudeloop.application.prompts import plan_task
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.summary import result_object
from claudeloop.cli.bootstrap import (
    Backend,
    backend_for,
    create_directory,
    drive,
    new_record,
    write_summary,
)
from claudeloop.cli.errors import UserError
from claudeloop.cli.output import print_json
from claudeloop.cli.prompt_source import read_task_file, task_prompt
from claudeloop.domain.budget import Budget
from claudeloop.domain.limits import LimitPolicies, SwitchProfile, parse_action
from claudeloop.domain.loop import Outcome, Phase, VerifyRules, reopen
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.verification import parse_checks
from claudeloop.domain.waiting import WaitPolicyConfig

if TYPE_CHECKING:
    from claudeloop.adapters.config.loading import Configuration, Setting
    from claudeloop.adapters.config.profiles import BackendProfile
    from claudeloop.adapters.notify.sender import NotifyTargets

_WAIT_KEYS = (
    "window_probe_interval",
    "credits_probe_interval",
    "credits_probe_ceiling",
    "reset_grace",
    "max_wait",
)
_BUDGET_KEYS = ("max_turns", "max_dollars", "max_attempts")


def checked_run_id(run_id: str) -> str:
    """`run_id`, or a one-line error: a run id names one directory under runs/, so
    `../x`, `/abs` or `a/b` would read or write somewhere else."""
    problem = run_id_problem(run_id)
    if problem is not None:
        shown = repr(run_id if len(run_id) <= 60 else run_id[:60] + "...")
        raise UserError(f"--run-id {shown} {problem}")
    return run_id


def working_directory(cwd: Path | None) -> Path:
    chosen = (cwd or Path.cwd()).expanduser()
    if not chosen.is_dir():
        raise UserError(f"--cwd {chosen}: no such directory")
    return chosen.resolve()


def read_plan(plan: Path, cwd: Path) -> tuple[Path, str]:
    return read_task_file(
        plan,
        cwd,
        named="plan file",
        kind="a markdown file",
        empty="write the task or a - [ ] checklist in it",
    )


def configuration(cwd: Path, options: dict[str, Any]) -> Configuration:
    """Flags over CLAUDELOOP_* variables over ./claudeloop.toml over the user's file."""
    # Imported here: status, logs and stop never read the configuration (nor pydantic).
    from claudeloop.adapters.config.loading import load_configuration
    from claudeloop.adapters.config.schema import SETTING_KEYS

    flags = {key: options.get(key) for key in SETTING_KEYS}
    # A repeatable flag not given is an empty tuple: no flag, not "notify nowhere".
    given = flags.get("notify")
    flags["notify"] = list(given) if given else None
    limits = flags.get("limits")
    flags["limits"] = dict(limits) if limits else None
    checks = flags.get("verify")
    flags["verify"] = list(checks) if checks else None
    return load_configuration(cwd=cwd, flags=flags, environ=os.environ)


def backend_profile(config: Configuration, model: str | None) -> BackendProfile:
    from claudeloop.adapters.config.profiles import resolve_profile

    return resolve_profile(config, os.environ, model=model)


def notify_targets(config: Configuration) -> NotifyTargets | None:
    """Where notifications go, checked before the run starts: apprise must be installed
    and know each URL's service. Read from every source on `resume` too: it is about
    where the person is now, not what the run was started with."""
    urls = config.value("notify")
    if not urls:
        return None
    from claudeloop.adapters.notify.sender import NotifyTargets, NotifyUnavailable, check_urls

    try:
        check_urls(urls)
    except NotifyUnavailable as error:
        where = config.settings["notify"].origin.describe()
        raise UserError(f"notify (from {where}): {error}") from None
    return NotifyTargets(urls=tuple(urls), on=frozenset(config.value("notify_on")))


def pause_and_limits(config: Configuration, cwd: Path) -> tuple[PauseThresholds, LimitPolicies]:
    """The pause thresholds and the limit policies; a switch-profile names a profile that
    must exist, checked now rather than when the limit is met at 3 a.m."""
    pause = PauseThresholds.parse(config.value("pause_at") or "")
    actions = tuple(
        (kind, parse_action(action)) for kind, action in (config.value("limits") or {}).items()
    )
    policies = LimitPolicies(actions)
    where = config.settings["limits"].origin.describe()
    itself = policies.switch_to_itself(config.profile_name)
    if itself is not None:
        raise UserError(
            f"limits.{itself} (from {where}): switch-profile {config.profile_name} is the "
            "run's own profile; name another [profiles.NAME]"
        )
    for kind, action in actions:
        if isinstance(action, SwitchProfile):
            if action.profile not in config.profiles:
                defined = ", ".join(sorted(config.profiles)) or "none"
                raise UserError(
                    f"limits.{kind} (from {where}): switch-profile {action.profile}: no "
                    f"[profiles.{action.profile}] is defined (defined: {defined}); add it to "
                    "claudeloop.toml or the user config.toml"
                )
            profile_gateway_backend(cwd, action.profile, where=f"limits.{kind} ({where})")
    return pause, policies


def profile_gateway_backend(cwd: Path, name: str, *, where: str) -> Backend:
    """The backend of profile `name` (a limit policy's detour), or a one-line error."""
    from claudeloop.adapters.config.loading import ConfigError, load_configuration
    from claudeloop.adapters.config.profiles import resolve_profile

    try:
        other = load_configuration(cwd=cwd, flags={"profile": name}, environ=os.environ)
        return backend_for(resolve_profile(other, os.environ))
    except ConfigError as error:
        raise UserError(f"{where}: {error}") from None


def _detours(cwd: Path) -> Callable[[str], Backend]:
    def backend_of(name: str) -> Backend:
        return profile_gateway_backend(cwd, name, where=f"switch-profile {name}")

    return backend_of


def shared_capacity_dir(config: Configuration) -> Path | None:
    """Where the loops on one account share capacity; None with share_capacity off."""
    if not config.value("share_capacity"):
        return None
    from claudeloop.adapters.shared_capacity import capacity_directory

    return capacity_directory(os.environ)


def wait_policy(
    values: dict[str, Setting], base: WaitPolicyConfig | None = None
) -> WaitPolicyConfig:
    policy = base or WaitPolicyConfig()
    changes = {key: values[key].value for key in _WAIT_KEYS if key in values}
    try:
        return replace(policy, **changes)
    except ValueError as error:
        origins = ", ".join(
            f"{key} from {values[key].origin.describe()}" for key in _WAIT_KEYS if key in values
        )
        raise UserError(f"{error} ({origins})" if origins else str(error)) from None


def budget(values: dict[str, Setting], base: Budget | None = None) -> Budget:
    current = base or Budget()
    changes = {key: values[key].value for key in _BUDGET_KEYS if key in values}
    return replace(current, **changes)


def verification(
    values: dict[str, Setting], base: RunSpec | None = None
) -> tuple[VerifyRules, float]:
    """What a Done must pass and the brake, as the settings say over what `base` had;
    and the timeout of one check, in seconds."""
    rules = base.verify if base is not None else VerifyRules()
    timeout = base.verify_timeout_seconds if base is not None else 600.0
    if "verify" in values:
        rules = replace(rules, checks=parse_checks(values["verify"].value))
    if "review" in values:
        rules = replace(rules, review=bool(values["review"].value))
    brake = {key: values[key].value for key in ("stall_turns", "same_failure") if key in values}
    if brake:
        rules = replace(rules, stagnation=replace(rules.stagnation, **brake))
    if "verify_timeout" in values:
        timeout = values["verify_timeout"].value.total_seconds()
    return rules, timeout


def _set(config: Configuration, *, kinds: tuple[str, ...] | None = None) -> dict[str, Setting]:
    """The settings that a source sets (of the given kinds), defaults left out."""
    return {
        key: setting
        for key, setting in config.settings.items()
        if setting.value is not None
        and (setting.origin.kind in kinds if kinds else setting.origin.kind != "default")
    }


def run(
    *,
    plan: Path | None,
    prompt: str | None,
    run_id: str | None,
    backend: Backend | None = None,
    prompt_file: Path | None = None,
    **options: Any,
) -> None:
    if run_id is not None:
        checked_run_id(run_id)
    cwd = working_directory(options.get("cwd"))
    if (plan is None) == (prompt is None and prompt_file is None):
        raise UserError(
            "give either a PLAN file or --prompt TEXT (or --prompt-file PATH), "
            "not both and not neither"
        )
    prompt = task_prompt(prompt, prompt_file, cwd=cwd)
    if prompt is not None and not prompt.strip():
        raise UserError("--prompt is empty; say what the task is")
    if run_id is None:
        refuse_beside_a_live_run(cwd)
    config = configuration(cwd, options)
    plan_path: Path | None = None
    if plan is not None:
        plan_path, text = read_plan(plan, cwd)
        task = plan_task(plan_path.name, text)
    else:
        task = str(prompt)
    model = config.value("model")
    chosen = backend or backend_for(backend_profile(config, model))
    values = _set(config)
    pause, limits = pause_and_limits(config, cwd)
    spec = RunSpec(
        cwd=cwd,
        task=task,
        plan_path=plan_path,
        budget=budget(values),
        wait_policy=wait_policy(values),
        done_marker=config.value("done_marker"),
        marker_fallback=chosen.marker_fallback,
        continue_prompt=config.value("continue_prompt"),
        model=model,
        permission_mode=config.value("permission_mode"),
        profile=config.profile_name,
        pause_at=pause,
        limits=limits,
        update_plan=bool(config.value("update_plan")),
    )
    rules, timeout = verification(_set(config))
    spec = replace(spec, verify=rules, verify_timeout_seconds=timeout)
    notify = notify_targets(config)
    check_writable(spec, why_no_runs_root(cwd))
    record = new_record(spec, run_id)
    directory = create_directory(record)
    finish(
        drive(
            directory,
            record,
            backend=chosen,
            resumed=False,
            quiet=bool(options.get("quiet")) or bool(options.get("as_json")),
            verbose=bool(options.get("verbose")),
            notify=notify,
            detours=_detours(cwd),
            capacity_dir=shared_capacity_dir(config),
        ),
        as_json=bool(options.get("as_json")),
    )


def live_run(cwd: Path) -> tuple[RunDirectory, int] | None:
    """The newest run of `cwd` a live driver is driving, and the driver's pid."""
    for directory in list_runs(cwd):
        pid = live_driver(directory.lock_path)
        if pid is not None:
            return directory, pid
    return None


def refuse_beside_a_live_run(cwd: Path) -> None:
    """A second run in one directory is a mistake unless asked for by name: the two
    would edit the same files, and status, logs and stop could pick the wrong one."""
    live = live_run(cwd)
    if live is not None:
        directory, pid = live
        raise UserError(
            f"run {directory.run_id} is live in {cwd} (process {pid}); watch it with "
            "`claudeloop status`, or give --run-id NAME to start another beside it on purpose"
        )


def check_writable(spec: RunSpec, run_files: str | None) -> None:
    """Refuses, before any turn, a run that could not save what it does: its own files
    (`run_files`: why they cannot be written, or None), the files Claude Code edits in
    the working directory, the checkmarks written into the plan."""
    if run_files is not None:
        raise UserError(f"cannot write the run's files: {run_files}")
    if spec.permission_mode != "plan" and (problem := why_not_writable(spec.cwd)):
        raise UserError(
            f"--cwd {problem}, and Claude Code edits files there; fix its permissions or "
            "use --permission-mode plan"
        )
    if spec.update_plan and spec.plan_path and (problem := why_not_writable(spec.plan_path.parent)):
        raise UserError(
            f"plan file {spec.plan_path}: {problem}, and update_plan writes its checkmarks; "
            "fix the permissions or set update_plan = false"
        )


def find_run(cwd: Path, run_id: str | None, session_id: str | None) -> RunDirectory:
    if run_id is not None:
        directory = RunDirectory(runs_root(cwd) / checked_run_id(run_id))
        if not directory.path.is_dir():
            raise UserError(f"--run-id {run_id}: no such run in {runs_root(cwd)}")
        return directory
    runs = list_runs(cwd)
    if session_id is not None:
        for directory in runs:
            try:
                if directory.load().session_id == session_id:
                    return directory
            except (OSError, CorruptRecordError):
                continue
        raise UserError(f"--session-id {session_id}: no run of {cwd} used that session")
    if not runs:
        raise UserError(f"no claudeloop run in {cwd}; start one with `claudeloop run PLAN`")
    return runs[0]


def load_record(directory: RunDirectory) -> RunRecord:
    try:
        return directory.load()
    except FileNotFoundError:
        raise UserError(
            f"{directory.state_path}: missing; the run never started a turn "
            "(start a new one with `claudeloop run`)"
        ) from None
    except CorruptRecordError as error:
        raise UserError(f"{directory.state_path}: unreadable ({error})") from None
    except OSError as error:
        raise UserError(f"{directory.state_path}: cannot be read ({error.strerror})") from None


def write_missing_summary(directory: RunDirectory, record: RunRecord) -> None:
    """summary.md of a run that ended without one (killed after its last save), written
    when the run is next looked at; nothing if it cannot be written."""
    if not record.state.phase.terminal or directory.summary_path.exists():
        return
    if live_driver(directory.lock_path) is not None:
        return  # its driver is about to write it
    with contextlib.suppress(OSError):
        write_summary(directory, record, Redactor.from_environment(os.environ))


def resume(
    *,
    run_id: str | None,
    session_id: str | None,
    backend: Backend | None = None,
    **options: Any,
) -> None:
    """Continue a run with the settings it started with; flags and CLAUDELOOP_*
    variables change them (the files were read when it started). Its profile changes
    only when --profile names the new one."""
    cwd = working_directory(options.get("cwd"))
    directory = find_run(cwd, run_id, session_id)
    record = load_record(directory)
    write_missing_summary(directory, record)
    state = record.state
    if state.outcome is Outcome.DONE:
        click.echo(f"claudeloop: run {record.run_id} already finished: done", err=True)
        finish(record, as_json=bool(options.get("as_json")))
    spec = record.spec
    config = configuration(cwd, options)
    selected = config.settings["profile"]
    if selected.value != spec.profile:
        if selected.origin.kind in ("env", "project", "user"):
            raise UserError(
                f"run {record.run_id} was made with profile {spec.profile!r} but "
                f"{selected.origin.describe()} selects {selected.value!r}; resume with "
                f"--profile {spec.profile} to keep its backend or --profile "
                f"{selected.value} to switch"
            )
        if selected.origin.kind == "default":
            # Nothing selects a profile now: the run keeps the one it started with.
            if spec.profile not in config.profiles:
                raise UserError(
                    f"run {record.run_id} was made with profile {spec.profile!r}, which no "
                    f"configuration file defines now; define [profiles.{spec.profile}] "
                    "again or resume with --profile NAME"
                )
            config = configuration(cwd, {**options, "profile": spec.profile})
    switched = config.profile_name != spec.profile
    overrides = _set(config, kinds=("flag", "env"))
    model = overrides["model"].value if "model" in overrides else spec.model
    if switched and "model" not in overrides:
        model = config.value("model")
    chosen = backend or backend_for(backend_profile(config, model))
    notify = notify_targets(config)
    new_budget = budget(overrides, spec.budget)
    spec = replace(
        spec,
        budget=new_budget,
        wait_policy=wait_policy(overrides, spec.wait_policy),
        model=model,
        permission_mode=_override(overrides, "permission_mode", spec.permission_mode),
        done_marker=_override(overrides, "done_marker", spec.done_marker),
        continue_prompt=_override(overrides, "continue_prompt", spec.continue_prompt),
        profile=config.profile_name,
        marker_fallback=chosen.marker_fallback if switched else spec.marker_fallback,
    )
    if "update_plan" in overrides:
        spec = replace(spec, update_plan=bool(overrides["update_plan"].value))
    if "pause_at" in overrides or "limits" in overrides:
        pause, limits = pause_and_limits(config, cwd)
        spec = replace(
            spec,
            pause_at=pause if "pause_at" in overrides else spec.pause_at,
            limits=limits if "limits" in overrides else spec.limits,
        )
    rules, timeout = verification(overrides, spec)
    spec = replace(spec, verify=rules, verify_timeout_seconds=timeout)
    if state.phase.terminal:
        state = reopen(state)
    state = replace(state, ledger=replace(state.ledger, budget=new_budget))
    record = replace(record, spec=spec, state=state)
    check_writable(spec, why_not_writable(directory.path))
    finish(
        drive(
            directory,
            record,
            backend=chosen,
            resumed=state.phase is not Phase.PREFLIGHT,
            quiet=bool(options.get("quiet")) or bool(options.get("as_json")),
            verbose=bool(options.get("verbose")),
            notify=notify,
            detours=_detours(cwd),
            capacity_dir=shared_capacity_dir(config),
        ),
        as_json=bool(options.get("as_json")),
    )


def _override(values: dict[str, Setting], key: str, current: Any) -> Any:
    return values[key].value if key in values else current


def finish(record: RunRecord, *, as_json: bool) -> None:
    result = result_object(record)
    if as_json:
        print_json(result)
    sys.exit(result["exit_code"])


def sessions(*, cwd: Path | None, as_json: bool, limit: int) -> None:
    from claudeloop.adapters.claude_sessions import list_claude_sessions

    directory = working_directory(cwd)
    found = list_claude_sessions(directory, limit)
    if as_json:
        print_json(
            [
                {
                    "session_id": s.session_id,
                    "summary": s.summary,
                    "last_modified": s.last_modified.isoformat(),
                }
                for s in found
            ]
        )
        return
    if not found:
        click.echo(f"no Claude sessions in {directory}")
        return
    for s in found:
        click.echo(f"{s.last_modified:%Y-%m-%d %H:%M}  {s.session_id}  {s.summary}")
