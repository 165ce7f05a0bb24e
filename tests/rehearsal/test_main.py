"""`python -m claudeloop.rehearsal`: the help documents the format, errors are one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from claudeloop.rehearsal import BUILTIN_SCENARIOS, GATE_KINDS, load_scenario
from claudeloop.rehearsal.__main__ import main


def test_help_documents_the_scenario_format_with_a_complete_example(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for words in ("--scenario NAME|FILE", "--port", "[[turns.steps]]", "[[gates]]", "until_lift"):
        assert words in text
    assert all(kind in text for kind in GATE_KINDS)
    assert all(name in text for name in BUILTIN_SCENARIOS)
    # The example in the help is itself a valid scenario.
    example = text.split("example (window.toml):", 1)[1].split("endpoints:", 1)[0]
    path = tmp_path / "window.toml"
    path.write_text("\n".join(line.removeprefix("  ") for line in example.splitlines()))
    scenario = load_scenario(path)
    assert [gate.kind for gate in scenario.gates] == ["window"]
    assert len(scenario.turns) == 2


def test_an_invalid_scenario_file_is_one_line_on_stderr_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[gates]]\nkind = "monsoon"\n')
    assert main(["--scenario", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith(f"error: {path}: gates[0].kind: unknown kind 'monsoon'")


def test_an_unknown_name_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--scenario", "sunny"]) == 2
    assert "neither a built-in scenario" in capsys.readouterr().err


# A fresh interpreter importing the rehearsal's server: seconds of a real process, run
# by `make test` and CI.
@pytest.mark.slow
def test_port_zero_prints_where_it_listens_and_serves_there() -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "claudeloop.rehearsal", "--scenario", "window", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        base_url = line.removeprefix("listening on ")
        state = httpx.get(f"{base_url}/_rehearsal/state", timeout=5).json()
        assert state["scenario"] == "window"
        assert state["requests"] == []
    finally:
        server.terminate()
        server.wait(timeout=5)
