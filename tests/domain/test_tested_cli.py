"""tested_cli: another Claude Code than the tested one is told apart, newer or older."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.tested_cli import TESTED_CLAUDE_CODE, cli_standing, standing_note


def test_the_tested_version_is_tested_as_claude_prints_it_or_bare() -> None:
    assert cli_standing(f"{TESTED_CLAUDE_CODE} (Claude Code)") == "tested"
    assert cli_standing(TESTED_CLAUDE_CODE) == "tested"
    assert standing_note(TESTED_CLAUDE_CODE) == "the version this claudeloop was tested with"


def test_a_newer_or_older_version_is_named_against_the_tested_one() -> None:
    major, minor, patch = (int(part) for part in TESTED_CLAUDE_CODE.split("."))
    newer, older = f"{major}.{minor}.{patch + 1}", f"{major}.{minor - 1}.999"
    assert cli_standing(f"{newer} (Claude Code)") == "newer"
    assert cli_standing(older) == "older"
    assert standing_note(newer).startswith(f"newer than {TESTED_CLAUDE_CODE}")
    assert standing_note(older).startswith(f"older than {TESTED_CLAUDE_CODE}")
    # Compared as numbers, not as text: 2.1.1000 is newer than 2.1.999.
    assert cli_standing(f"{major}.{minor}.1000") == "newer"


def test_what_is_no_version_number_is_unknown() -> None:
    for said in ("", "Claude Code", "2.1.x", "v2.1.3"):
        assert cli_standing(said) == "unknown"
        assert standing_note(said).endswith(f"tested with {TESTED_CLAUDE_CODE}")


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=4))
def test_every_version_number_stands_somewhere(parts: list[int]) -> None:
    version = ".".join(str(part) for part in parts)
    tested = tuple(int(part) for part in TESTED_CLAUDE_CODE.split("."))
    expected = "tested" if tuple(parts) == tested else "newer" if tuple(parts) > tested else "older"
    assert cli_standing(version) == expected
