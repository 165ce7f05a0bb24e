"""`diff`, `rewind` and `merge`: a run's branch (--worktree, --checkpoint) reviewed,
turns undone, and merged back into the branch the run came from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from claudeloop.application.errors import ClaudeloopError, UsageError
from claudeloop.application.events import BranchRewound, plan_history
from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.prompts import resolve_task, rewound_prompt
from claudeloop.application.records import RunRecord
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory
from claudeloop.domain.plan import WorkPlan, open_items_at, plan_after_rewind


def _committing_run(cwd: Path | None, run_id: str | None) -> tuple[object, RunRecord]:
    from claudeloop.cli.bootstrap.runs import find_run, load_record

    directory = find_run(working_directory(cwd), run_id, None)
    record = load_record(directory)
    if not record.spec.checkpoint:
        raise UsageError(
            f"run {record.run_id} commits nothing (it was started without --worktree or "
            "--checkpoint): it has no branch of its own to show, rewind or merge"
        )
    return directory, record


def diff(*, cwd: Path | None, run_id: str | None, turn: int | None, stat: bool) -> None:
    from claudeloop.cli.bootstrap.runs import run_diff

    _, record = _committing_run(cwd, run_id)
    shown = run_diff(record.spec.work_dir, record.run_id, turn, stat=stat)
    if not shown:
        which = f"turn {turn}" if turn is not None else "any turn"
        raise UsageError(
            f"run {record.run_id} has no commit of {which} (a turn that changed nothing "
            "makes none); `claudeloop status` lists its commits"
        )
    click.echo(shown, nl=False)


def rewind(
    *, cwd: Path | None, run_id: str | None, to_turn: int, reason: str | None, as_json: bool
) -> None:
    from claudeloop.cli.bootstrap.runs import RunDirectory, rewind_to, take_lock, tell_event

    directory, record = _committing_run(cwd, run_id)
    assert isinstance(directory, RunDirectory)
    lock = take_lock(directory)  # no driver may be sending a turn meanwhile
    try:
        from claudeloop.cli.bootstrap.runs import load_record

        record = load_record(directory)
        sha, undone = rewind_to(
            record.spec.work_dir,
            record.run_id,
            to_turn,
            own=record.spec.worktree is not None,
        )
        if undone:
            note = rewound_prompt(to_turn, tuple(undone), reason)
            settled = max(record.checkpointed_turn, record.answered_turn)
            plan = record.plan
            if plan is not None:  # the checkmarks of the undone turns go too
                plan = plan_after_rewind(
                    plan,
                    open_then=open_items_at(plan_history(directory.read_events()), to_turn),
                    file_then=_plan_file(record),
                )
            directory.save(replace(record, rewound=note, checkpointed_turn=settled, plan=plan))
            tell_event(
                directory,
                BranchRewound(to_turn=to_turn, sha=sha, undone=tuple(undone), reason=reason),
            )
    finally:
        lock.release()
    if as_json:
        print_json({"run_id": record.run_id, "sha": sha, "undone": undone})
        return
    if not undone:
        click.echo(f"run {record.run_id}: nothing after turn {to_turn} to undo")
        return
    turns = ", ".join(str(turn) for turn in undone)
    click.echo(
        f"run {record.run_id}: rewound to turn {to_turn} ({sha[:12]}); undone: turns "
        f"{turns}. The next turn is told (claudeloop resume --run-id {record.run_id})."
    )


def _plan_file(record: RunRecord) -> WorkPlan | None:
    """The plan file as it is now (after a reset, the rewound turn's when it is in the
    repository); None when there is none or it cannot be read."""
    from claudeloop.cli.bootstrap.runs import PlanFileOnDisk

    path = record.spec.plan_path
    return None if path is None else PlanFileOnDisk().read(path)


def merge(
    *,
    cwd: Path | None,
    run_id: str | None,
    as_json: bool,
    resolve: bool = False,
    seat: FleetSeat | None = None,
) -> None:
    from claudeloop.cli.bootstrap.runs import merge_branch, repository_top

    _, record = _committing_run(cwd, run_id)
    base = record.spec.base_branch
    if record.spec.worktree is None or base is None:
        raise UsageError(
            f"run {record.run_id} committed on the branch it ran on (--checkpoint, or a "
            "worktree of a detached HEAD): there is no branch to merge it into"
        )
    top = repository_top(record.spec.cwd)
    if top is None:
        raise UsageError(f"{record.spec.cwd} is no longer in a git repository")
    branch = f"claudeloop/{record.run_id}"
    merged = merge_branch(top, branch, base)
    if merged.sha is None and resolve:
        _resolve(record, branch, base, merged.conflicts, as_json=as_json, seat=seat)
        return
    if as_json:
        print_json({"run_id": record.run_id, "merged": merged.sha, "conflicts": merged.conflicts})
    elif merged.sha is not None:
        click.echo(f"merged {branch} into {base}: {merged.sha[:12]}")
    else:
        click.echo("Conflicting files:")
        for name in merged.conflicts:
            click.echo(f"  {name}")
    if merged.sha is None:
        raise ClaudeloopError(
            f"{branch} does not merge cleanly into {base} "
            f"({len(merged.conflicts)} conflicting); nothing was merged",
            exit_code=1,
        )


def _resolve(
    record: RunRecord,
    branch: str,
    base: str,
    conflicts: tuple[str, ...],
    *,
    as_json: bool,
    seat: FleetSeat | None,
) -> None:
    """A run whose task is to resolve the conflicts: in a worktree of its own made from
    `base`, `branch` merged in with its conflicts left in the files, verified by the
    merged run's own --verify checks; its first commit concludes the merge, and
    `claudeloop merge` of it then applies cleanly."""
    from claudeloop.application.launching import NewRun, start_run
    from claudeloop.cli.bootstrap.launcher import Launcher
    from claudeloop.cli.output import finish

    spec = record.spec
    click.echo(
        f"claudeloop: {branch} conflicts with {base} in {', '.join(conflicts)}; a run "
        "resolves them",
        err=True,
    )
    flags: dict[str, object] = {
        "worktree": True,
        "verify": tuple(check.text for check in spec.verify.checks),  # as click gives it
        "profile": spec.profile,
        "permission_mode": spec.permission_mode,
    }
    if spec.model is not None:
        flags["model"] = spec.model
    asked = NewRun(
        cwd=spec.cwd,
        task=resolve_task(branch, base, conflicts),
        plan_path=None,
        run_id=_free_run_id(spec.cwd, f"{record.run_id}-resolve"),
        flags=flags,
        merging=branch,
    )

    def warn(text: str) -> None:
        click.echo(f"claudeloop: warning: {text}", err=True)

    ended = start_run(Launcher(seat=seat or FleetSeat(), quiet=as_json), asked, warn=warn)
    finish(ended.record, as_json=as_json)


def _free_run_id(cwd: Path, wanted: str) -> str:
    from claudeloop.cli.bootstrap.runs import run_id_used

    chosen, number = wanted, 1
    while run_id_used(cwd, chosen):
        number += 1
        chosen = f"{wanted}-{number}"
    return chosen
