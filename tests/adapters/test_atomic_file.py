"""Replacing a file atomically, and removing what a write killed before its rename left."""

from __future__ import annotations

import os
import time
from pathlib import Path

from claudeloop.adapters.atomic_file import remove_leftovers, write_atomically

HOUR_AGO = time.time() - 3600


def leftover(path: Path, name: str, *, mtime: float = HOUR_AGO) -> Path:
    made = path.parent / name
    made.write_text("half a plan")
    os.utime(made, (mtime, mtime))
    return made


def test_a_replaced_file_leaves_no_temporary_file(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    write_atomically(plan, "- [ ] a\n")
    write_atomically(plan, "- [x] a\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["PLAN.md"]


def test_an_old_leftover_is_removed_and_the_users_files_are_kept(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("- [ ] a\n")
    ours = leftover(plan, ".PLAN.md.k2j4_9zq.claudeloop-tmp")
    users = [
        leftover(plan, ".PLAN.md.20261130"),  # looks like an unmarked temporary: a backup?
        leftover(plan, ".PLAN.md.bak"),
        leftover(plan, ".PLAN.md.k2j4_9zq.claudeloop-tmp.orig"),
        leftover(plan, "PLAN.md.k2j4_9zq.claudeloop-tmp"),
        leftover(plan, ".NOTES.md.k2j4_9zq.claudeloop-tmp"),
    ]
    remove_leftovers(plan, older_than=60)
    assert not ours.exists()
    assert all(path.exists() for path in users)
    assert plan.read_text() == "- [ ] a\n"


def test_a_young_leftover_may_be_a_write_in_progress_and_is_kept(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    young = leftover(plan, ".PLAN.md.k2j4_9zq.claudeloop-tmp", mtime=time.time())
    remove_leftovers(plan, older_than=60)
    assert young.exists()


def test_a_symlink_named_like_a_leftover_is_kept(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    target = tmp_path / "elsewhere.md"
    target.write_text("mine")
    link = tmp_path / ".PLAN.md.k2j4_9zq.claudeloop-tmp"
    link.symlink_to(target)
    remove_leftovers(plan)
    assert link.is_symlink()
    assert target.read_text() == "mine"


def test_in_claudeloops_own_directory_unmarked_leftovers_go_too(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    old_style = leftover(state, ".state.json.a1b2c3d4", mtime=time.time())
    new_style = leftover(state, ".state.json.a1b2c3d4.claudeloop-tmp", mtime=time.time())
    remove_leftovers(state, unmarked=True)
    assert not old_style.exists()
    assert not new_style.exists()
