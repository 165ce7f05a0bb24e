"""A run's branch in real git: the worktree made from HEAD without touching the
checkout, a commit per turn with its trailers, never the run's files nor a secret."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from claudeloop.adapters.git_checkpoint import (
    GitCheckpoints,
    branch_facts,
    commit_all,
    make_worktree,
    merge_branch,
    repository_top,
    restore_worktree,
    rewind_to,
    run_diff,
    turn_commits,
)
from claudeloop.application.errors import UsageError
from claudeloop.domain.checkpoints import commit_message, trailers

SECRET = "sk-test-0123456789abcdef"


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)
    return done.stdout.decode()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "a.txt").write_text("a\n")
    git(project, "add", "a.txt")
    git(project, "commit", "-qm", "a")
    return project


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and ".git" not in path.parts and ".claudeloop" not in path.parts
    }


def holds(text: str) -> bool:
    return SECRET in text


def masked(text: str) -> str:
    return text.replace(SECRET, "[redacted]")


def message(turn: int) -> str:
    return commit_message(f"turn {turn} did it", turn, trailers("r1", turn, 0.5))


def test_a_worktree_branches_from_head_and_leaves_the_checkout_as_it_was(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "a.txt").write_text("edited, not committed\n")
    (repo / "new.txt").write_text("untracked\n")
    before = snapshot(repo)
    made = make_worktree(repo, "r1", root=tmp_path / "state", carry=False)
    assert made.branch == "claudeloop/r1"
    assert made.base_branch == "main"
    assert made.left_behind
    assert (made.work_dir / "a.txt").read_text() == "a\n"  # HEAD's, not the edit
    assert not (made.work_dir / "new.txt").exists()
    assert made.work_dir.is_relative_to(tmp_path / "state")
    assert snapshot(repo) == before
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "main"


def test_working_tree_carries_the_uncommitted_changes(repo: Path, tmp_path: Path) -> None:
    (repo / "a.txt").write_text("edited\n")
    (repo / "new.txt").write_text("untracked\n")
    before = snapshot(repo)
    made = make_worktree(repo, "r1", root=tmp_path / "state", carry=True)
    assert not made.left_behind
    assert (made.work_dir / "a.txt").read_text() == "edited\n"
    assert (made.work_dir / "new.txt").read_text() == "untracked\n"
    assert snapshot(repo) == before


def test_a_run_in_a_subdirectory_works_in_the_same_subdirectory(repo: Path, tmp_path: Path) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / "b.txt").write_text("b\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "b")
    made = make_worktree(repo / "sub", "r1", root=tmp_path / "state", carry=False)
    assert (made.work_dir / "b.txt").read_text() == "b\n"
    assert made.work_dir == made.top / "sub"


def test_outside_a_repository_or_before_a_commit_is_one_line(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repository_top(plain) is None
    with pytest.raises(UsageError, match="not in a git repository"):
        make_worktree(plain, "r1", root=tmp_path / "state", carry=False)
    git(plain, "init", "-q")
    with pytest.raises(UsageError, match="no commit yet"):
        make_worktree(plain, "r1", root=tmp_path / "state", carry=False)


def test_a_branch_taken_already_is_one_line(repo: Path, tmp_path: Path) -> None:
    git(repo, "branch", "claudeloop/r1")
    with pytest.raises(UsageError, match="already exists"):
        make_worktree(repo, "r1", root=tmp_path / "state", carry=False)


def test_each_turn_is_a_commit_with_trailers_and_a_turn_of_nothing_is_none(
    repo: Path, tmp_path: Path
) -> None:
    made = make_worktree(repo, "r1", root=tmp_path / "state", carry=False)
    branch = GitCheckpoints(made.work_dir, "r1", holds_secret=holds, redact=masked, own=True)
    assert branch.branch == "claudeloop/r1"
    assert branch.last_turn() == 0
    (made.work_dir / "b.txt").write_text("b\n")
    first = branch.commit(message(1))
    assert first.sha is not None
    assert first.files == ("b.txt",)
    assert branch.last_turn() == 1
    assert branch.commit(message(2)).sha is None  # nothing changed
    (made.work_dir / "a.txt").unlink()
    third = branch.commit(message(3))
    assert third.files == ("a.txt",)
    assert branch.last_turn() == 3
    log = git(made.work_dir, "log", "--format=%s|%(trailers:key=Claudeloop-Turn,valueonly)")
    assert log.split() == ["turn", "3", "did", "it|3", "turn", "1", "did", "it|1", "a|"]
    # The checkout's branch did not move.
    assert git(repo, "log", "--format=%s", "main").split() == ["a"]


def test_a_commit_message_holding_a_secret_is_written_masked(repo: Path, tmp_path: Path) -> None:
    # The message is the model's summary: it would stay in the history of every clone.
    made = make_worktree(repo, "r1", root=tmp_path / "state", carry=False)
    branch = GitCheckpoints(made.work_dir, "r1", holds_secret=holds, redact=masked, own=True)
    (made.work_dir / "b.txt").write_text("b\n")
    summary = f"Deployed with {SECRET}.\n\nThe token {SECRET} works."
    assert branch.commit(commit_message(summary, 1, trailers("r1", 1, 0.5))).sha is not None
    written = git(made.work_dir, "log", "-1", "--format=%B")
    assert SECRET not in written
    assert written.startswith("Deployed with [redacted].\n")  # the subject
    assert "The token [redacted] works." in written
    assert branch.last_turn() == 1  # its trailers kept


def test_the_run_files_and_a_file_holding_a_secret_are_never_committed(repo: Path) -> None:
    (repo / ".claudeloop" / "runs" / "r1").mkdir(parents=True)
    (repo / ".claudeloop" / "runs" / "r1" / "state.json").write_text("{}")
    (repo / "nested" / ".claudeloop").mkdir(parents=True)
    (repo / "nested" / ".claudeloop" / "x").write_text("x")
    (repo / ".env").write_text(f"TOKEN={SECRET}\n")
    (repo / "ok.txt").write_text("fine\n")
    done = commit_all(repo, message(1), holds_secret=holds)
    assert done.files == ("ok.txt",)
    assert done.refused == (".env",)
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert committed == ["ok.txt"]
    assert (repo / ".env").exists()  # left as it is, uncommitted
    assert "?? .env" in git(repo, "status", "--porcelain")


def test_only_a_secret_changed_makes_no_commit(repo: Path) -> None:
    (repo / ".env").write_text(SECRET)
    done = commit_all(repo, message(1), holds_secret=holds)
    assert done.sha is None
    assert done.refused == (".env",)
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


def test_the_last_turn_is_this_runs_not_another_runs(repo: Path) -> None:
    (repo / "b.txt").write_text("b")
    commit_all(repo, commit_message("x", 4, trailers("r10", 4, 0.0)))
    (repo / "c.txt").write_text("c")
    commit_all(repo, commit_message("y", 2, trailers("r1", 2, 0.0)))
    (repo / "d.txt").write_text("d")
    commit_all(repo, commit_message("z", 7, trailers("r10", 7, 0.0)))
    assert GitCheckpoints(repo, "r1", holds_secret=holds, redact=masked).last_turn() == 2
    assert GitCheckpoints(repo, "r10", holds_secret=holds, redact=masked).last_turn() == 7
    assert GitCheckpoints(repo, "r2", holds_secret=holds, redact=masked).last_turn() == 0


def test_a_lock_a_kill_left_mid_commit_is_removed_in_the_runs_own_worktree(
    repo: Path, tmp_path: Path
) -> None:
    made = make_worktree(repo, "r1", root=tmp_path / "state", carry=False)
    lock = Path(
        git(
            made.work_dir, "rev-parse", "--path-format=absolute", "--git-path", "index.lock"
        ).strip()
    )
    lock.write_text("")
    (made.work_dir / "b.txt").write_text("b\n")
    done = GitCheckpoints(made.work_dir, "r1", holds_secret=holds, redact=masked, own=True).commit(
        message(1)
    )
    assert done.sha is not None


def test_a_worktree_removed_is_made_again_from_the_branch(repo: Path, tmp_path: Path) -> None:
    made = make_worktree(repo, "r1", root=tmp_path / "state", carry=False)
    (made.work_dir / "b.txt").write_text("b\n")
    GitCheckpoints(made.work_dir, "r1", holds_secret=holds, redact=masked).commit(message(1))
    git(repo, "worktree", "remove", "--force", str(made.top))
    restore_worktree(made.work_dir, "r1", repository=repo)
    assert (made.work_dir / "b.txt").read_text() == "b\n"
    restore_worktree(made.work_dir, "r1", repository=repo)  # there: nothing to do


def three_turns(repo: Path, tmp_path: Path) -> Path:
    """A worktree run whose turns 1 and 3 wrote a file each (turn 2 changed nothing)."""
    made = make_worktree(repo, "r1", root=tmp_path / "state", carry=False)
    branch = GitCheckpoints(made.work_dir, "r1", holds_secret=holds, redact=masked, own=True)
    (made.work_dir / "b.txt").write_text("b\n")
    branch.commit(message(1))
    (made.work_dir / "c.txt").write_text("c\n")
    branch.commit(message(3))
    return made.work_dir


def test_the_diff_of_a_turn_and_of_the_whole_run(repo: Path, tmp_path: Path) -> None:
    work = three_turns(repo, tmp_path)
    assert [(c.turn, c.subject) for c in turn_commits(work, "r1")] == [
        (1, "turn 1 did it"),
        (3, "turn 3 did it"),
    ]
    third = run_diff(work, "r1", 3)
    assert "+++ b/c.txt" in third
    assert "b.txt" not in third
    whole = run_diff(work, "r1", None, stat=True)
    assert "b.txt" in whole
    assert "c.txt" in whole
    assert "2 files changed" in whole
    assert run_diff(work, "r1", 2) == ""  # turn 2 made no commit
    facts = branch_facts(work, "r1")
    assert facts["branch"] == "claudeloop/r1"
    assert facts["diffstat"] == "2 files changed, 2 insertions(+)"


def test_rewind_resets_the_branch_to_a_turn_or_to_where_the_run_began(
    repo: Path, tmp_path: Path
) -> None:
    work = three_turns(repo, tmp_path)
    (work / "scratch.txt").write_text("uncommitted\n")
    sha, undone = rewind_to(work, "r1", 2, own=True)
    assert undone == [3]
    assert not (work / "c.txt").exists()
    assert (work / "b.txt").exists()
    assert sha == git(work, "rev-parse", "HEAD").strip()
    with pytest.raises(UsageError, match="no commit on its branch"):
        rewind_to(work, "r2", 1, own=True)
    _, undone = rewind_to(work, "r1", 0, own=True)
    assert undone == [1]
    assert git(work, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")


def test_a_clean_merge_merges_and_a_conflict_lists_its_files_and_merges_nothing(
    repo: Path, tmp_path: Path
) -> None:
    work = three_turns(repo, tmp_path)
    merged = merge_branch(repo, "claudeloop/r1", "main")
    assert merged.sha is not None
    assert (repo / "c.txt").read_text() == "c\n"
    # A second run edits a.txt while main does too: a conflict.
    other = make_worktree(repo, "r2", root=tmp_path / "state", carry=False)
    (other.work_dir / "a.txt").write_text("theirs\n")
    GitCheckpoints(other.work_dir, "r2", holds_secret=holds, redact=masked).commit(message(1))
    (repo / "a.txt").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    before = git(repo, "rev-parse", "HEAD")
    conflicted = merge_branch(repo, "claudeloop/r2", "main")
    assert conflicted.sha is None
    assert conflicted.conflicts == ("a.txt",)
    assert git(repo, "rev-parse", "HEAD") == before
    assert git(repo, "status", "--porcelain") == ""  # the merge was undone
    assert work.exists()


def test_merge_refuses_a_checkout_on_another_branch_or_with_changes(
    repo: Path, tmp_path: Path
) -> None:
    three_turns(repo, tmp_path)
    (repo / "a.txt").write_text("dirty\n")
    with pytest.raises(UsageError, match="uncommitted changes"):
        merge_branch(repo, "claudeloop/r1", "main")
    git(repo, "checkout", "-q", "--", "a.txt")
    git(repo, "switch", "-q", "-c", "elsewhere")
    with pytest.raises(UsageError, match="git switch main"):
        merge_branch(repo, "claudeloop/r1", "main")
