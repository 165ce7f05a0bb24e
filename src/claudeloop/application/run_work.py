"""A run's work on its dashboard page: for a run that commits (--worktree,
--checkpoint), its commits per turn, each turn's files changed and diff, and the
checks' verdicts of that turn, read on the `RunBranches` port `diff`, `rewind` and
`merge` use (application/branch.py); and what its merge, rewind and resume buttons
say they will do before they do it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from claudeloop.application.branch import RunBranches, committing_run
from claudeloop.application.errors import UsageError
from claudeloop.application.json_form import JsonObject
from claudeloop.application.masking import Mask, masked

# The most of one turn's patch a page shows, and the most turns (the last ones) a page
# reads: a page costs the same after 500 turns as after 30; the rest is one command away.
PATCH_CHARS = 60_000
TURNS_SHOWN = 30


@dataclass(frozen=True, slots=True)
class CheckVerdict:
    """A check of a turn's verification round: its command and whether it passed."""

    command: str
    passed: bool


@dataclass(frozen=True, slots=True)
class TurnWork:
    """A turn's commit: its files changed (git's diffstat), then its patch (cut at
    `PATCH_CHARS`: `cut` True), and the verdicts of the checks run on that turn."""

    turn: int
    sha: str
    subject: str
    files: str
    patch: str
    cut: bool = False
    checks: tuple[CheckVerdict, ...] = ()


@dataclass(frozen=True, slots=True)
class RunWork:
    """A run's branch: its name, the branch it merges into (None: it committed on the
    branch it ran on, nothing to merge), its turns' commits oldest first, and a
    problem that kept them from being read (a worktree removed)."""

    run_id: str
    branch: str | None
    base: str | None
    turns: tuple[TurnWork, ...] = ()
    problem: str | None = None
    earlier: int = 0  # turns with a commit before those shown (TURNS_SHOWN)

    @property
    def mergeable(self) -> bool:
        return self.base is not None and bool(self.turns)


def run_work(runs: RunBranches, cwd: Path, run_id: str, *, mask: Mask) -> RunWork | None:
    """The run's work (None: the run commits nothing, so has no branch to show)."""
    try:
        record = committing_run(runs, cwd, run_id)
    except UsageError:
        return None
    spec = record.spec
    base = spec.base_branch if spec.worktree is not None else None
    try:
        facts = runs.facts(spec.work_dir, run_id)
    except OSError as error:
        return RunWork(run_id, None, base, problem=f"its worktree cannot be read: {error}")
    branch = facts.get("branch")
    commits = facts.get("commits")
    verdicts = _verdicts(runs.events(cwd, run_id))
    turns: list[TurnWork] = []
    listed = commits if isinstance(commits, list) else []
    for commit in listed[-TURNS_SHOWN:]:
        turn, sha, subject = commit["turn"], commit["sha"], commit["subject"]
        shown = runs.diff(spec.work_dir, run_id, turn, stat=False)
        files, _, patch = shown.partition("\ndiff --git ")
        patch = f"diff --git {patch}" if patch else ""
        turns.append(
            TurnWork(
                turn=turn,
                sha=sha,
                subject=subject,
                files=files.strip("\n"),
                patch=patch[:PATCH_CHARS],
                cut=len(patch) > PATCH_CHARS,
                checks=verdicts.get(turn, ()),
            )
        )
    work = RunWork(
        run_id,
        branch if isinstance(branch, str) else None,
        base,
        tuple(turns),
        earlier=max(len(listed) - TURNS_SHOWN, 0),
    )
    return masked(work, mask)


def _verdicts(events: Sequence[JsonObject]) -> dict[int, tuple[CheckVerdict, ...]]:
    """Each turn's last verification round: the checks a Done of that turn ran (a
    command met again in the same turn begins a new round)."""
    rounds: dict[int, list[CheckVerdict]] = {}
    for event in events:
        turn = event.get("turn")
        if event.get("type") != "verify.finished" or not isinstance(turn, int):
            continue
        verdict = CheckVerdict(str(event.get("command", "")), bool(event.get("passed")))
        round_ = rounds.setdefault(turn, [])
        if any(each.command == verdict.command for each in round_):
            round_.clear()
        round_.append(verdict)
    return {turn: tuple(checks) for turn, checks in rounds.items()}


def merge_said(work: RunWork) -> str:
    """What the merge button will do, in words, before it does it."""
    turns = ", ".join(str(each.turn) for each in work.turns)
    if work.earlier:
        turns = f"{work.earlier} earlier and {turns}"
    return (
        f"Merge {work.branch or 'the branch'} into {work.base}: the commits of turns "
        f"{turns} land on {work.base} in one merge commit (as `claudeloop merge "
        f"{work.run_id}`). A merge that conflicts is undone and {work.base} is left as it is."
    )


def rewind_said(work: RunWork, to_turn: int) -> str:
    """What rewinding to `to_turn` will do, in words, before it does it."""
    undone = [each.turn for each in work.turns if each.turn > to_turn]
    if not undone:
        return (
            f"Rewind run {work.run_id} to turn {to_turn}: no turn after it has a commit; "
            "nothing is undone."
        )
    where = "where the run began" if to_turn == 0 else f"turn {to_turn}'s commit"
    return (
        f"Rewind run {work.run_id} to {where}: the commits of turns "
        f"{', '.join(str(t) for t in undone)} are dropped from {work.branch or 'its branch'} "
        f"and their changes are lost (as `claudeloop rewind {work.run_id} --to-turn "
        f"{to_turn}`). The next turn is told what was undone."
    )
