"""`claudeloop completion SHELL` prints click's own completion script, and the script
completes: bash, given `claudeloop re<Tab>`, offers rehearse, report and resume."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.shell_completion import get_completion_class

from claudeloop.cli.main import cli
from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]


def claudeloop_process(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "claudeloop", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_bash_script_is_the_one_click_generates() -> None:
    printed = claudeloop_process("completion", "bash")
    assert printed.returncode == 0, printed.stderr
    generated = claudeloop_process(env={"_CLAUDELOOP_COMPLETE": "bash_source"})
    assert generated.returncode == 0, generated.stderr
    assert printed.stdout == generated.stdout
    assert "_CLAUDELOOP_COMPLETE=bash_complete" in printed.stdout


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_get_click_s_script_too(claudeloop: Invoke, shell: str) -> None:
    result = claudeloop("completion", shell)
    assert result.exit_code == 0, result.err
    completion = get_completion_class(shell)
    assert completion is not None
    assert result.out == completion(cli, {}, "claudeloop", "_CLAUDELOOP_COMPLETE").source()
    assert f"_CLAUDELOOP_COMPLETE={shell}_complete" in result.out


def test_claudeloop_answers_what_completes_a_subcommand() -> None:
    answered = claudeloop_process(
        env={
            "_CLAUDELOOP_COMPLETE": "bash_complete",
            "COMP_WORDS": "claudeloop re",
            "COMP_CWORD": "1",
        }
    )
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.split() == ["plain,rehearse", "plain,report", "plain,resume"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_bash_completes_with_the_printed_script(tmp_path: Path) -> None:
    # `claudeloop` on PATH, as an installed one is, running this checkout's code.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "claudeloop"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m claudeloop "$@"\n')
    launcher.chmod(0o755)
    script = tmp_path / "claudeloop-complete.bash"
    printed = claudeloop_process("completion", "bash")
    script.write_text(printed.stdout)
    session = (
        f"source {script}\n"
        "complete -p claudeloop\n"
        # What bash does on `claudeloop re<Tab>` and on `claudeloop completion <Tab>`:
        # the function gets the command's name, the word and the word before it.
        "COMP_WORDS=(claudeloop re); COMP_CWORD=1; _claudeloop_completion claudeloop re\n"
        'echo "subcommands: ${COMPREPLY[*]}"\n'
        "COMPREPLY=(); COMP_WORDS=(claudeloop completion ''); COMP_CWORD=2\n"
        "_claudeloop_completion claudeloop '' completion\n"
        'echo "shells: ${COMPREPLY[*]}"\n'
    )
    shell = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", session],
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shell.returncode == 0, shell.stderr
    lines = shell.stdout.splitlines()
    assert lines[0].startswith("complete ")
    assert lines[0].endswith(" claudeloop")
    assert "subcommands: rehearse report resume" in lines
    assert "shells: bash zsh fish" in lines


def test_an_unknown_shell_is_one_line_naming_the_shells(claudeloop: Invoke) -> None:
    assert_one_line_error(claudeloop("completion", "tcsh"), "tcsh", "'bash', 'zsh', 'fish'")
    assert_one_line_error(claudeloop("completion"), "Missing argument", "bash, zsh, fish")
