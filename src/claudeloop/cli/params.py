"""Parameter types for the command line: durations and positive numbers."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import click

from claudeloop.adapters.config.durations import parse_duration

__all__ = ["DURATION", "POSITIVE_FLOAT", "POSITIVE_INT", "Duration", "Positive", "parse_duration"]


class Duration(click.ParamType):  # type: ignore[type-arg]
    name = "DUR"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, timedelta):
            return value
        try:
            duration = parse_duration(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)
        if duration <= timedelta(0):
            self.fail(f"{value!r} must be longer than 0", param, ctx)
        return duration


class Positive(click.ParamType):  # type: ignore[type-arg]
    """A number above zero (a cap of zero or less means nothing)."""

    def __init__(self, kind: type[int] | type[float]) -> None:
        self.kind = kind
        self.name = "N" if kind is int else "X"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = self.kind(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number; use a positive {self.kind.__name__}", param, ctx)
        if not (number > 0 and math.isfinite(number)):
            self.fail(f"{value!r} must be a positive {self.kind.__name__}", param, ctx)
        return number


DURATION = Duration()
POSITIVE_INT = Positive(int)
POSITIVE_FLOAT = Positive(float)
