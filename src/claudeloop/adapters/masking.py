"""The `Masking` port (application/config_view.py): apprise URLs as adapters/notify/urls.py
shows them, names and text as adapters/redaction.py judges them."""

from __future__ import annotations

from claudeloop.adapters.notify import urls
from claudeloop.adapters.redaction import Redactor, looks_secret


class SecretMasking:
    """Satisfies application.config_view.Masking."""

    def looks_like_apprise_url(self, value: str) -> bool:
        return urls.looks_like_apprise_url(value)

    def masked_url(self, value: str) -> str:
        return urls.masked_url(value)

    def looks_secret(self, name: str) -> bool:
        return looks_secret(name)

    def masked_text(self, text: str) -> str:
        return Redactor().text(text)
