"""Apprise URLs: which values are accepted, and how one is shown with no secret left."""

from __future__ import annotations

import pytest

from claudeloop.adapters.notify.urls import looks_like_apprise_url, masked_url, url_secrets


@pytest.mark.parametrize(
    "url",
    [
        "json://127.0.0.1:8080/hook",
        "ntfy://ntfy.sh/my-topic",
        "mailto://me:pw@example.com",
        "tgram://123456789:AAH-token/12345",
        "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js",
        "pover://user@token",
        "apprise+https://example.com",
    ],
)
def test_scheme_colon_slash_slash_is_an_apprise_url(url: str) -> None:
    assert looks_like_apprise_url(url)


@pytest.mark.parametrize(
    "value",
    ["", "ntfy.sh/my-topic", "json:/127.0.0.1/hook", "://host", "json://", "json://a b", "1x://h"],
)
def test_anything_else_is_not(value: str) -> None:
    assert not looks_like_apprise_url(value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("json://127.0.0.1:8080/hook?token=abc", "json://127.0.0.1:8080/****"),
        ("json://localhost", "json://localhost"),
        ("jsons://[::1]:8443/x", "jsons://[::1]:8443/****"),
        ("mailto://me:hunter22@gmail.com", "mailto://****@gmail.com"),
        ("ntfy://ntfy.sh/my-private-topic", "ntfy://ntfy.sh/****"),
        # The "host" of these is the token itself.
        ("tgram://123456789:AAHsecrettoken/12345", "tgram://****/****"),
        ("discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js", "discord://****/****"),
        ("slack://TokenA/TokenB/TokenC/", "slack://****/****"),
        # Not URLs: at most what was meant as the scheme.
        ("tgram//SECRETTOKEN/123", "tgram/****"),
        ("just-a-token-pasted", "****"),
    ],
)
def test_a_url_shows_its_scheme_and_server_and_masks_the_rest(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_the_masked_pieces_are_the_secrets_worth_masking_elsewhere() -> None:
    secrets = url_secrets("mailto://me:hunter22@gmail.com")
    assert "hunter22" in secrets
    assert "gmail.com" not in secrets
    assert set(url_secrets("discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js")) == {
        "4174216298",
        "JHMHI8qBe7bk2ZwO5U711o3dV_js",
    }
    assert url_secrets("json://127.0.0.1:8080/") == ()
