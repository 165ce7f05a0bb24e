"""`claudeloop report` of a project's runs: lines, JSON, one self-contained HTML file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run

Invoke = Callable[..., Invocation]
RUN = "20261130-090000-aaaaaa"


def test_the_report_as_lines(claudeloop: Invoke, tmp_path: Path) -> None:
    waiting_run(tmp_path)
    result = claudeloop("report", "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("claudeloop report since ")
    assert "1 run, turns 3 sent, 2 answered, 1 refused, 0 probes, $0.42" in lines[0]
    # The run's line says what it is for, then its turns as every view says them.
    at = lines.index(next(line for line in lines if line.startswith(f"{RUN}  waiting: ")))
    assert lines[at + 1].startswith("  turns 3 sent, 2 answered, 1 refused, 0 probes, $0.42")
    # A wait begun a moment ago: nothing yet to say it was waited on.
    assert ", waited 0s" in lines[at + 1]
    assert "  left (the plan's open items): b" in result.out


def test_the_report_as_json_and_html(claudeloop: Invoke, tmp_path: Path) -> None:
    waiting_run(tmp_path)
    page = tmp_path / "night.html"
    result = claudeloop("report", "--cwd", tmp_path, "--since", "7d", "--json", "--html", page)
    assert result.exit_code == 0, result.err
    data = json.loads(result.out)
    assert [run["run_id"] for run in data["runs"]] == [RUN]
    assert (data["totals"]["sent"], data["totals"]["answered"]) == (3, 2)
    html = page.read_text()
    assert html.startswith("<!doctype html>")
    assert html.count("<svg") == 2
    # Self-contained: nothing is fetched.
    assert "src=" not in html
    assert "href=" not in html


def test_an_html_file_that_cannot_be_written_is_one_line(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    waiting_run(tmp_path)
    result = claudeloop("report", "--cwd", tmp_path, "--html", tmp_path / "no" / "x.html")
    assert result.exit_code == 2
    assert "--html" in result.err
    assert "cannot be written" in result.err
    assert "Traceback" not in result.err


def test_a_bad_since_is_refused(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("report", "--cwd", tmp_path, "--since", "yesterday")
    assert result.exit_code == 2
    assert "is not a duration" in result.err


def test_the_report_masks_a_secret_of_the_directorys_profile_in_every_form(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    # A run an older claudeloop saved in clear: the secret is no variable of this
    # process, only of the profile the directory's runs use (as the dashboard masks).
    from dataclasses import replace

    canary = "canary-extra-pass-31"
    (tmp_path / "claudeloop.toml").write_text(
        f'profile = "night"\n[profiles.night]\nextra_env = {{ DEPLOY_PASS = "{canary}" }}\n'
    )
    directory = waiting_run(tmp_path)
    record = directory.load()
    # No plan: what is left is the model's remaining work.
    remaining = replace(record.state, remaining_work=(f"use {canary}",))
    directory.save(replace(record, plan=None, state=remaining))
    assert canary in directory.state_path.read_text()
    page = tmp_path / "night.html"
    shown = claudeloop("report", "--cwd", tmp_path)
    data = claudeloop("report", "--cwd", tmp_path, "--json", "--html", page)
    assert shown.exit_code == data.exit_code == 0, shown.err + data.err
    assert "  left (the remaining work the model listed last turn): use [redacted]" in shown.out
    (run,) = json.loads(data.out)["runs"]
    assert run["left"] == ["use [redacted]"]
    for text in (shown.out, shown.err, data.out, data.err, page.read_text()):
        assert canary not in text
