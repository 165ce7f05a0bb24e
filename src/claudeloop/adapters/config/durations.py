"""Durations as people write them: `90`, `90s`, `5m`, `1h30m`, `2d`.

Pure, so the command line and the configuration files read durations the same way.
"""

from __future__ import annotations

import re
from datetime import timedelta

DURATION_FORMS = "90, 90s, 5m, 1h30m or 2d"
_DURATION = re.compile(r"^(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s?)?$")


def parse_duration(text: str) -> timedelta:
    """`90`, `90s`, `5m`, `1h30m` or `2d`; ValueError names what is accepted."""
    match = _DURATION.match(text.strip())
    if not text.strip() or match is None or not any(match.groupdict().values()):
        raise ValueError(f"{text!r} is not a duration; use {DURATION_FORMS}")
    parts = {key: int(value) for key, value in match.groupdict().items() if value}
    try:
        return timedelta(
            days=parts.get("d", 0),
            hours=parts.get("h", 0),
            minutes=parts.get("m", 0),
            seconds=parts.get("s", 0),
        )
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
