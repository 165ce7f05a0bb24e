"""The words of a usage limit: the CLI's own list, the weakest signal of all.

Claude Code (2.1.332) tells a usage-limit message from any other by these prefixes (its
`uHi` list and the `fHi` pattern, read from the binary). claudeloop reads them only beside
a typed error of the same turn (`classify`): never text alone, since a model's answer can
say anything, and a served turn quoting a limit is no limit.
"""

from __future__ import annotations

import re
from typing import Literal

# A window a clock reopens ("You've hit your 5-hour limit · resets 3am", "... session
# limit", "... weekly limit", "You've reached your ...").
WINDOW_PREFIXES = ("You've hit your", "You've reached your")
# No clock refills these: usage credits, an org's funds, a seat or an allocation an admin
# must change.
CREDIT_PREFIXES = (
    "You're out of usage credits",
    "Your org is out of usage \u00b7 add funds to continue",
    "Your org is out of usage \u00b7 contact your admin",
    "Your seat type doesn't include usage credits",
    "Your seat type doesn't include usage",
    "Your usage allocation has been disabled by your admin",
    "Your group's usage limit is set to $0",
    "Fable 5 requires usage credits",
    "You're out of extra usage",
    "Your seat type doesn't include extra usage",
)
_MODEL_NEEDS_CREDITS = re.compile(
    r"^(?:Fable|Haiku|Mythos|Opus|Sonnet)(?: [^\u00b7\n]{1,40})? requires usage credits\."
)

LimitText = Literal["window", "credits"]


def usage_limit_text(text: str) -> LimitText | None:
    """Which usage limit `text` (a result's) says refused the turn, by the CLI's words."""
    said = text.lstrip()
    if said.startswith(CREDIT_PREFIXES) or _MODEL_NEEDS_CREDITS.match(said):
        return "credits"
    if said.startswith(WINDOW_PREFIXES):
        return "window"
    return None
