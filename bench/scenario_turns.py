"""Turns of the rehearsal scenarios the benchmarks play."""

from __future__ import annotations

from typing import Any


def write_turn(n: int, *, complete: bool) -> dict[str, Any]:
    """A turn that writes step`n`.txt and says whether the plan is complete."""
    return {
        "steps": [
            {"kind": "tool", "name": "Write",
             "input": {"file_path": f"{{cwd}}/step{n}.txt", "content": f"step {n}\n"}},
            {"kind": "verdict", "complete": complete, "summary": f"Wrote step{n}.txt.",
             "remaining_work": [] if complete else ["the next step"]},
        ]
    }  # fmt: skip
