"""The real side of the `Launching` port (application/launching.py): the settings read
from their files, the backend they name, the run's directory on disk, the Claude Code
CLI asked whether it has credentials, and the run wired and driven.

Each part is imported where it is first needed: the settings (pydantic) once they are
read, the wiring of a run (bootstrap/runs.py, and the SDK behind it) once the run is
made. A start refused for its input (a run id no run has, a missing plan) costs about
what `--help` does, and one refused for a setting a tenth of what a run's start does."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.finding import (
    find_run,
    load_record,
    refuse_beside_a_live_run,
    take_lock,
    tell_missing_end,
    write_missing_summary,
)
from claudeloop.adapters.run_directory.layout import keep_out_of_git
from claudeloop.adapters.run_directory.lock import DriverLock
from claudeloop.adapters.run_directory.writable import why_no_runs_root, why_not_writable
from claudeloop.application.errors import NoCredentials
from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.launching import RunLock
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.run_spec import ProfileCheck

if TYPE_CHECKING:
    from claudeloop.adapters.claude_code.backend import Backend
    from claudeloop.adapters.config.loading import Configuration
    from claudeloop.adapters.notify.sender import NotifyTargets


def refuse_no_credentials(backend: Backend, cwd: Path) -> None:
    """Exit 77 before any turn when Claude Code would find no credentials: it would only
    answer "Not logged in" to the first turn, which no login could have refused. Any
    doubt lets the run start (a false "no credentials" is worse than none)."""
    from claudeloop.adapters import claude_cli
    from claudeloop.adapters.backend_advice import no_credentials
    from claudeloop.adapters.credentials import CREDENTIAL_VARIABLES, PROVIDER_VARIABLES

    if backend.local:
        return  # a local server gets the profile's token or a dummy: no Claude login
    env = claude_cli.environment(backend.env, os.environ)
    if any(env.get(name) for name in (*CREDENTIAL_VARIABLES, *PROVIDER_VARIABLES)):
        return  # the common case, told without starting the CLI
    cli = claude_cli.executable(backend.cli_path)
    if cli is None:
        return  # the run says there is no CLI, in its own words
    status = claude_cli.login_status(cli, env, cwd)
    if status.known and not status.logged_in:
        raise NoCredentials(no_credentials(status.config_directory))


@dataclass(frozen=True, slots=True)
class Launcher:
    """Starts and resumes runs on this machine. `quiet`/`verbose`: what the terminal
    shows of the run; `seat`: the run's seat in a fleet, read once at the entry point."""

    seat: FleetSeat
    quiet: bool = False
    verbose: bool = False

    def settings(self, cwd: Path, flags: Mapping[str, object]) -> Configuration:
        from claudeloop.cli.bootstrap.configuration import configuration

        return configuration(cwd, flags)

    def backend(self, settings: Configuration, model: str | None) -> Backend:
        from claudeloop.adapters.claude_code.backend import backend_for
        from claudeloop.cli.bootstrap.configuration import backend_profile, refuse_no_base_url

        chosen = backend_for(backend_profile(settings, model))
        refuse_no_base_url(chosen)
        return chosen

    def check_profile(self, cwd: Path) -> ProfileCheck:
        from claudeloop.cli.bootstrap.configuration import profile_check

        return profile_check(cwd)

    def refuse_unusable(self, settings: Configuration) -> None:
        from claudeloop.cli.bootstrap.configuration import notify_targets

        notify_targets(settings)

    def refuse_beside_a_live_run(self, cwd: Path) -> None:
        refuse_beside_a_live_run(cwd)

    def refuse_no_credentials(self, backend: Backend, cwd: Path) -> None:
        refuse_no_credentials(backend, cwd)

    def refuse_no_repository(self, spec: RunSpec) -> None:
        from claudeloop.cli.bootstrap.runs import refuse_checkpoint_outside_git

        refuse_checkpoint_outside_git(spec)

    def refuse_unconfined_checks(self, spec: RunSpec) -> None:
        from claudeloop.cli.bootstrap.boundary import refuse_unconfined_checks

        refuse_unconfined_checks(spec)

    def into_worktree(
        self, directory: RunDirectory, record: RunRecord, *, carry: bool, merging: str | None
    ) -> tuple[RunRecord, bool]:
        from claudeloop.cli.bootstrap.runs import with_worktree

        return with_worktree(directory, record, carry=carry, merging=merging)

    def why_no_runs_root(self, cwd: Path) -> str | None:
        return why_no_runs_root(cwd)

    def why_not_writable(self, path: Path) -> str | None:
        return why_not_writable(path)

    def login_ends(self, backend: Backend) -> datetime | None:
        from claudeloop.adapters.claude_code.backend import login_ends

        return login_ends(backend)

    def now(self) -> datetime:
        return datetime.now(UTC)

    def new_record(self, spec: RunSpec, run_id: str | None) -> RunRecord:
        from claudeloop.cli.bootstrap.runs import new_record

        return new_record(spec, run_id)

    def create(self, record: RunRecord) -> RunDirectory:
        from claudeloop.cli.bootstrap.runs import create_directory

        return create_directory(record)

    def find(self, cwd: Path, run_id: str | None, session_id: str | None) -> RunDirectory:
        directory = find_run(cwd, run_id, session_id)
        keep_out_of_git(directory.path.parent.parent.parent)  # a folder made before
        return directory

    def lock(self, directory: RunDirectory) -> DriverLock:
        return take_lock(directory)

    def load(self, directory: RunDirectory) -> RunRecord:
        return load_record(directory)

    def write_missing_summary(self, directory: RunDirectory, record: RunRecord) -> None:
        write_missing_summary(directory, record, locked=True)

    def tell_missing_end(self, directory: RunDirectory, record: RunRecord) -> None:
        tell_missing_end(directory, record)

    def drive(
        self,
        directory: RunDirectory,
        record: RunRecord,
        backend: Backend,
        settings: Configuration,
        *,
        resumed: bool,
        lock: RunLock | None,
        login_ends_at: datetime | None,
        new_session: bool = False,
    ) -> RunRecord:
        from claudeloop.application.driving import drive_run
        from claudeloop.cli.bootstrap.runs import wire_run

        wired = wire_run(
            directory,
            record,
            backend=backend,
            quiet=self.quiet,
            verbose=self.verbose,
            lock=lock,
            login_ends_at=login_ends_at,
            **self.surroundings(record, settings),
        )
        return drive_run(wired, record, resumed=resumed, new_session=new_session)

    def surroundings(self, record: RunRecord, settings: Configuration) -> Surroundings:
        """What a run is wired to beyond its backend: where it notifies, the profiles its
        limit policies switch to, the capacity record it shares, its seat in a fleet."""
        from claudeloop.cli.bootstrap.configuration import (
            detours,
            notify_targets,
            shared_capacity_dir,
        )

        return Surroundings(
            notify=notify_targets(settings),
            detours=detours(record.spec.cwd),
            capacity_dir=shared_capacity_dir(settings),
            seat=self.seat,
        )


class Surroundings(TypedDict):
    notify: NotifyTargets | None
    detours: Callable[[str], Backend] | None
    capacity_dir: Path | None
    seat: FleetSeat
