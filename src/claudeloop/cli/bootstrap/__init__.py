"""The composition root: the one place in cli/ that names an adapter (an import contract
in pyproject.toml holds it). It fills the ports of the commands' use cases from adapters,
or hands a command a wired object; it passes on no adapter's own name
(tests/cli/test_composition_root.py):

- here, what looks at runs (a project's, this machine's, the fleet's) and the fleet's
  commands: each imports what it wires when it is called, so that `status --engine` or
  `queue ls` start without what a run needs;
- `runs`: the wiring of a run (run, resume, rehearse) and of doctor's checks;
- `rehearsal`: a rehearsal's run, wired on its own servers.

It only wires: each function names the adapters that fill a port, or that a use case is
handed, and decides nothing (tests/cli/test_root_only_wires.py).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claudeloop.adapters.claude_code.backend import Backend
    from claudeloop.adapters.config.loading import Configuration
    from claudeloop.adapters.fleet.engine import Engine
    from claudeloop.adapters.notify.sender import NotifyTargets
    from claudeloop.adapters.run_directory import RunDirectory
    from claudeloop.application.branch import RunBranches
    from claudeloop.application.bundled_cli import BundledCli
    from claudeloop.application.config_view import ConfigView, Masking
    from claudeloop.application.driving import WiredRun
    from claudeloop.application.fleet import QueueSupport
    from claudeloop.application.fleet_seat import FleetSeat
    from claudeloop.application.launching import Launching, RunLock, Wiring
    from claudeloop.application.ports import (
        AccountBoards,
        Fleet,
        ProjectRuns,
        RunIndex,
        WorkerHost,
    )
    from claudeloop.application.project_setup import ProjectFolder
    from claudeloop.application.records import RunRecord
    from claudeloop.application.task_files import TaskFiles


def run_branches() -> RunBranches:
    """The `RunBranches` port of `diff`, `rewind` and `merge`: run directories and git."""
    from claudeloop.adapters.run_branches import RunBranchesOnDisk

    return RunBranchesOnDisk()


def bundled_cli_of(cwd: Path, profile: str | None) -> BundledCli:
    """The Claude Code CLI a run of `cwd` with `profile` (None: the selected one) would
    start, with its environment: what `login` and `claude` run."""
    from claudeloop.adapters.bundled_cli import BundledCliOfBackend
    from claudeloop.adapters.claude_code.backend import backend_for
    from claudeloop.adapters.config import reading
    from claudeloop.application.settings import MODEL

    config = reading.configuration(cwd, {"profile": profile})
    return BundledCliOfBackend(backend_for(reading.backend_profile(config, config.get(MODEL))))


def masking() -> Masking:
    """How values that may hold a secret are shown: notify URLs, variables, text."""
    from claudeloop.adapters.masking import SecretMasking

    return SecretMasking()


def config_view(cwd: Path, profile: str | None) -> ConfigView:
    """The configuration of `cwd` as `config show` shows it, with `profile` (None: the
    selected one)."""
    from claudeloop.adapters.config.reading import config_view as read

    return read(cwd, profile)


def configuration(cwd: Path, flags: Mapping[str, object]) -> Configuration:
    """The settings of `cwd`, `flags` over the variables over the files."""
    from claudeloop.adapters.config.reading import configuration as read

    return read(cwd, flags)


def notify_flag_targets(urls: tuple[str, ...]) -> NotifyTargets | None:
    """--notify URLs alone, checked as `run` checks them (`rehearse` reads no files)."""
    from claudeloop.adapters.config.reading import flag_notify_targets

    return flag_notify_targets(urls)


def project_folder(cwd: Path) -> ProjectFolder:
    """The project directory `init` sets up."""
    from claudeloop.adapters import project_folder as on_disk

    return on_disk.ProjectFolder(cwd)


def task_files() -> TaskFiles:
    """Files that hold a task (a plan, a prompt file), read on disk."""
    from claudeloop.adapters import plan_file

    return plan_file  # its module-level read_task_text satisfies the port


def checked_run_id(run_id: str) -> str:
    """`run_id`, or a one-line error naming what a run id may be."""
    from claudeloop.adapters.run_directory.finding import checked_run_id as checked

    return checked(run_id)


def shown_masked() -> Callable[[dict[str, Any]], Mapping[str, Any]]:
    """What a view of a run shown to the user masks: the secrets of this environment."""
    from claudeloop.adapters.redaction import Redactor

    return Redactor.from_environment().data


def run_id_used(cwd: Path, run_id: str) -> bool:
    """Whether `cwd` has a run of that id already (its directory, or its branch)."""
    from claudeloop.adapters.run_directory.starting import run_id_used as used

    return used(cwd, run_id)


def run_mask(cwd: Path) -> Callable[[dict[str, Any]], Mapping[str, Any]]:
    """What a view of a run of `cwd`, of Claude Code's sessions there, or doctor's checks
    masks: every secret a run there could know, read from this environment and the
    configuration files as written (every profile's, each notification URL), without
    checking the settings: a view answers at once, and masks a file that does not load."""
    from claudeloop.adapters.config.files import secrets_written
    from claudeloop.adapters.redaction import Redactor

    return Redactor(secrets_written(cwd)).data


def run_masks() -> Callable[[Path], Callable[[dict[str, Any]], Mapping[str, Any]]]:
    """`run_mask` of each working directory, resolved once per directory."""
    return functools.cache(run_mask)


# A project's runs and the fleet ---------------------------------------------------------


def project_runs(cwd: Path) -> ProjectRuns:
    """The runs of `cwd` as status, runs, stop and wind-down use them."""
    from claudeloop.adapters.run_directory.project_runs import ProjectRunDirectories

    return ProjectRunDirectories(cwd)


def every_project_runs() -> Callable[[Path], ProjectRuns]:
    """The runs of each working directory, each kept once: what the dashboard reads
    again and again decodes a record only when it was saved since."""
    from claudeloop.adapters.run_directory.project_runs import ProjectRunDirectories

    return functools.cache(ProjectRunDirectories)


def run_index() -> RunIndex:
    """Every run started on this machine, as `runs --all` and the dashboard list them."""
    from claudeloop.adapters.run_index import RunIndexDirectory

    return RunIndexDirectory.of_environment()


def account_boards() -> AccountBoards:
    """The capacity boards of this machine's accounts."""
    from claudeloop.adapters.shared_capacity.board import MachineBoards, capacity_directory

    return MachineBoards(capacity_directory(os.environ))


def engine_of(option: str | None) -> Engine:
    """The engine --engine names, else CLAUDELOOP_ENGINE, else the SQLite file in the
    user state directory; DBOS (the `fleet` extra) must be installed."""
    from claudeloop.adapters.installation import require_fleet_extra

    require_fleet_extra()
    from claudeloop.adapters.fleet.engine import engine_from

    return engine_from(option, os.environ)


def fleet_of(option: str | None) -> Fleet:
    """The fleet of the engine `option` names, as its commands use it."""
    from claudeloop.adapters.fleet.engine_fleet import EngineFleet

    return EngineFleet(engine_of(option))


def queue_support() -> QueueSupport:
    """What `queue add` asks of this machine."""
    from claudeloop.adapters.run_directory.layout import runs_root
    from claudeloop.adapters.shared_capacity.board import account_key
    from claudeloop.application.fleet import QueueSupport

    def masked_url(url: str) -> str:
        from claudeloop.adapters.fleet.engine import masked

        return masked(url)

    from claudeloop.adapters.run_directory.layout import new_run_id

    return QueueSupport(
        new_run_id=lambda: new_run_id(datetime.now(UTC)),
        run_id_used=lambda cwd, run_id: (runs_root(cwd) / run_id).exists(),
        # The fingerprint of the account the worker's runs spend: its queue partition.
        account_of=lambda model: account_key(os.environ, model),
        masked_url=masked_url,
    )


def worker_host(option: str | None) -> WorkerHost:
    """This machine, as a worker of the engine `option` names."""
    from claudeloop.adapters.fleet.worker_host import MachineWorkerHost

    return MachineWorkerHost(engine_of(option))


# A run's start ---------------------------------------------------------------------------


def launching(
    seat: FleetSeat, *, quiet: bool, verbose: bool = False
) -> Launching[Configuration, Backend, RunDirectory]:
    """What `run` and `resume` are handed (application/launching.py): the settings files,
    the run directories, Claude Code's login, git, the sandbox, the clock, and the
    wiring of a run with what its settings name; `quiet`/`verbose`: what the terminal
    shows of the run; `seat`: its seat in a fleet, read once at the entry point. Each
    adapter's module imports what it needs as it is asked: a start refused for a setting
    costs what the settings cost."""
    from claudeloop.adapters.config import reading

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
            notify=reading.notify_targets(settings),
            detours=reading.detours(record.spec.cwd),
            capacity_dir=reading.shared_capacity_dir(settings),
            seat=seat,
        )

    return launching_with(wire)


def launching_with(
    wire: Wiring[Configuration, Backend, RunDirectory],
) -> Launching[Configuration, Backend, RunDirectory]:
    """The launching of this machine with `wire` (a rehearsal's wires its own)."""
    from claudeloop.adapters import run_boundary
    from claudeloop.adapters.claude_code import backend
    from claudeloop.adapters.config import reading
    from claudeloop.adapters.git_checkpoint import worktree
    from claudeloop.adapters.run_directory import starting
    from claudeloop.application.launching import Launching

    return Launching(
        config=reading,
        runs=starting,
        login=backend,
        repository=worktree,
        sandbox=run_boundary,
        now=lambda: datetime.now(UTC),
        wire=wire,
    )
