"""What a typed answer's `--json` form is: a JSON object, said as a type (never `Any`),
so a view that reads it by key is a view mypy stops; every view renders the typed value
itself, and its JSON is made from it in one place (its `to_json`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# A value json.dumps writes: read-only containers, so a list of strings is one too.
Json: TypeAlias = bool | int | float | str | Sequence["Json"] | Mapping[str, "Json"] | None
JsonObject: TypeAlias = Mapping[str, Json]
