"""`diff`, `rewind` and `merge`: a run's branch (--worktree, --checkpoint) reviewed,
turns undone, and merged back into the branch the run came from."""

from __future__ import annotations

from pathlib import Path

import click

from claudeloop.application.errors import ClaudeloopError
from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.prompts import resolve_task
from claudeloop.application.records import RunRecord
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory


def diff(*, cwd: Path | None, run_id: str | None, turn: int | None, stat: bool) -> None:
    from claudeloop.application.branch import show_diff
    from claudeloop.cli.bootstrap import run_branches

    click.echo(show_diff(run_branches(), working_directory(cwd), run_id, turn, stat=stat), nl=False)


def rewind(
    *, cwd: Path | None, run_id: str | None, to_turn: int, reason: str | None, as_json: bool
) -> None:
    from claudeloop.application.branch import rewind_run
    from claudeloop.cli.bootstrap import run_branches

    done = rewind_run(run_branches(), working_directory(cwd), run_id, to_turn, reason)
    if as_json:
        print_json({"run_id": done.run_id, "sha": done.sha, "undone": list(done.undone)})
        return
    if not done.undone:
        click.echo(f"run {done.run_id}: nothing after turn {to_turn} to undo")
        return
    turns = ", ".join(str(turn) for turn in done.undone)
    click.echo(
        f"run {done.run_id}: rewound to turn {to_turn} ({done.sha[:12]}); undone: turns "
        f"{turns}. The next turn is told (claudeloop resume {done.run_id})."
    )


def merge(
    *,
    cwd: Path | None,
    run_id: str | None,
    as_json: bool,
    resolve: bool = False,
    seat: FleetSeat | None = None,
) -> None:
    from claudeloop.application.branch import merge_run
    from claudeloop.cli.bootstrap import run_branches

    asked = merge_run(run_branches(), working_directory(cwd), run_id)
    record, branch, base, merged = asked.record, asked.branch, asked.base, asked.merged
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
    from claudeloop.cli.bootstrap import launching
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

    ended = start_run(launching(seat or FleetSeat(), quiet=as_json), asked, warn=warn)
    finish(ended.record, as_json=as_json)


def _free_run_id(cwd: Path, wanted: str) -> str:
    from claudeloop.cli.bootstrap import run_id_used

    chosen, number = wanted, 1
    while run_id_used(cwd, chosen):
        number += 1
        chosen = f"{wanted}-{number}"
    return chosen
