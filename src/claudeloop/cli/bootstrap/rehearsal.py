"""The composition root of `claudeloop rehearse`: the backends a rehearsal's turns go to
(the rehearsal API, and a stand-in for a local server), and its run wired as a real one
is, with its own capacity record and no fleet seat. The command (cli/rehearse.py) picks
the scenario, starts the servers, drives the run and says what happened; a kept
rehearsal's resume is launched here as any resume is, wired as the rehearsal was."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claudeloop.adapters.claude_code.backend import Backend, backend_for
from claudeloop.adapters.config.loading import Configuration
from claudeloop.adapters.config.profiles import DUMMY_TOKEN, BackendProfile
from claudeloop.adapters.credentials import CREDENTIAL_VARIABLES, PROVIDER_VARIABLES
from claudeloop.application.driving import WiredRun
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.cli.bootstrap.launcher import Launcher, Surroundings

if TYPE_CHECKING:
    from claudeloop.adapters.notify.sender import NotifyTargets

# Credential variables that must not reach the rehearsal: it needs none, and a real key
# has no business on a loopback server; nor a provider or a model of the user's setup.
# The OAuth token is blanked too, then set to the rehearsal's own.
BLANKED = (
    *CREDENTIAL_VARIABLES,
    *PROVIDER_VARIABLES,
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
)
LOCAL_PROFILE = "rehearsal-local"


def rehearsal_env(base_url: str, home: Path) -> dict[str, str]:
    env = dict.fromkeys(BLANKED, "")
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            # A subscription-style login makes the CLI read rate-limit headers and report
            # rate-limit events, as it does for most people running long tasks.
            "CLAUDE_CODE_OAUTH_TOKEN": "rehearsal-token",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        }
    )
    return env


def local_backend(base_url: str, home: Path) -> Backend:
    """The rehearsal's local profile: a rehearsal API standing in for Ollama."""
    env = rehearsal_env(base_url, home)
    env.update(
        {
            "CLAUDE_CODE_OAUTH_TOKEN": "",
            # The dummy token a real local profile sends: "ollama" would be masked as a
            # secret wherever the word appears (`ollama pull` in the fix).
            "ANTHROPIC_AUTH_TOKEN": DUMMY_TOKEN,
            "ANTHROPIC_MODEL": "qwen3",
        }
    )
    profile = BackendProfile(
        name=LOCAL_PROFILE,
        where=f"[profiles.{LOCAL_PROFILE}] (built into the rehearsal)",
        base_url=base_url,
        preset="ollama",
        model="qwen3",
        small_fast_model="qwen3",
        credentials="a dummy auth token (the server needs none)",
        env=env,
        marker_fallback=False,
        zero_cost=True,
    )
    return backend_for(profile)


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
        if self.on_local_profile:
            return local_backend(self.base_url, self.home)
        return Backend(env=rehearsal_env(self.base_url, self.home))

    def detours(self) -> Callable[[str], Backend] | None:
        local_url, home = self.local_url, self.home
        if local_url is None:
            return None
        return lambda _name: local_backend(local_url, home)


def rehearsal_run(
    spec: RunSpec, servers: RehearsalServers, *, notify: NotifyTargets | None, quiet: bool
) -> Rehearsal:
    """The run of `spec` on the rehearsal's `servers`; `notify`: the --notify targets, as
    `flag_notify_targets` checked them."""
    # The run's wiring is imported as a rehearsal starts: `resume` looks for a kept
    # rehearsal before it refuses bad input, and must not load the SDK to do so.
    from claudeloop.cli.bootstrap.runs import (
        create_directory,
        new_record,
        unregister_run,
        wire_run,
    )

    own = servers.backend()
    spec = replace(
        spec,
        profile=own.profile.name if own.profile else "rehearsal",
        marker_fallback=own.marker_fallback,
    )
    record = new_record(spec, None)
    directory = create_directory(record)
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
        unregister_run(directory)
        raise
    return Rehearsal(
        record=record,
        wired=wired,
        summary_path=directory.summary_path,
        forget=lambda: unregister_run(directory),
    )


@dataclass(frozen=True, slots=True)
class RehearsalLauncher(Launcher):
    """The launcher of a kept rehearsal's resume: the run driven on the rehearsal's own
    capacity record and detours, told nothing of the notifications of the files, and
    no fleet's."""

    servers: RehearsalServers | None = None

    def surroundings(
        self,
        record: RunRecord,  # noqa: ARG002 (the rehearsal wires its own)
        settings: Configuration,  # noqa: ARG002
    ) -> Surroundings:
        assert self.servers is not None
        return Surroundings(
            notify=None,
            detours=self.servers.detours(),
            capacity_dir=self.servers.capacity_dir,
            seat=NO_SEAT,
        )
