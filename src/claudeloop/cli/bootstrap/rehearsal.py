"""The composition root of `claudeloop rehearse`: a rehearsal's run wired as a real one
is, on the rehearsal's servers (adapters/claude_code/rehearsal_backends.py), with its own
capacity record and no fleet seat. The command (cli/rehearse.py) picks the scenario,
starts the servers, drives the run and says what happened; a kept rehearsal's resume is
launched as any resume is, wired as the rehearsal was."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claudeloop.adapters.claude_code.backend import Backend
from claudeloop.adapters.claude_code.rehearsal_backends import local_detours, rehearsal_backend
from claudeloop.adapters.config.loading import Configuration
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.application.driving import WiredRun
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.launching import Launching, RunLock
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.cli.bootstrap import launching_with

if TYPE_CHECKING:
    from claudeloop.adapters.notify.sender import NotifyTargets

LOCAL_PROFILE = "rehearsal-local"


@dataclass(frozen=True, slots=True)
class Rehearsal:
    """A rehearsal's run, wired: its record, what drives it, where its summary is
    written, and how it is forgotten when its folder is removed."""

    record: RunRecord
    wired: WiredRun
    summary_path: Path
    forget: Callable[[], None]


@dataclass(frozen=True, slots=True)
class RehearsalServers:
    """The rehearsal API serving (and the local profile's, for the switch-profile
    scenario), and what a run on it is wired with: the backend, the detour to the local
    profile, and the rehearsal folder's own capacity record, never the machine's."""

    base_url: str
    local_url: str | None
    on_local_profile: bool
    workdir: Path
    state: Callable[[], dict[str, Any]]

    @property
    def home(self) -> Path:
        return self.workdir / "home"

    @property
    def capacity_dir(self) -> Path:
        return self.workdir / "state" / "capacity"

    def backend(self) -> Backend:
        local = LOCAL_PROFILE if self.on_local_profile else None
        return rehearsal_backend(self.base_url, self.home, local_profile=local)

    def detours(self) -> Callable[[str], Backend] | None:
        return local_detours(self.local_url, self.home, LOCAL_PROFILE)


def rehearsal_run(
    spec: RunSpec, servers: RehearsalServers, *, notify: NotifyTargets | None, quiet: bool
) -> Rehearsal:
    """The run of `spec` on the rehearsal's `servers`; `notify`: the --notify targets, as
    `notify_flag_targets` checked them."""
    from claudeloop.adapters import run_index
    from claudeloop.adapters.run_directory import starting
    from claudeloop.cli.bootstrap.runs import wire_run

    own = servers.backend()
    spec = replace(
        spec,
        profile=own.profile.name if own.profile else "rehearsal",
        marker_fallback=own.marker_fallback,
    )
    record = starting.new_record(spec, None)
    directory = starting.create(record)
    # Removed on purpose with its folder: not listed by `runs --all` or the dashboard.
    forget = functools.partial(run_index.unregister_run, directory.run_id, directory.path)
    try:
        wired = wire_run(
            directory,
            record,
            backend=own,
            quiet=quiet,
            notify=notify,
            detours=servers.detours(),
            # Its own record: a rehearsal never shares capacity with real runs.
            capacity_dir=servers.capacity_dir,
            seat=NO_SEAT,  # nor is it a fleet's
        )
    except BaseException:
        forget()
        raise
    return Rehearsal(record=record, wired=wired, summary_path=directory.summary_path, forget=forget)


def rehearsal_launching(
    servers: RehearsalServers, *, quiet: bool, verbose: bool = False
) -> Launching[Configuration, Backend, RunDirectory]:
    """The launching of a kept rehearsal's resume: the run driven on the rehearsal's own
    capacity record and detours, told nothing of the notifications of the files, and no
    fleet's."""

    def wire(
        directory: RunDirectory,
        record: RunRecord,
        backend: Backend,
        settings: Configuration,  # noqa: ARG001 (the rehearsal wires its own)
        *,
        lock: RunLock | None,
        login_ends_at: datetime | None,
    ) -> WiredRun:
        from claudeloop.cli.bootstrap.runs import wire_run

        return wire_run(
            directory,
            record,
            backend=backend,
            quiet=quiet,
            verbose=verbose,
            lock=lock,
            login_ends_at=login_ends_at,
            detours=servers.detours(),
            capacity_dir=servers.capacity_dir,
            seat=NO_SEAT,
        )

    return launching_with(wire)
