"""The README's "What a run looks like" is what `make rehearse` prints: the same kinds
of line, in the same order, from the rehearsal's start to the run's last line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_rehearse import rehearse

pytestmark = pytest.mark.e2e

README = Path(__file__).parents[2] / "README.md"


def _kinds(lines: list[str]) -> list[str]:
    """Each line as its kind: its first three words, a word with a digit (a number, an
    instant, a run id) as N."""
    return [
        " ".join("N" if re.search(r"\d", word) else word for word in line.split()[:3])
        for line in lines
    ]


def test_the_readme_sample_has_every_kind_of_line_a_rehearsal_prints(tmp_path: Path) -> None:
    sample = README.read_text().split("## What a run looks like", 1)[1]
    said = sample.split("```text\n", 1)[1].split("\n```", 1)[0].splitlines()
    finished = rehearse(tmp_path)
    assert finished.returncode == 0, finished.stderr
    printed = finished.stderr.splitlines()
    last = next(i for i, line in enumerate(printed) if line.startswith("claudeloop: done"))
    # The probes a loaded machine needs vary: each kind, in order, once in a row.
    assert _deduplicated(_kinds(said)) == _deduplicated(_kinds(printed[: last + 1]))
    assert any(line.startswith("sandbox: ") for line in said)


def _deduplicated(kinds: list[str]) -> list[str]:
    return [kind for i, kind in enumerate(kinds) if i == 0 or kinds[i - 1] != kind]
