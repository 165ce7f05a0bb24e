"""The watch of a run's tree with the kernel's real inotify: what a turn did to files and
directories is said once, the run's own and git's directories never, and where it
cannot be sure it says so instead of guessing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from claudeloop.adapters import tree_watch
from claudeloop.adapters.tree_watch import Changed, TreeWatch


@pytest.fixture
def top(tmp_path: Path) -> Path:
    top = tmp_path / "tree"
    (top / "src" / "pkg").mkdir(parents=True)
    (top / "src" / "pkg" / "a.py").write_text("a\n")
    (top / "README").write_text("r\n")
    (top / "old").mkdir()
    (top / "old" / "x.txt").write_text("x\n")
    (top / ".git").mkdir()
    (top / ".claudeloop").mkdir()
    return top


def started(top: Path) -> TreeWatch:
    watch = TreeWatch.start(top)
    assert watch is not None
    return watch


def test_files_written_made_removed_renamed_or_chmodded_are_said_once(top: Path) -> None:
    watch = started(top)
    (top / "src" / "pkg" / "a.py").write_text("changed\n")
    (top / "new.txt").write_text("n\n")
    (top / "README").unlink()
    (top / "old" / "x.txt").rename(top / "old" / "y.txt")
    (top / "src" / "run.sh").write_text("#!/bin/sh\n")
    assert watch.changes() == Changed(
        frozenset({"src/pkg/a.py", "new.txt", "README", "old/x.txt", "old/y.txt", "src/run.sh"})
    )
    os.chmod(top / "src" / "run.sh", 0o755)
    assert watch.changes() == Changed(frozenset({"src/run.sh"}))
    assert not watch.changes()
    watch.close()


def test_a_directory_made_in_the_turn_has_every_file_in_it_counted(top: Path) -> None:
    watch = started(top)
    (top / "lib" / "deep" / "er").mkdir(parents=True)
    (top / "lib" / "deep" / "er" / "m.py").write_text("m\n")
    (top / "lib" / "top.py").write_text("t\n")
    changed = watch.changes()
    assert changed is not None
    assert {"lib/deep/er/m.py", "lib/top.py"} <= changed.paths
    # Watched from then on: a later write in it is seen too.
    (top / "lib" / "deep" / "er" / "m.py").write_text("again\n")
    assert watch.changes() == Changed(frozenset({"lib/deep/er/m.py"}))
    watch.close()


def test_a_directory_removed_or_moved_away_is_gone_and_not_followed(top: Path) -> None:
    watch = started(top)
    (top / "old").rename(top.parent / "outside")
    (top / "src" / "pkg" / "a.py").unlink()
    (top / "src" / "pkg").rmdir()
    assert watch.changes() == Changed(frozenset({"src/pkg/a.py"}), frozenset({"old", "src/pkg"}))
    # The moved directory's watch follows its inode: what is done there now is not ours.
    (top.parent / "outside" / "x.txt").write_text("elsewhere\n")
    assert not watch.changes()
    watch.close()


def test_a_directory_moved_in_is_walked(top: Path, tmp_path: Path) -> None:
    outside = tmp_path / "brought"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "f.txt").write_text("f\n")
    watch = started(top)
    outside.rename(top / "brought")
    changed = watch.changes()
    assert changed is not None
    assert "brought/sub/f.txt" in changed.paths
    watch.close()


def test_git_and_the_run_files_are_never_said(top: Path) -> None:
    watch = started(top)
    (top / ".git" / "index").write_text("i\n")
    (top / ".claudeloop" / "state.json").write_text("{}\n")
    (top / "src" / ".claudeloop").mkdir()
    (top / "src" / ".claudeloop" / "events.jsonl").write_text("{}\n")
    assert not watch.changes()
    watch.close()


def test_a_tree_of_too_many_directories_is_not_watched(
    top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_watch, "MAX_DIRECTORIES", 3)
    assert TreeWatch.start(top) is None


def test_more_directories_made_than_it_may_watch_make_it_unsure(
    top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_watch, "MAX_DIRECTORIES", 5)
    watch = started(top)  # the top, src, src/pkg, old
    for n in range(3):
        (top / f"d{n}").mkdir()
    assert watch.changes() is None
    watch.close()


def test_a_turn_of_more_events_than_the_kernel_queues_makes_it_unsure(top: Path) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    watch = started(top)
    with (top / "README").open("w") as one, (top / "new.txt").open("w") as other:
        # A write is an event; two files in turn, as the kernel merges repeats of one.
        for n in range(limit // 2 + 10):
            for out in (one, other):
                out.write(f"{n}\n")
                out.flush()
    assert watch.changes() is None
    watch.close()
