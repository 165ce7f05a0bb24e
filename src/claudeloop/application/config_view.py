"""What `claudeloop config show` shows, read by the composition root from the
configuration's adapters: the effective settings and where each came from, the two
files, the profiles defined and the selected one's backend. Values are as the files
hold them: the command masks them (the `Masking` port) before it shows one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from claudeloop.application.run_spec import Settings


@dataclass(frozen=True, slots=True)
class ConfigFile:
    path: Path
    read: bool


@dataclass(frozen=True, slots=True)
class BackendShown:
    """The selected profile as a run's turns would use it."""

    profile: str
    defined_in: str
    local: bool
    base_url: str | None
    model: str | None
    small_fast_model: str | None
    credentials: str
    marker_fallback: bool
    zero_cost: bool
    env: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class ConfigView:
    settings: Settings
    project: ConfigFile
    user: ConfigFile
    # Each profile defined: where, and its table as written (None values left out).
    profiles: Mapping[str, tuple[str, Mapping[str, Any]]]
    backend: BackendShown


class Masking(Protocol):
    """How a value that may hold a secret is shown."""

    def looks_like_apprise_url(self, value: str) -> bool:
        """`scheme://...` with no blanks: whether apprise could read it at all."""
        ...

    def masked_url(self, value: str) -> str:
        """The URL with no secret left in it."""
        ...

    def looks_secret(self, name: str) -> bool:
        """Whether a variable of this name holds a secret."""
        ...

    def masked_text(self, text: str) -> str:
        """`text` with anything token-shaped masked."""
        ...
