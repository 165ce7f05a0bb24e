"""The one way a value goes to disk and back: frozen dataclasses and closed unions as
JSON, read off their type hints (docs/architecture/decisions/0007-one-codec.md).

A dataclass is an object of its fields, in their order; a tuple or a frozenset a list
(a frozenset's sorted, so a file does not move when nothing in it did); an enum its
value; an instant its ISO 8601 text; a duration its seconds; a path its text. Where a
file says something otherwise, its `Codec` says so once, by type:

- `Shape`: a dataclass's keys that are not its field names (`renamed`), fields not
  written (`omitted`: read back as their default), fields written only when they are
  not their default (`sparse`), and a dataclass field whose keys sit in its owner's
  object (`flattened`);
- `Form`: a type written in a form of its own (a plan as its text, a check as its
  command line), with the function that reads it back;
- `Tagged`: a closed union of dataclasses told apart by one key (`{"kind": "window"}`).

Reading is strict: a value of the wrong type (a bool where a number belongs, text for
an instant, a whole number beyond 64 bits) is a `DecodeError` naming where it is
(`state.turns`) and what it is. A key
a dataclass lacks reads as the field's default (a file of before it was written), or,
in a codec of `every_key`, only a key its shape says was `added`; a field without a
default is a `DecodeError`. Keys nothing reads are skipped. A change of
shape that defaults cannot say is a new version and an upgrade function (`Versioned`).
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path, PurePath
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

Json = Any  # what json.loads gives and json.dumps takes
_PLAIN = frozenset({str, int, float, bool, type(None)})


# A whole number in a file is one of 64 bits, as TOML's are: a count beyond it (a damaged
# state.json's attempts = 10^300) is no count any run reached, and is refused, not used.
# The settings take no larger either: Python's TOML reader takes any, and a larger cap is
# no cap a person meant.
LARGEST_WHOLE = 2**63 - 1
WHOLE_NUMBER = "a whole number from -(2^63-1) to 2^63-1"


class DecodeError(ValueError):
    """A value that is not what its type says it holds; the message names where."""


@dataclass(frozen=True, slots=True)
class Shape:
    """Where a dataclass's object on disk differs from its fields."""

    renamed: Mapping[str, str] = field(default_factory=dict)  # field -> key
    omitted: frozenset[str] = frozenset()
    sparse: frozenset[str] = frozenset()
    flattened: frozenset[str] = frozenset()
    # Fields added since the file's format began, for a codec whose files must hold
    # every other key (`every_key`): a file of before lacks them, and reads as their
    # default.
    added: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Form:
    """A type written in a form of its own: `write` gives the JSON value, `read` takes it
    back (raising ValueError or TypeError for a value it cannot read)."""

    write: Callable[[Any], Json]
    read: Callable[[Json], Any]


@dataclass(frozen=True, slots=True)
class Tagged:
    """A closed union of dataclasses: each is written with `key` saying which it is."""

    key: str
    tags: Mapping[type, str]

    @classmethod
    def covering(cls, union: Any, key: str, tags: Mapping[type, str]) -> Tagged:
        """The tags of `union`, every member named: a member added to the union and not
        here is a TypeError as the codec is made (at import), never a file without its
        tag."""
        members, named = set(get_args(union)), set(tags)
        if members != named:
            missing = sorted(t.__name__ for t in members - named)
            extra = sorted(t.__name__ for t in named - members)
            raise TypeError(f"tags for {key!r}: without {missing}, beyond {extra}")
        return cls(key, tags)


@dataclass(frozen=True, slots=True)
class Codec:
    """How one kind of file holds its values: `encode` a value to JSON, `decode` JSON
    as a type. One per file kind (state.json's, events.jsonl's, the board's, the
    queue's); their differences are these fields, nothing else."""

    shapes: Mapping[type, Shape] = field(default_factory=dict)
    forms: Mapping[type, Form] = field(default_factory=dict)
    unions: tuple[Tagged, ...] = ()
    # Every instant read must say its offset from UTC (a naive one is a DecodeError).
    aware: bool = True
    # Instants written in UTC, whatever their zone.
    in_utc: bool = False
    # Every key of a dataclass must be there but its shape's `added` ones (else a key
    # that is not reads as its field's default).
    every_key: bool = False
    # Each dataclass's fields as this codec writes them, worked out once.
    _plans: dict[type, tuple[_Slot, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def _plan(self, cls: type) -> tuple[_Slot, ...]:
        plan = self._plans.get(cls)
        if plan is None:
            shape = self.shapes.get(cls, Shape())
            hints = _hints(cls)
            plan = tuple(
                _Slot(
                    name=each.name,
                    key=shape.renamed.get(each.name, each.name),
                    hint=hints[each.name],
                    flat=each.name in shape.flattened,
                    sparse=each.name in shape.sparse,
                    default=_default(each),
                    may_lack=_default(each) is not MISSING
                    and (not self.every_key or each.name in shape.added),
                )
                for each in dataclasses.fields(cls)
                if each.init and each.name not in shape.omitted
            )
            self._plans[cls] = plan
        return plan

    # writing

    def encode(self, value: object) -> Json:
        """`value` as JSON, by what it is."""
        cls = type(value)
        if cls in _PLAIN:  # most values: first, for speed
            return value
        if cls in self.forms:
            return self.forms[cls].write(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            data = self._fields_out(value)
            tagged = self._tagged(cls)
            return {tagged.key: tagged.tags[cls], **data} if tagged else data
        if isinstance(value, enum.Enum):
            return value.value
        if isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, datetime):
            return (value.astimezone(UTC) if self.in_utc else value).isoformat()
        if isinstance(value, timedelta):
            return value.total_seconds()
        if isinstance(value, PurePath):
            return str(value)
        if isinstance(value, frozenset):
            return sorted(self.encode(item) for item in value)
        if isinstance(value, tuple | list):
            return [self.encode(item) for item in value]
        if isinstance(value, Mapping):
            return {str(key): self.encode(item) for key, item in value.items()}
        raise TypeError(f"no JSON form for {cls.__name__}")

    def _fields_out(self, value: Any) -> dict[str, Json]:
        data: dict[str, Json] = {}
        for slot in self._plan(type(value)):
            item = getattr(value, slot.name)
            if slot.flat:
                data |= self._fields_out(item)
            elif not slot.sparse or item != slot.default:
                data[slot.key] = self.encode(item)
        return data

    # reading

    def decode(self, data: Json, hint: Any, where: str = "") -> Any:
        """`data` read as `hint` (a type or a type hint); DecodeError naming where in
        it the first wrong value is, under `where` (the file's own keys when empty)."""
        try:
            return self._in(data, hint, where)
        except DecodeError:
            raise
        except (ValueError, TypeError, OverflowError, KeyError, AttributeError) as error:
            raise DecodeError(f"{where or 'the value'}: {error}") from None

    def _in(self, data: Json, hint: Any, where: str) -> Any:
        if hint in self.forms:
            try:
                return self.forms[hint].read(data)
            except (ValueError, TypeError, OverflowError, AttributeError) as error:
                raise DecodeError(f"{where or 'the value'} is {data!r}: {error}") from None
        origin = get_origin(hint)
        if origin in (Union, types.UnionType):
            return self._union_in(data, get_args(hint), where)
        if origin is Literal:
            if data not in get_args(hint) or type(data) is bool:
                raise _wrong(where, data, " or ".join(map(repr, get_args(hint))))
            return data
        if origin is tuple:
            items = _list(data, where)
            args = get_args(hint)
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(self._in(x, args[0], f"{where}[{i}]") for i, x in enumerate(items))
            if len(items) != len(args):
                raise _wrong(where, data, f"a list of {len(args)}")
            pairs = enumerate(zip(items, args, strict=True))
            return tuple(self._in(x, a, f"{where}[{i}]") for i, (x, a) in pairs)
        if origin is list:
            (item,) = get_args(hint)
            return [self._in(x, item, f"{where}[{i}]") for i, x in enumerate(_list(data, where))]
        if origin is frozenset:
            (item,) = get_args(hint)
            return frozenset(self._in(x, item, f"{where}[]") for x in _list(data, where))
        if origin is dict:
            _, item = get_args(hint)
            if not isinstance(data, dict):
                raise _wrong(where, data, "an object")
            return {str(k): self._in(v, item, _inside(where, str(k))) for k, v in data.items()}
        if hint is type(None):
            if data is not None:
                raise _wrong(where, data, "null")
            return None
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return self._dataclass_in(data, hint, where)
        return self._scalar_in(data, hint, where)

    def _union_in(self, data: Json, options: tuple[Any, ...], where: str) -> Any:
        if data is None and type(None) in options:
            return None
        rest = [option for option in options if option is not type(None)]
        if len(rest) == 1:
            return self._in(data, rest[0], where)
        tagged = self._tagged(rest[0]) if isinstance(rest[0], type) else None
        if tagged is not None:
            if not isinstance(data, dict):
                raise _wrong(where, data, "an object")
            tag = data.get(tagged.key)
            for option in rest:
                if tagged.tags.get(option) == tag:
                    return self._dataclass_in(data, option, where)
            known = [tagged.tags[option] for option in rest if option in tagged.tags]
            raise _wrong(_inside(where, tagged.key), tag, " or ".join(map(repr, known)))
        for option in rest:  # plain values: the first type that reads it
            try:
                return self._in(data, option, where)
            except DecodeError:
                continue
        raise _wrong(where, data, " or ".join(_named(option) for option in rest))

    def _dataclass_in(self, data: Json, cls: type, where: str) -> Any:
        if not isinstance(data, dict):
            raise _wrong(where, data, "an object")
        values: dict[str, Any] = {}
        for slot in self._plan(cls):
            if slot.flat:
                values[slot.name] = self._dataclass_in(data, slot.hint, where)
            elif slot.key in data:
                values[slot.name] = self._in(data[slot.key], slot.hint, _inside(where, slot.key))
            elif not slot.may_lack:
                raise DecodeError(f"{_inside(where, slot.key)} is missing")
        try:
            return cls(**values)
        except (ValueError, TypeError) as error:
            raise DecodeError(f"{where or cls.__name__}: {error}") from None

    def _scalar_in(self, data: Json, hint: Any, where: str) -> Any:
        if hint is bool:
            if type(data) is not bool:
                raise _wrong(where, data, "true or false")
            return data
        if hint is int:
            if type(data) is not int or not -LARGEST_WHOLE <= data <= LARGEST_WHOLE:
                raise _wrong(where, data, WHOLE_NUMBER)
            return data
        if hint is float:
            if type(data) not in (int, float):
                raise _wrong(where, data, "a number")
            return float(data)
        if hint is str:
            if type(data) is not str:
                raise _wrong(where, data, "text")
            return data
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            try:
                return hint(data)
            except ValueError:
                known = " or ".join(repr(member.value) for member in hint)
                raise _wrong(where, data, known) from None
        if hint is datetime:
            if type(data) is not str:
                raise _wrong(where, data, "an ISO 8601 instant")
            try:
                instant = datetime.fromisoformat(data)
            except ValueError:
                raise _wrong(where, data, "an ISO 8601 instant") from None
            if self.aware and instant.utcoffset() is None:
                raise _wrong(where, data, "an instant with a time zone")
            return instant
        if hint is timedelta:
            seconds = self._scalar_in(data, float, where)
            try:
                return timedelta(seconds=seconds)
            except OverflowError:
                raise _wrong(where, data, "a number of seconds a duration holds") from None
        if hint in (Path, PurePath):
            return Path(self._scalar_in(data, str, where))
        raise TypeError(f"{where}: no JSON form for {hint!r}")

    def _tagged(self, cls: type) -> Tagged | None:
        return next((union for union in self.unions if cls in union.tags), None)


@dataclass(frozen=True, slots=True)
class _Slot:
    """One field of a dataclass as a codec writes it."""

    name: str
    key: str
    hint: Any
    flat: bool
    sparse: bool
    default: Any
    may_lack: bool


@dataclass(frozen=True, slots=True)
class Versioned:
    """A file whose format has a number under `key`: one it lacks is `assumed`; an older
    one goes through `upgrades[n]` (format n to n + 1) one step at a time, up to
    `current`; a newer one is refused (`NewerFormat`)."""

    key: str
    current: int
    assumed: int
    upgrades: Mapping[int, Callable[[dict[str, Json]], dict[str, Json]]] = field(
        default_factory=dict
    )

    def stamp(self, data: dict[str, Json]) -> dict[str, Json]:
        return {self.key: self.current, **data}

    def upgraded(self, data: dict[str, Json]) -> dict[str, Json]:
        written = data.get(self.key, self.assumed)
        if type(written) is not int or written < 1:
            raise DecodeError(f"{self.key} {written!r} is not a format number")
        if written > self.current:
            raise NewerFormat(written, self.current)
        for step in range(written, self.current):
            data = self.upgrades[step](data)
        return data


class NewerFormat(DecodeError):
    """Written by a newer claudeloop: its format is past the one this one reads."""

    def __init__(self, written: int, current: int) -> None:
        super().__init__(f"format {written}, newer than {current}")
        self.written = written


def _default(each: dataclasses.Field[Any]) -> Any:
    if each.default is not MISSING:
        return each.default
    if each.default_factory is not MISSING:
        return each.default_factory()
    return MISSING


@cache
def _hints(cls: type) -> dict[str, object]:
    return get_type_hints(cls)


def _inside(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _list(data: Json, where: str) -> list[Json]:
    if not isinstance(data, list):
        raise _wrong(where, data, "a list")
    return data


def _named(hint: Any) -> str:
    return getattr(hint, "__name__", str(hint))


def _wrong(where: str, data: Json, expected: str) -> DecodeError:
    shown = repr(data)
    if len(shown) > _LONGEST_SHOWN:  # a line, not a screen of digits
        shown = f"{shown[:_LONGEST_SHOWN]}... ({len(shown)} characters)"
    return DecodeError(f"{where or 'the value'} is {shown}, not {expected}")


_LONGEST_SHOWN = 40
