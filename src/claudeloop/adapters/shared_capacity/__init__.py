"""One account, many loops: what one loop learns about capacity, the others use.

`board` is the file-locked record in the user state directory; `gateway` is the
decorator that reads and writes it around every turn and probe.
"""

from claudeloop.adapters.shared_capacity.board import (
    FileCapacityBoard,
    account_key,
    capacity_directory,
)
from claudeloop.adapters.shared_capacity.sharing_gateway import SharedCapacityGateway

__all__ = ["FileCapacityBoard", "SharedCapacityGateway", "account_key", "capacity_directory"]
