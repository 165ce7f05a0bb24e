"""What `run`, `resume` and `sessions` do, between parsing and the composition root."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from claudeloop.adapters.run_directory import RunDirectory, runs_root
from claudeloop.adapters.run_directory.codec import CorruptRecordError
from claudeloop.adapters.run_directory.layout import list_runs
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.summary import result_object
from claudeloop.cli.bootstrap import Backend, create_directory, default_backend, drive, new_record
from claudeloop.cli.errors import UserError
from claudeloop.domain.budget import Budget
from claudeloop.domain.completion import DEFAULT_DONE_MARKER
from claudeloop.domain.loop import Outcome, Phase, reopen
from claudeloop.domain.waiting import WaitPolicyConfig

DEFAULT_PERMISSION_MODE = "acceptEdits"


def working_directory(cwd: Path | None) -> Path:
    chosen = (cwd or Path.cwd()).expanduser()
    if not chosen.is_dir():
        raise UserError(f"--cwd {chosen}: no such directory")
    return chosen.resolve()


def read_plan(plan: Path, cwd: Path) -> tuple[Path, str]:
    path = plan.expanduser()
    if not path.is_absolute() and not path.exists() and (cwd / path).exists():
        path = cwd / path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"plan file {plan}: not found") from None
    except IsADirectoryError:
        raise UserError(f"plan file {plan}: is a directory, expected a markdown file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"plan file {plan}: cannot be read ({error})") from None
    if not text.strip():
        raise UserError(f"plan file {plan}: is empty; write the task or a - [ ] checklist in it")
    return path.resolve(), text


def wait_policy(options: dict[str, Any], base: WaitPolicyConfig | None = None) -> WaitPolicyConfig:
    policy = base or WaitPolicyConfig()
    changes: dict[str, timedelta] = {
        name: options[name]
        for name in (
            "window_probe_interval",
            "credits_probe_interval",
            "credits_probe_ceiling",
            "reset_grace",
            "max_wait",
        )
        if options.get(name) is not None
    }
    try:
        return replace(policy, **changes)  # type: ignore[arg-type]
    except ValueError as error:
        raise UserError(str(error)) from None


def budget(options: dict[str, Any], base: Budget | None = None) -> Budget:
    current = base or Budget()
    return Budget(
        max_turns=options.get("max_turns") or current.max_turns,
        max_dollars=options.get("max_dollars") or current.max_dollars,
        max_attempts=options.get("max_attempts") or current.max_attempts,
    )


def run(
    *,
    plan: Path | None,
    prompt: str | None,
    run_id: str | None,
    backend: Backend | None = None,
    **options: Any,
) -> None:
    cwd = working_directory(options.get("cwd"))
    if (plan is None) == (prompt is None):
        raise UserError("give either a PLAN file or --prompt TEXT, not both and not neither")
    if prompt is not None and not prompt.strip():
        raise UserError("--prompt is empty; say what the task is")
    plan_path: Path | None = None
    if plan is not None:
        plan_path, text = read_plan(plan, cwd)
        task = f"Carry out the plan in {plan_path.name}. Its text:\n\n{text.strip()}"
    else:
        task = str(prompt)
    spec = RunSpec(
        cwd=cwd,
        task=task,
        plan_path=plan_path,
        budget=budget(options),
        wait_policy=wait_policy(options),
        done_marker=options.get("done_marker") or DEFAULT_DONE_MARKER,
        continue_prompt=options.get("continue_prompt"),
        model=options.get("model"),
        permission_mode=options.get("permission_mode") or DEFAULT_PERMISSION_MODE,
        profile=options.get("profile") or "default",
    )
    record = new_record(spec, run_id)
    directory = create_directory(record)
    finish(
        drive(
            directory,
            record,
            backend=backend or default_backend(),
            resumed=False,
            quiet=bool(options.get("quiet")) or bool(options.get("as_json")),
        ),
        as_json=bool(options.get("as_json")),
    )


def find_run(cwd: Path, run_id: str | None, session_id: str | None) -> RunDirectory:
    if run_id is not None:
        directory = RunDirectory(runs_root(cwd) / run_id)
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


def resume(
    *,
    run_id: str | None,
    session_id: str | None,
    backend: Backend | None = None,
    **options: Any,
) -> None:
    cwd = working_directory(options.get("cwd"))
    directory = find_run(cwd, run_id, session_id)
    record = load_record(directory)
    state = record.state
    if state.outcome is Outcome.DONE:
        click.echo(f"claudeloop: run {record.run_id} already finished: done", err=True)
        finish(record, as_json=bool(options.get("as_json")))
    spec = record.spec
    new_budget = budget(options, spec.budget)
    spec = replace(
        spec,
        budget=new_budget,
        wait_policy=wait_policy(options, spec.wait_policy),
        model=options.get("model") or spec.model,
        permission_mode=options.get("permission_mode") or spec.permission_mode,
        done_marker=options.get("done_marker") or spec.done_marker,
        continue_prompt=options.get("continue_prompt") or spec.continue_prompt,
    )
    if state.phase.terminal:
        state = reopen(state)
    state = replace(state, ledger=replace(state.ledger, budget=new_budget))
    record = replace(record, spec=spec, state=state)
    finish(
        drive(
            directory,
            record,
            backend=backend or default_backend(),
            resumed=state.phase is not Phase.PREFLIGHT,
            quiet=bool(options.get("quiet")) or bool(options.get("as_json")),
        ),
        as_json=bool(options.get("as_json")),
    )


def finish(record: RunRecord, *, as_json: bool) -> None:
    result = result_object(record)
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    sys.exit(result["exit_code"])


def sessions(*, cwd: Path | None, as_json: bool, limit: int) -> None:
    from claudeloop.adapters.claude_sessions import list_claude_sessions

    directory = working_directory(cwd)
    found = list_claude_sessions(directory, limit)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "session_id": s.session_id,
                        "summary": s.summary,
                        "last_modified": s.last_modified.isoformat(),
                    }
                    for s in found
                ],
                indent=2,
            )
        )
        return
    if not found:
        click.echo(f"no Claude sessions in {directory}")
        return
    for s in found:
        click.echo(f"{s.last_modified:%Y-%m-%d %H:%M}  {s.session_id}  {s.summary}")
