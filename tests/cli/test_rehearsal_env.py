"""The rehearsal sees none of the user's own credentials, providers or models."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudeloop.adapters.claude_code.rehearsal_backends import rehearsal_env
from claudeloop.adapters.credentials import CREDENTIAL_VARIABLES, PROVIDER_VARIABLES


@pytest.mark.parametrize("name", [*PROVIDER_VARIABLES, "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL"])
def test_a_provider_or_key_of_the_users_setup_is_blanked(name: str, tmp_path: Path) -> None:
    assert rehearsal_env("http://127.0.0.1:9", tmp_path)[name] == ""


def test_the_rehearsal_signs_in_with_its_own_token_only(tmp_path: Path) -> None:
    env = rehearsal_env("http://127.0.0.1:9", tmp_path)
    given = {name: env[name] for name in CREDENTIAL_VARIABLES if env[name]}
    assert given == {"CLAUDE_CODE_OAUTH_TOKEN": "rehearsal-token"}
