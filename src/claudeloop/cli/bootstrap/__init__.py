"""The composition root: the one place in cli/ that names an adapter (an import contract
holds it). It fills the ports of the commands' use cases, or hands a command a wired
object, never an adapter's own name (tests/cli/test_composition_root.py); it decides
nothing (tests/cli/test_root_only_wires.py). Each function imports what it wires when
called, so `status` starts without what a run needs. `runs`: the wiring of a run;
`rehearsal`: a rehearsal's, on its own servers."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:
    from claudeloop.adapters.claude_code.backend import Backend
    from claudeloop.adapters.config.loading import Configuration
    from claudeloop.adapters.fleet.engine import Engine
    from claudeloop.adapters.notify.sender import NotifyTargets
    from claudeloop.adapters.run_directory import RunDirectory
    from claudeloop.application import ports
    from claudeloop.application.branch import RunBranches
    from claudeloop.application.bundled_cli import BundledCli
    from claudeloop.application.config_view import ConfigView, Masking
    from claudeloop.application.driving import WiredRun
    from claudeloop.application.fleet import QueueSupport
    from claudeloop.application.fleet_seat import FleetSeat
    from claudeloop.application.launching import Launching, RunLock
    from claudeloop.application.project_setup import ProjectFolder
    from claudeloop.application.records import RunRecord
    from claudeloop.application.task_files import TaskFiles


def run_branches() -> RunBranches:  # `diff`, `rewind` and `merge`
    from claudeloop.adapters.run_branches import RunBranchesOnDisk

    return RunBranchesOnDisk()


def bundled_cli_of(cwd: Path, profile: str | None) -> BundledCli:
    """The Claude Code CLI `login` and `claude` run: a run's of `cwd` with `profile`."""
    from claudeloop.adapters.bundled_cli import BundledCliOfBackend
    from claudeloop.adapters.config.reading import profile_named

    return BundledCliOfBackend(profile_named(cwd, profile))


def masking() -> Masking:
    from claudeloop.adapters.masking import SecretMasking

    return SecretMasking()


def config_view(cwd: Path, profile: str | None) -> ConfigView:  # what `config show` shows
    from claudeloop.adapters.config.reading import config_view as read

    return read(cwd, profile)


def configuration(cwd: Path, flags: Mapping[str, object]) -> Configuration:
    from claudeloop.adapters.config.reading import configuration as read

    return read(cwd, flags)


def notify_flag_targets(urls: tuple[str, ...]) -> NotifyTargets | None:
    """--notify URLs alone, checked as `run` checks them (`rehearse` reads no files)."""
    from claudeloop.adapters.config.reading import flag_notify_targets

    return flag_notify_targets(urls)


def project_folder(cwd: Path) -> ProjectFolder:  # what `init` sets up
    from claudeloop.adapters import project_folder as on_disk

    return on_disk.FolderOnDisk(cwd)


def task_files() -> TaskFiles:  # a plan, a prompt file
    from claudeloop.adapters import plan_file

    return plan_file  # its module-level read_task_text satisfies the port


def checked_run_id(run_id: str) -> str:  # or a one-line error naming what it may be
    from claudeloop.adapters.run_directory.finding import checked_run_id as checked

    return checked(run_id)


def shown_masked() -> Callable[[dict[str, Any]], Mapping[str, Any]]:  # this environment's
    from claudeloop.adapters.redaction import Redactor

    return Redactor.from_environment().data


def run_id_used(cwd: Path, run_id: str) -> bool:  # its directory, or its branch
    from claudeloop.adapters.run_directory.starting import run_id_used as used

    return used(cwd, run_id)


def run_mask(cwd: Path) -> Callable[[dict[str, Any]], Mapping[str, Any]]:
    """What a view of a run of `cwd`, of its sessions, or doctor masks: every secret a run
    there could know, in this environment and the files as written (not checked)."""
    from claudeloop.adapters.config.files import secrets_written
    from claudeloop.adapters.redaction import Redactor

    return Redactor(secrets_written(cwd)).data


def run_masks() -> Callable[[Path], Callable[[dict[str, Any]], Mapping[str, Any]]]:
    # `run_mask` of each working directory, resolved once per directory.
    return functools.cache(run_mask)


def project_runs(cwd: Path) -> ports.ProjectRuns:
    from claudeloop.adapters.run_directory.project_runs import ProjectRunDirectories

    return ProjectRunDirectories(cwd)


def every_project_runs() -> Callable[[Path], ports.ProjectRuns]:
    """The runs of each working directory, each kept once: the dashboard decodes a
    record again only when it was saved since."""
    return functools.cache(project_runs)


def run_index() -> ports.RunIndex:  # every run started on this machine
    from claudeloop.adapters.run_index import RunIndexDirectory

    return RunIndexDirectory.of_environment()


def account_boards() -> ports.AccountBoards:  # the capacity boards of this machine's accounts
    from claudeloop.adapters.shared_capacity.board import MachineBoards, capacity_directory

    return MachineBoards(capacity_directory(os.environ))


def engine_of(option: str | None) -> Engine:
    """The engine --engine names, else CLAUDELOOP_ENGINE, else the SQLite file in the
    user state directory."""
    from claudeloop.adapters.installation import require_fleet_extra

    require_fleet_extra()
    from claudeloop.adapters.fleet.engine import engine_from

    return engine_from(option, os.environ)


def fleet_of(option: str | None) -> ports.Fleet:
    from claudeloop.adapters.fleet.engine_fleet import EngineFleet

    return EngineFleet(engine_of(option))


def queue_support() -> QueueSupport:  # what `queue add` asks of this machine
    from claudeloop.adapters.fleet.engine import masked
    from claudeloop.adapters.run_directory.layout import new_run_id, runs_root
    from claudeloop.adapters.shared_capacity.board import account_key
    from claudeloop.application.fleet import QueueSupport

    return QueueSupport(
        new_run_id=lambda: new_run_id(datetime.now(UTC)),
        run_id_used=lambda cwd, run_id: (runs_root(cwd) / run_id).exists(),
        # The fingerprint of the account the worker's runs spend: its queue partition.
        account_of=lambda model: account_key(os.environ, model),
        masked_url=masked,
    )


def doctor_checks(cwd: Path, profile: str | None) -> ports.DoctorChecks:
    """The checks of `doctor` on this machine, its model probed as a run's turns go."""
    from claudeloop.adapters.claude_code.backend import cli_path_from_environment
    from claudeloop.adapters.doctor_checks import MachineChecks, probe_through_claude_code

    cli = cli_path_from_environment()
    return MachineChecks(cwd, profile, configured_cli=cli, probe_gateway=probe_through_claude_code)


def bundled_claude_code() -> str | None:
    """The Claude Code bundled with claude-agent-sdk (None: none is), for `--version`."""
    from claudeloop.adapters import claude_cli

    return claude_cli.bundled_version()


def worker_host(option: str | None) -> ports.WorkerHost:  # this machine, a worker of the engine
    from claudeloop.adapters.fleet.worker_host import MachineWorkerHost

    return MachineWorkerHost(engine_of(option))


class Surroundings(TypedDict):
    """What a run is wired to beyond its backend and its settings' checks."""

    notify: NotifyTargets | None
    detours: Callable[[str], Backend] | None
    capacity_dir: Path | None
    seat: FleetSeat
    advisor: NotRequired[ports.Advisor]  # a rehearsal's; left out: the profile in use's


def launching(
    seat: FleetSeat, *, quiet: bool, verbose: bool = False
) -> Launching[Configuration, Backend, RunDirectory]:
    """What `run` and `resume` are handed: the run wired with what its settings name.
    `quiet`/`verbose`: what the terminal shows; `seat`: its seat in a fleet."""
    from claudeloop.adapters.config import reading

    return launching_with(
        lambda record, settings: Surroundings(
            notify=reading.notify_targets(settings),
            detours=reading.detours(record.spec.cwd),
            capacity_dir=reading.shared_capacity_dir(settings),
            seat=seat,
        ),
        quiet=quiet,
        verbose=verbose,
    )


def launching_with(
    surroundings: Callable[[RunRecord, Configuration], Surroundings], *, quiet: bool, verbose: bool
) -> Launching[Configuration, Backend, RunDirectory]:
    """This machine's collaborators of `run` and `resume`, a run wired in `surroundings`;
    each imports what it needs when asked: a refusal costs only what it read."""
    from claudeloop.adapters import run_boundary
    from claudeloop.adapters.claude_code import backend
    from claudeloop.adapters.config import reading
    from claudeloop.adapters.git_checkpoint import worktree
    from claudeloop.adapters.run_directory import starting
    from claudeloop.application.launching import Launching

    def wire(
        directory: RunDirectory,
        record: RunRecord,
        backend: Backend,
        settings: Configuration,
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
            **surroundings(record, settings),
        )

    return Launching(
        config=reading,
        runs=starting,
        login=backend,
        repository=worktree,
        sandbox=run_boundary,
        now=lambda: datetime.now(UTC),
        wire=wire,
    )
