"""Keeping the plan: the run's own copy of the plan file's checklist, and the file.

The model checks items off in the file as it works; the run keeps its own copy, checks
an item off itself when a verdict (accepted) says it is done, and writes only the
checkmarks back, so what a person or the model wrote in the file since is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from claudeloop.application.events import Event, PlanUpdated
from claudeloop.application.ports import PlanFiles
from claudeloop.application.records import RunRecord
from claudeloop.domain.completion import CompletionVerdict
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.progress import plan_after_verdict


@dataclass(frozen=True, slots=True)
class PlanKeeper:
    # The plan file as it is on disk now (None: the run reads no file).
    plans: PlanFiles | None

    def current(self, record: RunRecord) -> WorkPlan | None:
        """The plan as the run knows it, with what the model checked off in the file."""
        on_disk = self._on_disk(record)
        if record.plan is None:
            return on_disk
        if on_disk is None:
            return record.plan
        return record.plan.merged_with(on_disk)

    def reconcile(
        self,
        record: RunRecord,
        verdict: CompletionVerdict,
        announce: list[Event],
        *,
        accepted: bool = True,
    ) -> RunRecord:
        """The record with the plan after `verdict` (its items checked off only when
        `accepted`) and the file's checkmarks; a moved count is said in `announce`, and
        the file gets the run's checkmarks when the run updates it."""
        if record.plan is None:
            return record
        before = (record.plan.done_count, record.plan.total)
        plan = plan_after_verdict(record.plan, verdict, accepted=accepted)
        on_disk = self._on_disk(record)
        if on_disk is not None:
            plan = plan.merged_with(on_disk)
        if (plan.done_count, plan.total) != before:
            announce.append(
                PlanUpdated(
                    done=plan.done_count,
                    total=plan.total,
                    open=tuple(item.text for item in plan.open_items),
                )
            )
        path = record.spec.plan_path
        if record.spec.update_plan and on_disk is not None and path is not None and self.plans:
            # Only checkmarks are written, onto the file as it is now: the text the model
            # or a person changed since is kept.
            done = frozenset(item.key for item in plan.items if item.done)
            checked = on_disk.with_items_marked_done(done)
            if checked != on_disk:
                self.plans.write(path, checked)
        return replace(record, plan=plan)

    def _on_disk(self, record: RunRecord) -> WorkPlan | None:
        path = record.spec.plan_path
        return self.plans.read(path) if path is not None and self.plans is not None else None


def checked(plan: WorkPlan | None) -> frozenset[str]:
    """The keys of the plan's checked items (the stagnation brake's evidence)."""
    return frozenset(item.key for item in plan.items if item.done) if plan else frozenset()
