"""The composition root of `claudeloop rehearse`: the backends a rehearsal's turns go to
(the rehearsal API, and a stand-in for a local server), and its run wired as a real one
is, with its own capacity record and no fleet seat. The command (cli/rehearse.py) picks
the scenario, starts the servers, drives the run and says what happened."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.adapters.claude_code.backend import Backend, backend_for
from claudeloop.adapters.config.profiles import DUMMY_TOKEN, BackendProfile
from claudeloop.adapters.credentials import CREDENTIAL_VARIABLES, PROVIDER_VARIABLES
from claudeloop.application.driving import WiredRun
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.cli.bootstrap.runs import create_directory, new_record, unregister_run, wire_run

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


def rehearsal_run(
    spec: RunSpec,
    *,
    base_url: str,
    home: Path,
    on_local_profile: bool,
    local_url: str | None,
    notify: NotifyTargets | None,
    state_dir: Path,
    quiet: bool,
) -> Rehearsal:
    """The run of `spec` on the rehearsal API at `base_url` (through a local profile when
    `on_local_profile`; `local_url`: the server its switch-profile policy goes to);
    `notify`: the --notify targets, as `flag_notify_targets` checked them."""
    own = (
        local_backend(base_url, home)
        if on_local_profile
        else Backend(env=rehearsal_env(base_url, home))
    )
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
            detours=(lambda _name: local_backend(local_url, home)) if local_url else None,
            # Its own record: a rehearsal never shares capacity with real runs.
            capacity_dir=state_dir / "capacity",
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
