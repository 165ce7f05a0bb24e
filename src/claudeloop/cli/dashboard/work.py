"""A run's work on its dashboard page (application/run_work.py): its commits per turn,
each turn's files changed and diff, the checks' verdicts beside them, and the buttons
that merge the run into its base, rewind it to a turn and resume it.

Each button does what its command does (`merge_run`, `rewind_run` of
application/branch.py; `claudeloop resume`), after a page that says what will happen
and asks to confirm it (a GET, which changes nothing); the POST that acts is behind
the dashboard's guard like every other change: the token's cookie and the same origin.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from html import escape
from pathlib import Path
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from claudeloop.application.branch import RunBranches, merge_run, rewind_run
from claudeloop.application.dashboard import MaskOf, find_entry
from claudeloop.application.errors import ClaudeloopError, UsageError
from claudeloop.application.ports import IndexedRun, RunIndex
from claudeloop.application.run_work import RunWork, TurnWork, merge_said, rewind_said, run_work

# How long a resume's process is watched for a refusal before the page says it goes on.
RESUME_WATCH_SECONDS = 3.0
ACTIONS = ("merge", "rewind", "resume")


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def work_section(work: RunWork | None, key: str, *, live: bool) -> str:
    """The run's branch on its page: the buttons, then each turn's commit, files and
    diff (newest first: the last turn is what the morning asks about)."""
    if work is None:
        return ""
    body = [f'<section class="work" id="work"><h2>Work on {_e(work.branch or "its branch")}</h2>']
    if work.problem:
        body.append(f'<p class="problem">{_e(work.problem)}</p></section>')
        return "".join(body)
    if not work.turns:
        body.append("<p class=empty>No turn has committed anything yet.</p>")
    action = f"/run/{quote(key)}/confirm/"
    buttons: list[str] = []
    if work.mergeable and not live:
        buttons.append(
            f'<form class="branch merge" method="get" action="{action}merge">'
            f'<button type="submit" class="merge">Merge into {_e(work.base)}</button></form>'
        )
    if work.turns and not live:
        choices = (
            "".join(
                f'<option value="{each.turn}">turn {each.turn}</option>' for each in work.turns[:-1]
            )
            + '<option value="0">where it began</option>'
        )
        buttons.append(
            f'<form class="branch rewind" method="get" action="{action}rewind">'
            f'<label class="field"><span>Rewind to</span><select name="to_turn">{choices}'
            '</select></label><button type="submit" class="rewind">Rewind</button></form>'
        )
    if not live:
        buttons.append(
            f'<form class="branch resume" method="get" action="{action}resume">'
            '<button type="submit" class="resume">Resume</button></form>'
        )
    else:
        body.append(
            "<p class=muted>The run is live: merge, rewind and resume wait for its end.</p>"
        )
    if buttons:
        body.append(f'<div class="branch-buttons">{"".join(buttons)}</div>')
    for each in reversed(work.turns):
        body.append(_turn(each, work.run_id))
    if work.earlier:
        body.append(
            f"<p class=muted>{work.earlier} earlier turn(s) with a commit: "
            f"<code>claudeloop diff {_e(work.run_id)} --turn N</code> shows each.</p>"
        )
    body.append("</section>")
    return "".join(body)


def _turn(each: TurnWork, run_id: str) -> str:
    checks = "".join(
        f'<span class="verdict {"passed" if check.passed else "failed"}">'
        f"{'passed' if check.passed else 'failed'}: <code>{_e(check.command)}</code></span>"
        for check in each.checks
    )
    cut = (
        f"<p class=muted>The diff is cut here: <code>claudeloop diff {_e(run_id)} --turn "
        f"{each.turn}</code> shows all of it.</p>"
        if each.cut
        else ""
    )
    return (
        f'<div class="card turn-work" data-turn="{each.turn}">'
        f'<h3>Turn {each.turn} <code class="sha">{_e(each.sha[:12])}</code></h3>'
        f'<p class="subject">{_e(each.subject)}</p>'
        + (f'<div class="verdicts">{checks}</div>' if checks else "")
        + f'<pre class="files">{_e(each.files) or "(no file changed)"}</pre>'
        f"<details open><summary>the diff</summary>"
        f'<pre class="diff">{_e(each.patch)}</pre></details>{cut}</div>'
    )


class WorkRoutes:
    """The routes of a run's branch: the page that asks to confirm, and the act."""

    def __init__(
        self, index: RunIndex, branches: RunBranches | None, mask: MaskOf, page: Callable[..., str]
    ) -> None:
        self.index = index
        self.branches = branches
        self.mask = mask
        self.page = page  # pages.page, given so this module stays a leaf

    def work_of(self, entry: IndexedRun) -> RunWork | None:
        if self.branches is None:
            return None
        try:
            return run_work(self.branches, entry.cwd, entry.run_id, mask=self.mask(entry.cwd))
        except (UsageError, OSError):
            return None

    def confirm(self, request: Request) -> Response:
        key, action = request.path_params["key"], request.path_params["action"]
        try:
            entry, work = self._found(key, action)
            to_turn = _turn_asked(request.query_params.get("to_turn", "0"))
            said = {
                "merge": lambda: merge_said(work),
                "rewind": lambda: rewind_said(work, to_turn),
                "resume": lambda: (
                    f"Resume run {work.run_id}: `claudeloop resume {work.run_id}` "
                    f"in {entry.cwd}, in the background; its page follows it."
                ),
            }[action]()
        except UsageError as error:
            return RedirectResponse(f"/run/{quote(key)}?said={quote(str(error))}", status_code=303)
        hidden = (
            f'<input type="hidden" name="to_turn" value="{to_turn}">' if action == "rewind" else ""
        )
        main = (
            f"<h1>{_e(action.capitalize())} run {_e(entry.run_id)}?</h1>"
            f'<p class="confirm-said">{_e(said)}</p>'
            f'<form class="branch confirm" method="post" action="/run/{quote(key)}/do-branch/'
            f'{action}">{hidden}<button type="submit" class="confirm {action}">'
            f"Yes, {_e(action)}</button></form>"
            f'<p><a class="cancel" href="/run/{quote(key)}">No, back to the run</a></p>'
        )
        return HTMLResponse(self.page(f"{action} {entry.run_id}", "", main, stream=None))

    async def act(self, request: Request) -> Response:
        key, action = request.path_params["key"], request.path_params["action"]
        try:
            entry, _work = self._found(key, action)
            form = await request.form()
            to_turn = _turn_asked(str(form.get("to_turn", "0")))
            # In a thread: git, and a resume watched for a few seconds, block.
            said = await run_in_threadpool(self._do, action, entry, to_turn)
        except (ClaudeloopError, OSError) as error:  # a refusal, or git's failure: said
            said = str(error)
        return RedirectResponse(f"/run/{quote(key)}?said={quote(said)}#work", status_code=303)

    def _found(self, key: str, action: str) -> tuple[IndexedRun, RunWork]:
        if action not in ACTIONS:
            raise UsageError(f"no action {action!r}; one of {', '.join(ACTIONS)}")
        entry = find_entry(self.index, key)
        work = self.work_of(entry)
        if work is None:
            raise UsageError(
                f"run {entry.run_id} commits nothing (started without --worktree or "
                "--checkpoint): it has no branch to merge or rewind"
            )
        return entry, work

    def _do(self, action: str, entry: IndexedRun, to_turn: int) -> str:
        assert self.branches is not None  # _found found its work
        if action == "merge":
            asked = merge_run(self.branches, entry.cwd, entry.run_id)
            if asked.merged.sha is not None:
                return f"merged {asked.branch} into {asked.base}: {asked.merged.sha[:12]}"
            return (
                f"{asked.branch} does not merge cleanly into {asked.base}: "
                f"{len(asked.merged.conflicts)} file(s) conflict "
                f"({', '.join(asked.merged.conflicts)}). Nothing was merged; {asked.base} is "
                f"as it was. To have a run resolve them: `claudeloop merge {entry.run_id} "
                f"--resolve` in {entry.cwd}"
            )
        if action == "rewind":
            done = rewind_run(self.branches, entry.cwd, entry.run_id, to_turn, None)
            if not done.undone:
                return f"run {done.run_id}: nothing after turn {to_turn} to undo"
            turns = ", ".join(str(turn) for turn in done.undone)
            return (
                f"run {done.run_id}: rewound to turn {to_turn} ({done.sha[:12]}); undone: "
                f"turns {turns}. The next turn is told (Resume goes on)."
            )
        return _resume(entry)


def _turn_asked(text: str) -> int:
    try:
        turn = int(text)
    except ValueError:
        raise UsageError(f"to_turn: {text!r} is not a turn number (0: where it began)") from None
    if turn < 0:
        raise UsageError(f"to_turn: {turn} is not a turn number (0: where it began)")
    return turn


def _resume(entry: IndexedRun) -> str:
    """`claudeloop resume` of the run, in its directory, in the background: what the
    command does. A refusal in its first seconds is said; else it goes on."""
    with tempfile.TemporaryFile() as said:  # a file, not a pipe: the run never blocks on it
        process = subprocess.Popen(
            [sys.executable, "-m", "claudeloop", "resume", entry.run_id, "--quiet"],
            cwd=Path(entry.cwd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=said,
            start_new_session=True,  # a Ctrl-C of the dashboard leaves the run going
        )
        deadline = time.monotonic() + RESUME_WATCH_SECONDS
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        if process.poll() is None:
            return f"resumed run {entry.run_id} (process {process.pid}); its page follows it"
        said.seek(0)
        lines = said.read().decode(errors="replace").strip().splitlines()
    if process.returncode == 0:
        return f"resumed run {entry.run_id}: it ended at once ({lines[-1] if lines else 'done'})"
    return f"resume of run {entry.run_id} refused: {lines[-1] if lines else process.returncode}"
