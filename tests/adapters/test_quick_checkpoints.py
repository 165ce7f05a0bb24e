"""A commit per turn that looks only at what the watch saw change (adapters/tree_watch.py,
git_tree.py) must commit what a look at every file would: after any sequence of turns
(files written, removed, renamed, made executable, replaced by a directory and back,
ignored files, a file made and removed again), the branch's tree is the tree
`git add --all` makes of the same working tree, in real git."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claudeloop.adapters.git_checkpoint import GitCheckpoints, checkpoints, full_commit
from claudeloop.domain.checkpoints import commit_message, trailers

SECRET = "sk-test-0123456789abcdef"
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}
PATHS = ["a.txt", "d/b.txt", "d/e/c.txt", "x", "x/y.txt", "build/out.o", "m.pyc", "d/e"]


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env or ENV)
    return done.stdout.decode()


def make_repo(top: Path) -> Path:
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    (top / ".gitignore").write_text("*.pyc\nbuild/\n")
    (top / "a.txt").write_text("a\n")
    (top / "d" / "e").mkdir(parents=True)
    (top / "d" / "b.txt").write_text("b\n")
    (top / "d" / "e" / "c.txt").write_text("c\n")
    git(top, "add", ".")
    git(top, "commit", "-qm", "start")
    return top


def everything_added(top: Path, parent: str) -> str:
    """The tree `git add --all` makes of the working tree, on a copy of the index."""
    index = top / ".git" / "oracle-index"
    env = {**ENV, "GIT_INDEX_FILE": str(index)}
    try:
        git(top, "read-tree", parent, env=env)
        git(top, "add", "--all", "--", ":/", ":(exclude,glob,top)**/.claudeloop/**", env=env)
        return git(top, "write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def make_room(top: Path, path: Path) -> None:
    """Whatever is at `path`, or a file where one of its directories must be, removed."""
    for parent in path.parents:
        if top in parent.parents and (parent.is_file() or parent.is_symlink()):
            parent.unlink()
    remove(path)
    path.parent.mkdir(parents=True, exist_ok=True)


def apply(top: Path, step: tuple[str, str, int]) -> None:
    kind, name, n = step
    path = top / name
    if kind == "write":
        make_room(top, path)
        path.write_text(f"{name} {n}\n")
    elif kind == "remove":
        remove(path)
    elif kind == "chmod" and path.is_file():
        path.chmod(0o755 if n % 2 else 0o644)
    elif kind == "rename" and path.exists():
        target = top / f"moved{n}"
        remove(target)
        path.rename(target)
    elif kind == "flash":  # made and removed within the turn
        flash = top / f"tmp{n}.txt"
        flash.write_text("soon gone\n")
        flash.unlink()
    elif kind == "link":
        make_room(top, path)
        path.symlink_to(f"target{n}")


STEPS = st.tuples(
    st.sampled_from(["write", "write", "remove", "chmod", "rename", "flash", "link"]),
    st.sampled_from(PATHS),
    st.integers(0, 3),
)


@pytest.fixture
def full_looks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many commits looked at every file."""
    counted: list[int] = []
    real = full_commit.commit_everything

    def counting(*args: object, **kwargs: object) -> object:
        counted.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoints, "commit_everything", counting)
    return counted


@pytest.mark.slow
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turns=st.lists(st.lists(STEPS, min_size=1, max_size=4), min_size=1, max_size=6))
def test_a_quick_commit_holds_what_adding_everything_would(
    tmp_path_factory: pytest.TempPathFactory,
    full_looks: list[int],
    turns: list[list[tuple[str, str, int]]],
) -> None:
    top = make_repo(tmp_path_factory.mktemp("quick") / "repo")
    checkpoints = GitCheckpoints(
        top, "r1", holds_secret=lambda text: SECRET in text, redact=str, own=True
    )
    full_looks.clear()
    try:
        checkpoints.commit(commit_message("first", 1, trailers("r1", 1, 0.0)))
        for turn, steps in enumerate(turns, start=2):
            for step in steps:
                apply(top, step)
            before = git(top, "rev-parse", "HEAD").strip()
            expected = everything_added(top, before)
            checkpoints.commit(commit_message(f"turn {turn}", turn, trailers("r1", turn, 0.0)))
            assert git(top, "rev-parse", "HEAD^{tree}").strip() == expected, steps
            # The index agrees with the commit: `git status` says nothing is left.
            assert git(top, "status", "--porcelain", "--untracked-files=all") == ""
    finally:
        checkpoints.close()
    assert len(full_looks) == 1  # the first commit; every later one looked only at changes


@pytest.fixture
def watched(tmp_path: Path, full_looks: list[int]) -> Iterator[tuple[Path, GitCheckpoints]]:
    """A repository whose first commit is made: the next ones are quick."""
    top = make_repo(tmp_path / "repo")
    checkpoints = GitCheckpoints(
        top, "r1", holds_secret=lambda text: SECRET in text, redact=str, own=True
    )
    (top / "a.txt").write_text("turn 1\n")
    assert checkpoints.commit(commit_message("first", 1, trailers("r1", 1, 0.0))).sha
    full_looks.clear()
    yield top, checkpoints
    checkpoints.close()


def test_a_quick_commit_refuses_a_file_holding_a_secret_and_leaves_it_in_the_tree(
    watched: tuple[Path, GitCheckpoints], full_looks: list[int]
) -> None:
    top, checkpoints = watched
    (top / "d" / "b.txt").write_text(f"token = {SECRET}\n")  # tracked
    (top / "new.env").write_text(f"KEY={SECRET}\n")  # new
    (top / "ok.txt").write_text("fine\n")
    done = checkpoints.commit(commit_message("turn 2", 2, trailers("r1", 2, 0.0)))
    assert done.files == ("ok.txt",)
    assert set(done.refused) == {"d/b.txt", "new.env"}
    assert git(top, "show", "HEAD:d/b.txt") == "b\n"
    assert "new.env" not in git(top, "ls-tree", "-r", "--name-only", "HEAD")
    assert SECRET in (top / "new.env").read_text()  # nothing of the user's lost
    # Neither is staged for the model's next `git commit` either.
    assert git(top, "diff", "--cached", "--name-only") == ""
    assert full_looks == []


def test_a_commit_the_model_made_itself_is_the_parent_of_the_turns_commit(
    watched: tuple[Path, GitCheckpoints], full_looks: list[int]
) -> None:
    top, checkpoints = watched
    (top / "d" / "b.txt").write_text("the model's\n")
    git(top, "commit", "-qam", "the model's own commit")
    models = git(top, "rev-parse", "HEAD").strip()
    (top / "a.txt").write_text("turn 2\n")
    done = checkpoints.commit(commit_message("turn 2", 2, trailers("r1", 2, 0.0)))
    assert done.files == ("a.txt",)
    assert git(top, "rev-parse", "HEAD^").strip() == models
    assert git(top, "show", "HEAD:d/b.txt") == "the model's\n"
    assert checkpoints.last_turn() == 2
    assert full_looks == []


def test_a_turn_that_changed_a_file_and_changed_it_back_makes_no_commit(
    watched: tuple[Path, GitCheckpoints],
) -> None:
    top, checkpoints = watched
    head = git(top, "rev-parse", "HEAD")
    (top / "a.txt").write_text("for a moment\n")
    (top / "a.txt").write_text("turn 1\n")
    (top / "tmp.txt").write_text("gone again\n")
    (top / "tmp.txt").unlink()
    done = checkpoints.commit(commit_message("turn 2", 2, trailers("r1", 2, 0.0)))
    assert done.sha is None
    assert git(top, "rev-parse", "HEAD") == head


def test_after_close_the_next_commit_looks_at_every_file_again(
    watched: tuple[Path, GitCheckpoints], full_looks: list[int]
) -> None:
    top, checkpoints = watched
    checkpoints.close()
    (top / "a.txt").write_text("turn 2\n")
    done = checkpoints.commit(commit_message("turn 2", 2, trailers("r1", 2, 0.0)))
    assert done.files == ("a.txt",)
    assert full_looks == [1]
