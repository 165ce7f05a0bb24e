"""The pages that list the limit kinds list the domain's, all of them: a kind the domain
learns is said where a person looks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudeloop.domain.limits import LIMIT_KINDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "page",
    [
        "docs/guides/pause-thresholds-and-limit-policies.md",
        "docs/guides/rate-limits-and-credits.md",
        "docs/architecture/domain-model.md",
    ],
)
def test_a_page_listing_the_limit_kinds_names_every_one(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    missing = [kind for kind in LIMIT_KINDS if f"`{kind}`" not in text]
    assert not missing, f"{page} does not name {', '.join(missing)}"
