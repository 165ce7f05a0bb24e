"""The one codec: a frozen dataclass or a closed union goes to JSON and back as it was,
its shape said once per type, and a value of the wrong type is an error naming where."""

from __future__ import annotations

import enum
import json
import types
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.application.codec import (
    LARGEST_WHOLE,
    Codec,
    DecodeError,
    Form,
    NewerFormat,
    Shape,
    Tagged,
    Versioned,
)
from claudeloop.application.events import EVENT_CODEC, EVENT_TYPES, Event, event_from


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner:
    count: int
    share: float = 0.5


@dataclass(frozen=True)
class Square:
    side: float


@dataclass(frozen=True)
class Circle:
    radius: float
    kind: Literal["full", "half"] = "full"


@dataclass(frozen=True)
class Everything:
    name: str
    colour: Colour
    at: datetime
    lasts: timedelta
    where: Path
    tags: frozenset[str]
    steps: tuple[int, ...]
    pair: tuple[str, float]
    table: dict[str, int]
    inner: Inner
    shape: Square | Circle
    maybe: str | None = None
    flag: bool = False


AT = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)
SHAPES = Tagged.covering(Square | Circle, "shape", {Square: "square", Circle: "circle"})
CODEC = Codec(unions=(SHAPES,))


def everything(**changes: Any) -> Everything:
    values: dict[str, Any] = {
        "name": "n",
        "colour": Colour.BLUE,
        "at": AT,
        "lasts": timedelta(minutes=5),
        "where": Path("/tmp/x"),
        "tags": frozenset({"b", "a"}),
        "steps": (1, 2),
        "pair": ("p", 1.5),
        "table": {"k": 1},
        "inner": Inner(3),
        "shape": Circle(2.0, "half"),
    }
    return Everything(**(values | changes))


def through_json(value: object) -> Any:
    return json.loads(json.dumps(CODEC.encode(value)))


def test_a_dataclass_reads_back_as_it_was_written() -> None:
    value = everything()
    written = through_json(value)
    assert written["tags"] == ["a", "b"]  # sorted: a file does not move
    assert written["lasts"] == 300.0
    assert written["shape"] == {"shape": "circle", "radius": 2.0, "kind": "half"}
    assert written["at"] == "2026-12-02T14:00:00+00:00"
    assert list(written) == [f.name for f in fields(Everything)]  # the fields' order
    assert CODEC.decode(written, Everything) == value


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("name", 5, "name is 5, not text"),
        ("flag", 1, "flag is 1, not true or false"),
        ("steps", [1, True], "steps[1] is True, not a whole number"),
        ("colour", "green", "colour is 'green', not 'red' or 'blue'"),
        ("at", "2026-12-02T14:00:00", "at is '2026-12-02T14:00:00', not an instant with a"),
        ("at", "soon", "not an ISO 8601 instant"),
        ("lasts", 1e20, "not a number of seconds a duration holds"),
        ("pair", ["p"], "pair is ['p'], not a list of 2"),
        ("inner", {"share": 1.0}, "inner.count is missing"),
        ("shape", {"shape": "hexagon"}, "shape.shape is 'hexagon', not 'square' or 'circle'"),
        ("shape", {"shape": "circle", "radius": 1, "kind": "quarter"}, "shape.kind is"),
        ("table", {"k": "one"}, "table.k is 'one', not a whole number"),
        ("table", {"k": 2**63}, "table.k is 9223372036854775808, not a whole number from"),
        ("table", {"k": 10**300}, "table.k is " + "1" + "0" * 39 + "... (301 characters"),
        ("maybe", 3, "maybe is 3, not text"),
        ("table", [1], "table is [1], not an object"),
        ("inner", "three", "inner is 'three', not an object"),
        ("shape", ["circle"], "shape is ['circle'], not an object"),
    ],
)
def test_a_value_of_the_wrong_type_is_an_error_naming_where(
    key: str, value: object, said: str
) -> None:
    written = through_json(everything())
    written[key] = value
    with pytest.raises(DecodeError, match=said.replace("[", r"\[").replace("(", r"\(")):
        CODEC.decode(written, Everything, "")


def test_a_whole_number_reads_as_a_float_and_null_as_none() -> None:
    written = through_json(everything())
    written["inner"]["share"] = 1
    written["maybe"] = None
    read = CODEC.decode(written, Everything)
    assert read.inner.share == 1.0
    assert isinstance(read.inner.share, float)
    assert read.maybe is None


def test_a_key_of_before_reads_as_its_default_and_one_nothing_reads_is_skipped() -> None:
    written = through_json(everything(maybe="x", flag=True))
    del written["maybe"], written["flag"]
    written["gone"] = "a key an older version wrote"
    assert CODEC.decode(written, Everything) == everything()


def test_a_codec_of_every_key_takes_a_default_only_for_a_key_added_since() -> None:
    strict = Codec(every_key=True, shapes={Inner: Shape(added=frozenset({"share"}))})
    assert strict.decode({"count": 1}, Inner) == Inner(1)
    with pytest.raises(DecodeError, match="radius is missing"):
        strict.decode({}, Circle)
    with pytest.raises(DecodeError, match="kind is missing"):
        strict.decode({"radius": 1.0}, Circle)


def test_a_shape_renames_omits_flattens_and_writes_a_default_only_when_it_is_not() -> None:
    @dataclass(frozen=True)
    class Outer:
        inner: Inner
        label: str = ""
        note: str | None = None

    codec = Codec(
        shapes={
            Outer: Shape(
                renamed={"label": "title"},
                flattened=frozenset({"inner"}),
                sparse=frozenset({"note"}),
            ),
            Inner: Shape(omitted=frozenset({"share"})),
        }
    )
    assert codec.encode(Outer(Inner(2, 0.9), "t")) == {"count": 2, "title": "t"}
    assert codec.encode(Outer(Inner(2), note="n")) == {"count": 2, "title": "", "note": "n"}
    assert codec.decode({"count": 2, "title": "t"}, Outer) == Outer(Inner(2), "t")


def test_a_form_writes_a_type_as_its_own_text_and_reads_it_back() -> None:
    def read(text: object) -> Square:
        if not isinstance(text, str):
            raise TypeError("not text")
        return Square(float(text.removesuffix("cm")))

    codec = Codec(forms={Square: Form(lambda square: f"{square.side}cm", read)})
    assert codec.encode((Square(2.0),)) == ["2.0cm"]
    assert codec.decode("3cm", Square) == Square(3.0)
    with pytest.raises(DecodeError, match="side is 3: not text"):
        codec.decode(3, Square, "side")
    with pytest.raises(DecodeError, match="could not convert"):
        codec.decode("wide", Square, "side")


def test_instants_are_written_in_utc_when_the_file_says_so_and_naive_ones_read_if_allowed() -> None:
    paris = datetime(2026, 12, 2, 15, 0, tzinfo=timezone(timedelta(hours=1)))
    assert Codec(in_utc=True).encode(paris) == "2026-12-02T14:00:00+00:00"
    assert Codec().encode(paris) == "2026-12-02T15:00:00+01:00"
    naive = "2026-12-02T14:00:00"
    assert Codec(aware=False).decode(naive, datetime) == datetime(2026, 12, 2, 14, 0)
    with pytest.raises(DecodeError, match="with a time zone"):
        Codec().decode(naive, datetime)


def test_a_value_no_codec_form_holds_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="no JSON form for object"):
        CODEC.encode(object())
    with pytest.raises(DecodeError, match="no JSON form for"):
        CODEC.decode(1, complex, "z")


def test_a_version_upgrades_one_step_at_a_time_and_a_newer_one_is_refused() -> None:
    steps: list[int] = []

    def step(number: int) -> Any:
        def upgrade(data: dict[str, Any]) -> dict[str, Any]:
            steps.append(number)
            return data | {f"since_{number + 1}": True}

        return upgrade

    versioned = Versioned(key="v", current=3, assumed=1, upgrades={1: step(1), 2: step(2)})
    assert versioned.stamp({"a": 1}) == {"v": 3, "a": 1}
    assert versioned.upgraded({"a": 1}) == {"a": 1, "since_2": True, "since_3": True}
    assert steps == [1, 2]
    assert versioned.upgraded({"v": 3, "a": 1}) == {"v": 3, "a": 1}
    with pytest.raises(NewerFormat, match="format 4, newer than 3") as newer:
        versioned.upgraded({"v": 4})
    assert newer.value.written == 4
    for wrong in ("3", 0, True):
        with pytest.raises(DecodeError, match="is not a format number"):
            versioned.upgraded({"v": wrong})


def _values(hint: Any) -> st.SearchStrategy[Any]:
    """Any value of one of the types an event holds, as JSON can say it."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return st.one_of(*(_values(option) for option in get_args(hint)))
    if origin is tuple:
        return st.lists(_values(get_args(hint)[0]), max_size=3).map(tuple)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    if origin is Literal:
        return st.sampled_from(get_args(hint))
    plain: dict[Any, st.SearchStrategy[Any]] = {
        type(None): st.none(),
        bool: st.booleans(),
        int: st.integers(-LARGEST_WHOLE, LARGEST_WHOLE),  # a file's whole numbers: 64 bits
        float: st.floats(allow_nan=False, allow_infinity=False),
        str: st.text(max_size=20),
        datetime: st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5))])),
    }
    return plain[hint]


def _events() -> st.SearchStrategy[Event]:
    def built(cls: type[Event]) -> st.SearchStrategy[Event]:
        hints = get_type_hints(cls)
        return st.builds(cls, **{each.name: _values(hints[each.name]) for each in fields(cls)})

    return st.one_of(*(built(cls) for cls in EVENT_TYPES.values()))


@given(_events())
def test_every_event_reads_back_from_its_line_as_it_was_said(event: Event) -> None:
    line = json.loads(json.dumps({**EVENT_CODEC.encode(event), "type": event.type}))
    assert event_from(line) == event


@dataclass(frozen=True)
class Checked:
    either: int | str
    many: list[int]
    nothing: None = None
    more: tuple[str, ...] = ("x",)

    def __post_init__(self) -> None:
        if self.either == 0:
            raise ValueError("either must not be 0")


def test_a_plain_union_reads_as_the_first_type_that_holds_it_and_a_check_is_an_error() -> None:
    assert CODEC.decode({"either": "a", "many": [1]}, Checked) == Checked("a", [1])
    assert CODEC.decode({"either": 2, "many": []}, Checked).more == ("x",)
    with pytest.raises(DecodeError, match=r"either is 1\.5, not int or str"):
        CODEC.decode({"either": 1.5, "many": []}, Checked)
    with pytest.raises(DecodeError, match="nothing is 1, not null"):
        CODEC.decode({"either": 1, "many": [], "nothing": 1}, Checked)
    with pytest.raises(DecodeError, match="many is 1, not a list"):
        CODEC.decode({"either": 1, "many": 1}, Checked)
    with pytest.raises(DecodeError, match="either must not be 0"):
        CODEC.decode({"either": 0, "many": []}, Checked)


def test_tags_that_leave_a_member_of_the_union_out_are_refused_as_the_codec_is_made() -> None:
    with pytest.raises(TypeError, match=r"without \['Circle'\], beyond \['Inner'\]"):
        Tagged.covering(Square | Circle, "shape", {Square: "square", Inner: "inner"})
