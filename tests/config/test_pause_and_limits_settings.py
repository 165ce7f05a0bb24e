"""`pause_at` and `limits` from every source, with one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudeloop.adapters.config.loading import Configuration, load_configuration
from claudeloop.application.errors import ConfigError
from claudeloop.application.settings import LIMITS, PAUSE_AT


def load(tmp_path: Path, *, text: str | None = None, env: dict[str, str] | None = None,
         flags: dict[str, object] | None = None) -> Configuration:  # fmt: skip
    if text is not None:
        (tmp_path / "claudeloop.toml").write_text(text)
    environ = {"CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user"), **(env or {})}
    return load_configuration(cwd=tmp_path, flags=flags, environ=environ)


def test_pause_at_from_a_file_is_read_in_the_domain_s_words(tmp_path: Path) -> None:
    config = load(tmp_path, text='pause_at = "5h=90%, 7d=95%"\n')
    assert config.get(PAUSE_AT) == "five_hour=90%,seven_day=95%"


def test_limits_from_a_table_a_variable_and_a_flag(tmp_path: Path) -> None:
    config = load(tmp_path, text='[limits]\nfive_hour = "switch-profile local"\n')
    assert config.get(LIMITS) == {"five_hour": "switch-profile local"}
    from_env = load(tmp_path, env={"CLAUDELOOP_LIMITS": "credits=wind-down,local=wait"})
    assert from_env.get(LIMITS) == {"credits": "wind-down", "local": "wait"}
    from_flag = load(tmp_path, flags={"limits": {"seven_day": "wind-down"}})
    assert from_flag.get(LIMITS) == {"seven_day": "wind-down"}


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('pause_at = "5h=ninety"\n', ["pause_at", "5h=90%,7d=95%"]),
        ('pause_at = "10h=50%"\n', ["pause_at", "5h=90%,7d=95%"]),
        ('[limits]\nten_hour = "wait"\n', ["limits", "ten_hour"]),
        ('[limits]\nfive_hour = "sleep"\n', ["limits.five_hour", "switch-profile NAME"]),
    ],
)
def test_a_bad_value_is_one_line_naming_the_file_and_key(
    tmp_path: Path, text: str, needles: list[str]
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text=text)
    message = str(caught.value)
    assert "\n" not in message
    assert "claudeloop.toml" in message
    for needle in needles:
        assert needle in message


def test_every_limit_kind_of_the_domain_is_a_key_of_limits(tmp_path: Path) -> None:
    from claudeloop.application.settings import LIMITS
    from claudeloop.domain.limits import LIMIT_KINDS

    table = "".join(f'{kind} = "wind-down"\n' for kind in LIMIT_KINDS)
    config = load(tmp_path, text=f"[limits]\n{table}overage_in_use = \"go-on\"\n".replace(
        'overage_in_use = "wind-down"\n', ""
    ))  # fmt: skip
    limits = config.get(LIMITS)
    assert limits is not None
    assert set(limits) == set(LIMIT_KINDS)
    assert limits["overage_in_use"] == "go-on"
    assert limits["seven_day_sonnet"] == "wind-down"
