"""What a view shown to the user masks, and a typed answer masked: every text in it
through the view's mask (the run's secrets), its shape and types kept."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

# What a view shown to the user masks (the run's secrets).
Mask = Callable[[dict[str, Any]], Mapping[str, Any]]

T = TypeVar("T")


def masked_text(mask: Mask, text: str) -> str:
    return str(mask({"text": text})["text"])


def masked(value: T, mask: Mask) -> T:
    """`value` with every text in it masked: the strings of a frozen dataclass's fields,
    of its tuples and of its mappings (keys too: a report counts its waits by what was
    waited on, the words of a service's answer), recursively; other values as they are."""
    return cast(T, _masked(value, mask))


def _masked(value: object, mask: Mask) -> object:
    if isinstance(value, str):
        return masked_text(mask, value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            each.name: _masked(getattr(value, each.name), mask)
            for each in dataclasses.fields(value)
            if each.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(_masked(item, mask) for item in value)
    if isinstance(value, list):
        return [_masked(item, mask) for item in value]
    if isinstance(value, Mapping):
        return {_masked(key, mask): _masked(item, mask) for key, item in value.items()}
    return value
