"""Durations as people write them: `90`, `90s`, `5m`, `1h30m`, `1.5h`, `2d`; and how
every view says a duration and an instant (`duration_said`, `instant_said`).

Pure, so the command line and the configuration files read durations the same way, and
every view (status, runs, report, summary.md, the dashboard) says them the same way.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from claudeloop.domain.text import utc_instant

# How a duration is written, in a file, a variable or a flag.
DURATION_FORMS = "90, 90s, 5m, 1h30m, 1.5h or 2d"


_AMOUNT = r"\d+(?:\.\d+)?"
# Every amount carries its unit, but a bare number alone (seconds): `5h30` is refused,
# not read as 5 h 30 s, because a person who wrote it meant 5 h 30 m as often.
_DURATION = re.compile(
    rf"^(?:(?P<bare>{_AMOUNT})|(?:(?P<d>{_AMOUNT})d)?(?:(?P<h>{_AMOUNT})h)?"
    rf"(?:(?P<m>{_AMOUNT})m)?(?:(?P<s>{_AMOUNT})s)?)$"
)
_SECONDS = {"bare": 1, "d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> timedelta:
    """`90`, `90s`, `5m`, `1h30m`, `1.5h` or `2d`; ValueError names what is accepted."""
    match = _DURATION.match(text.strip())
    if match is None or not any(match.groupdict().values()):
        raise ValueError(f"{text!r} is not a duration; use {DURATION_FORMS}")
    seconds = sum(
        float(value) * _SECONDS[unit] for unit, value in match.groupdict().items() if value
    )
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        # Beyond what a timedelta holds (about 2.7 million years): no run waits that long.
        raise ValueError(f"{text!r} is too long a duration; use {DURATION_FORMS}") from None


def format_duration(value: timedelta) -> str:
    """The shortest form `parse_duration` reads back: `1h30m`, `2d`, `45s`."""
    seconds = int(value.total_seconds())
    if seconds == 0:
        return "0s"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    return "".join(f"{amount}{unit}" for amount, unit in parts if amount)


def duration_said(seconds: float) -> str:
    """A time taken, waited or left, as every view says it, to the nearest second:
    `42s`, `1m04s`, `2h00m10s`, `6d23h51m` (a week says no seconds)."""
    whole = max(round(seconds), 0)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def instant_said(at: datetime) -> str:
    """When something happened, as every view says it: `2026-11-30 09:00:12 UTC`, in
    the words of the domain's reasons (`utc_instant`)."""
    return utc_instant(at)
