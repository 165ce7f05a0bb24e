"""A run in a worktree of its own (issue 25): a commit per answered turn on
claudeloop/RUN_ID, the user's checkout untouched, and exact across kill -9, with the
real CLI and the rehearsal API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, in_flight_kept, wait_for, write_plan
from tests.e2e.test_run_directory import kill_hard

pytestmark = pytest.mark.e2e


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)
    return done.stdout.decode()


def repository(project: Path) -> Path:
    """The project as a repository on main with its plan committed."""
    plan = write_plan(project)
    (project / "README.md").write_text("a project\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", ".")
    git(project, "commit", "-qm", "start")
    return plan


def checkout(project: Path) -> dict[str, bytes]:
    """Every file of the checkout but git's own and the run directories, byte for byte."""
    return {
        str(path.relative_to(project)): path.read_bytes()
        for path in sorted(project.rglob("*"))
        if path.is_file() and not {".git", ".claudeloop"} & set(path.relative_to(project).parts)
    }


def commits(project: Path, branch: str) -> list[tuple[str, str, str]]:
    """(subject, run, turn) of each commit of `branch` not on main, oldest first."""
    log = git(
        project,
        "log",
        "--reverse",
        "--format=%s%x1f%(trailers:key=Claudeloop-Run,valueonly,separator=)"
        "%x1f%(trailers:key=Claudeloop-Turn,valueonly,separator=)%x1e",
        f"main..{branch}",
    )
    rows = [entry.strip("\n").split("\x1f") for entry in log.split("\x1e") if entry.strip()]
    return [(subject, run.strip(), turn.strip()) for subject, run, turn in rows]


def resumed_to_a_commit_per_answered_turn(rehearsal: Rehearsal, run_id: str) -> list[int]:
    """Resume the killed run to its end: every answered turn that changed files is one
    commit, none twice, the record says the last, nothing is left uncommitted. The
    answered turns, in order."""
    finished = rehearsal.claudeloop("resume", "--run-id", run_id)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    answered = [
        e["turn"]
        for e in finished.events()
        if e["type"] == "turn.finished" and e["verdict"] != "refused"
    ]
    made = commits(rehearsal.project, f"claudeloop/{run_id}")
    assert [int(turn) for _, _, turn in made] == answered, (made, finished.events())
    state = json.loads((finished.run_directory() / "state.json").read_text())
    assert state["checkpointed_turn"] == answered[-1]
    assert git(Path(state["spec"]["worktree"]), "status", "--porcelain") == ""
    return answered


@pytest.mark.scenario("stall_at_2")
def test_kill_9_during_a_turn_then_resume_commits_each_answered_turn_once(
    rehearsal: Rehearsal,
) -> None:
    project = rehearsal.project
    plan = repository(project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS, "--worktree", "--run-id", "wt2")
    wait_for(lambda: any(r["gate"] == "stall" for r in rehearsal.requests()), "turn 2 in flight")
    wait_for(lambda: in_flight_kept(rehearsal) == 1, "the transcript to keep the stalled send")
    kill_hard(process)
    assert [turn for _, _, turn in commits(project, "claudeloop/wt2")] == ["1"]
    answered = resumed_to_a_commit_per_answered_turn(rehearsal, "wt2")
    assert answered == sorted(set(answered))  # the killed turn sent again under its number


def git_that_holds_the_second_ref_move(here: Path) -> Path:
    """A `git` first on PATH that, at the second `update-ref` (turn 2's commit written,
    the branch not yet moved to it), says so in `held` and sleeps: a kill -9 there is a
    kill in the middle of a commit."""
    real = shutil.which("git")
    assert real is not None
    wrapper = here / "bin"
    wrapper.mkdir()
    script = wrapper / "git"
    script.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" update-ref "*)\n'
        f'  n=$(cat "{here}/count" 2>/dev/null || echo 0); n=$((n + 1))\n'
        f'  echo "$n" > "{here}/count"\n'
        f'  if [ "$n" = 2 ]; then touch "{here}/held"; sleep 300; fi;;\n'
        "esac\n"
        f'exec "{real}" "$@"\n'
    )
    script.chmod(0o755)
    return wrapper


@pytest.mark.scenario("three_steps")
def test_kill_9_in_the_middle_of_a_commit_then_resume_commits_each_answered_turn_once(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    project = rehearsal.project
    plan = repository(project)
    wrapper = git_that_holds_the_second_ref_move(tmp_path)
    plain_path = rehearsal.env["PATH"]
    rehearsal.env["PATH"] = f"{wrapper}{os.pathsep}{plain_path}"
    try:
        process = rehearsal.start("run", str(plan), *FAST_WAITS, "--worktree", "--run-id", "wt3")
        wait_for((tmp_path / "held").exists, "turn 2's commit to be half made", 120)
        kill_hard(process)
    finally:
        rehearsal.env["PATH"] = plain_path
    # Turn 2's commit object may exist; the branch never moved to it.
    assert [turn for _, _, turn in commits(project, "claudeloop/wt3")] == ["1"]
    # Turn 2 was answered before the kill: never sent again.
    assert resumed_to_a_commit_per_answered_turn(rehearsal, "wt3") == [1, 2, 3]


@pytest.mark.scenario("three_steps")
def test_three_runs_in_parallel_then_one_merges_cleanly_and_one_lists_its_conflict(
    rehearsal: Rehearsal,
) -> None:
    """Three worktree runs at once from a dirty checkout: each leaves a commit per turn
    on its branch and the checkout as it was; one merges cleanly, one conflicts and is
    resolved by a run of its own. Before the repository exists, --worktree is refused."""
    project = rehearsal.project
    outside = rehearsal.run(str(write_plan(project)), *FAST_WAITS, "--worktree")
    assert outside.exit_code == 2
    (line,) = outside.stderr.strip().splitlines()
    assert "not in a git repository" in line
    assert not rehearsal.requests()
    runs = project / ".claudeloop" / "runs"
    assert not runs.exists() or not list(runs.iterdir())

    plan = repository(project)
    (project / "README.md").write_text("edited, never committed\n")  # a dirty checkout
    before, head = checkout(project), git(project, "rev-parse", "HEAD")
    started = [
        rehearsal.start(
            "run",
            str(plan),
            *FAST_WAITS,
            "--worktree",
            "--run-id",
            f"p{n}",
            "--verify",
            "test -f step3.txt",
        )
        for n in (1, 2, 3)
    ]
    for process in started:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert json.loads(out)["outcome"] == "done"
        assert "uncommitted changes stay where they are" in err
    for n in (1, 2, 3):
        assert commits(project, f"claudeloop/p{n}") == [
            ("Wrote step1.txt.", f"p{n}", "1"),
            ("Wrote step2.txt.", f"p{n}", "2"),
            ("Wrote step3.txt.", f"p{n}", "3"),
        ]
    # Each commit holds its turn's file, and the run's files are in none.
    for n in (1, 2, 3):
        shown = git(project, "show", "--name-only", "--format=", f"claudeloop/p1~{3 - n}")
        assert shown.split() == [f"step{n}.txt"]
    # The checkout: the same files, the same bytes, the same branch and HEAD.
    assert checkout(project) == before
    assert git(project, "rev-parse", "HEAD") == head
    assert git(project, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert not (project / "step1.txt").exists()
    p1_run = runs / "p1"
    events = [json.loads(line) for line in (p1_run / "events.jsonl").read_text().splitlines()]
    committed = [e for e in events if e["type"] == "turn.committed"]
    assert [(e["turn"], e["branch"], e["files_changed"]) for e in committed] == [
        (1, "claudeloop/p1", 1),
        (2, "claudeloop/p1", 1),
        (3, "claudeloop/p1", 1),
    ]
    state = json.loads((p1_run / "state.json").read_text())
    worktree = Path(state["spec"]["worktree"])
    assert (worktree / "step3.txt").read_text() == "step 3\n"
    assert state["spec"]["base_branch"] == "main"
    assert state["checkpointed_turn"] == 3

    # The person's own edit is theirs to keep or drop: dropped here, before the merges.
    git(project, "checkout", "--", "README.md")
    merged = rehearsal.claudeloop("merge", "p1")
    assert merged.exit_code == 0, merged.stderr
    assert json.loads(merged.stdout)["conflicts"] == []
    assert (project / "step3.txt").read_text() == "step 3\n"
    # Main moves on where run p2 wrote too: its merge conflicts, and nothing is merged.
    (project / "step1.txt").write_text("step 1, as main has it now\n")
    git(project, "commit", "-qam", "main's own step 1")
    head = git(project, "rev-parse", "HEAD")
    conflicted = rehearsal.claudeloop("merge", "p2")
    assert conflicted.exit_code == 1, conflicted.stderr
    assert json.loads(conflicted.stdout) == {
        "run_id": "p2",
        "merged": None,
        "conflicts": ["step1.txt"],
    }
    assert git(project, "rev-parse", "HEAD") == head
    assert git(project, "status", "--porcelain", "--untracked-files=no") == ""
    # --resolve: a run resolves the conflict in a worktree of its own, verified by p2's
    # own checks; its branch then merges cleanly, and carries p2's commits.
    resolved = rehearsal.claudeloop("merge", "p2", "--resolve")
    assert resolved.exit_code == 0, resolved.stderr
    assert resolved.result["outcome"] == "done"
    assert resolved.result["run_id"] == "p2-resolve"
    resolver = runs / "p2-resolve" / "events.jsonl"
    events = [json.loads(line) for line in resolver.read_text().splitlines()]
    checks = [e for e in events if e["type"] == "verify.finished"]
    assert checks
    assert checks[-1]["command"] == "test -f step3.txt"
    assert checks[-1]["passed"]
    made = commits(project, "claudeloop/p2-resolve")
    first = git(
        project, "rev-list", "--first-parent", "--reverse", "main..claudeloop/p2-resolve"
    ).split()
    assert first, made
    parents = git(project, "log", "-1", "--format=%P", first[0]).split()
    assert len(parents) == 2, git(project, "log", "--graph", "--oneline", "--all")
    final = rehearsal.claudeloop("merge", "p2-resolve")
    assert final.exit_code == 0, final.stderr
    assert "<<<<<<<" not in (project / "step1.txt").read_text()
    assert git(project, "merge-base", "--is-ancestor", "claudeloop/p2", "main") == ""


def checked_items(run_directory: Path) -> list[bool]:
    """The checkmarks of the plan as the run's record holds it."""
    state = json.loads((run_directory / "state.json").read_text())
    return [line.startswith("- [x]") for line in state["plan_text"].splitlines() if "- [" in line]


@pytest.mark.scenario("three_steps")
def test_rewind_undoes_turns_and_the_next_turn_is_told(rehearsal: Rehearsal) -> None:
    project = rehearsal.project
    plan = repository(project)
    first = rehearsal.run(
        str(plan), *FAST_WAITS, "--worktree", "--run-id", "rw", "--max-turns", "2"
    )
    assert first.exit_code == 3, first.stderr
    assert checked_items(first.run_directory()) == [True, True, False]
    diff = subprocess.run(
        rehearsal.command("diff", "rw", "--turn", "2"),
        env=rehearsal.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "+++ b/step2.txt" in diff.stdout
    assert "step1.txt" not in diff.stdout
    rewound = rehearsal.claudeloop("rewind", "rw", "--to-turn", "1", "--reason", "not that way")
    assert rewound.exit_code == 0, rewound.stderr
    assert json.loads(rewound.stdout)["undone"] == [2]
    state = json.loads((first.run_directory() / "state.json").read_text())
    worktree = Path(state["spec"]["worktree"])
    assert not (worktree / "step2.txt").exists()
    # The plan's checkmark of the undone turn went with it.
    assert checked_items(first.run_directory()) == [True, False, False]
    status = rehearsal.claudeloop("status", "--run-id", "rw")
    branch = json.loads(status.stdout)["branch"]
    assert [c["turn"] for c in branch["commits"]] == [1]
    assert branch["diffstat"] == "1 file changed, 1 insertion(+)"
    finished = rehearsal.claudeloop("resume", "--run-id", "rw", "--max-turns", "5")
    assert finished.exit_code == 0, finished.stderr
    types = finished.event_types()
    assert "branch.rewound" in types
    # The turn after the rewind was told, in its prompt, what was undone and why.
    config = Path(rehearsal.env["CLAUDE_CONFIG_DIR"])
    transcripts = "".join(path.read_text() for path in config.glob("projects/*/*.jsonl"))
    assert "undid turn 2" in transcripts
    assert "not that way" in transcripts
    assert "Claudeloop-Turn" not in git(project, "log", "--format=%B", "main")
