"""The working tree's fingerprint changes when a file does, in a git repository and out
of one, and never for the run's own directory."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from claudeloop.adapters.working_tree import WorkingTreeOnDisk

GIT = shutil.which("git")


def git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.fixture(params=["plain", "git"])
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("a\n")
    if request.param == "git":
        if GIT is None:
            pytest.skip("git is not installed")
        git(tmp_path, "init", "-q")
        git(tmp_path, "add", "a.txt")
        git(tmp_path, "commit", "-qm", "a")
    return tmp_path


def test_nothing_changed_is_the_same_fingerprint(tree: Path) -> None:
    seen = WorkingTreeOnDisk(tree)
    first = seen.fingerprint()
    assert first is not None
    assert seen.fingerprint() == first


def test_an_edit_a_new_file_or_a_removal_changes_it(tree: Path) -> None:
    seen = WorkingTreeOnDisk(tree)
    prints = [seen.fingerprint()]
    (tree / "a.txt").write_text("a changed, longer\n")
    prints.append(seen.fingerprint())
    (tree / "a.txt").write_text("a changed again!!\n")  # the same size, modified already
    prints.append(seen.fingerprint())
    (tree / "b.txt").write_text("b\n")
    prints.append(seen.fingerprint())
    (tree / "b.txt").write_text("b, and more\n")
    prints.append(seen.fingerprint())
    (tree / "a.txt").unlink()
    prints.append(seen.fingerprint())
    assert len(set(prints)) == len(prints)


def test_the_run_directory_is_no_change(tree: Path) -> None:
    seen = WorkingTreeOnDisk(tree)
    first = seen.fingerprint()
    runs = tree / ".claudeloop" / "runs" / "r1"
    runs.mkdir(parents=True)
    (runs / "state.json").write_text("{}")
    assert seen.fingerprint() == first


def test_an_unreadable_directory_has_no_fingerprint(tmp_path: Path) -> None:
    assert WorkingTreeOnDisk(tmp_path / "gone").fingerprint() is None
