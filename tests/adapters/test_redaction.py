"""Which values are secrets, and how text that leaves the process is masked."""

from __future__ import annotations

import pytest

from claudeloop.adapters.redaction import (
    MASK,
    Redactor,
    looks_secret,
    secret_values,
    url_passwords,
)


@pytest.mark.parametrize(
    "name",
    [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "OPENAI_API_KEY",
        "LITELLM_MASTER_KEY",
        "MY_SERVICE_PAT",
        "DB_PASS",
        "REDIS_PASSWORD",
        "PGPASSWORD",
        "MYSQL_PWD",
        "GH_TOKEN",
        "client-secret",
    ],
)
def test_a_name_with_a_secret_word_holds_a_secret(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "PWD",
        "OLDPWD",
        "HOME",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
        "TOKENIZERS_PARALLELISM",
        "CLAUDE_CODE_BYPASS_FOO",
        "KEYBOARD_LAYOUT",
    ],
)
def test_a_word_inside_another_word_is_not_a_secret(name: str) -> None:
    assert not looks_secret(name)


def test_secret_values_are_of_secret_names_and_of_url_passwords_in_any_variable() -> None:
    found = secret_values(
        {
            "MY_SERVICE_PAT": "pat-value-123456",
            "HTTPS_PROXY": "http://me:proxy-pass-77@proxy.example:3128",
            "CLAUDELOOP_NOTIFY": "json://127.0.0.1:9/hook?token=query-token-42",
            "HOME": "/home/someone-long",
            "CLAUDE_CODE_API_KEY_HELPER_TTL_MS": "3600000",
            "BANK_PASS": "98765432",
            "DB_PASS": "",
        },
        {"ANTHROPIC_AUTH_TOKEN": "second-environment-token"},
    )
    assert set(found) == {
        "pat-value-123456",
        "proxy-pass-77",
        "query-token-42",
        "98765432",
        "second-environment-token",
    }


def test_a_percent_encoded_url_password_is_known_both_ways() -> None:
    assert url_passwords("https://me:p%40ssword@host.example/") == ("p%40ssword", "p@ssword")


def test_from_environment_masks_a_variable_another_environment_blanks() -> None:
    redactor = Redactor.from_environment(
        {"ANTHROPIC_API_KEY": "user-api-key-123"}, {"ANTHROPIC_API_KEY": ""}
    )
    assert redactor.text("key user-api-key-123") == f"key {MASK}"


def test_text_masks_secrets_url_passwords_of_any_length_and_token_shapes() -> None:
    redactor = Redactor(("canary-pat-5d1e2f9a", "short"))
    text = (
        "used canary-pat-5d1e2f9a; proxy http://me:pw@proxy.example:3128; "
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789; short stays"
    )
    assert redactor.text(text) == (
        f"used {MASK}; proxy http://me:{MASK}@proxy.example:3128; {MASK}; short stays"
    )


def test_data_masks_strings_anywhere_and_leaves_other_values() -> None:
    redactor = Redactor(("canary-pat-5d1e2f9a",))
    data = {"summary": "x canary-pat-5d1e2f9a", "items": ["canary-pat-5d1e2f9a"], "turn": 3}
    assert redactor.data(data) == {"summary": f"x {MASK}", "items": [MASK], "turn": 3}


def test_data_masks_the_keys_of_a_mapping_too() -> None:
    # What a report counts its waits by: the words a service answered with.
    waited = {"credits out: canary-pat-5d1e2f9a": 60.0, 3: "x"}
    assert Redactor(("canary-pat-5d1e2f9a",)).data(waited) == {f"credits out: {MASK}": 60.0, 3: "x"}


@pytest.mark.parametrize("kept", [3, 7, 18])
def test_a_secret_cut_short_before_it_was_masked_shows_none_of_itself(kept: int) -> None:
    # Claude Code keeps a session's last prompt cut at 200 characters, and a cut may
    # fall inside a token: what is left of it is masked, up to the cut.
    secret = "CNRYboxProfileToken9f3e1d0c7b"
    redactor = Redactor((secret,))
    assert redactor.text(f"call the hook with {secret[:kept]}\u2026") == (
        f"call the hook with {MASK}\u2026"
    )


def test_an_ordinary_word_cut_short_stays() -> None:
    redactor = Redactor(("CNRYboxProfileToken9f3e1d0c7b",))
    # Two letters a secret begins with are no trace of it; a word no secret begins
    # with, cut, is the text as it was.
    assert redactor.text("CN\u2026 and Box\u2026") == "CN\u2026 and Box\u2026"
