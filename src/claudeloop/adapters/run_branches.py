"""The `RunBranches` port on this machine: a project's run directories and the git
repository their branches are in (application/branch.py's `diff`, `rewind`, `merge`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from claudeloop.adapters import git_checkpoint
from claudeloop.adapters.plan_file import PlanFileOnDisk
from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.finding import find_run, load_record, take_lock
from claudeloop.adapters.run_directory.layout import EventLog
from claudeloop.adapters.system_clock import SystemClock
from claudeloop.application.branch import Merged
from claudeloop.application.events import BranchRewound
from claudeloop.application.json_form import JsonObject
from claudeloop.application.records import RunRecord
from claudeloop.domain.plan import WorkPlan


class RunBranchesOnDisk:
    """Satisfies application.branch.RunBranches."""

    def record(self, cwd: Path, run_id: str | None) -> RunRecord:
        return load_record(find_run(cwd, run_id, None))

    @contextmanager
    def held(self, cwd: Path, run_id: str) -> Iterator[None]:
        lock = take_lock(find_run(cwd, run_id, None))
        try:
            yield
        finally:
            lock.release()

    def diff(self, work_dir: Path, run_id: str, turn: int | None, *, stat: bool) -> str:
        return git_checkpoint.run_diff(work_dir, run_id, turn, stat=stat)

    def rewind(self, work_dir: Path, run_id: str, turn: int, *, own: bool) -> tuple[str, list[int]]:
        return git_checkpoint.rewind_to(work_dir, run_id, turn, own=own)

    def events(self, cwd: Path, run_id: str) -> Sequence[JsonObject]:
        return list(self._directory(cwd, run_id).read_events())

    def plan_file(self, path: Path) -> WorkPlan | None:
        return PlanFileOnDisk().read(path)

    def save(self, cwd: Path, record: RunRecord) -> None:
        self._directory(cwd, record.run_id).save(record)

    def tell(self, cwd: Path, run_id: str, event: BranchRewound) -> None:
        log = EventLog(self._directory(cwd, run_id), SystemClock(), Redactor.from_environment())
        try:
            log.emit(event)
        finally:
            log.close()

    def repository_top(self, cwd: Path) -> Path | None:
        return git_checkpoint.repository_top(cwd)

    def merge(self, repository: Path, branch: str, into: str) -> Merged:
        return git_checkpoint.merge_branch(repository, branch, into)

    def facts(self, work_dir: Path, run_id: str) -> dict[str, object]:
        return git_checkpoint.branch_facts(work_dir, run_id)

    @staticmethod
    def _directory(cwd: Path, run_id: str) -> RunDirectory:
        return find_run(cwd, run_id, None)
