"""The settings a command runs with, read from their sources: flags over CLAUDELOOP_*
variables over ./claudeloop.toml over the user's file; and what the settings name
outside claudeloop (a backend profile, notification URLs, the shared capacity record),
checked before the run starts. Its module-level `settings`, `backend`, `check_profile`
and `refuse_unusable` are the `SettingsSource` of `run` and `resume`
(application/launching.py). The configuration loads pydantic when the settings are
first read, not when this module is imported: a resume of no run costs none of it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from claudeloop.application.errors import ConfigError, UsageError
from claudeloop.application.settings import (
    DASHBOARD_URL,
    MODEL,
    NOTIFY,
    NOTIFY_ON,
    REPEATABLE,
    SETTINGS,
    SHARE_CAPACITY,
    ValueKind,
)

if TYPE_CHECKING:
    from claudeloop.adapters.claude_code.backend import Backend
    from claudeloop.adapters.config.loading import Configuration
    from claudeloop.adapters.config.profiles import BackendProfile
    from claudeloop.adapters.notify.sender import NotifyTargets
    from claudeloop.application.config_view import ConfigView


def configuration(cwd: Path, flags: Mapping[str, object]) -> Configuration:
    """The effective settings, `flags` being the command's settings flags as click parsed
    them (by key; a flag not given is None, or an empty tuple when repeatable)."""
    from claudeloop.adapters.config.loading import load_configuration

    given = {setting.key: _flag_value(setting.kind, flags.get(setting.key)) for setting in SETTINGS}
    return load_configuration(cwd=cwd, flags=given, environ=os.environ)


def _flag_value(kind: ValueKind, value: object) -> object:
    """A repeatable flag's items as the setting's value: a list, or a table of
    --on-limit's LIMIT=ACTION pairs; given no time, no flag (not "notify nowhere")."""
    if kind not in REPEATABLE:
        return value
    if not isinstance(value, tuple) or not value:
        return None
    if kind == "limits":  # --on-limit's type gives (LIMIT, ACTION) pairs
        return dict(cast(tuple[tuple[str, str], ...], value))
    return list(value)


def backend_profile(config: Configuration, model: str | None) -> BackendProfile:
    from claudeloop.adapters.config.profiles import resolve_profile

    return resolve_profile(config, os.environ, model=model)


def profile_named(cwd: Path, profile: str | None) -> Backend:
    """The backend a run of `cwd` with `profile` (None: the selected one) would use,
    its base URL not checked: what `login` and `claude` start the CLI with."""
    from claudeloop.adapters.claude_code.backend import backend_for

    config = configuration(cwd, {"profile": profile})
    return backend_for(backend_profile(config, config.get(MODEL)))


def profile_backend(cwd: Path, name: str, *, where: str) -> Backend:
    """The backend of profile `name` (a limit policy's detour), or a one-line error
    naming `where` the profile was named."""
    from claudeloop.adapters.claude_code.backend import backend_for
    from claudeloop.adapters.config.loading import load_configuration
    from claudeloop.adapters.config.profiles import resolve_profile

    try:
        other = load_configuration(cwd=cwd, flags={"profile": name}, environ=os.environ)
        return backend_for(resolve_profile(other, os.environ))
    except ConfigError as error:
        raise UsageError(f"{where}: {error}") from None


def profile_check(cwd: Path) -> Callable[[str, str], Backend]:
    """Checks that a switch-profile's profile resolves, for the run-spec use cases."""
    return lambda name, where: profile_backend(cwd, name, where=where)


def detours(cwd: Path) -> Callable[[str], Backend]:
    """The backend of each profile a limit policy switches to, resolved when taken."""
    return lambda name: profile_backend(cwd, name, where=f"switch-profile {name}")


def notify_targets(config: Configuration) -> NotifyTargets | None:
    """Where notifications go, checked before the run starts: apprise must be installed
    and know each URL's service. Read from every source on `resume` too: it is about
    where the person is now, not what the run was started with."""
    urls = config.get(NOTIFY)
    if not urls:
        return None
    from claudeloop.adapters.notify.sender import NotifyTargets, NotifyUnavailable, check_urls

    try:
        check_urls(urls)
    except NotifyUnavailable as error:
        where = config.of(NOTIFY).origin.describe()
        raise UsageError(f"notify (from {where}): {error}") from None
    return NotifyTargets(
        urls=tuple(urls),
        on=frozenset(config.get(NOTIFY_ON)),
        dashboard_url=config.get(DASHBOARD_URL),
    )


def shared_capacity_dir(config: Configuration) -> Path | None:
    """Where the loops on one account share capacity; None with share_capacity off."""
    if not config.get(SHARE_CAPACITY):
        return None
    from claudeloop.adapters.shared_capacity import capacity_directory

    return capacity_directory(os.environ)


def refuse_no_base_url(backend: Backend) -> None:
    """A base URL that is no http(s) URL is refused before any turn (exit 2)."""
    from claudeloop.adapters.config.profiles import DEFAULT_BACKEND, base_url_problem

    problem = base_url_problem(backend.env, backend.profile or DEFAULT_BACKEND, os.environ)
    if problem is not None:
        raise ConfigError(problem)


def flag_notify_targets(urls: tuple[str, ...]) -> NotifyTargets | None:
    """--notify URLs alone, checked as `run` checks them (`rehearse` reads no files)."""
    if not urls:
        return None
    from claudeloop.adapters.notify.sender import NotifyTargets, NotifyUnavailable, check_urls

    try:
        check_urls(urls)
    except NotifyUnavailable as error:
        raise UsageError(f"--notify: {error}") from None
    return NotifyTargets(urls=urls)


# The settings as `run` and `resume` read them (the `SettingsSource` port) -------------


def settings(cwd: Path, flags: Mapping[str, object]) -> Configuration:
    return configuration(cwd, flags)


def backend(settings: Configuration, model: str | None) -> Backend:
    from claudeloop.adapters.claude_code.backend import backend_for

    chosen = backend_for(backend_profile(settings, model))
    refuse_no_base_url(chosen)
    return chosen


def check_profile(cwd: Path) -> Callable[[str, str], Backend]:
    return profile_check(cwd)


def refuse_unusable(settings: Configuration) -> None:
    notify_targets(settings)


def config_view(cwd: Path, profile: str | None) -> ConfigView:
    """The configuration of `cwd` as `config show` shows it, with `profile` (None: the
    selected one)."""
    from claudeloop.adapters.config.files import config_files
    from claudeloop.application.config_view import BackendShown, ConfigFile, ConfigView

    config = configuration(cwd, {"profile": profile})
    chosen = backend_profile(config, config.get(MODEL))
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
            profile=chosen.name,
            defined_in=chosen.where,
            local=chosen.local,
            base_url=chosen.base_url,
            model=chosen.model,
            small_fast_model=chosen.small_fast_model,
            credentials=chosen.credentials,
            marker_fallback=chosen.marker_fallback,
            zero_cost=chosen.zero_cost,
            env=dict(chosen.env),
        ),
    )
