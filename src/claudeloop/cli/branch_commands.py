"""The commands on a run's branch (--worktree, --checkpoint): `diff`, `rewind` and
`merge`. Parsing only: the work is in branch.py, imported when a command is called."""

from __future__ import annotations

from pathlib import Path

import click

from claudeloop.cli.options import JSON_OPTION, names_a_run
from claudeloop.cli.params import CWD_OPTION


@click.command(
    epilog="""\b
Examples:
  claudeloop diff                    every commit of the newest run
  claudeloop diff 20261130-101500-a1b2c3 --turn 3
  claudeloop diff --stat
"""
)
@CWD_OPTION
@click.option("--turn", type=click.IntRange(min=1), default=None, help="Only this turn's commit.")
@click.option("--stat", is_flag=True, help="A diffstat instead of the patch.")
@names_a_run
def diff(run: str | None, cwd: Path | None, turn: int | None, stat: bool) -> None:
    """What a --worktree or --checkpoint run's commits changed (RUN: default the newest)."""
    from claudeloop.cli import branch

    branch.diff(cwd=cwd, run_id=run, turn=turn, stat=stat)


@click.command(
    short_help="Undo a stopped run's turns after N: its branch back to turn N.",
    epilog="""\b
Examples:
  claudeloop rewind 20261130-101500-a1b2c3 --to-turn 2
  claudeloop rewind --to-turn 0 --reason "wrong library; use httpx"
  claudeloop resume                  its next turn is told what was undone
""",
)
@CWD_OPTION
@click.option(
    "--to-turn",
    type=click.IntRange(min=0),
    required=True,
    help="Reset the run's branch to this turn's commit (0: where the run began).",
)
@click.option("--reason", default=None, help="Why, told to the model at its next turn.")
@JSON_OPTION
@names_a_run
def rewind(
    run: str | None, cwd: Path | None, to_turn: int, reason: str | None, as_json: bool
) -> None:
    """Undo a stopped run's turns after N: its branch is reset to turn N's commit, and
    its next turn is told what was undone (and why); the session goes on."""
    from claudeloop.cli import branch

    branch.rewind(cwd=cwd, run_id=run, to_turn=to_turn, reason=reason, as_json=as_json)


@click.command(
    short_help="Merge a --worktree run's branch into the branch it came from.",
    epilog="""\b
Examples:
  claudeloop merge 20261130-101500-a1b2c3
  claudeloop merge --json
  claudeloop merge RUN --resolve     a run resolves any conflict
""",
)
@CWD_OPTION
@click.option(
    "--resolve",
    is_flag=True,
    help="On a conflict, start a run that resolves it in a worktree of its own, "
    "verified by the run's --verify checks; then merge that run.",
)
@JSON_OPTION
@names_a_run
def merge(run: str | None, cwd: Path | None, resolve: bool, as_json: bool) -> None:
    """Merge a --worktree run's branch into the branch it came from (the checkout must
    be on it); when it does not apply cleanly, nothing is merged, the conflicting files
    are listed and the exit is 1 (or, with --resolve, a run resolves them)."""
    from claudeloop.cli import branch
    from claudeloop.cli.run_commands import fleet_seat

    branch.merge(cwd=cwd, run_id=run, as_json=as_json, resolve=resolve, seat=fleet_seat())


def register(cli: click.Group) -> None:
    """Add the commands on a run's branch to `cli`."""
    for command in (diff, rewind, merge):
        cli.add_command(command)
