"""`diff`, `rewind` and `merge`: a run's branch (--worktree, --checkpoint) reviewed,
turns undone, and merged back into the branch the run came from."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from claudeloop.application.errors import ClaudeloopError
from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory

if TYPE_CHECKING:
    from claudeloop.application.branch import Resolving


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
    from claudeloop.application.branch import merge_run, resolving_run
    from claudeloop.cli.bootstrap import run_branches, run_id_used

    asked = merge_run(run_branches(), working_directory(cwd), run_id)
    branch, base, merged = asked.branch, asked.base, asked.merged
    if merged.sha is None and resolve:
        _resolve(resolving_run(asked, run_id_used=run_id_used), as_json=as_json, seat=seat)
        return
    if as_json:
        print_json(
            {"run_id": asked.record.run_id, "merged": merged.sha, "conflicts": merged.conflicts}
        )
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


def _resolve(resolving: Resolving, *, as_json: bool, seat: FleetSeat | None) -> None:
    """The run that resolves the conflicts, said, started and its end shown as `run`'s."""
    from claudeloop.application.launching import start_run
    from claudeloop.cli.bootstrap import launching
    from claudeloop.cli.output import finish, warn

    click.echo(
        f"claudeloop: {resolving.branch} conflicts with {resolving.base} in "
        f"{', '.join(resolving.conflicts)}; a run resolves them",
        err=True,
    )

    ended = start_run(launching(seat or FleetSeat(), quiet=as_json), resolving.run, warn=warn)
    finish(ended.record, as_json=as_json)
