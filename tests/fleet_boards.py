"""The fleet's capacity board as runs meet it: workers on a real PostgreSQL, each serving
its runs the board through a link (adapters/shared_capacity/board_link.py), here in the
test's own process. Each worker holds its own connection, as a worker does; all
are closed when the test ends (the `fleet_boards` fixture)."""

from __future__ import annotations

import socket
from collections.abc import Callable

from claudeloop.adapters.shared_capacity.board_link import (
    BoardLink,
    BoardRelay,
    LinkedCapacityBoard,
)
from claudeloop.adapters.shared_capacity.postgres_board import PostgresBoards


class FleetBoards:
    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._relays: list[BoardRelay] = []

    def worker(self, boards: PostgresBoards | None = None) -> Callable[[str], LinkedCapacityBoard]:
        """A worker of its own (serving from `boards`, else a board of its own): what it
        returns makes a run of that worker's board."""
        relay = BoardRelay(boards if boards is not None else PostgresBoards(self._dsn))
        self._relays.append(relay)

        def run(account: str = "acct") -> LinkedCapacityBoard:
            ours, theirs = socket.socketpair()
            relay.serve(ours, "test")
            return LinkedCapacityBoard(BoardLink(theirs.detach()), account)

        return run

    def board(self, account: str = "acct") -> LinkedCapacityBoard:
        """The board of a run on a worker of its own."""
        return self.worker()(account)

    def close(self) -> None:
        for relay in self._relays:
            relay.close()
