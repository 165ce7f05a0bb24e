"""`run` and `resume` between parsing and rendering: in which order a run is refused,
made or found, wired and driven, with the collaborators (`Launching`) the composition
root hands over once.

Every refusal comes before the first turn, and before a new run's directory exists:
a run that could not save what it does, or whose backend has no credentials, leaves
nothing behind. A resume reads the record with the run's lock held, so a driver that
ended while the resume started has saved its last turn by then: no finished turn is
sent again and the ledger never goes back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.run_spec import (
    ProfileCheck,
    Settings,
    new_spec,
    profile_to_resume_with,
    refuse_unwritable,
    refuse_unwritable_run_files,
    resumed_model,
    resumed_record,
)
from claudeloop.application.settings import MODEL, PROFILE, WORKTREE, WORKTREE_FROM
from claudeloop.domain.budget import ReachedCap
from claudeloop.domain.login import login_standing, login_warning, run_could_end_by
from claudeloop.domain.loop import Outcome

if TYPE_CHECKING:
    from claudeloop.application.driving import WiredRun


class ChosenBackend(Protocol):
    """What the order of a start needs to know of the backend its turns go to."""

    @property
    def marker_fallback(self) -> bool: ...


class RunLock(Protocol):
    def release(self) -> None: ...


class OpenRun(Protocol):
    """A run's directory: where its files are."""

    @property
    def path(self) -> Path: ...


B = TypeVar("B", bound=ChosenBackend)
C = TypeVar("C", bound=Settings)
D = TypeVar("D", bound=OpenRun)
# Each port's own variance: a backend it makes, a backend, settings, a directory it takes.
B_co = TypeVar("B_co", bound=ChosenBackend, covariant=True)
B_contra = TypeVar("B_contra", bound=ChosenBackend, contravariant=True)
C_contra = TypeVar("C_contra", bound=Settings, contravariant=True)
D_contra = TypeVar("D_contra", bound=OpenRun, contravariant=True)


class SettingsSource(Protocol[C, B_co]):
    """The settings files, and the backend and notifications they name."""

    def settings(self, cwd: Path, flags: Mapping[str, object]) -> C:
        """The settings: flags over CLAUDELOOP_* variables over the TOML files."""
        ...

    def backend(self, settings: C, model: str | None) -> B_co:
        """The backend the settings' profile names, for `model`; refuses one that
        cannot be used (no base URL)."""
        ...

    def check_profile(self, cwd: Path) -> ProfileCheck: ...

    def refuse_unusable(self, settings: C) -> None:
        """Refuses settings that name what cannot be used: a notification URL no
        service serves."""
        ...


class RunDirectories(Protocol[D]):
    """The runs' directories of a working directory, and the records in them."""

    def refuse_beside_a_live_run(self, cwd: Path) -> None:
        """Refuses a new run in a working directory a live run drives."""
        ...

    def why_no_runs_root(self, cwd: Path) -> str | None: ...

    def why_not_writable(self, path: Path) -> str | None: ...

    def new_record(self, spec: RunSpec, run_id: str | None) -> RunRecord:
        """The new run's first record: its id (`run_id`, or one made from the time)."""
        ...

    def create(self, record: RunRecord) -> D:
        """The new run's directory, with its record saved in it at once: a run killed
        during the slow start of the CLI is one `resume` can continue."""
        ...

    def find(self, cwd: Path, run_id: str | None, session_id: str | None) -> D: ...

    def lock(self, directory: D) -> RunLock: ...

    def load(self, directory: D) -> RunRecord: ...

    def write_missing_summary(self, directory: D, record: RunRecord) -> None:
        """summary.md of a run that ended without one, written now (the lock is held)."""
        ...

    def tell_missing_end(self, directory: D, record: RunRecord) -> None:
        """run.finished of a run that ended without saying so, said now."""
        ...


class Login(Protocol[B_contra]):
    """What Claude Code knows of the account a backend's turns are sent on."""

    def refuse_no_credentials(self, backend: B_contra, cwd: Path) -> None: ...

    def login_ends(self, backend: B_contra) -> datetime | None:
        """When the stored claude.ai login ends; None when unknown or not one."""
        ...


class Repository(Protocol[D_contra]):
    """The git repository a run commits in."""

    def refuse_no_repository(self, spec: RunSpec) -> None:
        """Refuses a run that commits on the current branch (--checkpoint) outside a git
        repository."""
        ...

    def into_worktree(
        self, directory: D_contra, record: RunRecord, *, carry: bool, merging: str | None
    ) -> tuple[RunRecord, bool]:
        """The record of a --worktree run, its worktree made and saved in it (a worktree
        that cannot be made leaves no run), and whether the checkout's uncommitted
        changes were left behind (`carry`: they are copied in). `merging`: a branch
        merged into the worktree at once, its conflicts left for the run to resolve."""
        ...


class Sandbox(Protocol):
    """The boundary this machine puts around the model's commands and the checks."""

    def refuse_unconfined_checks(self, spec: RunSpec) -> None:
        """Refuses a run whose checks would execute the model's code unconfined: the
        sandbox asked for and unable to run here (domain.confinement.checks_refusal)."""
        ...


class Wiring(Protocol[C_contra, B_contra, D_contra]):
    def __call__(
        self,
        directory: D_contra,
        record: RunRecord,
        backend: B_contra,
        settings: C_contra,
        *,
        lock: RunLock | None,
        login_ends_at: datetime | None,
    ) -> WiredRun:
        """The run's parts wired, its lock held (`lock`, or taken now): what
        application/driving.py drives."""
        ...


@dataclass(frozen=True, slots=True)
class Launching(Generic[C, B, D]):
    """What starting or resuming a run asks of the world, handed over once by the
    composition root. `C`: the settings read from every source; `B`: the backend
    chosen; `D`: the run's directory."""

    config: SettingsSource[C, B]
    runs: RunDirectories[D]
    login: Login[B]
    repository: Repository[D]
    sandbox: Sandbox
    now: Callable[[], datetime]
    wire: Wiring[C, B, D]


@dataclass(frozen=True, slots=True)
class NewRun:
    """What `run` was asked: where, the task and its plan file, the run id if chosen."""

    cwd: Path
    task: str
    plan_path: Path | None
    run_id: str | None
    flags: Mapping[str, object]
    # `merge --resolve`: the branch whose conflicts the run resolves, merged into its
    # worktree before the first turn.
    merging: str | None = None


@dataclass(frozen=True, slots=True)
class RunToResume:
    """What `resume` was asked: where, which run (the latest when both are None)."""

    cwd: Path
    run_id: str | None
    session_id: str | None
    flags: Mapping[str, object]
    # `--new-session`: the run goes on in a new session, told the task, what is done and
    # what is left, instead of resuming the one it was on (which Claude Code may no
    # longer have).
    new_session: bool = False


@dataclass(frozen=True, slots=True)
class Driven:
    """The run was driven until it ended; `record` is where it ended."""

    record: RunRecord


@dataclass(frozen=True, slots=True)
class AlreadyDone:
    """The run to resume had already ended done: nothing was sent."""

    record: RunRecord


@dataclass(frozen=True, slots=True)
class AtItsCaps:
    """The run to resume is at a cap it would go on with (its own, or one a flag
    lowered): no turn could be sent, so nothing was; `reached` says each cap, its value
    and what was spent. `record` is the run as it was found."""

    record: RunRecord
    reached: tuple[ReachedCap, ...]


Launched = Driven | AlreadyDone | AtItsCaps

# Where a warning before the first turn is said (the terminal's stderr).
Warn = Callable[[str], None]


def start_run(
    world: Launching[C, B, D], asked: NewRun, *, warn: Warn, backend: B | None = None
) -> Driven:
    """`run`: every refusal before the run's directory exists, then the run driven.
    `backend`: the one to use instead of the one the settings name (the rehearsal's)."""
    settings = world.config.settings(asked.cwd, asked.flags)
    worktree = settings.of(WORKTREE).value
    if asked.run_id is None and not worktree:
        # Runs in worktrees of their own edit no file of each other's.
        world.runs.refuse_beside_a_live_run(asked.cwd)
    chosen = backend or world.config.backend(settings, settings.of(MODEL).value)
    spec = new_spec(
        settings,
        cwd=asked.cwd,
        task=asked.task,
        plan_path=asked.plan_path,
        marker_fallback=chosen.marker_fallback,
        check_profile=world.config.check_profile(asked.cwd),
    )
    world.config.refuse_unusable(settings)
    refuse_unwritable(
        spec,
        run_files=world.runs.why_no_runs_root(asked.cwd),
        why_not_writable=world.runs.why_not_writable,
    )
    world.login.refuse_no_credentials(chosen, asked.cwd)
    world.sandbox.refuse_unconfined_checks(spec)
    if not worktree:
        world.repository.refuse_no_repository(spec)
    record = world.runs.new_record(spec, asked.run_id)
    directory = world.runs.create(record)
    if worktree:
        carry = settings.of(WORKTREE_FROM).value == "working-tree"
        record, left_behind = world.repository.into_worktree(
            directory, record, carry=carry, merging=asked.merging
        )
        if left_behind:
            warn(
                "the checkout's uncommitted changes stay where they are and are not in "
                f"the run's worktree {record.spec.work_dir} (--worktree-from working-tree "
                "copies them)"
            )
    return Driven(_drive(world, directory, record, chosen, settings, warn=warn, resumed=False))


def resume_run(
    world: Launching[C, B, D], asked: RunToResume, *, warn: Warn, backend: B | None = None
) -> Launched:
    """`resume`: the run continued with the settings it started with; flags and
    CLAUDELOOP_* variables change them (the files were read when it started). Its
    profile changes only when --profile names the new one. A run already done is
    only told (its missing summary or end written), never sent a turn; nor is one at a
    cap it would go on with, which is told its caps reached."""
    directory = world.runs.find(asked.cwd, asked.run_id, asked.session_id)
    refuse_unwritable_run_files(world.runs.why_not_writable(directory.path))
    lock = world.runs.lock(directory)
    try:
        record = world.runs.load(directory)
        world.runs.write_missing_summary(directory, record)
        if record.state.outcome is Outcome.DONE:
            world.runs.tell_missing_end(directory, record)
            lock.release()
            return AlreadyDone(record)
        found = record
        settings = world.config.settings(asked.cwd, asked.flags)
        # A backend given (a kept rehearsal's) stands in for the profile the run named.
        profile = profile_to_resume_with(record, settings) if backend is None else None
        if profile is not None:
            settings = world.config.settings(asked.cwd, {**asked.flags, PROFILE.key: profile})
        chosen = backend or world.config.backend(settings, resumed_model(record.spec, settings))
        world.config.refuse_unusable(settings)
        record = resumed_record(
            record,
            settings,
            marker_fallback=chosen.marker_fallback,
            check_profile=world.config.check_profile(asked.cwd),
        )
        # Said before anything resumes: a run at its cap would resume only to stop. (A
        # run cut off mid-way is driven on all the same: the driver writes its end.) Its
        # end is told if it was not, as a run done's is.
        reached = record.state.ledger.reached_caps()
        if reached and found.state.phase.terminal:
            world.runs.tell_missing_end(directory, found)
            lock.release()
            return AtItsCaps(found, reached)
        refuse_unwritable(
            record.spec,
            run_files=world.runs.why_not_writable(directory.path),
            why_not_writable=world.runs.why_not_writable,
        )
        world.login.refuse_no_credentials(chosen, record.spec.cwd)
        world.sandbox.refuse_unconfined_checks(record.spec)
        return Driven(
            _drive(
                world,
                directory,
                record,
                chosen,
                settings,
                warn=warn,
                resumed=True,
                lock=lock,
                new_session=asked.new_session,
            )
        )
    except BaseException:
        lock.release()
        raise


@dataclass(frozen=True, slots=True)
class Rehearsed(Generic[D]):
    """A rehearsal's run driven to its end: where it ended, and its directory."""

    record: RunRecord
    directory: D


def rehearse_run(
    runs: RunDirectories[D],
    spec: RunSpec,
    *,
    wire: Callable[[D, RunRecord], WiredRun],
    forget: Callable[[D], None],
    keep: bool,
) -> Rehearsed[D]:
    """`rehearse`: the run of `spec` (the rehearsal's own: no setting is read, nothing
    refused) made, wired on the rehearsal's servers and driven. Its folder is removed as
    the rehearsal ends unless it is kept: the machine's index of runs `forget`s it then,
    and at once when its wiring fails, never to list it as a run gone."""
    from claudeloop.application.driving import drive_run

    record = runs.new_record(spec, None)
    directory = runs.create(record)
    try:
        wired = wire(directory, record)
    except BaseException:
        forget(directory)
        raise
    try:
        return Rehearsed(drive_run(wired, record, resumed=False), directory)
    finally:
        if not keep:
            forget(directory)


def _drive(
    world: Launching[C, B, D],
    directory: D,
    record: RunRecord,
    backend: B,
    settings: C,
    *,
    warn: Warn,
    resumed: bool,
    lock: RunLock | None = None,
    new_session: bool = False,
) -> RunRecord:
    # Warned before the first turn when the login ends before the run could.
    ends_at, now = world.login.login_ends(backend), world.now()
    could_end_by = run_could_end_by(now, record.spec.wait_policy.max_wait)
    warning = login_warning(login_standing(ends_at, now=now, could_end_by=could_end_by))
    if warning is not None:
        warn(warning)
    # The driver is imported once every refusal is behind: a start refused costs
    # only what it read.
    from claudeloop.application.driving import drive_run

    wired = world.wire(directory, record, backend, settings, lock=lock, login_ends_at=ends_at)
    return drive_run(wired, record, resumed=resumed, new_session=new_session)
