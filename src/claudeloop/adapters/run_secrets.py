"""Every secret a run knows, gathered once for its `Redactor`: the values of our
environment and of the CLI's, of the profiles a limit policy may switch to, and of the
notification URLs."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from claudeloop.adapters.claude_code.backend import Backend
from claudeloop.adapters.redaction import Redactor, secret_values
from claudeloop.application.errors import UsageError
from claudeloop.application.records import RunSpec
from claudeloop.domain.limits import SwitchProfile

if TYPE_CHECKING:
    from claudeloop.adapters.notify.sender import NotifyTargets


def run_redactor(
    spec: RunSpec,
    backend: Backend,
    notify: NotifyTargets | None,
    detours: Callable[[str], Backend] | None,
) -> Redactor:
    """Every secret the run knows: of our environment and the CLI's (a profile's token
    and extra_env), of the profiles a limit policy may switch to, and of the
    notification URLs (which may sit in CLAUDELOOP_NOTIFY, a name that says nothing)."""
    environments = [os.environ, backend.env]
    for _, action in spec.limits.actions:
        if isinstance(action, SwitchProfile) and detours is not None:
            try:
                environments.append(detours(action.profile).env)
            except UsageError:
                continue  # the detour fails when it is taken, with its own one line
    extra: list[str] = []
    if notify is not None:
        from claudeloop.adapters.notify.urls import url_secrets

        extra += [secret for url in notify.urls for secret in (url, *url_secrets(url))]
    return Redactor((*secret_values(*environments), *extra))
