"""How many examples a Hypothesis property explores: its own number under `make test`
(CI), at most CHECK_EXAMPLES under `make check`, the fast gate while working."""

from __future__ import annotations

import os

CHECK_EXAMPLES = 20


def examples(wanted: int) -> int:
    if os.environ.get("HYPOTHESIS_PROFILE") == "check":
        return min(wanted, CHECK_EXAMPLES)
    return wanted
