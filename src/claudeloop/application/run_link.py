"""The address of a run's page on the dashboard, as a notification carries it.

The dashboard names a run by its key in the machine's index (`IndexedRun.key`: its id
and a hash of its directory), so the link a run sends is the page the dashboard
serves for it. The address the person reaches the dashboard at is theirs to say (the
`dashboard_url` setting): a link never holds the dashboard's token, since
notifications travel through other people's servers.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from urllib.parse import quote, urlsplit

DASHBOARD_URL_ACCEPTED = (
    "the address you reach `claudeloop dashboard` at: an http(s) URL with a host and "
    'no query, such as "https://box.tailnet.ts.net:8420"'
)


def dashboard_url_problem(value: str) -> str | None:
    """What is wrong with a dashboard address, in a few words; None when it is one."""
    try:
        parts = urlsplit(value.strip())
        _ = parts.port
    except ValueError:
        return "not a URL with a valid port"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL with a host"
    if parts.query or parts.fragment:
        return "a query or fragment (a token has no place in it)"
    if parts.username is not None or parts.password is not None:
        return "a user or password (a secret has no place in it)"
    return None


def run_page_link(dashboard_url: str, run_id: str, directory: Path) -> str:
    """The link to the page of the run `run_id` kept in `directory`."""
    # Imported here: every command's parameters check an address with this module, and
    # the ports bring in every event and the domain's loop (a tenth of a second).
    from claudeloop.application.ports import IndexedRun

    key = IndexedRun(run_id, directory.absolute(), directory, None, "", datetime.min).key
    return f"{dashboard_url.strip().rstrip('/')}/run/{quote(key, safe='')}"
