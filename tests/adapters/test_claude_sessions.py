"""Claude Code's sessions of a directory, read from its session files, are what the SDK's
`list_sessions` lists: each case asks both, the SDK being the oracle, and says what
claudeloop shows (the session's id, its summary, when it was last written, newest first).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import list_sessions

from claudeloop.adapters.claude_sessions import list_claude_sessions

START = datetime(2026, 12, 7, 2, 27, tzinfo=UTC)
# A path whose folder's name is cut at 200 characters and given the SDK's hash.
LONG_PATH = "/srv/" + "/".join(["a-rather-long-name-for-a-folder-of-a-project"] * 5)
LONG_NAME = re.sub(r"[^a-zA-Z0-9]", "-", LONG_PATH)[:200]
PLAIN = "0b6a3c1e-8a4f-4c55-9a57-3c0f6a1d2e01"
SECOND = "1c7b4d2f-9b5a-4d66-8b68-4d1a7b2e3f02"
THIRD = "2d8c5e3a-ac6b-4e77-9c79-5e2b8c3f4a03"
FOURTH = "3e9d6f4b-bd7c-4f88-8d8a-6f3c9d4a5b04"
FIFTH = "4fae7a5c-ce8d-4a99-9e9b-7a4dae5b6c05"

Listed = list[tuple[str, str, datetime]]


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Claude Code's config directory, for claudeloop and the SDK alike."""
    where = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(where))
    return where


@pytest.fixture
def project(tmp_path: Path) -> Path:
    where = tmp_path / "project"
    where.mkdir()
    return where


def folder(config: Path, directory: Path | str) -> Path:
    """The folder Claude Code keeps a (short) directory's sessions in."""
    name = re.sub(r"[^a-zA-Z0-9]", "-", os.path.realpath(directory))
    return config / "projects" / name


def listed(cwd: Path | str, limit: int = 20) -> Listed:
    """What claudeloop lists, once the test has checked it is what the SDK lists."""
    ours = [
        (session.session_id, session.summary, session.last_modified)
        for session in list_claude_sessions(Path(cwd), limit)
    ]
    oracle = [
        (info.session_id, info.summary.strip(), at(info.last_modified))
        for info in list_sessions(directory=str(cwd), limit=limit)
    ]
    assert ours == oracle
    return ours


def at(milliseconds: int) -> datetime:
    return datetime.fromtimestamp(milliseconds / 1000, tz=UTC)


def minute(n: int) -> datetime:
    """The instant a session written at minute `n` shows: whole milliseconds."""
    return START + timedelta(minutes=n, milliseconds=456)


def session(where: Path, name: str, *entries: dict[str, Any], written: int = 0) -> Path:
    """A session file as Claude Code writes it (compact JSON, one entry a line), last
    written at minute `written` and 456.7 ms."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}.jsonl"
    lines = [json.dumps(entry, separators=(",", ":"), ensure_ascii=False) for entry in entries]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    ns = int((START + timedelta(minutes=written)).timestamp()) * 10**9 + 456_700_000
    os.utime(path, ns=(ns, ns))
    return path


def prompt(content: str | list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/srv/project",
        "version": "2.1.337",
        "type": "user",
        "message": {"role": "user", "content": content},
        "timestamp": "2026-12-07T02:27:00.000Z",
        **fields,
    }


def answer(text: str) -> dict[str, Any]:
    return {
        "isSidechain": False,
        "type": "assistant",
        "message": {
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}],
        },
        "requestId": "req_1",
        "timestamp": "2026-12-07T02:27:01.000Z",
    }


def verdict(summary: str) -> dict[str, Any]:
    """claudeloop's verdict: a call of the StructuredOutput tool, which has a summary."""
    call = {"verdict": "continue", "summary": summary, "remaining_work": []}
    message = {"role": "assistant", "content": [{"type": "tool_use", "input": call}]}
    return {"isSidechain": False, "type": "assistant", "message": message}


def bookkeeping() -> dict[str, Any]:
    return {"type": "queue-operation", "operation": "enqueue", "sessionId": PLAIN}


def test_a_plain_session_is_summed_up_by_its_prompt(config: Path, project: Path) -> None:
    session(folder(config, project), PLAIN, bookkeeping(), prompt("Write café.txt"), answer("ok"))
    assert listed(project) == [(PLAIN, "Write café.txt", minute(0))]


def test_a_title_outranks_the_prompts_and_the_user_s_outranks_claude_s(
    config: Path, project: Path
) -> None:
    where = folder(config, project)
    session(
        where,
        PLAIN,
        prompt("Fix the login"),
        {"type": "ai-title", "aiTitle": "Fixing the login", "sessionId": PLAIN},
        {"type": "last-prompt", "lastPrompt": "And the logout", "sessionId": PLAIN},
        written=2,
    )
    session(
        where,
        SECOND,
        prompt("Fix the login"),
        {"type": "custom-title", "customTitle": "first name", "sessionId": SECOND},
        {"type": "custom-title", "customTitle": 'The "login" fix', "sessionId": SECOND},
        {"type": "ai-title", "aiTitle": "Fixing the login", "sessionId": SECOND},
        written=1,
    )
    assert listed(project) == [
        (PLAIN, "Fixing the login", minute(2)),
        (SECOND, 'The "login" fix', minute(1)),  # the last the user set
    ]


def test_the_last_prompt_outranks_a_summary_which_outranks_the_first_prompt(
    config: Path, project: Path
) -> None:
    where = folder(config, project)
    session(
        where,
        PLAIN,
        prompt("Carry out the plan"),
        {"type": "last-prompt", "lastPrompt": "Carry out the plan", "sessionId": PLAIN},
        {"type": "summary", "summary": "Plan carried out", "leafUuid": "u1"},
        prompt("Continue where you left off.\nTwo items left."),
        {"type": "last-prompt", "lastPrompt": "Continue where you left off.", "sessionId": PLAIN},
        written=1,
    )
    session(
        where,
        SECOND,
        {"type": "summary", "summary": "Login fixed", "leafUuid": "u1"},
        prompt("Fix the login"),
        written=2,
    )
    assert listed(project) == [
        (SECOND, "Login fixed", minute(2)),
        (PLAIN, "Continue where you left off.", minute(1)),
    ]


def test_what_is_no_session_of_the_user_s_is_left_out(config: Path, project: Path) -> None:
    where = folder(config, project)
    session(where, PLAIN, prompt("Write step1.txt"), answer("Done."))
    # A subagent's transcript: its first line says it is a sidechain.
    session(where, SECOND, prompt("Search the code", isSidechain=True), answer("Found."))
    # Only the CLI's bookkeeping, and words it says as the user.
    session(where, THIRD, bookkeeping(), prompt("<local-command-caveat>", isMeta=True))
    session(where, FOURTH)  # empty
    session(where, "agent-a1b2c3", prompt("Not a session's file"))
    (where / f"{FIFTH}.json").write_text(json.dumps(prompt("Not a transcript")))
    assert listed(project) == [(PLAIN, "Write step1.txt", minute(0))]


def test_a_long_first_prompt_is_cut_at_200_characters_on_one_line(
    config: Path, project: Path
) -> None:
    text = "Refactor\nthe " + "x" * 185 + "  and then " + "y" * 60
    session(folder(config, project), PLAIN, prompt(text))
    ((_, summary, _),) = listed(project)
    assert summary == "Refactor the " + "x" * 185 + "\u2026"  # cut, its spaces dropped


def test_a_slash_command_is_named_only_when_nothing_was_typed(config: Path, project: Path) -> None:
    where = folder(config, project)
    command = "<command-name>/review</command-name>\n<command-message>review</command-message>"
    output = "<local-command-stdout>Reviewed.</local-command-stdout>"
    session(where, PLAIN, prompt(command), prompt(output), written=1)
    tool_result = [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]
    session(
        where,
        SECOND,
        prompt(command),
        prompt(tool_result),
        prompt("[Request interrupted by user]"),
        prompt("Summed up.", isCompactSummary=True),
        prompt([{"type": "image"}, {"type": "text", "text": "Now fix what it found"}]),
        written=2,
    )
    assert listed(project) == [
        (SECOND, "Now fix what it found", minute(2)),
        (PLAIN, "/review", minute(1)),
    ]


def test_a_session_longer_than_what_is_read_of_it(config: Path, project: Path) -> None:
    """Only its first and last 64 KiB are read: a title set at its start is still found,
    and a last prompt long before its end is not, so the last summary at any depth sums
    it up, claudeloop's verdict's (the SDK's choice, kept)."""
    where = folder(config, project)
    answers = [answer("z" * 1000) for _ in range(70)]
    title = {"type": "custom-title", "customTitle": "Early title", "sessionId": PLAIN}
    session(where, PLAIN, prompt("Go"), title, *answers, written=1)
    last = {"type": "last-prompt", "lastPrompt": "Carry out the plan", "sessionId": SECOND}
    session(where, SECOND, prompt("Go"), last, *answers, verdict("Wrote step1.txt."), written=2)
    assert listed(project) == [
        (SECOND, "Wrote step1.txt.", minute(2)),
        (PLAIN, "Early title", minute(1)),
    ]


def test_a_long_path_s_folder_has_the_sdk_s_hash(config: Path) -> None:
    session(config / "projects" / f"{LONG_NAME}-bzcg2z", PLAIN, prompt("Long way"))
    assert listed(LONG_PATH) == [(PLAIN, "Long way", minute(0))]


def test_a_long_path_s_folder_of_another_hash_is_found_by_its_name_up_to_it(
    config: Path,
) -> None:
    """The CLI, built with Bun, hashes the path otherwise than the SDK."""
    session(config / "projects" / f"{LONG_NAME}-1q2w3e4r", PLAIN, prompt("Long way"))
    session(config / "projects" / f"{LONG_NAME[:-1]}x-1q2w3e4r", SECOND, prompt("Elsewhere"))
    assert listed(LONG_PATH) == [(PLAIN, "Long way", minute(0))]


def test_a_short_path_s_folder_is_found_by_its_whole_name_only(config: Path, project: Path) -> None:
    session(folder(config, f"{project}-old"), PLAIN, prompt("Another project"))
    assert listed(project) == []


def test_no_sessions_kept_yet_lists_none(config: Path, project: Path) -> None:
    assert not config.exists()
    assert listed(project) == []


def test_the_config_directory_may_be_given_in_an_environment(tmp_path: Path, project: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    session(folder(elsewhere, project), PLAIN, prompt("Write step1.txt"))
    found = list_claude_sessions(project, 20, {"CLAUDE_CONFIG_DIR": str(elsewhere)})
    assert [(s.session_id, s.summary) for s in found] == [(PLAIN, "Write step1.txt")]


def test_limit_keeps_the_newest(config: Path, project: Path) -> None:
    where = folder(config, project)
    for written, name in enumerate([PLAIN, SECOND, THIRD, FOURTH, FIFTH]):
        session(where, name, prompt(f"Prompt {written}"), written=[3, 0, 4, 1, 2][written])
    assert listed(project, limit=2) == [
        (THIRD, "Prompt 2", minute(4)),
        (PLAIN, "Prompt 0", minute(3)),
    ]
    assert [name for name, _, _ in listed(project, limit=20)] == [
        THIRD,
        PLAIN,
        FIFTH,
        FOURTH,
        SECOND,
    ]


def git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_sessions_of_every_worktree_of_the_repository_are_listed(
    config: Path, tmp_path: Path
) -> None:
    repository, second, other = tmp_path / "repo", tmp_path / "repo-second", tmp_path / "repo-x"
    repository.mkdir()
    (repository / "sub").mkdir()
    git(repository, "init", "-q")
    git(repository, "commit", "-q", "--allow-empty", "-m", "start")
    git(repository, "worktree", "add", "-q", str(second))
    session(folder(config, repository), PLAIN, prompt("In the main tree"), written=1)
    session(folder(config, repository / "sub"), SECOND, prompt("In a folder of it"), written=2)
    session(folder(config, second), THIRD, prompt("In the second tree"), written=3)
    # One session in two worktrees' folders: once, as its newer file says.
    session(folder(config, repository), FOURTH, prompt("Moved, before"), written=4)
    session(folder(config, second), FOURTH, prompt("Moved, after"), written=5)
    session(folder(config, other), FIFTH, prompt("Not a worktree"), written=6)
    trees = [
        (FOURTH, "Moved, after", minute(5)),
        (THIRD, "In the second tree", minute(3)),
        (PLAIN, "In the main tree", minute(1)),
    ]
    assert listed(repository) == trees
    assert listed(second) == trees
    assert listed(repository / "sub") == [
        trees[0],
        trees[1],
        (SECOND, "In a folder of it", minute(2)),
        trees[2],
    ]
