"""Which Claude session a run starts from: the three ways a user names one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PlanFileSelector:
    """A new session working through a plan file."""

    path: str


@dataclass(frozen=True, slots=True)
class ExplicitSessionSelector:
    """An existing Claude session, named by its id."""

    session_id: str


@dataclass(frozen=True, slots=True)
class MostRecentSessionSelector:
    """The most recent session of a working directory."""

    cwd: str


SessionSelector = PlanFileSelector | ExplicitSessionSelector | MostRecentSessionSelector
