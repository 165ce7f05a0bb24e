"""The settings a command runs with, read from their sources: flags over CLAUDELOOP_*
variables over ./claudeloop.toml over the user's file; and what the settings name
outside claudeloop (a backend profile, notification URLs, the shared capacity record),
checked before the run starts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claudeloop.cli.bootstrap import Backend, backend_for
from claudeloop.cli.errors import UserError

if TYPE_CHECKING:
    from claudeloop.adapters.config.loading import Configuration
    from claudeloop.adapters.config.profiles import BackendProfile
    from claudeloop.adapters.notify.sender import NotifyTargets


def configuration(cwd: Path, options: dict[str, Any]) -> Configuration:
    """The effective settings, `options` being the command's flags."""
    # Imported here: status, logs and stop never read the configuration (nor pydantic).
    from claudeloop.adapters.config.loading import load_configuration
    from claudeloop.adapters.config.schema import SETTING_KEYS

    flags = {key: options.get(key) for key in SETTING_KEYS}
    # A repeatable flag not given is an empty tuple: no flag, not "notify nowhere".
    given = flags.get("notify")
    flags["notify"] = list(given) if given else None
    limits = flags.get("limits")
    flags["limits"] = dict(limits) if limits else None
    checks = flags.get("verify")
    flags["verify"] = list(checks) if checks else None
    return load_configuration(cwd=cwd, flags=flags, environ=os.environ)


def backend_profile(config: Configuration, model: str | None) -> BackendProfile:
    from claudeloop.adapters.config.profiles import resolve_profile

    return resolve_profile(config, os.environ, model=model)


def profile_backend(cwd: Path, name: str, *, where: str) -> Backend:
    """The backend of profile `name` (a limit policy's detour), or a one-line error
    naming `where` the profile was named."""
    from claudeloop.adapters.config.loading import ConfigError, load_configuration
    from claudeloop.adapters.config.profiles import resolve_profile

    try:
        other = load_configuration(cwd=cwd, flags={"profile": name}, environ=os.environ)
        return backend_for(resolve_profile(other, os.environ))
    except ConfigError as error:
        raise UserError(f"{where}: {error}") from None


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
    urls = config.value("notify")
    if not urls:
        return None
    from claudeloop.adapters.notify.sender import NotifyTargets, NotifyUnavailable, check_urls

    try:
        check_urls(urls)
    except NotifyUnavailable as error:
        where = config.settings["notify"].origin.describe()
        raise UserError(f"notify (from {where}): {error}") from None
    return NotifyTargets(urls=tuple(urls), on=frozenset(config.value("notify_on")))


def shared_capacity_dir(config: Configuration) -> Path | None:
    """Where the loops on one account share capacity; None with share_capacity off."""
    if not config.value("share_capacity"):
        return None
    from claudeloop.adapters.shared_capacity import capacity_directory

    return capacity_directory(os.environ)
