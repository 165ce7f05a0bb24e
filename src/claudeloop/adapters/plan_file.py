"""The plan file on disk: read after every turn, written only when the user asks."""

from __future__ import annotations

from pathlib import Path

from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.domain.plan import WorkPlan


class PlanFileOnDisk:
    def read(self, path: Path) -> WorkPlan | None:
        try:
            return WorkPlan.parse(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            # Moved, or mid-edit by the model: the run keeps the plan it knows.
            return None

    def write(self, path: Path, plan: WorkPlan) -> None:
        write_atomically(path, plan.render(), mode=None)
