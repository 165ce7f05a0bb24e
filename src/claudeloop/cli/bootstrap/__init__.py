"""The composition root: the one place in cli/ that names an adapter (an import contract
in pyproject.toml holds it). It fills the ports of the commands' use cases from adapters,
or hands a command a wired object; it passes on no adapter's own name
(tests/cli/test_composition_root.py):

- here, what looks at runs (a project's, this machine's, the fleet's) and the fleet's
  commands: each imports what it wires when it is called, so that `status --engine` or
  `queue ls` start without what a run needs;
- `runs`: the wiring of a run (run, resume, rehearse) and of doctor's checks;
- `configuration`: the settings and what they name; `launcher`: a run's start;
  `rehearsal`: a rehearsal's backends and its run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claudeloop.application.errors import UsageError

if TYPE_CHECKING:
    from claudeloop.adapters.fleet.engine import Engine
    from claudeloop.application.branch import RunBranches
    from claudeloop.application.bundled_cli import BundledCli
    from claudeloop.application.config_view import ConfigView, Masking
    from claudeloop.application.fleet import QueueSupport
    from claudeloop.application.ports import (
        AccountBoards,
        Fleet,
        ProjectRuns,
        RunIndex,
        WorkerHost,
    )
    from claudeloop.application.project_setup import ProjectFolder
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
    from claudeloop.application.settings import MODEL
    from claudeloop.cli.bootstrap.configuration import backend_profile, configuration

    config = configuration(cwd, {"profile": profile})
    return BundledCliOfBackend(backend_for(backend_profile(config, config.get(MODEL))))


def masking() -> Masking:
    """How values that may hold a secret are shown: notify URLs, variables, text."""
    from claudeloop.adapters.masking import SecretMasking

    return SecretMasking()


def config_view(cwd: Path, profile: str | None) -> ConfigView:
    """The configuration of `cwd` as `config show` shows it, with `profile` (None: the
    selected one)."""
    from claudeloop.adapters.config.files import config_files
    from claudeloop.application.config_view import BackendShown, ConfigFile, ConfigView
    from claudeloop.application.settings import MODEL
    from claudeloop.cli.bootstrap.configuration import backend_profile, configuration

    config = configuration(cwd, {"profile": profile})
    backend = backend_profile(config, config.get(MODEL))
    project, user = config_files(cwd, os.environ)
    return ConfigView(
        settings=config,
        project=ConfigFile(project, project in config.files),
        user=ConfigFile(user, user in config.files),
        profiles={
            name: (str(defined.source), defined.table.model_dump(exclude_none=True))
            for name, defined in sorted(config.profiles.items())
        },
        backend=BackendShown(
            profile=backend.name,
            defined_in=backend.where,
            local=backend.local,
            base_url=backend.base_url,
            model=backend.model,
            small_fast_model=backend.small_fast_model,
            credentials=backend.credentials,
            marker_fallback=backend.marker_fallback,
            zero_cost=backend.zero_cost,
            env=dict(backend.env),
        ),
    )


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
    from claudeloop.adapters.git_checkpoint import branch_exists, repository_top, run_branch
    from claudeloop.adapters.run_directory.layout import runs_root

    if (runs_root(cwd) / run_id).exists():
        return True
    top = repository_top(cwd)
    return top is not None and branch_exists(top, run_branch(run_id))


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
    masks: dict[Path, Callable[[dict[str, Any]], Mapping[str, Any]]] = {}

    def mask_of(cwd: Path) -> Callable[[dict[str, Any]], Mapping[str, Any]]:
        if cwd not in masks:
            masks[cwd] = run_mask(cwd)
        return masks[cwd]

    return mask_of


# A project's runs and the fleet ---------------------------------------------------------


def project_runs(cwd: Path) -> ProjectRuns:
    """The runs of `cwd` as status, runs, stop and wind-down use them."""
    from claudeloop.adapters.run_directory.project_runs import ProjectRunDirectories

    return ProjectRunDirectories(cwd)


def every_project_runs() -> Callable[[Path], ProjectRuns]:
    """The runs of each working directory, each kept once: what the dashboard reads
    again and again decodes a record only when it was saved since."""
    from claudeloop.adapters.run_directory.project_runs import ProjectRunDirectories

    kept: dict[Path, ProjectRuns] = {}

    def runs_of(cwd: Path) -> ProjectRuns:
        if cwd not in kept:
            kept[cwd] = ProjectRunDirectories(cwd)
        return kept[cwd]

    return runs_of


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
    user state directory; the queue's engine (the `fleet` extra) must be installed."""
    from claudeloop.adapters.fleet.queue_engine import ENGINE_NAME, engine_installed

    if not engine_installed():
        from claudeloop.adapters.installation import extra_hint

        raise UsageError(
            f"the fleet commands need {ENGINE_NAME} (the fleet extra): {extra_hint('fleet')}",
            exit_code=2,
        )
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
