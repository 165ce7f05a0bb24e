"""How a long text (an error, a summary) is shown where one line is room for it, and
how an instant is said in words (a reason, a warning, every view)."""

from __future__ import annotations

from datetime import UTC, datetime

# What ends a text cut short.
CUT = "\u2026"


def first_line(text: str, *, longest: int, empty: str = "") -> str:
    """The first line of `text` that holds something, stripped and at most `longest`
    characters, a cut one ending in `…`; `empty` when no line does. The mark says it
    was cut to a person, and to the mask: a secret the cut fell inside is masked up
    to it (adapters/redaction.py), whichever of the two came first."""
    for line in text.splitlines():
        said = line.strip()
        if said:
            return said if len(said) <= longest else said[: longest - 1] + CUT
    return empty


def count(amount: int, noun: str) -> str:
    """`1 probe`, `2 probes`: what a person would write (nouns that add an s)."""
    return f"{amount} {noun}" if amount == 1 else f"{amount} {noun}s"


def utc_instant(at: datetime, *, seconds: bool = True) -> str:
    """An instant as every view and every reason says it, `2026-11-30 09:00:12 UTC`;
    without `seconds`, `2026-11-30 09:00 UTC` (when a window the service warns of
    resets)."""
    return (
        f"{at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
        if seconds
        else f"{at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    )
