"""How a long text (an error, a summary) is shown where one line is room for it."""

from __future__ import annotations


def first_line(text: str, *, longest: int, empty: str = "") -> str:
    """The first line of `text` that holds something, stripped and cut to `longest`
    characters; `empty` when no line does."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:longest]
    return empty


def count(amount: int, noun: str) -> str:
    """`1 probe`, `2 probes`: what a person would write (nouns that add an s)."""
    return f"{amount} {noun}" if amount == 1 else f"{amount} {noun}s"
