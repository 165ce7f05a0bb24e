"""Apprise URLs: what one looks like, and how one is shown without its secrets.

Apprise services keep their secrets anywhere in a URL: a password in the userinfo
(`mailto://me:PASSWORD@example.com`), a token as the "host" (`tgram://BOT_TOKEN/CHAT`),
tokens in the path (`discord://ID/TOKEN`) or in the query (`json://host/?:token=...`).
So a URL is shown as its scheme and, when it is plainly a server's name or address, its
host and port; everything else is masked: `json://127.0.0.1:8080/****`,
`mailto://****@example.com/****`, `tgram://****`.
"""

from __future__ import annotations

import re

MASK = "****"
# Shorter pieces of a URL are too likely to be ordinary words to mask everywhere.
_SHORTEST_SECRET = 6
# scheme://something, the way apprise itself recognises a URL.
_APPRISE_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://\S+$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*")
# A host that is plainly a server: a dotted name or address, localhost, or [IPv6].
_SERVER = re.compile(
    r"^(?:localhost|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)$",
)


def looks_like_apprise_url(value: str) -> bool:
    """`scheme://...` with no blanks: whether apprise could read it as a URL at all."""
    return _APPRISE_URL.match(value) is not None


def masked_url(value: str) -> str:
    """The URL as it may be shown on a screen or in a log: no secrets left in it."""
    if not looks_like_apprise_url(value):
        # Not a URL: at most what was meant as its scheme, never the rest.
        meant = _SCHEME.match(value)
        if meant is not None and value[meant.end() : meant.end() + 1] in (":", "/"):
            return meant.group(0) + value[meant.end()] + MASK
        return MASK
    scheme, rest = value.split("://", 1)
    authority, separator, after = _split_authority(rest)
    _, at, hostport = authority.rpartition("@")
    host, colon, port = hostport, "", ""
    if not hostport.startswith("[") or "]:" in hostport:
        head, colon, tail = hostport.rpartition(":")
        if colon and tail.isdigit():
            host, port = head, tail
        else:
            colon = ""
    shown_host = host if _SERVER.match(host) else MASK
    text = f"{scheme}://{MASK + '@' if at else ''}{shown_host}{colon}{port}"
    if separator and (after or separator != "/"):
        text += "/" + MASK
    return text


def url_secrets(value: str) -> tuple[str, ...]:
    """The pieces of a URL that `masked_url` hides, long enough to be worth masking
    wherever they turn up (a service's own log line, say)."""
    shown = masked_url(value)
    hidden = value.split("://", 1)[-1]
    for kept in re.split(r"[/@:]+", shown.split("://", 1)[-1]):
        if kept and kept != MASK:
            hidden = hidden.replace(kept, " ")
    return tuple(
        piece for piece in re.split(r"[/:@?&=#;,+\s]+", hidden) if len(piece) >= _SHORTEST_SECRET
    )


def _split_authority(rest: str) -> tuple[str, str, str]:
    """(the authority, the first of `/?#` after it or "", what follows that)."""
    for index, char in enumerate(rest):
        if char in "/?#":
            return rest[:index], char, rest[index + 1 :]
    return rest, "", ""
