"""A run's seat in a fleet: what a worker writes into its child's environment is what
the child takes out of it, once, leaving no trace for the processes it starts."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from claudeloop.application.fleet_seat import (
    BOARD_VARIABLE,
    LEASE_VARIABLE,
    NO_SEAT,
    SEAT_VARIABLES,
    SYNC_VARIABLE,
    FleetSeat,
    take_fleet_seat,
)

BOARD = 11  # the descriptor of the link to the fleet's board, through the worker


def test_a_worker_s_seat_is_taken_out_of_the_environment_with_nothing_else() -> None:
    seat = FleetSeat(lease=Path("/state/workers/w1.lease"), sync=7, board=BOARD)
    environ = {"PATH": "/usr/bin", **seat.environment()}
    assert take_fleet_seat(environ) == seat
    assert environ == {"PATH": "/usr/bin"}


def test_the_seat_is_read_once_a_second_read_finds_none() -> None:
    environ = FleetSeat(lease=Path("/w1.lease"), sync=3, board=BOARD).environment()
    assert take_fleet_seat(environ).lease == Path("/w1.lease")
    assert take_fleet_seat(environ) == NO_SEAT


def test_a_run_no_worker_started_has_the_empty_seat_which_tells_nothing() -> None:
    assert take_fleet_seat({"HOME": "/home/me"}) == NO_SEAT
    assert NO_SEAT.environment() == {}
    assert (NO_SEAT.lease, NO_SEAT.sync, NO_SEAT.board) == (None, None, None)


def test_an_empty_or_malformed_value_tells_nothing_and_is_still_taken_out() -> None:
    environ = {LEASE_VARIABLE: "", SYNC_VARIABLE: "three", BOARD_VARIABLE: "postgresql://db/x"}
    assert take_fleet_seat(environ) == NO_SEAT
    assert environ == {}


def test_a_worker_writes_what_it_knows_of_the_seat_piece_by_piece() -> None:
    # The worker learns the board, the lease and the link at different moments.
    told = {
        **FleetSeat(board=BOARD).environment(),
        **FleetSeat(lease=Path("/w1.lease")).environment(),
        **FleetSeat(sync=9).environment(),
    }
    assert take_fleet_seat(told) == FleetSeat(lease=Path("/w1.lease"), sync=9, board=BOARD)


no_nul = st.text(st.characters(blacklist_characters="\x00"), min_size=1)


@given(
    lease=st.none() | no_nul.map(Path),
    sync=st.none() | st.integers(min_value=0, max_value=2**31),
    board=st.none() | st.integers(min_value=0, max_value=2**31),
    others=st.dictionaries(st.text(min_size=1).filter(lambda n: n not in SEAT_VARIABLES), no_nul),
)
def test_any_seat_reaches_the_child_as_the_worker_told_it(
    lease: Path | None, sync: int | None, board: int | None, others: dict[str, str]
) -> None:
    seat = FleetSeat(lease=lease, sync=sync, board=board)
    environ = {**others, **seat.environment()}
    assert take_fleet_seat(environ) == seat
    assert environ == others
