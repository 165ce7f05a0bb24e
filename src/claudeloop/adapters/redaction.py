"""Secrets never leave the process: known credential values and token shapes.

The one rule for which variables hold a secret lives here; every file, screen and
answer of a run goes through a `Redactor` built with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

# What ends a text cut short (`first_line`; Claude Code's own 200-character prompts).
from claudeloop.domain.text import CUT

# A variable holds a secret when one of the words of its name (split at `_`) says so:
# MY_SERVICE_PAT, DB_PASS, AWS_SECRET_ACCESS_KEY, AWS_BEARER_TOKEN_BEDROCK. Whole words,
# so PATH, CLAUDE_CODE_MAX_OUTPUT_TOKENS or TOKENIZERS_PARALLELISM are not secrets.
_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PWD",
        "PAT",
        "KEY",
        "APIKEY",
        "CREDENTIAL",
        "CREDENTIALS",
    }
)
# Names written as one word: PGPASSWORD, GHTOKEN, OPENAIAPIKEY.
_SECRET_ENDING = re.compile(r"(PASSWORD|PASSWD|TOKEN|SECRET|APIKEY)$")
# The shell's working directories, not MySQL's password.
_NOT_SECRET = frozenset({"PWD", "OLDPWD"})
_TOKEN_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{20,}|Bearer\s+[A-Za-z0-9._\-]{12,}"
    r"|x-api-key:\s*\S+"
    # GitHub, GitLab, Slack, Hugging Face tokens and AWS access key ids.
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}|hf_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}",
    re.IGNORECASE,
)
# scheme://user:PASSWORD@host: the password, whatever its length, in any text.
# The scheme is bounded (the longest real ones, `postgresql+psycopg`, are under 32): an
# unbounded one scans every run of letters to its end from each of its letters, and a
# check printing long lines was redacted at under 1 MB/s.
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s/:@]*:)([^\s/@]+)(@)")
# ?token=...&api_key=...: a query parameter whose name says it is a secret.
_SECRET_PARAMETER = re.compile(r"[?&;]([A-Za-z0-9_\-]+)=([^&#;\s]+)")
MASK = "[redacted]"
# The shortest beginning of a secret masked where a cut ends it: shorter, it is as
# likely the beginning of an ordinary word (and tells next to nothing of the secret).
_MIN_CUT_PREFIX = 3
# Values this short are too likely to be ordinary words to mask everywhere.
_MIN_SECRET_LENGTH = 6


def looks_secret(name: str) -> bool:
    """Whether a variable (or a URL's query parameter) named `name` holds a secret."""
    upper = name.upper().replace("-", "_")
    if upper in _NOT_SECRET:
        return False
    return bool(_SECRET_WORDS & set(upper.split("_"))) or _SECRET_ENDING.search(upper) is not None


def _holds_a_number_setting(name: str, value: str) -> bool:
    """A number under a name whose secret word is not its last is a setting of that
    secret (CLAUDE_CODE_API_KEY_HELPER_TTL_MS=3600000), not the secret (DB_PASS=123456)."""
    last = name.upper().replace("-", "_").rsplit("_", 1)[-1]
    return value.isdigit() and last not in _SECRET_WORDS and not _SECRET_ENDING.search(last)


def url_passwords(value: str) -> tuple[str, ...]:
    """The passwords and secret query parameters of the URLs in `value`, as written and
    decoded (`p%40ss` is also `p@ss`)."""
    found = [match.group(2) for match in _URL_PASSWORD.finditer(value)]
    found += [
        match.group(2)
        for match in _SECRET_PARAMETER.finditer(value)
        if looks_secret(match.group(1))
    ]
    return tuple(dict.fromkeys(piece for raw in found for piece in (raw, unquote(raw))))


def secret_values(*environments: Mapping[str, str]) -> tuple[str, ...]:
    """Every secret in the given environments: the values of variables whose names look
    secret, and the passwords of URLs in any variable."""
    found: list[str] = []
    for environment in environments:
        for name, value in environment.items():
            if not value:
                continue
            if looks_secret(name) and not _holds_a_number_setting(name, value):
                found.append(value)
            found += url_passwords(value)
    return tuple(dict.fromkeys(found))


class Redactor:
    """Replaces secret values and token-shaped strings in text and nested data."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = tuple(
            sorted({s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True)
        )

    @classmethod
    def from_environment(
        cls, *environments: Mapping[str, str], extra: Iterable[str] = ()
    ) -> Redactor:
        """The secrets of `environments` (default: this process's) and `extra`. Give
        each environment, not one merged over another: a variable a profile blanks for
        the CLI is still a secret of ours."""
        return cls((*secret_values(*(environments or (os.environ,))), *extra))

    def knows_one_in(self, value: str) -> bool:
        """Whether `value` holds one of the secret values this redactor was given (a
        token shape alone is not one: a test fixture may hold such a string)."""
        return any(secret in value for secret in self._secrets)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            value = value.replace(secret, MASK)
        if CUT in value:
            value = self._cut_secrets(value)
        if "://" in value:
            value = _URL_PASSWORD.sub(rf"\g<1>{MASK}\g<3>", value)
        return _TOKEN_SHAPES.sub(MASK, value)

    def _cut_secrets(self, value: str) -> str:
        """A secret's beginning where a cut ends the text: a text cut short before it
        was masked (Claude Code keeps a session's last prompt cut at 200 characters)
        still shows no part of a secret, `...key CNRYtok…` being `...key [redacted]…`."""
        for secret in self._secrets:
            for length in range(len(secret) - 1, _MIN_CUT_PREFIX - 1, -1):
                value = value.replace(secret[:length] + CUT, MASK + CUT)
        return value

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            # Keys too: a report counts its waits by what was waited on, the words of
            # a service's answer.
            return {self.data(key): self.data(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value
