"""The composition root of `claudeloop rehearse`: its run wired as a real one is, on the
rehearsal's servers; a kept rehearsal's resume launched as any resume is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from claudeloop.adapters import run_index
from claudeloop.adapters.backend_advice import ProfileAdvisor, profile_in_use
from claudeloop.adapters.claude_code import rehearsal_backends
from claudeloop.adapters.claude_code.backend import Backend
from claudeloop.adapters.config.loading import Configuration
from claudeloop.adapters.notify.sender import NotifyTargets
from claudeloop.adapters.run_directory import RunDirectory, starting
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.launching import Launching, Rehearsed, rehearse_run
from claudeloop.application.records import RunSpec
from claudeloop.application.rehearsal import LOCAL_PROFILE, RehearsalAdvisor, RehearsalServers
from claudeloop.cli.bootstrap import Surroundings, launching_with


def rehearsal_backend(servers: RehearsalServers) -> Backend:
    """The backend of a rehearsal's turns: the local profile's on a local scenario."""
    local = LOCAL_PROFILE if servers.on_local_profile else None
    return rehearsal_backends.rehearsal_backend(servers.base_url, servers.home, local_profile=local)


def _surroundings(servers: RehearsalServers, notify: NotifyTargets | None) -> Surroundings:
    detours = rehearsal_backends.local_detours(servers.local_url, servers.home, LOCAL_PROFILE)
    in_use = ProfileAdvisor(profile_in_use(rehearsal_backend(servers), detours))
    return Surroundings(  # its own record: it shares capacity with no real run, no fleet
        notify=notify,
        detours=detours,
        capacity_dir=servers.capacity_dir,
        seat=NO_SEAT,
        advisor=RehearsalAdvisor(in_use, servers.scenario),
    )


def rehearsing(
    servers: RehearsalServers, *, notify: NotifyTargets | None, quiet: bool
) -> Callable[[RunSpec, bool], Rehearsed[RunDirectory]]:
    """`rehearse_run` on `servers` of a spec, kept or not; `notify`: --notify's, checked."""
    from claudeloop.cli.bootstrap.runs import wire_run

    own = rehearsal_backend(servers)
    return lambda spec, keep: rehearse_run(
        starting,
        replace(
            spec,
            profile=rehearsal_backends.profile_name(own),
            marker_fallback=own.marker_fallback,
        ),
        wire=lambda directory, record: wire_run(
            directory, record, backend=own, quiet=quiet, **_surroundings(servers, notify)
        ),
        forget=lambda directory: run_index.unregister_run(directory.run_id, directory.path),
        keep=keep,
    )


def rehearsal_launching(
    servers: RehearsalServers, *, quiet: bool, verbose: bool = False
) -> Launching[Configuration, Backend, RunDirectory]:
    """A kept rehearsal's resume: its own capacity record and detours, no notifications."""
    return launching_with(
        lambda _record, _settings: _surroundings(servers, None), quiet=quiet, verbose=verbose
    )
