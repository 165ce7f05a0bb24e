"""Secrets never reach the run directory: known credential values and token shapes."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

SECRET_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_API_KEY",
    "LITELLM_MASTER_KEY",
)
_TOKEN_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{20,}|Bearer\s+[A-Za-z0-9._\-]{12,}"
    r"|x-api-key:\s*\S+",
    re.IGNORECASE,
)
MASK = "[redacted]"
# Values this short are too likely to be ordinary words to mask everywhere.
_MIN_SECRET_LENGTH = 6


class Redactor:
    """Replaces secret values and token-shaped strings in text and nested data."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self._secrets = tuple(
            sorted({s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True)
        )

    @classmethod
    def from_environment(
        cls, env: Mapping[str, str] | None = None, extra: tuple[str, ...] = ()
    ) -> Redactor:
        source = os.environ if env is None else env
        found = tuple(source[name] for name in SECRET_VARIABLES if source.get(name))
        suffixed = tuple(
            value
            for name, value in source.items()
            if value and re.search(r"(TOKEN|SECRET|API_KEY|PASSWORD)$", name)
        )
        return cls(found + suffixed + extra)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            value = value.replace(secret, MASK)
        return _TOKEN_SHAPES.sub(MASK, value)

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value
