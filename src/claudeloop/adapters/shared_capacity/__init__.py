"""One account, many loops: what one loop learns about capacity, the others use.

`board` is the file-locked record in the user state directory, `postgres_board` the
fleet's table in PostgreSQL (`board_for` chooses); `record` is what both hold (a
`Sighting` as JSON) and what both need, so neither imports the other;
`sharing_gateway` is the decorator that reads and writes the board around every turn
and probe; `shared` puts it around a run's gateway.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.adapters.shared_capacity.board import (
    FileCapacityBoard,
    account_key,
    board_for,
    capacity_directory,
)
from claudeloop.adapters.shared_capacity.sharing_gateway import SharedCapacityGateway

if TYPE_CHECKING:
    from claudeloop.application.ports import Gateway
    from claudeloop.domain.waiting import WaitPolicyConfig

__all__ = [
    "FileCapacityBoard",
    "SharedCapacityGateway",
    "account_key",
    "board_for",
    "capacity_directory",
    "shared",
]


def shared(
    inner: Gateway,
    capacity_dir: Path | None,
    *,
    account: Callable[[], str],
    fleet_board: int | None,
    run_id: str,
    known_at: datetime | None,
    policy: WaitPolicyConfig,
    note: Callable[[str], None],
) -> Gateway:
    """`inner`, sharing what it learns about capacity with the loops on the same
    `account` (None `capacity_dir`: this loop alone): on the fleet's board when a
    fleet's worker on PostgreSQL gave the run one (`fleet_board`), else the machine's
    file. The run id tells this run's own earlier records (a driver stopped or crashed)
    from other runs': its own never hold it back. `known_at`: when the run last asked
    the service, so that a shared record older than that is checked, not trusted."""
    if capacity_dir is None:
        return inner
    return SharedCapacityGateway(
        inner,
        board_for(capacity_dir, account(), fleet_board),
        run_id=run_id,
        known_at=known_at,
        policy=policy,
        note=note,
    )
