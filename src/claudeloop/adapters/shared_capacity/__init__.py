"""One account, many loops: what one loop learns about capacity, the others use.

`board` is the file-locked record in the user state directory, `postgres_board` the
fleet's table in PostgreSQL (`board_for` chooses); `record` is what both hold (a
`Sighting` as JSON) and what both need, so neither imports the other;
`sharing_gateway` is the decorator that reads and writes the board around every turn
and probe.
"""

from claudeloop.adapters.shared_capacity.board import (
    FileCapacityBoard,
    account_key,
    board_for,
    capacity_directory,
)
from claudeloop.adapters.shared_capacity.sharing_gateway import SharedCapacityGateway

__all__ = [
    "FileCapacityBoard",
    "SharedCapacityGateway",
    "account_key",
    "board_for",
    "capacity_directory",
]
