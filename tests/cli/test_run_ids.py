"""A run id names one directory under .claudeloop/runs: anything else is one line and
exit 2, with nothing written anywhere."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Invocation

Invoke = Callable[..., Invocation]

# "ABSOLUTE" stands for an absolute path inside the test's own directory.
BAD_RUN_IDS = ["../../x", "ABSOLUTE", "a/b", "", ".", "..", "x" * 300, "two\nlines"]


def files_under(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file())


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_run_refuses_a_run_id_that_would_leave_the_runs_directory(
    claudeloop: Invoke, tmp_path: Path, run_id: str
) -> None:
    project = tmp_path / "work" / "project"
    project.mkdir(parents=True)
    if run_id == "ABSOLUTE":
        run_id = str(tmp_path / "work" / "outside")
    result = claudeloop("run", "--prompt", "do it", "--run-id", run_id, "--cwd", project)
    assert result.exit_code == 2
    assert result.out == ""
    (line,) = result.err.splitlines()
    assert line.startswith("claudeloop: error: --run-id ")
    assert "a run id is letters, digits" in line
    assert files_under(tmp_path / "work") == []


@pytest.mark.parametrize("command", ["status", "logs", "resume", "stop", "wind-down"])
@pytest.mark.parametrize("run_id", ["..", "../../x", "a/b", "two\nlines"])
def test_commands_that_find_a_run_refuse_the_same_run_ids(
    claudeloop: Invoke, tmp_path: Path, command: str, run_id: str
) -> None:
    project = tmp_path / "work" / "project"
    (project / ".claudeloop" / "runs").mkdir(parents=True)
    result = claudeloop(command, "--run-id", run_id, "--cwd", project)
    assert result.exit_code == 2
    (line,) = result.err.splitlines()
    assert line.startswith("claudeloop: error: --run-id ")
    assert files_under(tmp_path / "work") == []
