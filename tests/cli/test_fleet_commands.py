"""The fleet's commands as a user meets them without a worker: `queue add`, `queue ls`,
`queue cancel` and `fleet init` on the SQLite engine, and every mistake in one line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.engine import executor_id
from claudeloop.adapters.fleet.worker import WorkerLock
from claudeloop.cli.fleet import run_arguments
from claudeloop.cli.fleet_commands import forwarded_options
from claudeloop.cli.main import run as run_command
from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error
from tests.postgres_server import PostgresServer

Invoke = Callable[..., Invocation]


@pytest.fixture
def engine(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'fleet' / 'fleet.sqlite'}"


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "PLAN.md"
    path.write_text("- [ ] Write step1.txt\n")
    return path


def test_a_bad_engine_option_is_one_line_with_exit_2(claudeloop: Invoke) -> None:
    result = claudeloop("queue", "ls", "--engine", "mysql://fleet:hunter2@db/claudeloop")
    assert_one_line_error(result, "--engine", "mysql://fleet:***@db/claudeloop", "postgresql://")
    assert "hunter2" not in result.err


def test_without_dbos_the_fleet_commands_say_how_to_add_the_fleet_extra(
    claudeloop: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "dbos", None)
    result = claudeloop("queue", "ls")
    # This checkout is an editable install: the hint installs its fleet extra from here.
    assert_one_line_error(result, "need DBOS", " -e '", "[fleet]'")


def test_a_bad_engine_variable_is_named(
    claudeloop: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDELOOP_ENGINE", "sqlite://fleet.sqlite")
    result = claudeloop("worker")
    assert_one_line_error(result, "CLAUDELOOP_ENGINE", "sqlite:///PATH")


def test_an_unreachable_database_is_one_line_with_exit_1(claudeloop: Invoke) -> None:
    result = claudeloop("fleet", "init", "--engine", "postgresql://fleet:hunter2@127.0.0.1:9/x")
    assert result.exit_code == 1
    (line,) = result.err.strip().splitlines()
    assert line.startswith("claudeloop: error: engine postgresql://fleet:***@127.0.0.1:9/x")
    assert "hunter2" not in result.err


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A port of 127.0.0.1 that takes connections and never answers (a firewall that
    drops, a host that hangs): the kernel completes the handshake, nobody replies."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(64)
        yield int(listening.getsockname()[1])


@pytest.mark.slow
def test_an_engine_that_never_answers_is_one_line_saying_so(
    black_hole: int, tmp_path: Path
) -> None:
    url = f"postgresql://fleet:hunter2@127.0.0.1:{black_hole}/x"
    env = {**os.environ, "CLAUDELOOP_STATE_DIR": str(tmp_path / "state")}
    commands = [["queue", "ls"], ["status"], ["worker"]]
    running = [
        subprocess.Popen(
            [sys.executable, "-m", "claudeloop", *command, "--engine", url],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    try:
        ended = [process.communicate(timeout=180) for process in running]
    except subprocess.TimeoutExpired:
        pytest.fail("a fleet command still waits for an engine that never answers")
    finally:
        for process in running:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    for command, process, (out, err) in zip(commands, running, ended, strict=True):
        assert process.returncode == 1, (command, err)
        (line,) = err.strip().splitlines()
        shown = f"postgresql://fleet:***@127.0.0.1:{black_hole}/x"
        assert line.startswith(f"claudeloop: error: engine {shown}: does not answer"), command
        assert "hunter2" not in out + err


def test_queue_add_prints_the_run_id_and_ls_lists_it_queued(
    claudeloop: Invoke, engine: str, plan: Path, tmp_path: Path
) -> None:
    added = claudeloop(
        "queue", "add", plan, "--cwd", tmp_path, "--run-id", "r1", "--engine", engine
    )
    assert added.exit_code == 0, added.err
    assert added.out.strip() == "r1"
    listed = claudeloop("queue", "ls", "--json", "--engine", engine)
    (only,) = json.loads(listed.out)["runs"]
    assert only["run_id"] == "r1"
    assert only["state"] == "queued"
    assert only["cwd"] == str(tmp_path.resolve())
    assert only["worker"] is None
    assert len(only["account"]) == 16  # a fingerprint, never the credential


def test_a_plan_named_from_elsewhere_is_found_in_the_runs_directory(
    claudeloop: Invoke, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "app"
    project.mkdir()
    (project / "PLAN.md").write_text("- [ ] a\n")
    monkeypatch.chdir(tmp_path)
    added = claudeloop("queue", "add", "PLAN.md", "--cwd", project, "--engine", engine)
    assert added.exit_code == 0, added.err


def test_a_run_id_already_queued_is_refused(
    claudeloop: Invoke, engine: str, plan: Path, tmp_path: Path
) -> None:
    args = ("queue", "add", plan, "--cwd", tmp_path, "--run-id", "r1", "--engine", engine)
    assert claudeloop(*args).exit_code == 0
    assert_one_line_error(claudeloop(*args), "--run-id r1", "already in the queue")


def test_a_run_id_of_a_run_already_in_the_directory_is_refused(
    claudeloop: Invoke, engine: str, plan: Path, tmp_path: Path
) -> None:
    (tmp_path / ".claudeloop" / "runs" / "r1").mkdir(parents=True)  # a run of `run`
    result = claudeloop(
        "queue", "add", plan, "--cwd", tmp_path, "--run-id", "r1", "--engine", engine
    )
    assert_one_line_error(result, "r1", "already used")


def test_queue_add_wants_a_plan_or_a_prompt_and_a_plan_that_exists(
    claudeloop: Invoke, engine: str, plan: Path, tmp_path: Path
) -> None:
    both = claudeloop("queue", "add", plan, "--prompt", "x", "--engine", engine)
    assert_one_line_error(both, "a PLAN file or --prompt TEXT, not both")
    neither = claudeloop("queue", "add", "--engine", engine)
    assert_one_line_error(neither, "what the run is to do", "PLAN", "--prompt")
    missing = claudeloop("queue", "add", tmp_path / "NOPE.md", "--engine", engine)
    assert_one_line_error(missing, "NOPE.md", "not found")
    # As every command says a --cwd that is no directory.
    gone = claudeloop("queue", "add", plan, "--cwd", tmp_path / "gone", "--engine", engine)
    assert_one_line_error(gone, f"--cwd {tmp_path / 'gone'}: no such directory")
    assert not (tmp_path / "fleet").exists()  # refused before the engine was touched


def test_cancel_of_a_queued_run_and_of_an_unknown_one(
    claudeloop: Invoke, engine: str, plan: Path, tmp_path: Path
) -> None:
    claudeloop("queue", "add", plan, "--cwd", tmp_path, "--run-id", "r1", "--engine", engine)
    cancelled = claudeloop("queue", "cancel", "r1", "--engine", engine)
    assert cancelled.exit_code == 0
    assert "will not start" in cancelled.out
    listed = json.loads(claudeloop("queue", "ls", "--json", "--engine", engine).out)
    assert [run["state"] for run in listed["runs"]] == ["cancelled"]
    assert_one_line_error(claudeloop("queue", "cancel", "r2", "--engine", engine), "r2")


def test_fleet_init_is_safe_to_repeat(claudeloop: Invoke, engine: str) -> None:
    assert claudeloop("fleet", "init", "--engine", engine).exit_code == 0
    again = claudeloop("fleet", "init", "--engine", engine)
    assert again.exit_code == 0
    assert "fleet ready" in again.out


def test_the_queued_run_options_give_run_the_same_settings(plan: Path) -> None:
    given = [
        str(plan),
        "--model", "claude-sonnet-4-5",
        "--max-turns", "20",
        "--max-dollars", "2.5",
        "--max-wait", "1h30m",
        "--pause-at", "5h=90%",
        "--on-limit", "five_hour=wind-down",
        "--on-limit", "credits=switch-profile local",
        "--no-update-plan",
        "--share-capacity",
    ]  # fmt: skip
    parsed = parse_run(given)
    again = parse_run(run_arguments(forwarded_options(run_command), dict(parsed)))
    assert again == parsed


def test_queue_add_keeps_no_notification_url_in_the_engine(
    claudeloop: Invoke, engine: str, plan: Path
) -> None:
    # An apprise URL often holds a token: the worker's configuration names them instead.
    result = claudeloop(
        "queue", "add", plan, "--notify", "tgram://123:SECRET/9", "--engine", engine
    )
    assert result.exit_code == 2
    assert "--notify" in result.err
    assert "SECRET" not in result.err


def parse_run(arguments: list[str]) -> dict[str, object]:
    # The group's help names, or click caches a `--help`-only option on `run`.
    context = run_command.make_context("run", list(arguments), help_option_names=["-h", "--help"])
    return dict(context.params)


@pytest.mark.slow
def test_nothing_on_the_path_of_run_imports_dbos_or_psycopg(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from claudeloop.cli.main import main\n"
        "for argv in (['run', '--help'], ['status', '--cwd', sys.argv[1]], ['queue', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        "print(sorted(loaded & {'dbos', 'psycopg', 'sqlalchemy'}))\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.strip().splitlines()[-1] == "[]"


def test_a_second_worker_of_one_name_is_refused_in_one_line(
    claudeloop: Invoke, engine: str, tmp_path: Path
) -> None:
    running = WorkerLock(tmp_path / "state", executor_id(os.environ))
    running.acquire()  # as a live worker of this machine holds it
    try:
        result = claudeloop("worker", "--engine", engine)
    finally:
        running.release()
    assert_one_line_error(result, "already running", f"pid {os.getpid()}", "--name")
    assert_one_line_error(claudeloop("worker", "--name", "a b", "--engine", engine), "--name")


def test_a_checkout_is_queued_as_its_name_and_its_mistakes_are_one_line(
    claudeloop: Invoke, engine: str, tmp_path: Path
) -> None:
    # Nothing of the checkout is looked for here: it is on the workers' machines.
    added = claudeloop(
        "queue", "add", "PLAN.md", "--checkout", "src/app", "--run-id", "r1", "--engine", engine
    )
    assert added.exit_code == 0, added.err
    (only,) = json.loads(claudeloop("queue", "ls", "--json", "--engine", engine).out)["runs"]
    assert only["cwd"] == "src/app"
    for wrong in ("/srv/app", "../app"):
        refused = claudeloop("queue", "add", "PLAN.md", "--checkout", wrong, "--engine", engine)
        assert_one_line_error(refused, "--checkout", "--work-root")
    both = claudeloop(
        "queue", "add", "PLAN.md", "--checkout", "app", "--cwd", tmp_path, "--engine", engine
    )
    assert_one_line_error(both, "--cwd", "--checkout")
    absolute = claudeloop(
        "queue", "add", tmp_path / "PLAN.md", "--checkout", "app", "--engine", engine
    )
    assert_one_line_error(absolute, "relative to the checkout")


def test_a_lease_too_short_and_a_missing_work_root_are_one_line(
    claudeloop: Invoke, engine: str, tmp_path: Path
) -> None:
    assert_one_line_error(claudeloop("worker", "--lease", "0s", "--engine", engine), "--lease")
    gone = claudeloop("worker", "--work-root", tmp_path / "gone", "--engine", engine)
    assert_one_line_error(gone, "--work-root", "not a directory")


def test_a_repo_run_is_queued_without_a_password_and_with_its_branch(
    claudeloop: Invoke, engine: str, tmp_path: Path
) -> None:
    url = "https://git.example/app.git"
    added = claudeloop(
        "queue", "add", "PLAN.md", "--repo", url, "--branch", "main", "--engine", engine
    )
    assert added.exit_code == 0, added.err
    (only,) = json.loads(claudeloop("queue", "ls", "--json", "--engine", engine).out)["runs"]
    assert only["cwd"] == url
    secret = "https://bot:hunter2@git.example/app.git"
    refused = claudeloop("queue", "add", "PLAN.md", "--repo", secret, "--engine", engine)
    assert_one_line_error(refused, "--repo", "bot:***@", "credential helper")
    assert "hunter2" not in refused.err
    alone = claudeloop("queue", "add", "PLAN.md", "--branch", "main", "--engine", engine)
    assert_one_line_error(alone, "--branch", "--repo")
    both = claudeloop(
        "queue", "add", "PLAN.md", "--repo", url, "--cwd", tmp_path, "--engine", engine
    )
    assert_one_line_error(both, "--cwd", "--repo")


def test_asking_about_a_fleet_never_made_does_not_make_one(
    claudeloop: Invoke, engine: str, tmp_path: Path
) -> None:
    # `queue cancel nope` quietly created the default fleet.sqlite.
    database = tmp_path / "fleet" / "fleet.sqlite"
    for asked in (
        ("queue", "cancel", "nope"),
        ("status", "--engine", engine, "--run-id", "nope"),
        ("logs", "--engine", engine, "--run-id", "nope"),
        ("stop", "--engine", engine, "--run-id", "nope"),
        ("probe-now", "nope", "--engine", engine),
        ("raise", "nope", "--max-turns", "9", "--engine", engine),
        ("note", "nope", "use the staging db", "--engine", engine),
    ):
        args = [*asked, "--engine", engine] if asked[0] == "queue" else list(asked)
        assert_one_line_error(claudeloop(*args), "no fleet at", "claudeloop fleet init")
    listed = claudeloop("queue", "ls", "--json", "--engine", engine)
    assert (listed.exit_code, json.loads(listed.out)) == (0, {"runs": []})
    assert not database.exists()


def test_reading_a_postgresql_fleet_never_set_up_creates_no_table(
    claudeloop: Invoke, postgres_server: PostgresServer
) -> None:
    # status, logs, queue ls and queue cancel only read: DBOS's schema, the leases' and
    # the capacity board's tables are made by `fleet init` and `queue add` alone.
    import uuid

    import psycopg

    name = f"empty_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    engine = postgres_server.dsn.rsplit("/", 1)[0] + f"/{name}"
    for asked in (
        ("queue", "cancel", "nope", "--engine", engine),
        ("status", "--engine", engine),
        ("status", "--engine", engine, "--run-id", "nope"),
        ("logs", "--engine", engine, "--run-id", "nope"),
        ("wind-down", "--engine", engine, "--run-id", "nope"),
    ):
        assert_one_line_error(claudeloop(*asked), "no fleet at", "claudeloop fleet init")
    listed = claudeloop("queue", "ls", "--json", "--engine", engine)
    assert (listed.exit_code, json.loads(listed.out)) == (0, {"runs": []})
    with psycopg.connect(engine) as database:
        tables = database.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        schemas = database.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname = 'dbos'"
        ).fetchall()
    assert (tables, schemas) == ([], [])


def test_a_request_through_the_engine_names_its_run(claudeloop: Invoke, engine: str) -> None:
    assert_one_line_error(
        claudeloop("note", "use the staging db", "--engine", engine),
        "--engine needs the run's id: claudeloop note RUN --engine",
    )
