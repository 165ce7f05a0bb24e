"""`claudeloop init` in a project: what it writes loads through the real configuration
loader, `config show` accepts it, and a file already there is never replaced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from claudeloop.adapters.config.loading import load_configuration
from claudeloop.application.settings import VERIFY
from tests.application.test_project_setup import uncommented
from tests.cli.conftest import Invocation
from tests.cli.test_bad_input import MAKE_READ_ONLY, _unlock, needs_an_ordinary_user
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


def test_init_writes_a_config_that_loads_and_a_plan(claudeloop: Invoke, project: Path) -> None:
    (project / "Makefile").write_text("test:\n\tpytest -q\n")
    result = claudeloop("init", "--cwd", project)
    assert result.exit_code == 0, result.err
    assert result.err == ""
    lines = result.out.splitlines()
    assert lines[0] == f"Setting up claudeloop in {project}."
    assert "Found the test command `make test`: Makefile has a test target." in lines
    assert any(
        line.startswith('Wrote claudeloop.toml with verify = ["make test"]') for line in lines
    )
    assert any(line.startswith("Wrote PLAN.md") for line in lines)
    assert lines[-1] == (
        f"Next: write the task's steps into {project}/PLAN.md, then run: "
        f"claudeloop run {project}/PLAN.md --cwd {project}"
    )
    config = load_configuration(cwd=project, environ=dict(os.environ))
    assert config.files == (project / "claudeloop.toml",)
    assert config.get(VERIFY) == ["make test"]
    assert config.settings["verify"].origin.where == str(project / "claudeloop.toml")
    assert "- [ ] " in (project / "PLAN.md").read_text()


def test_every_commented_example_of_the_config_loads_too(claudeloop: Invoke, project: Path) -> None:
    assert claudeloop("init", "--cwd", project).exit_code == 0
    written = (project / "claudeloop.toml").read_text()
    assert tomllib.loads(written) == {}  # no test command here: verify commented out
    (project / "claudeloop.toml").write_text(uncommented(written))
    config = load_configuration(cwd=project, environ=dict(os.environ))
    set_here = {key for key, setting in config.settings.items() if setting.origin.kind == "project"}
    assert {"verify", "max_turns", "max_dollars", "limits", "notify", "review"} <= set_here
    assert claudeloop("config", "show", "--cwd", project).exit_code == 0


def test_no_test_command_found_is_said_and_verify_left_commented(
    claudeloop: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    result = claudeloop("init")
    assert result.exit_code == 0, result.err
    assert "Found no test command" in result.out
    assert "every setting commented out; set verify = [...]" in result.out
    assert result.out.splitlines()[-1] == (
        "Next: write the task's steps into PLAN.md, then run: claudeloop run PLAN.md"
    )
    assert '# verify = ["make test"]' in (project / "claudeloop.toml").read_text()


def test_a_test_file_at_the_top_is_found_and_set_as_verify(
    claudeloop: Invoke, project: Path
) -> None:
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    result = claudeloop("init", "--cwd", project)
    assert result.exit_code == 0, result.err
    assert "Found no test command" not in result.out
    assert "test_calc.py" in result.out
    assert 'verify = ["pytest"]' in (project / "claudeloop.toml").read_text().splitlines()


def test_init_never_replaces_a_file_already_there(claudeloop: Invoke, project: Path) -> None:
    (project / "go.mod").write_text("module example.com/app\n")
    (project / "claudeloop.toml").write_text("max_turns = 7\n")
    (project / "PLAN.md").write_text("- [x] mine\n")
    result = claudeloop("init", "--cwd", project)
    assert result.exit_code == 0, result.err
    assert "claudeloop.toml is already there: left as it is." in result.out
    assert "PLAN.md is already there: left as it is." in result.out
    # What it found is still said, with the line to add.
    assert 'claudeloop.toml sets no verify: add verify = ["go test ./..."]' in result.out
    assert result.out.splitlines()[-1].startswith("Next: claudeloop run ")
    assert (project / "claudeloop.toml").read_text() == "max_turns = 7\n"
    assert (project / "PLAN.md").read_text() == "- [x] mine\n"


def test_init_twice_writes_once_and_changes_nothing(claudeloop: Invoke, project: Path) -> None:
    (project / "Cargo.toml").write_text('[package]\nname = "app"\n')
    assert claudeloop("init", "--cwd", project).exit_code == 0
    before = {path.name: path.read_bytes() for path in project.iterdir()}
    again = claudeloop("init", "--cwd", project)
    assert again.exit_code == 0
    assert "Wrote" not in again.out
    assert "sets no verify" not in again.out  # the first init set it
    assert {path.name: path.read_bytes() for path in project.iterdir()} == before


def test_a_link_or_directory_in_the_way_is_left_alone(claudeloop: Invoke, project: Path) -> None:
    (project / "PLAN.md").mkdir()
    (project / "claudeloop.toml").symlink_to(project / "elsewhere.toml")  # dangling
    result = claudeloop("init", "--cwd", project)
    assert result.exit_code == 0, result.err
    assert "claudeloop.toml is already there: left as it is." in result.out
    assert not (project / "elsewhere.toml").exists()


def test_a_config_already_there_that_does_not_load_is_exit_2(
    claudeloop: Invoke, project: Path
) -> None:
    (project / "claudeloop.toml").write_text("max_turn = 5\n")
    result = claudeloop("init", "--cwd", project)
    assert_one_line_error(result, "claudeloop.toml", "unknown key max_turn", "config show")
    assert "claudeloop.toml is already there" in result.out
    assert (project / "PLAN.md").exists()


def test_a_missing_directory_is_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    assert_one_line_error(claudeloop("init", "--cwd", tmp_path / "nope"), "nope", "no such")


@needs_an_ordinary_user
def test_a_file_that_cannot_be_written_is_exit_1(claudeloop: Invoke, project: Path) -> None:
    assert MAKE_READ_ONLY is not None
    MAKE_READ_ONLY(project)
    try:
        result = claudeloop("init", "--cwd", project)
    finally:
        _unlock(project)
    assert result.exit_code == 1
    assert "claudeloop.toml could not be written" in result.out
    assert "PLAN.md could not be written" in result.out
    (line,) = result.err.splitlines()
    assert line.startswith(f"claudeloop: error: {project / 'claudeloop.toml'}: cannot be written (")
    assert list(project.iterdir()) == []


@pytest.mark.slow
def test_init_then_config_show_in_a_fresh_process(tmp_path: Path, project: Path) -> None:
    (project / "pyproject.toml").write_text('[project]\nname = "app"\n')
    (project / "tests").mkdir()
    environ = {
        name: value for name, value in os.environ.items() if not name.startswith("CLAUDELOOP_")
    }
    environ["CLAUDELOOP_CONFIG_DIR"] = str(tmp_path / "user-config")

    def claudeloop(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "claudeloop", *args],
            cwd=project,
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    init = claudeloop("init")
    assert init.returncode == 0, init.stderr
    assert "Found the test command `pytest`: pyproject.toml and a tests/ directory." in init.stdout
    shown = claudeloop("config", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    verify = json.loads(shown.stdout)["settings"]["verify"]
    assert verify == {"value": ["pytest"], "from": str(project / "claudeloop.toml")}
    lines = claudeloop("config", "show").stdout.splitlines()
    assert [line.split() for line in lines if line.startswith("verify ")] == [
        ["verify", '["pytest"]', f"({project / 'claudeloop.toml'})"]
    ]


def test_a_run_of_the_plan_init_wrote_unedited_is_refused_in_one_line(
    claudeloop: Invoke, project: Path
) -> None:
    assert claudeloop("init", "--cwd", project).exit_code == 0
    result = claudeloop("run", project / "PLAN.md", "--cwd", project)
    assert_one_line_error(result, "PLAN.md", "still the template", "replace its items")
    assert not (project / ".claudeloop").exists()


# The run starts the real Claude Code CLI (against a closed port): seconds of a real
# process, run by `make test` and CI.
@pytest.mark.slow
def test_the_plan_init_wrote_runs_once_its_items_are_the_task(
    claudeloop: Invoke, project: Path
) -> None:
    assert claudeloop("init", "--cwd", project).exit_code == 0
    plan = project / "PLAN.md"
    plan.write_text(plan.read_text().replace("First step", "Write hello.txt"))
    result = claudeloop("run", plan, "--cwd", project, "--max-turns", "1")
    assert "still the template" not in result.err
    assert (project / ".claudeloop").is_dir()  # the run started (and met the closed port)
