"""The plan file on disk: read as it is, written (when asked) keeping its permissions."""

from __future__ import annotations

from pathlib import Path

from claudeloop.adapters.plan_file import PlanFileOnDisk
from claudeloop.domain.plan import WorkPlan


def test_writing_checkmarks_keeps_the_file_s_permissions(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("- [ ] a\n")
    plan.chmod(0o664)
    files = PlanFileOnDisk()
    files.write(plan, WorkPlan.parse("- [x] a\n"))
    assert plan.read_text() == "- [x] a\n"
    assert plan.stat().st_mode & 0o777 == 0o664


def test_a_plan_that_cannot_be_read_is_none(tmp_path: Path) -> None:
    assert PlanFileOnDisk().read(tmp_path / "missing.md") is None
    binary = tmp_path / "PLAN.md"
    binary.write_bytes(b"\xff\xfe\x00")
    assert PlanFileOnDisk().read(binary) is None
