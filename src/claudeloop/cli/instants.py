"""An instant as the person at the terminal reads it: in their own time zone (TZ, or
the machine's), the date only when it is not today."""

from __future__ import annotations

from datetime import datetime


def local_instant(at: datetime, *, now: datetime) -> str:
    """`21:56:00 CET` today, `2026-12-03 09:00:00 CET` on another day."""
    here = at.astimezone()
    today = now.astimezone().date()
    shown = f"{here:%H:%M:%S %Z}" if here.date() == today else f"{here:%Y-%m-%d %H:%M:%S %Z}"
    return shown.strip()
