"""`run` and `resume`: their flags read, the use case called, the end rendered."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import click

from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.launching import (
    AlreadyDone,
    AtItsCaps,
    Driven,
    NewRun,
    RunToResume,
    resume_run,
    start_run,
)
from claudeloop.cli.bootstrap import checked_run_id
from claudeloop.cli.output import finish, warn
from claudeloop.cli.params import working_directory
from claudeloop.cli.prompt_source import task_from_options
from claudeloop.domain.budget import ReachedCap, money
from claudeloop.domain.text import count


@dataclass(frozen=True, slots=True)
class Output:
    """The options of `run` and `resume` that are no setting: where, and what is shown."""

    cwd: Path | None = None
    as_json: bool = False
    verbose: int = 0
    quiet: bool = False


def at_its_caps(run_id: str, reached: tuple[ReachedCap, ...], *, cwd: Path | None) -> str:
    """Why a resume sent nothing, in one line: each cap reached, its value and what was
    spent against it, and the command that lifts them all."""
    # Imported here: the summary loads every port, which `run` refusing its input needs not.
    from claudeloop.application.summary import raised_flag

    caps = "; ".join(_spent_against(cap) for cap in reached)
    words = ["claudeloop", "resume", run_id]
    if cwd is not None:
        words += ["--cwd", str(cwd)]
    words += [word for cap in reached for word in raised_flag(cap)]
    if len(reached) == 1:
        at, lift = "its cap", f"raise it above {_above(reached[0])}"
    else:
        at, lift = "its caps", "raise each above what was spent"
    return f"run {run_id} is at {at} ({caps}): no turn was sent. To go on, {lift}: " + (
        shlex.join(words)
    )


def _spent_against(cap: ReachedCap) -> str:
    if cap.flag == "max-dollars":
        return f"--max-dollars {cap.cap:g}, {money(cap.spent)} spent"
    counted = "answered" if cap.flag == "max-turns" else "sent"
    noun = "turn" if cap.flag == "max-turns" else "prompt"
    return f"--{cap.flag} {int(cap.cap)}, {count(int(cap.spent), noun)} {counted}"


def _above(cap: ReachedCap) -> str:
    if cap.flag == "max-dollars":
        return money(cap.spent)
    return str(int(cap.spent))


def run(
    *,
    plan: Path | None,
    prompt: str | None,
    run_id: str | None,
    output: Output,
    flags: Mapping[str, object],
    seat: FleetSeat,
    prompt_file: Path | None = None,
) -> None:
    """`flags`: the settings' flags by key, as `loop_options` parsed them. `seat`: what a
    fleet's worker told this process, taken from its environment as it started."""
    if run_id is not None:
        checked_run_id(run_id)
    cwd = working_directory(output.cwd)
    plan_path, task = task_from_options(plan, prompt, prompt_file, cwd=cwd)
    asked = NewRun(cwd=cwd, task=task, plan_path=plan_path, run_id=run_id, flags=flags)
    # The run's wiring is asked for once its input is read: a missing plan is said first.
    from claudeloop.cli.bootstrap import launching

    world = launching(seat, quiet=output.quiet or output.as_json, verbose=bool(output.verbose))
    ended = start_run(world, asked, warn=warn)
    finish(ended.record, as_json=output.as_json)


def resume(
    *,
    run_id: str | None,
    session_id: str | None,
    output: Output,
    flags: Mapping[str, object],
    seat: FleetSeat,
    new_session: bool = False,
) -> None:
    """Continue a run (application/launching.py's `resume_run` says how)."""
    from claudeloop.cli.bootstrap import launching
    from claudeloop.cli.kept_rehearsal import kept_rehearsal

    cwd = working_directory(output.cwd)
    asked = RunToResume(
        cwd=cwd, run_id=run_id, session_id=session_id, flags=flags, new_session=new_session
    )
    # In a kept rehearsal's project the run goes on against its rehearsal API again.
    kept = kept_rehearsal(cwd)
    quiet, verbose = output.quiet or output.as_json, bool(output.verbose)
    if kept is not None:
        from claudeloop.cli.rehearse import resume_kept

        launched = resume_kept(kept, asked, quiet=quiet, verbose=verbose, warn=warn)
    else:
        launched = resume_run(launching(seat, quiet=quiet, verbose=verbose), asked, warn=warn)
    match launched:
        case AlreadyDone(record):
            click.echo(f"claudeloop: run {record.run_id} already finished: done", err=True)
            finish(record, as_json=output.as_json)
        case AtItsCaps(record, reached):
            told = at_its_caps(record.run_id, reached, cwd=output.cwd)
            click.echo(f"claudeloop: {told}", err=True)
            # Exit 3, a budget cap reached, whatever the run had ended on before.
            finish(record, as_json=output.as_json, extra={"refused": told}, exit_code=3)
        case Driven(record):
            finish(record, as_json=output.as_json)
