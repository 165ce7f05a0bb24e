"""The run directory: `<cwd>/.claudeloop/runs/<run_id>/` with events, state, control, lock.

Its names are imported when first asked for: a start refused before it reads a record
(`live`, `starting`) does not pay for the record's codec and the events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claudeloop.adapters.run_directory.layout import RunDirectory, runs_root

__all__ = ["RunDirectory", "runs_root"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from claudeloop.adapters.run_directory import layout

        return getattr(layout, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
