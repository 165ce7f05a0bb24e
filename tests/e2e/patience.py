"""How long an end-to-end test waits for what it drives, beside other work.

A run of a few turns costs seconds of CPU; on a machine shared with busy processes it
takes minutes of wall time. These bounds say nothing of how long anything should take:
they only end a wait that would otherwise hang (pytest-timeout ends a test at 600 s).
"""

from __future__ import annotations

# A command that drives a run to its end: run, resume, rehearse.
COMMAND = 420
# A run reaching the state a test waits for: a wait, a turn in flight, an event.
STATE = 300
