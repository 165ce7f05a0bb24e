"""The task of `run --prompt`: given inline, read from a file (`--prompt-file PATH`) or
from standard input (`--prompt -`).

A long task cannot go inline: the kernel caps one argument at 128 KiB (MAX_ARG_STRLEN
on Linux), so `claudeloop run --prompt "$(cat TASK.md)"` fails before claudeloop starts.
Past that, the length is no problem: the SDK hands each prompt to Claude Code as a
stream-json message on its stdin, not as an argument.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from claudeloop.cli.errors import UserError

STDIN = "-"


def task_prompt(
    prompt: str | None, prompt_file: Path | None, *, cwd: Path, stdin: TextIO | None = None
) -> str | None:
    """The prompt's text, or None when the task is not a prompt (a PLAN file)."""
    if prompt is not None and prompt_file is not None:
        raise UserError("give either --prompt TEXT or --prompt-file PATH, not both")
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
    path = given.expanduser()
    if not path.is_absolute() and not path.exists() and (cwd / path).exists():
        path = cwd / path
    where = f"{named} {given}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{where}: not found") from None
    except IsADirectoryError:
        raise UserError(f"{where}: is a directory, expected {kind}") from None
    except UnicodeDecodeError:
        raise UserError(f"{where}: is not UTF-8 text") from None
    except OSError as error:
        raise UserError(f"{where}: cannot be read ({error.strerror or error})") from None
    if not text.strip():
        raise UserError(f"{where}: is empty; {empty}")
    return path.resolve(), text


def _from_file(given: Path, cwd: Path) -> str:
    _, text = read_task_file(
        given, cwd, named="--prompt-file", kind="a text file", empty="write the task in it"
    )
    return text


def _from_stdin(stdin: TextIO) -> str:
    if stdin.isatty():
        raise UserError(
            "--prompt - reads the task from standard input, which is a terminal here; "
            "pipe it in (claudeloop run --prompt - < TASK.md) or use --prompt-file TASK.md"
        )
    try:
        text = stdin.read()
    except UnicodeDecodeError:
        raise UserError("--prompt -: standard input is not UTF-8 text") from None
    if not text.strip():
        raise UserError("--prompt -: standard input was empty; say what the task is")
    return text
