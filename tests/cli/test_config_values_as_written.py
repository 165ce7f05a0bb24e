"""`config show` prints a value as claudeloop.toml writes it: the line reads back."""

from __future__ import annotations

import tomllib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from claudeloop.cli.show_config import as_written

SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=8,
)


@given(VALUES)
def test_a_value_shown_reads_back_from_toml_as_itself(value: Any) -> None:
    assert tomllib.loads(f"value = {as_written(value)}")["value"] == value
