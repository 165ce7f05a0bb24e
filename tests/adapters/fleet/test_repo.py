"""A --repo run's working tree through git, with real git and a bare repository on
disk: a new run's branch starts from the chosen one, each push carries the agent's
work, and a takeover's clone goes on from what was last pushed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.repo import RepoFailed, prepare, push

IDENTITY = ["-c", "user.name=test", "-c", "user.email=test@localhost"]


def git(directory: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(directory), *IDENTITY, *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> str:
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "--quiet", "--initial-branch", "main")
    (seed / "PLAN.md").write_text("- [ ] Write step1.txt\n")
    git(seed, "add", "PLAN.md")
    git(seed, "commit", "--quiet", "-m", "plan")
    git(seed, "branch", "release")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(seed), str(bare)], check=True)
    return f"file://{bare}"


def test_a_run_branch_starts_from_the_chosen_branch_and_each_push_carries_the_work(
    remote: str, tmp_path: Path
) -> None:
    first = tmp_path / "a" / "r1"
    prepare(remote, "release", "r1", first)
    assert git(first, "rev-parse", "--abbrev-ref", "HEAD") == "claudeloop/r1"
    (first / "step1.txt").write_text("one\n")
    (first / ".claudeloop").mkdir()
    (first / ".claudeloop" / "state.json").write_text("{}")  # travels through the engine
    push(first, "r1", "after turn 1")
    bare = Path(remote.removeprefix("file://"))
    files = git(bare, "ls-tree", "--name-only", "claudeloop/r1").splitlines()
    assert files == ["PLAN.md", "step1.txt"]

    # Another machine takes the run over: it goes on from the pushed branch.
    second = tmp_path / "b" / "r1"
    prepare(remote, None, "r1", second)
    assert (second / "step1.txt").read_text() == "one\n"
    (second / "step2.txt").write_text("two\n")
    push(second, "r1", "after turn 2")
    push(second, "r1", "nothing changed")  # no empty commit, the push a no-op
    assert git(bare, "log", "--format=%s", "claudeloop/r1").splitlines()[:2] == [
        "after turn 2",
        "after turn 1",
    ]

    # Back on the first machine, its clone is brought up to what the other pushed.
    prepare(remote, "release", "r1", first)
    assert (first / "step2.txt").read_text() == "two\n"


def test_a_branch_the_remote_lacks_and_a_remote_that_is_not_are_one_line(
    remote: str, tmp_path: Path
) -> None:
    with pytest.raises(RepoFailed, match="no branch nope"):
        prepare(remote, "nope", "r1", tmp_path / "r1")
    with pytest.raises(RepoFailed, match=r"^git clone: ") as failed:
        prepare(f"file://{tmp_path / 'missing.git'}", None, "r2", tmp_path / "r2")
    assert "\n" not in str(failed.value)


def test_a_file_holding_a_secret_of_the_workers_environment_is_not_pushed(
    remote: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "deploy-token-canary-4411")
    work = tmp_path / "r3"
    prepare(remote, "release", "r3", work)
    (work / "step1.txt").write_text("one\n")
    (work / ".env").write_text("DEPLOY_TOKEN=deploy-token-canary-4411\n")
    push(work, "r3", "after turn 1")
    bare = Path(remote.removeprefix("file://"))
    files = git(bare, "ls-tree", "--name-only", "claudeloop/r3").splitlines()
    assert files == ["PLAN.md", "step1.txt"]
