"""A run's seat in a fleet: what the worker that starts a run as its child process tells
it, and the one place the names it tells it under are said.

A worker (adapters/fleet/worker.py) writes the seat into its child's environment
(`FleetSeat.environment`); the child's entry point takes it out of its own environment
once, before anything else reads it (`take_fleet_seat`), and hands it to what needs it:
the run's store, fenced by the lease (adapters/fleet/lease_file.py), and the choice of
the capacity board (the fleet's, in PostgreSQL, through the worker). Taken out, the
variables reach no process the run starts: not the Claude Code CLI, not its tools, not a
check. Their descriptors name files of this process alone (in another process the
numbers would be other files'). No seat holds the engine's URL: a run never connects to
the fleet's database.

A run no worker started has the empty seat: no lease, no link, no fleet's board.

Standard library only: every command reads it at its start, `--help` too.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

# The file the worker renews the run's lease in.
LEASE_VARIABLE = "CLAUDELOOP_FLEET_LEASE"
# The descriptor of the run's end of the socket pair its saves reach the worker through.
SYNC_VARIABLE = "CLAUDELOOP_FLEET_SYNC"
# On PostgreSQL: the descriptor of the run's end of the socket pair its worker serves
# the fleet's capacity board through (the `claudeloop_capacity` table every machine's
# runs share; the run holds no connection of its own).
BOARD_VARIABLE = "CLAUDELOOP_FLEET_BOARD"
SEAT_VARIABLES = (LEASE_VARIABLE, SYNC_VARIABLE, BOARD_VARIABLE)


@dataclass(frozen=True, slots=True)
class FleetSeat:
    """What a worker told its run. `lease`: the file it renews the lease in (None: no
    worker drives this run). `sync`: the descriptor of the link its saves go through.
    `board`: the descriptor of the link to the fleet's capacity board, through its
    worker."""

    lease: Path | None = None
    sync: int | None = None
    board: int | None = None

    @property
    def unattended(self) -> bool:
        """A worker's run has nobody at hand: taken over where its transcript is not, it
        goes on in a new session rather than stop to ask."""
        return self.lease is not None

    def environment(self) -> dict[str, str]:
        """The variables that tell a child process this seat (the unset ones left out)."""
        told = {
            LEASE_VARIABLE: None if self.lease is None else str(self.lease),
            SYNC_VARIABLE: None if self.sync is None else str(self.sync),
            BOARD_VARIABLE: None if self.board is None else str(self.board),
        }
        return {name: value for name, value in told.items() if value is not None}


NO_SEAT = FleetSeat()


def seat_in(environ: Mapping[str, str]) -> FleetSeat:
    """The seat `environ` tells; an empty or malformed value tells nothing."""
    lease = environ.get(LEASE_VARIABLE) or None
    sync = environ.get(SYNC_VARIABLE, "")
    board = environ.get(BOARD_VARIABLE, "")
    return FleetSeat(
        lease=Path(lease) if lease is not None else None,
        sync=int(sync) if sync.isdigit() else None,
        board=int(board) if board.isdigit() else None,
    )


def take_fleet_seat(environ: MutableMapping[str, str]) -> FleetSeat:
    """The seat `environ` tells, its variables taken out of it: called once, at the
    process's entry, with `os.environ`."""
    seat = seat_in(environ)
    for name in SEAT_VARIABLES:
        environ.pop(name, None)
    return seat
