"""Every run of this machine, as `runs --all` and the dashboard find them, and the
accounts' capacity."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from claudeloop.application.ports.capacity import Sighting


@dataclass(frozen=True, slots=True)
class IndexedRun:
    """A run a driver on this machine registered: its directory, the working directory
    it works in, the account it spends (the capacity board's key; None when it shares
    no capacity), the machine, and when it was registered."""

    run_id: str
    directory: Path
    cwd: Path
    account: str | None
    host: str
    registered_at: datetime

    @property
    def key(self) -> str:
        """The run's name in the index: its id and a hash of where it is (two working
        directories may hold runs of the same id)."""
        import hashlib

        digest = hashlib.sha256(str(self.directory).encode()).hexdigest()[:10]
        return f"{self.run_id}.{digest}"


class RunIndex(Protocol):
    """The runs started on this machine, each registered once by its driver: one entry
    per run, so runs registering at once never meet."""

    def register(self, run: IndexedRun) -> None:
        """Add (or refresh) the run's entry; OSError when it cannot be written."""
        ...

    def runs(self) -> list[IndexedRun]:
        """Every entry, newest first; an entry that cannot be read is left out."""
        ...

    def present(self, run: IndexedRun) -> bool:
        """Whether the run's directory is still there (a run removed since is gone)."""
        ...


@dataclass(frozen=True, slots=True)
class AccountSighting:
    """An account's last sighting on this machine's capacity board (None: its record
    cannot be read)."""

    account: str
    sighting: Sighting | None


class AccountBoards(Protocol):
    """The capacity boards of this machine's accounts, as the dashboard shows them."""

    def sightings(self) -> list[AccountSighting]:
        """Each account with a record, by name."""
        ...
