"""A run in a git repository leaves nothing of claudeloop in `git status`: its folder
holds a .gitignore of its own, so a run's logs are never one `git add .` from a commit,
and the project's own .gitignore is left as it is (issue 42, item 5)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal

pytestmark = pytest.mark.e2e


def git(project: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=project, capture_output=True, text=True, check=True
    ).stdout


def fresh_repository(project: Path) -> None:
    git(project, "init", "-q")
    (project / ".gitignore").write_text("*.log\n")
    git(project, "add", ".gitignore")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")


@pytest.mark.scenario("one_step")
def test_a_first_run_shows_nothing_of_claudeloop_in_git_status(rehearsal: Rehearsal) -> None:
    fresh_repository(rehearsal.project)
    finished = rehearsal.run("--prompt", "Write step1.txt", *FAST_WAITS)
    assert finished.exit_code == 0, finished.stderr
    assert finished.run_directory().is_dir()
    status = git(rehearsal.project, "status", "--porcelain", "--untracked-files=all")
    assert status.splitlines() == ["?? step1.txt"]
    assert (rehearsal.project / ".gitignore").read_text() == "*.log\n"
    git(rehearsal.project, "add", ".")
    staged = git(rehearsal.project, "diff", "--cached", "--name-only")
    assert staged.splitlines() == ["step1.txt"]


@pytest.mark.scenario("one_step")
def test_a_folder_an_older_claudeloop_made_is_ignored_from_the_next_run(
    rehearsal: Rehearsal,
) -> None:
    fresh_repository(rehearsal.project)
    older = rehearsal.project / ".claudeloop" / "runs" / "20250101-000000-abcdef"
    older.mkdir(parents=True)
    (older / "events.jsonl").write_text("")
    assert ".claudeloop/" in git(rehearsal.project, "status", "--porcelain")
    finished = rehearsal.run("--prompt", "Write step1.txt", *FAST_WAITS)
    assert finished.exit_code == 0, finished.stderr
    status = git(rehearsal.project, "status", "--porcelain", "--untracked-files=all")
    assert status.splitlines() == ["?? step1.txt"]
