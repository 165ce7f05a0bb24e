"""`run` and `resume` as use cases: what is refused before anything is made, what a
resume does with its lock and with a run already done, on a world that behaves."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

import anyio
import pytest

from claudeloop.application.driving import WiredRun
from claudeloop.application.errors import NoCredentials, UsageError
from claudeloop.application.launching import (
    AlreadyDone,
    AtItsCaps,
    Driven,
    Launching,
    NewRun,
    RunLock,
    RunToResume,
    rehearse_run,
    resume_run,
    start_run,
)
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.run_spec import ProfileCheck
from claudeloop.domain.budget import Budget, BudgetLedger, ReachedCap
from claudeloop.domain.loop import Interrupt, Outcome, Phase, RunState
from tests.application.fakes import START, FakeGateway
from tests.application.test_run_spec import Settings, no_check, settings

CWD = Path("/work/app")


@dataclass(frozen=True)
class FakeBackend:
    marker_fallback: bool = True
    logged_in: bool = True


@dataclass(frozen=True)
class FakeDirectory:
    path: Path


@dataclass
class FakeLock:
    released: int = 0

    def release(self) -> None:
        self.released += 1


@dataclass
class World:
    """Runs kept in memory; `said` is every step the world was asked, in order."""

    given: Mapping[str, Settings] = field(default_factory=dict)
    backend_of: FakeBackend = field(default_factory=FakeBackend)
    records: dict[str, RunRecord] = field(default_factory=dict)
    unwritable: set[Path] = field(default_factory=set)
    login_ends_at: datetime | None = None
    locks: list[FakeLock] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    ends_as: Outcome = Outcome.DONE
    repositories: set[Path] = field(default_factory=set)
    sandbox_here: bool = True

    def settings(self, cwd: Path, flags: Mapping[str, object]) -> Settings:
        profile = str(flags.get("profile", "default"))
        self.said.append(f"settings {profile}")
        return self.given.get(profile, settings())

    def backend(self, settings: Settings, model: str | None) -> FakeBackend:
        self.said.append(f"backend {model}")
        return self.backend_of

    def check_profile(self, cwd: Path) -> ProfileCheck:
        return no_check

    def refuse_unusable(self, settings: Settings) -> None:
        self.said.append("checked the settings")

    def refuse_beside_a_live_run(self, cwd: Path) -> None:
        if any(not record.state.phase.terminal for record in self.records.values()):
            raise UsageError(f"{cwd}: a live run drives it")

    def refuse_no_credentials(self, backend: FakeBackend, cwd: Path) -> None:
        if not backend.logged_in:
            raise NoCredentials("no credentials")

    def refuse_no_repository(self, spec: RunSpec) -> None:
        if spec.checkpoint and spec.cwd not in self.repositories:
            raise UsageError(f"--checkpoint: {spec.cwd} is not in a git repository")

    def refuse_unconfined_checks(self, spec: RunSpec) -> None:
        if spec.verify.checks and spec.sandbox.on and not self.sandbox_here:
            raise UsageError("--verify runs code the model wrote, and the sandbox cannot run")

    def into_worktree(
        self, directory: FakeDirectory, record: RunRecord, *, carry: bool, merging: str | None
    ) -> tuple[RunRecord, bool]:
        self.said.append(f"worktree carry={carry}" + (f" merging {merging}" if merging else ""))
        spec = replace(record.spec, worktree=Path("/state/worktrees/app") / record.run_id)
        record = replace(record, spec=replace(spec, checkpoint=True))
        self.records[record.run_id] = record
        return record, not carry

    def why_no_runs_root(self, cwd: Path) -> str | None:
        return self.why_not_writable(cwd / ".claudeloop")

    def why_not_writable(self, path: Path) -> str | None:
        return "read-only" if path in self.unwritable else None

    def login_ends(self, backend: FakeBackend) -> datetime | None:
        return self.login_ends_at

    def now(self) -> datetime:
        return START

    def new_record(self, spec: RunSpec, run_id: str | None) -> RunRecord:
        state = RunState(ledger=BudgetLedger(budget=spec.budget))
        return RunRecord(run_id=run_id or "r1", spec=spec, state=state, started_at=START)

    def create(self, record: RunRecord) -> FakeDirectory:
        self.said.append(f"create {record.run_id}")
        self.records[record.run_id] = record
        return FakeDirectory(CWD / ".claudeloop" / "runs" / record.run_id)

    def find(self, cwd: Path, run_id: str | None, session_id: str | None) -> FakeDirectory:
        chosen = run_id or next(iter(self.records))
        if chosen not in self.records:
            raise UsageError(f"no run {chosen!r}")
        return FakeDirectory(cwd / ".claudeloop" / "runs" / chosen)

    def lock(self, directory: FakeDirectory) -> FakeLock:
        self.said.append("lock")
        self.locks.append(FakeLock())
        return self.locks[-1]

    def load(self, directory: FakeDirectory) -> RunRecord:
        self.said.append("load")
        return self.records[directory.path.name]

    def write_missing_summary(self, directory: FakeDirectory, record: RunRecord) -> None:
        self.said.append("summary")

    def tell_missing_end(self, directory: FakeDirectory, record: RunRecord) -> None:
        self.said.append("end told")

    def wire(
        self,
        directory: FakeDirectory,
        record: RunRecord,
        backend: FakeBackend,
        settings: Settings,
        *,
        lock: RunLock | None,
        login_ends_at: datetime | None,
    ) -> WiredRun:
        return WiredRun(
            runner=Drive(self, locked=lock is not None),
            gateway=FakeGateway(deque()),
            files=NoFiles(),
            interrupts=NoInterrupts(),
            failure_sinks=(),
            write_summary=lambda _ended: None,
            mask_secrets=lambda ended: ended,
            close=lambda: None,
        )


@dataclass
class Drive:
    """Drives a run of `world` to the end it says, as the runner would."""

    world: World
    locked: bool

    async def drive(
        self, record: RunRecord, *, resumed: bool = False, new_session: bool = False
    ) -> RunRecord:
        self.world.said.append(f"drive resumed={resumed} locked={self.locked}")
        if new_session:
            self.world.said.append("new session")
        state = replace(record.state, phase=Phase.COMPLETE, outcome=self.world.ends_as)
        ended = replace(record, state=state)
        self.world.records[record.run_id] = ended
        return ended


class NoFiles:
    def load(self) -> RunRecord:
        raise FileNotFoundError("state.json")

    def save(self, record: RunRecord) -> None:
        pass

    def interrupt(self, interrupt: Interrupt) -> None:
        pass


class NoInterrupts:
    async def each(self) -> AsyncIterator[Interrupt]:
        await anyio.sleep_forever()
        yield Interrupt.CTRL_C  # never reached: what makes this an async generator


def handed(world: World) -> Launching[Settings, FakeBackend, FakeDirectory]:
    """`world` handed to the use cases, each of its parts one of their collaborators."""
    return Launching(
        config=world,
        runs=world,
        login=world,
        repository=world,
        sandbox=world,
        now=world.now,
        wire=world.wire,
    )


def asked_to_run(run_id: str | None = None) -> NewRun:
    return NewRun(cwd=CWD, task="Build it.", plan_path=None, run_id=run_id, flags={})


def asked_to_resume(**flags: object) -> RunToResume:
    return RunToResume(cwd=CWD, run_id=None, session_id=None, flags=flags)


def stopped(world: World) -> RunRecord:
    """A run of `world` that was stopped: one a resume continues."""
    start_run(handed(world), asked_to_run(), warn=print)
    record = world.records["r1"]
    state = replace(record.state, phase=Phase.COMPLETE, outcome=Outcome.STOPPED)
    world.records["r1"] = replace(record, state=state)
    world.said.clear()
    return world.records["r1"]


def test_a_run_is_made_then_driven_and_ends_where_the_drive_ended() -> None:
    world = World()
    ended = start_run(handed(world), asked_to_run(), warn=print)
    assert isinstance(ended, Driven)
    assert ended.record.state.outcome is Outcome.DONE
    assert world.said == [
        "settings default",
        "backend None",
        "checked the settings",
        "create r1",
        "drive resumed=False locked=False",
    ]


def test_a_run_refused_for_its_credentials_leaves_no_run_directory() -> None:
    world = World(backend_of=FakeBackend(logged_in=False))
    with pytest.raises(NoCredentials):
        start_run(handed(world), asked_to_run(), warn=print)
    assert world.records == {}


def test_a_run_whose_files_cannot_be_written_is_refused_before_it_is_made() -> None:
    world = World(unwritable={CWD / ".claudeloop"})
    with pytest.raises(UsageError, match="cannot write the run's files: read-only"):
        start_run(handed(world), asked_to_run(), warn=print)
    assert world.records == {}


def test_a_second_run_beside_a_live_one_is_refused_unless_it_names_its_own_id() -> None:
    world = World(ends_as=Outcome.DONE)
    stopped(world)
    live = world.records["r1"]
    world.records["r1"] = replace(live, state=replace(live.state, phase=Phase.RUNNING))
    with pytest.raises(UsageError, match="a live run drives it"):
        start_run(handed(world), asked_to_run(), warn=print)
    assert isinstance(start_run(handed(world), asked_to_run("r2"), warn=print), Driven)


def test_a_login_ending_before_the_run_could_is_warned_of_before_the_first_turn() -> None:
    world = World(login_ends_at=START + timedelta(minutes=30))
    warned: list[str] = []

    def warn(text: str) -> None:
        warned.append(text)
        world.said.append("warned")

    start_run(handed(world), asked_to_run(), warn=warn)
    assert len(warned) == 1
    assert world.said[-2:] == ["warned", "drive resumed=False locked=False"]


def test_no_warning_when_the_login_outlasts_the_run() -> None:
    world = World(login_ends_at=START + timedelta(days=400))
    warned: list[str] = []
    start_run(handed(world), asked_to_run(), warn=warned.append)
    assert warned == []


def test_a_resume_reads_the_record_with_the_lock_held_and_hands_the_lock_to_the_drive() -> None:
    world = World()
    stopped(world)
    ended = resume_run(handed(world), asked_to_resume(), warn=print)
    assert isinstance(ended, Driven)
    assert world.said[:3] == ["lock", "load", "summary"]
    assert world.said[-1] == "drive resumed=True locked=True"
    assert world.locks[0].released == 0  # the drive releases it as the run ends


def test_a_run_already_done_is_told_never_driven_and_its_lock_released() -> None:
    world = World()
    start_run(handed(world), asked_to_run(), warn=print)
    world.said.clear()
    answer = resume_run(handed(world), asked_to_resume(), warn=print)
    assert isinstance(answer, AlreadyDone)
    assert world.said == ["lock", "load", "summary", "end told"]
    assert world.locks[0].released == 1


def capped_at_two_turns(world: World) -> RunRecord:
    """A run of `world` its cap of two turns stopped, two turns answered."""
    start_run(handed(world), asked_to_run(), warn=print)
    record = world.records["r1"]
    ledger = BudgetLedger(Budget(max_turns=2), turns=2, attempts=2, dollars=0.02)
    state = replace(
        record.state, phase=Phase.FAILED, outcome=Outcome.BUDGET_EXHAUSTED, ledger=ledger
    )
    world.records["r1"] = replace(
        record, spec=replace(record.spec, budget=ledger.budget), state=state
    )
    world.said.clear()
    return world.records["r1"]


def test_a_resume_at_the_runs_turn_cap_sends_nothing_and_says_the_cap() -> None:
    world = World()
    capped = capped_at_two_turns(world)
    answer = resume_run(handed(world), asked_to_resume(), warn=print)
    assert answer == AtItsCaps(capped, (ReachedCap("max-turns", 2, 2),))
    assert not any(step.startswith("drive") for step in world.said)
    assert "end told" in world.said  # a run.finished the run never wrote
    assert world.locks[0].released == 1
    assert world.records["r1"] == capped  # nothing written


def test_a_resume_with_the_cap_raised_above_what_was_spent_is_driven() -> None:
    world = World(given={"default": settings(max_turns=(3, "flag"))})
    capped_at_two_turns(world)
    answer = resume_run(handed(world), asked_to_resume(), warn=print)
    assert isinstance(answer, Driven)
    assert answer.record.spec.budget.max_turns == 3


def test_a_resume_lowering_a_cap_below_what_was_spent_sends_nothing() -> None:
    world = World(given={"default": settings(max_dollars=(0.01, "flag"))})
    stopped(world)
    record = world.records["r1"]
    world.records["r1"] = replace(
        record, state=replace(record.state, ledger=BudgetLedger(turns=1, dollars=0.05))
    )
    answer = resume_run(handed(world), asked_to_resume(), warn=print)
    assert isinstance(answer, AtItsCaps)
    assert answer.reached == (ReachedCap("max-dollars", 0.01, 0.05),)


def test_a_resume_refused_after_the_lock_was_taken_releases_it() -> None:
    world = World()
    stopped(world)
    world.backend_of = FakeBackend(logged_in=False)
    with pytest.raises(NoCredentials):
        resume_run(handed(world), asked_to_resume(), warn=print)
    assert world.locks[0].released == 1
    assert world.records["r1"].state.outcome is Outcome.STOPPED


def test_a_resume_of_a_run_whose_directory_became_read_only_is_refused_before_the_lock() -> None:
    world = World()
    stopped(world)
    world.unwritable = {CWD / ".claudeloop" / "runs" / "r1"}
    with pytest.raises(UsageError, match="cannot write the run's files"):
        resume_run(handed(world), asked_to_resume(), warn=print)
    assert world.locks == []


def test_a_resume_reads_the_settings_of_the_runs_own_profile_again() -> None:
    world = World(given={"default": settings(("box",)), "box": settings(("box",))})
    start_run(handed(world), asked_to_run(), warn=print)
    record = world.records["r1"]
    spec = replace(record.spec, profile="box")
    state = replace(record.state, phase=Phase.COMPLETE, outcome=Outcome.STOPPED)
    world.records["r1"] = replace(record, spec=spec, state=state)
    world.said.clear()
    resume_run(handed(world), asked_to_resume(), warn=print)
    assert [step for step in world.said if step.startswith("settings")] == [
        "settings default",
        "settings box",
    ]


def test_a_worktree_run_is_made_in_its_worktree_after_its_directory_beside_a_live_run() -> None:
    world = World(given={"default": settings(worktree=(True, "flag"))})
    stopped(world)
    live = world.records["r1"]
    world.records["r1"] = replace(live, state=replace(live.state, phase=Phase.RUNNING))
    warned: list[str] = []
    ended = start_run(handed(world), asked_to_run("r2"), warn=warned.append)
    assert ended.record.spec.worktree == Path("/state/worktrees/app/r2")
    assert world.said[-3:] == [
        "create r2",
        "worktree carry=False",
        "drive resumed=False locked=False",
    ]
    (line,) = warned
    assert "uncommitted changes stay where they are" in line
    # No --run-id needed beside a live run: the two share no file.
    assert isinstance(start_run(handed(world), asked_to_run(), warn=print), Driven)


def test_working_tree_carries_the_changes_and_says_nothing_left_behind() -> None:
    flags = settings(worktree=(True, "flag"), worktree_from=("working-tree", "flag"))
    world = World(given={"default": flags})
    warned: list[str] = []
    start_run(handed(world), asked_to_run(), warn=warned.append)
    assert "worktree carry=True" in world.said
    assert warned == []


def test_checkpoint_outside_a_repository_is_refused_before_the_run_is_made() -> None:
    world = World(given={"default": settings(checkpoint=(True, "flag"))})
    with pytest.raises(UsageError, match="not in a git repository"):
        start_run(handed(world), asked_to_run(), warn=print)
    assert world.records == {}
    world.repositories.add(CWD)
    assert start_run(handed(world), asked_to_run(), warn=print).record.spec.checkpoint


def test_a_resume_given_a_backend_needs_no_profile_of_the_files() -> None:
    # A kept rehearsal's run names the rehearsal's profile, which no file defines: the
    # backend given (the rehearsal's) stands in for it, and nothing asks the files for it.
    world = World()
    stopped(world)
    record = world.records["r1"]
    world.records["r1"] = replace(record, spec=replace(record.spec, profile="rehearsal"))
    with pytest.raises(UsageError, match="which no configuration file defines now"):
        resume_run(handed(world), asked_to_resume(), warn=print)
    world.said.clear()
    given = FakeBackend(marker_fallback=False)
    ended = resume_run(handed(world), asked_to_resume(), warn=print, backend=given)
    assert isinstance(ended, Driven)
    assert "backend None" not in world.said
    assert [step for step in world.said if step.startswith("settings")] == ["settings default"]


def a_spec() -> RunSpec:
    return RunSpec(cwd=CWD, task="Rehearse it.")


def test_a_rehearsal_is_made_wired_and_driven_without_reading_a_setting() -> None:
    world, forgotten = World(), list[FakeDirectory]()
    rehearsed = rehearse_run(
        world,
        a_spec(),
        wire=lambda d, r: world.wire(
            d, r, FakeBackend(), settings(), lock=None, login_ends_at=None
        ),
        forget=forgotten.append,
        keep=True,
    )
    assert rehearsed.record.state.outcome is Outcome.DONE
    assert rehearsed.directory.path.name == "r1"
    assert world.said == ["create r1", "drive resumed=False locked=False"]
    assert forgotten == []  # kept: `runs --all` lists it


def test_a_rehearsal_not_kept_is_forgotten_once_driven() -> None:
    world, forgotten = World(), list[FakeDirectory]()
    rehearse_run(
        world,
        a_spec(),
        wire=lambda d, r: world.wire(
            d, r, FakeBackend(), settings(), lock=None, login_ends_at=None
        ),
        forget=forgotten.append,
        keep=False,
    )
    assert [directory.path.name for directory in forgotten] == ["r1"]


def test_a_rehearsal_whose_wiring_fails_is_forgotten_even_kept() -> None:
    world, forgotten = World(), list[FakeDirectory]()

    def broken(directory: FakeDirectory, record: RunRecord) -> WiredRun:
        raise UsageError("events.jsonl: cannot be written")

    with pytest.raises(UsageError):
        rehearse_run(world, a_spec(), wire=broken, forget=forgotten.append, keep=True)
    assert [directory.path.name for directory in forgotten] == ["r1"]
    assert not any(said.startswith("drive") for said in world.said)
