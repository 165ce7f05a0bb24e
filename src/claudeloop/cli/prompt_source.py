"""The task of `run`: a PLAN file, or a prompt given inline, read from a file
(`--prompt-file PATH`) or from standard input (`--prompt -`).

A long task cannot go inline: the kernel caps one argument at 128 KiB (MAX_ARG_STRLEN
on Linux), so `claudeloop run --prompt "$(cat TASK.md)"` fails before claudeloop starts.
Past that, the length is no problem up to claudeloop's own limit on a task
(`TASK_LIMIT`, 1 MiB): the SDK hands each prompt to Claude Code as a stream-json message
on its stdin, not as an argument.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from claudeloop.application.errors import UsageError
from claudeloop.application.project_setup import TEMPLATE_STEPS, still_the_template
from claudeloop.application.prompts import plan_task
from claudeloop.application.task_files import (
    TASK_LIMIT,
    TASK_LIMIT_BYTES,
    NotATaskFile,
    TaskTooLarge,
)
from claudeloop.cli.output import warn
from claudeloop.cli.params import located
from claudeloop.domain.plan import WorkPlan

STDIN = "-"


def task_from_options(
    plan: Path | None, prompt: str | None, prompt_file: Path | None, *, cwd: Path
) -> tuple[Path | None, str]:
    """(the plan file or None, the task as the model is told it) of `run`'s arguments."""
    if plan is None and prompt is None and prompt_file is None:
        raise UsageError(
            "say what the run is to do: a PLAN file, or --prompt TEXT (or --prompt-file PATH)"
        )
    if plan is not None and (prompt is not None or prompt_file is not None):
        raise UsageError(
            "give a PLAN file or --prompt TEXT (or --prompt-file PATH), not both: "
            "a plan's checklist is the task"
        )
    if plan is not None:
        plan_path, text = read_plan(plan, cwd)
        parsed = WorkPlan.parse(text)
        if still_the_template(parsed):
            steps = ", ".join(f"- [ ] {step}" for step in TEMPLATE_STEPS)
            raise UsageError(
                f"plan file {plan}: is still the template claudeloop init wrote ({steps}); "
                "replace its items with your task's steps, then run it"
            )
        if parsed.total == 0:
            warn(
                f"{plan_path.name} has no checklist items (- [ ] ...): plan progress is not "
                "tracked, the model's verdict (and --verify) decide when it is done"
            )
        return plan_path, plan_task(plan_path.name)
    given = task_prompt(prompt, prompt_file, cwd=cwd)
    if given is None or not given.strip():
        raise UsageError("--prompt is empty; say what the task is")
    return None, given


def task_prompt(
    prompt: str | None, prompt_file: Path | None, *, cwd: Path, stdin: TextIO | None = None
) -> str | None:
    """The prompt's text, or None when the task is not a prompt (a PLAN file)."""
    if prompt is not None and prompt_file is not None:
        raise UsageError("give either --prompt TEXT or --prompt-file PATH, not both")
    if prompt_file is not None:
        return _from_file(prompt_file, cwd)
    if prompt == STDIN:
        return _from_stdin(stdin or sys.stdin)
    return prompt


def read_task_file(
    given: Path, cwd: Path, *, named: str, kind: str, empty: str
) -> tuple[Path, str]:
    """(the resolved path, its text) of a file holding the task: a plan or a prompt file,
    relative to the cwd when it is not where the shell is; one line when it cannot be
    used. `named` is how the message names it, `kind` what was expected of it, `empty`
    what to write in an empty one."""
    path = located(given, cwd)
    where = f"{named} {given}"
    from claudeloop.cli.bootstrap import task_files

    try:
        text = task_files().read_task_text(path)
    except TaskTooLarge as refused:
        raise UsageError(f"{where}: {refused.problem}") from None
    except NotATaskFile as refused:
        raise UsageError(f"{where}: {refused.problem}; expected {kind}") from None
    except FileNotFoundError:
        raise UsageError(f"{where}: not found") from None
    except IsADirectoryError:
        raise UsageError(f"{where}: is a directory, expected {kind}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{where}: is not UTF-8 text") from None
    except OSError as error:
        raise UsageError(f"{where}: cannot be read ({error.strerror or error})") from None
    if not text.strip():
        raise UsageError(f"{where}: is empty; {empty}")
    return path.resolve(), text


def _from_file(given: Path, cwd: Path) -> str:
    _, text = read_task_file(
        given, cwd, named="--prompt-file", kind="a text file", empty="write the task in it"
    )
    return text


def _from_stdin(stdin: TextIO) -> str:
    if stdin.isatty():
        raise UsageError(
            "--prompt - reads the task from standard input, which is a terminal here; "
            "pipe it in (claudeloop run --prompt - < TASK.md) or use --prompt-file TASK.md"
        )
    try:
        text = _read_at_most(stdin, TASK_LIMIT_BYTES + 1)
    except UnicodeDecodeError:
        raise UsageError("--prompt -: standard input is not UTF-8 text") from None
    if len(text.encode("utf-8")) > TASK_LIMIT_BYTES:
        raise UsageError(
            f"--prompt -: standard input holds over {TASK_LIMIT_BYTES:,} bytes; "
            f"a task may hold at most {TASK_LIMIT}"
        )
    if not text.strip():
        raise UsageError("--prompt -: standard input was empty; say what the task is")
    return text


def _read_at_most(stdin: TextIO, limit: int) -> str:
    """Up to `limit` bytes of standard input as text: an endless input (/dev/zero) is
    cut there rather than read until the memory runs out."""
    buffer = getattr(stdin, "buffer", None)
    if buffer is None:  # a text stream of no file (tests)
        return stdin.read(limit)
    return bytes(buffer.read(limit)).decode("utf-8")


def read_plan(plan: Path, cwd: Path) -> tuple[Path, str]:
    return read_task_file(
        plan,
        cwd,
        named="plan file",
        kind="a markdown file",
        empty="write the task or a - [ ] checklist in it",
    )
