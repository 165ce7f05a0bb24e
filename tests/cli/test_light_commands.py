"""Commands that only read, and every error a user can cause, answer without loading
what a run needs: the Claude Agent SDK (2 s of CPU to import, mostly mcp's models),
DBOS, starlette and the rehearsal API. What they cost is printed by
`bench/commands.py`; what keeps it small is this boundary, held here command by command.

One interpreter runs every command line in turn, as `claudeloop` would, and notes after
each which of those packages it brought in: a package is blamed on the first command
that imported it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from tests.commands import subcommands

FIXTURES = Path(__file__).parent.parent / "fixtures"

# What a read-only command or a refusal must never import.
HEAVY = (
    "claude_agent_sdk",
    "mcp",
    "dbos",
    "sqlalchemy",
    "starlette",
    "uvicorn",
    "claudeloop.rehearsal",
)

_RUNNER = """
import contextlib, io, json, sys
from claudeloop.cli.main import main

heavy = tuple(json.loads(sys.argv[1]))
blamed = {}
for line in json.loads(sys.argv[2]):
    before = {m for m in sys.modules if m.startswith(heavy)}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(line)
            code = 0
        except SystemExit as ended:
            code = ended.code
    new = sorted({m.split(".")[0] if not m.startswith("claudeloop") else m
                  for m in sys.modules if m.startswith(heavy)} - before)
    blamed[" ".join(line)] = {"exit": code, "imported": new, "said": out.getvalue()[-3000:]}
json.dump(blamed, sys.__stdout__)
"""


def _commands_run(
    cwd: Path, lines: list[list[str]], env: dict[str, str]
) -> dict[str, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(HEAVY), json.dumps(lines)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a finished run (checks, a review) and one left waiting."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "run_done_with_checks" / "project", project)
    waiting = FIXTURES / "run_waiting" / "project" / ".claudeloop" / "runs"
    for run in waiting.iterdir():
        shutil.copytree(run, project / ".claudeloop" / "runs" / run.name)
    (project / "PLAN.md").write_text("- [ ] Write step3.txt\n")
    return project


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {
        name: value for name, value in os.environ.items() if not name.startswith("CLAUDELOOP_")
    }
    environment.update(
        CLAUDELOOP_CONFIG_DIR=str(tmp_path / "user-config"),
        CLAUDELOOP_STATE_DIR=str(tmp_path / "state"),
        CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"),
        ANTHROPIC_API_KEY="light-commands-key-not-real",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
    )
    return environment


def _assert_light(blamed: dict[str, dict[str, Any]]) -> None:
    heavy = {line: found["imported"] for line, found in blamed.items() if found["imported"]}
    assert heavy == {}, f"these commands imported what only a run needs: {heavy}"


def test_every_read_only_command_answers_without_the_sdk(
    project: Path, env: dict[str, str]
) -> None:
    done = "20261202-142547-0c766e"
    lines = [
        ["--help"],
        ["--version"],
        ["status"],
        ["status", "--json"],
        ["status", done],
        ["runs"],
        ["runs", "--json"],
        ["runs", "--all"],
        ["runs", "--all", "--json"],
        ["report"],
        ["report", "--json"],
        ["report", "--all"],
        ["logs", done],
        ["logs", done, "--json"],
        ["export", done],
        ["config", "show"],
        ["config", "show", "--json"],
        ["diff", done],
        ["sessions"],
        ["sessions", "--json"],
    ]
    session = "0b6a3c1e-8a4f-4c55-9a57-3c0f6a1d2e01"
    # Claude Code's folder of the project's sessions: its path, each other character a hyphen.
    name = re.sub(r"[^a-zA-Z0-9]", "-", os.path.realpath(project))
    kept = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / name
    kept.mkdir(parents=True)
    said = {"type": "user", "message": {"role": "user", "content": "Write step3.txt"}}
    (kept / f"{session}.jsonl").write_text(json.dumps(said) + "\n")
    blamed = _commands_run(project, lines, env)
    _assert_light(blamed)
    # They did their work: the runs were read, not refused.
    assert done in blamed["runs"]["said"]
    assert session in blamed["sessions"]["said"]
    assert blamed["status --json"]["exit"] == 0
    assert blamed["report --json"]["exit"] == 0


def test_every_command_s_help_answers_without_the_sdk(tmp_path: Path, env: dict[str, str]) -> None:
    from claudeloop.cli.main import cli

    def helps(command: click.Command, path: list[str]) -> list[list[str]]:
        found = [[*path, "--help"]]
        if isinstance(command, click.Group):
            for name, sub in subcommands(command).items():
                found += helps(sub, [*path, name])
        return found

    lines = helps(cli, [])
    assert ["doctor", "--help"] in lines
    assert ["dashboard", "--help"] in lines
    blamed = _commands_run(tmp_path, lines, env)
    _assert_light(blamed)
    assert all(found["exit"] == 0 for found in blamed.values())


def test_every_refusal_of_bad_input_comes_before_the_sdk(
    project: Path, env: dict[str, str]
) -> None:
    fresh = project.parent / "fresh"
    fresh.mkdir()
    bad_config = project.parent / "bad-config"
    bad_config.mkdir()
    (bad_config / "claudeloop.toml").write_text('max_turns = "5"\n')
    (bad_config / "PLAN.md").write_text("- [ ] a\n")
    lines = [
        # init's PLAN.md, still its template: refused, since a night on "First step" is lost.
        ["init", "--cwd", str(fresh)],
        ["run", str(fresh / "PLAN.md"), "--cwd", str(fresh)],
        ["run", "NOPE.md"],
        ["run"],
        ["run", "PLAN.md", "--prompt", "x"],
        ["run", "--prompt", "x", "--max-dollars", "x"],
        ["run", "--prompt", "x", "--max-wait", "5x"],
        ["run", "--prompt", "x", "--profile", "nosuch"],
        ["run", "--prompt", "x", "--cwd", str(project / "gone")],
        ["run", "--prompt", "x", "--notify", "nosuchscheme://x"],
        ["run", "--prompt", "x", "--run-id", "../escape"],
        ["run", "PLAN.md", "--cwd", str(bad_config)],
        ["resume", "--session-id", "0000-nope"],
        ["resume", "--run-id", "20990101-000000-nope00"],
        ["resume", "--cwd", str(bad_config)],
        ["status", "20990101-000000-nope00"],
        ["logs", "nope"],
        ["stop"],
        ["probe-now", "20261202-142547-0c766e"],
        ["rewind", "20261202-142547-0c766e", "--to-turn", "1"],
        ["nosuchcommand"],
        ["config", "show", "--cwd", str(bad_config)],
    ]
    blamed = _commands_run(project, lines, env)
    _assert_light(blamed)
    refused = {line: found["exit"] for line, found in blamed.items() if found["exit"] != 2}
    # Each was refused as a usage error (exit 2), except what is said as nothing to do
    # (a probe now of a run that has ended does nothing, and says so).
    allowed = {"stop", f"init --cwd {fresh}", "probe-now 20261202-142547-0c766e"}
    assert set(refused) <= allowed, refused
    assert "still the template" in blamed[f"run {fresh / 'PLAN.md'} --cwd {fresh}"]["said"]


def test_each_topic_adds_the_commands_the_table_says_and_each_is_found_by_name() -> None:
    """`claudeloop NAME` imports NAME's topic from main.TOPICS alone: a command missing
    from the table could not be typed, one listed under the wrong topic not found."""
    from claudeloop.cli.main import TOPICS, cli, register_topic
    from claudeloop.cli.options import HelpGroup

    for topic, names in TOPICS.items():
        group = HelpGroup()
        register_topic(topic, group)
        assert sorted(group.commands) == sorted(names), topic
    assert sorted(subcommands(cli)) == sorted(name for names in TOPICS.values() for name in names)


def test_a_command_loads_its_own_topic_and_no_other() -> None:
    """`claudeloop status` reads a run without describing `run`'s forty options: the
    settings, their records and the domain's loop stay unloaded until needed."""
    loaded = _modules_loaded(["status", "--help"])
    assert "claudeloop.cli.inspect_commands" in loaded
    for other in ("run_commands", "setup_commands", "fleet", "steer_commands", "export"):
        assert f"claudeloop.cli.{other}" not in loaded, other


_LOADED = """
import json, sys
from claudeloop.cli.main import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _modules_loaded(
    line: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> set[str]:
    """The modules `claudeloop LINE` had loaded when it ended, in an interpreter of its own."""
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, json.dumps(line)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    ("line", "needed", "unloaded"),
    [
        # The settings as the files hold them: no run's record, no loop, no port.
        (
            ["config", "show"],
            "claudeloop.adapters.config.loading",
            ("claudeloop.application.records", "claudeloop.domain.loop"),
        ),
        # A profile that is not defined is refused before a run's events or ports load.
        (
            ["run", "--prompt", "x", "--profile", "nosuch"],
            "claudeloop.adapters.config.loading",
            ("claudeloop.application.ports", "claudeloop.application.events"),
        ),
        # A run's state, without the screen a run draws (rich's live display).
        (["status"], "claudeloop.cli.inspect", ("claudeloop.cli.display", "rich.live")),
    ],
    ids=["config show", "run --profile nosuch", "status"],
)
def test_the_commands_nearest_their_bar_leave_the_run_s_machinery_unloaded(
    project: Path,
    env: dict[str, str],
    line: list[str],
    needed: str,
    unloaded: tuple[str, ...],
) -> None:
    """The costliest of these commands (0.3 s of CPU, the bar 0.35 s: bench/commands.py)
    load what they read; what keeps them under the bar is that nothing a run needs
    loads beside it."""
    loaded = _modules_loaded(line, cwd=project, env=env)
    assert needed in loaded  # it did its work
    assert loaded.isdisjoint(unloaded), sorted(loaded & set(unloaded))
