"""The hint for a missing extra names a command that works for the way claudeloop was
installed: detected from fake prefixes laid out as uv, pipx, pip and an editable
checkout leave them, and the rule that picks the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claudeloop.adapters.installation import (
    Installation,
    current,
    detect,
    extra_hint,
    extra_requirements,
    install_command,
)

FLEET = ["dbos<4,>=3.4", "psycopg[binary]<4,>=3.2"]
WHEEL_URL = json.dumps({"url": "file:///home/me/dist/claudeloop-0.1.0-py3-none-any.whl"})
CHECKOUT_URL = json.dumps(
    {"url": "file:///home/me/src/claude%20loop", "dir_info": {"editable": True}}
)


def prefix(root: Path, *parts: str, marker: str | None = None) -> Path:
    place = root.joinpath(*parts)
    place.mkdir(parents=True)
    if marker is not None:
        (place / marker).write_text("")
    return place


def found(
    place: Path, direct_url: str | None = None, installer: str | None = "pip\n"
) -> Installation:
    return detect(place, str(place / "bin" / "python"), direct_url, installer, pip_on_path=False)


def hint(installation: Installation, extra: str = "fleet") -> str:
    return install_command(installation, extra, FLEET)


def test_a_uv_tool_is_installed_again_from_its_wheel_with_the_extra(tmp_path: Path) -> None:
    place = prefix(tmp_path, "share", "uv", "tools", "claudeloop", marker="uv-receipt.toml")
    installation = found(place, WHEEL_URL, "uv")
    assert installation.kind == "uv-tool"
    assert hint(installation) == (
        "uv tool install '/home/me/dist/claudeloop-0.1.0-py3-none-any.whl[fleet]'"
    )


def test_a_uv_tool_dir_of_its_own_is_known_by_the_receipt(tmp_path: Path) -> None:
    place = prefix(tmp_path, "my-tools", "claudeloop", marker="uv-receipt.toml")
    assert found(place).kind == "uv-tool"


def test_a_uv_tool_from_an_index_is_named_by_its_name(tmp_path: Path) -> None:
    place = prefix(tmp_path, ".local", "share", "uv", "tools", "claudeloop")
    installation = found(place, None, "uv")
    assert installation.kind == "uv-tool"
    assert hint(installation, "notify") == "uv tool install 'claudeloop[notify]'"


@pytest.mark.parametrize(
    "parts",
    [(".local", "pipx", "venvs", "claudeloop"), (".local", "share", "pipx", "venvs", "claudeloop")],
)
def test_pipx_injects_the_extras_requirements(tmp_path: Path, parts: tuple[str, ...]) -> None:
    installation = found(prefix(tmp_path, *parts), WHEEL_URL)
    assert installation.kind == "pipx"
    assert hint(installation) == "pipx inject claudeloop 'dbos<4,>=3.4' 'psycopg[binary]<4,>=3.2'"


def test_a_pipx_home_of_its_own_is_known_by_its_metadata(tmp_path: Path) -> None:
    place = prefix(tmp_path, "apps", "claudeloop", marker="pipx_metadata.json")
    assert found(place).kind == "pipx"


def test_an_editable_checkout_installs_the_extra_from_its_folder(tmp_path: Path) -> None:
    installation = found(prefix(tmp_path, "src", ".venv"), CHECKOUT_URL)
    assert installation.kind == "editable"
    assert installation.source == "/home/me/src/claude loop"
    python = tmp_path / "src" / ".venv" / "bin" / "python"
    assert hint(installation) == f"{python} -m pip install -e '/home/me/src/claude loop[fleet]'"


def test_a_venv_whose_pip_is_on_path_says_pip(tmp_path: Path) -> None:
    place = prefix(tmp_path, "venv")
    installation = detect(place, str(place / "bin" / "python"), WHEEL_URL, "pip", True)
    assert installation.kind == "environment"
    assert hint(installation) == "pip install 'dbos<4,>=3.4' 'psycopg[binary]<4,>=3.2'"


def test_a_venv_made_by_uv_is_reached_with_uv_pip(tmp_path: Path) -> None:
    place = prefix(tmp_path, "venv")
    installation = found(place, None, "uv\n")
    assert hint(installation, "notify").startswith(
        f"uv pip install --python {place / 'bin' / 'python'} 'dbos"
    )


@pytest.mark.parametrize(
    "direct_url",
    [None, "not json", "[1]", json.dumps({"url": 3}), json.dumps({"url": "https://x/c.whl"})],
)
def test_an_unreadable_or_remote_origin_is_no_local_source(
    tmp_path: Path, direct_url: str | None
) -> None:
    installation = found(prefix(tmp_path, "venv"), direct_url, None)
    assert (installation.kind, installation.source, installation.installer) == (
        "environment",
        None,
        "pip",
    )


def test_an_extra_without_declared_requirements_is_named(tmp_path: Path) -> None:
    installation = found(prefix(tmp_path, "venv"))
    assert install_command(installation, "fleet", []).endswith(
        " -m pip install 'claudeloop[fleet]'"
    )
    editable = Installation("editable", "python", None, "pip", True)
    assert install_command(editable, "fleet", []) == "pip install -e '.[fleet]'"


def test_this_checkout_is_editable_and_declares_both_extras() -> None:
    assert current().kind == "editable"
    assert [r.split("<")[0] for r in extra_requirements("fleet")] == ["dbos", "psycopg[binary]"]
    assert [r.split("<")[0] for r in extra_requirements("notify")] == ["apprise"]
    assert extra_requirements("nope") == []
    assert extra_hint("notify").endswith("[notify]'")
