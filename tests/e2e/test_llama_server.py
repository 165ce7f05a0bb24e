"""A real llama.cpp `llama-server` behind a `llamacpp` profile: the real Claude Code CLI
driven through claudeloop against it, a run per answer the server gives (a test per
server started, its runs one after another), each ending the way
docs/guides/local-models.md's llama-server table says.

The server and its two tiny models live outside the repository, in `../shared/backends`
(or $CLAUDELOOP_TEST_BACKENDS): `tiny.gguf` answers the done marker whatever it is asked,
`tiny-verdict.gguf` answers a StructuredOutput verdict (complete, writing nothing). Where
the directory is absent (a user's machine) these tests skip. Every run prints its row
of the table: case, the server's own answer to a request like the CLI's (status, first
line of the body), and claudeloop's outcome (exit code, reason).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Finished, cli_env, wait_for
from tests.e2e.preloaded import run_claudeloop

REPOSITORY = Path(__file__).resolve().parents[2]
BACKENDS = Path(
    os.environ.get("CLAUDELOOP_TEST_BACKENDS") or REPOSITORY.parent / "shared" / "backends"
)
SERVER = BACKENDS / "llama-server"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not SERVER.is_file(),
        reason=f"no llama-server at {SERVER}: set CLAUDELOOP_TEST_BACKENDS to the directory "
        "holding llama-server, tiny.gguf and tiny-verdict.gguf",
    ),
]

TABLE = "llama-server (direct, llamacpp preset)"
KEY = "sk-e2e-llama-key-not-real"
# A prompt the size of Claude Code's first turn (about 6,500 tokens with these models).
TURN_SIZED = "hello world " * 3000


@dataclass
class LlamaServer:
    url: str
    log: Path

    def answer(self, model: str, *, key: str | None = None, long: bool = False) -> str:
        """The server's own answer to a Messages request: status and first line of body."""
        content = TURN_SIZED if long else "Write step1.txt"
        body = {
            "model": model,
            "max_tokens": 16,
            "messages": [{"role": "user", "content": content}],
        }
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            f"{self.url}/v1/messages", data=json.dumps(body).encode(), headers=headers
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=120) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            with error:
                status, text = error.code, error.read().decode()
        return f"{status} {said(text)}"


def said(body: str) -> str:
    """A body's gist: an error's type and message, or the first line of the answer."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip().splitlines()[0][:120]
    error = data.get("error")
    if isinstance(error, dict):
        return f"{error.get('type')}: {error.get('message')}"
    text = "".join(block.get("text", "") for block in data.get("content", []))
    return " ".join(text.split())[:100]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def health(url: str) -> int | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/health", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        error.close()
        return error.code
    except OSError:
        return None


@dataclass
class Started:
    server: LlamaServer
    process: subprocess.Popen[bytes]


def start(root: Path, name: str, *args: str, wait: bool = True) -> Started:
    """llama-server with ARGS on a free 127.0.0.1 port; with `wait`, once /health says 200.

    One thread and one slot: the tiny models need no more, and the machine runs two
    tests at a time beside other load (the default of a thread per core is ten times
    slower here)."""
    port = free_port()
    log = root / f"{name}.log"
    command = [str(SERVER), *args, "--jinja", "-t", "1", "-np", "1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    started = Started(LlamaServer(url, log), process)
    deadline = time.monotonic() + 120
    while wait and health(url) != 200:
        if process.poll() is not None or time.monotonic() > deadline:
            stop(started)
            pytest.fail(f"llama-server {name} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    return started


def stop(started: Started) -> None:
    if started.process.poll() is None:
        os.killpg(started.process.pid, signal.SIGTERM)
    started.process.wait(timeout=30)


Serve = Callable[..., LlamaServer]


@pytest.fixture(scope="session")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """Starts a server the first time a test asks for its arguments; the tests share
    it, and all stop when the session ends (the longest tests start first, so this
    module's tests need not come one after another)."""
    root = tmp_path_factory.mktemp("llama")
    servers: dict[tuple[str, ...], Started] = {}

    def server(*args: str) -> LlamaServer:
        if args not in servers:
            servers[args] = start(root, f"server-{len(servers)}", *args)
        return servers[args].server

    try:
        yield server
    finally:
        for started in servers.values():
            stop(started)


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A router's models: tiny, and a truncated copy of it (a model that fails to load)."""
    directory = tmp_path_factory.mktemp("models")
    shutil.copy(BACKENDS / "tiny.gguf", directory / "tiny.gguf")
    whole = (BACKENDS / "tiny.gguf").read_bytes()
    (directory / "broken.gguf").write_bytes(whole[: len(whole) // 4])
    return directory


def model_of(name: str) -> str:
    return str(BACKENDS / name)


@dataclass
class Project:
    path: Path
    env: dict[str, str]

    def claudeloop(self, *args: str) -> Finished:
        command = [*args, "--cwd", str(self.path), "--json"]
        completed = run_claudeloop(command, self.env, timeout=300)
        return Finished(completed.returncode, completed.stdout, completed.stderr, self.path)

    def run(self, *args: str) -> Finished:
        return self.claudeloop(
            "run", "--prompt", "Write step1.txt", "--profile", "local", *FAST_WAITS, *args
        )


def project(tmp_path: Path, server: LlamaServer, model: str, extra: str = "") -> Project:
    path = tmp_path / "project"
    path.mkdir(parents=True)
    (path / "claudeloop.toml").write_text(
        f'[profiles.local]\npreset = "llamacpp"\nbase_url = "{server.url}"\n'
        f'model = "{model}"\n{extra}'
    )
    # Nothing of the user's own setup, and no rehearsal: the profile names the server.
    env = cli_env("http://127.0.0.1:9", tmp_path / "home")
    env["CLAUDELOOP_CONFIG_DIR"] = str(tmp_path / "user-config")
    return Project(path, env)


def row(
    record_property: Callable[[str, object], None], case: str, answer: str, finished: Finished
) -> None:
    """This case's row of the table, printed and kept for the run's summary."""
    assert finished.stdout.strip(), f"exit {finished.exit_code}: {finished.stderr[-2000:]}"
    result = finished.result
    outcome = f"exit {finished.exit_code}, {result['outcome']}: {result['reason']}"
    print(f"{case} | {answer} | {outcome}")
    record_property("table_row", (TABLE, case, answer, outcome))


def answered_turn(finished: Finished) -> dict[str, object]:
    """The run's one answered turn. A turn before it may have met the server dropping
    its connection (seen once in CI: ECONNRESET on a kept-alive connection): that is an
    outage the run waits out and probes, never a verdict."""
    *before, turn = [e for e in finished.events() if e["type"] == "turn.finished"]
    assert all(e["verdict"] == "refused" for e in before), before
    assert all(e["capacity_kind"] == "overloaded" for e in before), before
    return turn


def test_the_marker_model_is_done_through_the_marker_fallback_and_doctor_passes_its_context(
    serve: Serve, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    server = serve("-m", model_of("tiny.gguf"), "-c", "32768")
    # A local profile trusts the marker only when told to (the guide's "Why the marker
    # fallback is off").
    local = project(tmp_path / "run", server, "tiny", "done_marker_fallback = true\n")
    finished = local.run()
    row(record_property, "200, marker model", server.answer("tiny"), finished)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    turn = answered_turn(finished)
    assert (turn["verdict"], turn["summary"]) == ("done", "All done.")
    assert finished.result["dollars"] == 0
    # The same server, asked by doctor: a context that holds a turn passes.
    checked = project(tmp_path / "doctor", server, "tiny").claudeloop(
        "doctor", "--profile", "local"
    )
    checks = {check["name"]: check for check in checked.result["checks"]}
    assert checked.exit_code == 0, checks
    assert checks["context"]["status"] == "ok"
    assert checks["context"]["detail"].startswith("llama-server gives a request 32,768 tokens")


def test_the_verdict_model_is_done_through_the_structured_verdict_and_verify_rejects_it(
    serve: Serve, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    server = serve("-m", model_of("tiny-verdict.gguf"), "-c", "32768")
    answer = server.answer("tiny")
    finished = project(tmp_path / "trusted", server, "tiny").run()
    row(record_property, "200, verdict model", answer, finished)
    assert finished.exit_code == 0, finished.stderr
    turn = answered_turn(finished)
    assert turn["verdict"] == "done"
    assert turn["summary"] == "Done (a scripted tiny model: it writes nothing)."
    # The model claimed the work without doing it: nothing but a check would notice.
    assert not (finished.project / "step1.txt").exists()

    # The same model under a check: a Done that wrote nothing is refused, every time.
    local = project(tmp_path / "checked", server, "tiny")
    checked = local.run("--verify", "test -f step1.txt", "--max-turns", "2")
    row(record_property, "200, verdict model, --verify fails", answer, checked)
    assert checked.exit_code == 3, checked.stderr
    assert checked.result["outcome"] == "budget_exhausted"
    events = checked.events()
    verdicts = [e["verdict"] for e in events if e["type"] == "turn.finished"]
    checks = [e["passed"] for e in events if e["type"] == "verify.finished"]
    assert verdicts == ["done", "done"]
    assert checks == [False, False]  # each Done was checked, and refused
    assert not (checked.project / "step1.txt").exists()


def test_a_context_smaller_than_a_turn_exits_78_prompt_too_long_and_doctor_fails_it(
    serve: Serve, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    server = serve("-m", model_of("tiny.gguf"), "-c", "2048")
    finished = project(tmp_path / "run", server, "tiny").run()
    answer = server.answer("tiny", long=True)
    row(record_property, "-c 2048", answer, finished)
    assert answer.startswith("400 exceed_context_size_error: request (")
    assert finished.exit_code == 78, finished.stderr
    reason = finished.result["reason"]
    assert reason.startswith(
        f"the prompt is too long for the context window of 'tiny' on {server.url}"
    )
    assert "`llama-server -c 32768`" in reason
    assert finished.event_types().count("turn.started") == 1

    doctor = project(tmp_path / "doctor", server, "tiny").claudeloop("doctor", "--profile", "local")
    checks = {check["name"]: check for check in doctor.result["checks"]}
    # The probe is short enough to pass: only the server's own figure tells.
    assert checks["model"]["status"] == "ok"
    assert doctor.exit_code == 78, checks
    assert checks["context"] == {
        "name": "context",
        "status": "fail",
        "detail": "llama-server gives a request 2,048 tokens of context; Claude Code's first "
        "turn alone is about 6,500 (its tools' schemas)",
        "fix": "restart llama-server with `-c 32768` (at least `-c 8192`) and set "
        "`context_window` in [profiles.local]",
    }


def test_a_router_without_the_model_or_with_a_broken_one_exits_78_saying_which(
    serve: Serve,
    models_dir: Path,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    server = serve("--models-dir", str(models_dir), "-c", "32768")
    # A model it does not have: the line names the models it has.
    finished = project(tmp_path / "nosuch", server, "nosuch").run()
    answer = server.answer("nosuch")
    row(record_property, "router, unknown model", answer, finished)
    assert answer == "400 invalid_request_error: model 'nosuch' not found"
    assert finished.exit_code == 78, finished.stderr
    assert finished.result["reason"] == (
        f"the model 'nosuch' was not found on {server.url}, which serves 'broken', 'tiny': "
        "start llama-server with it (`llama-server -m MODEL.gguf --jinja --alias nosuch`) "
        "or fix `model` in [profiles.local]"
    )
    assert finished.event_types().count("turn.started") == 1
    # A model that fails to load (a truncated GGUF): no wait, the server's words.
    broken = project(tmp_path / "broken", server, "broken").run()
    answer = server.answer("broken")
    row(record_property, "router, truncated GGUF", answer, broken)
    assert answer == "500 server_error: model name=broken failed to load"
    assert broken.exit_code == 78, broken.stderr
    assert broken.result["reason"] == (
        f"the model 'broken' failed to load on {server.url} (model name=broken failed to "
        "load): check the server's log and free memory, or pick a smaller `model` in "
        "[profiles.local]"
    )
    assert "wait.started" not in broken.event_types()


def test_a_router_that_will_not_load_the_model_exits_78_saying_load_it(
    serve: Serve,
    models_dir: Path,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    server = serve("--models-dir", str(models_dir), "--no-models-autoload", "-c", "32768")
    finished = project(tmp_path, server, "tiny").run()
    answer = server.answer("tiny")
    row(record_property, "router, --no-models-autoload", answer, finished)
    assert answer == "400 invalid_request_error: model is not loaded"
    assert finished.exit_code == 78, finished.stderr
    assert finished.result["reason"] == (
        f"the model 'tiny' is not loaded on {server.url} (a router started with "
        f"--no-models-autoload): load it (`curl -X POST {server.url}/models/load -d "
        """'{"model": "tiny"}'`) or start llama-server without --no-models-autoload"""
    )


def test_a_server_that_refuses_the_key_exits_77_with_the_fix_for_none_and_for_a_wrong_one(
    serve: Serve, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    server = serve("-m", model_of("tiny.gguf"), "-c", "32768", "--api-key", KEY)
    cases = [
        (
            "--api-key, no key",
            "",
            None,
            "the server wants the key it was started with (`llama-server --api-key`): "
            "set `auth_token_env` or `auth_token` in [profiles.local]",
        ),
        (
            "--api-key, wrong key",
            'auth_token = "sk-e2e-wrong-key-not-real"\n',
            "sk-e2e-wrong-key-not-real",
            "replace `auth_token` in [profiles.local]",
        ),
    ]
    for n, (case, setting, key, fix) in enumerate(cases):
        finished = project(tmp_path / str(n), server, "tiny", setting).run()
        answer = server.answer("tiny", key=key)
        row(record_property, case, answer, finished)
        assert answer == "401 authentication_error: Invalid API Key"
        assert finished.exit_code == 77, finished.stderr
        assert finished.result["reason"] == (
            f"authentication failed: the credentials were refused: {fix}"
        )
        events = (finished.run_directory() / "events.jsonl").read_text()
        assert "sk-e2e-wrong-key-not-real" not in events


# A model that takes a moment to load, for a real window of 503 "Loading model": the
# verdict model with its feed-forward tensors (all zeros) grown to 0.4 GB. Written here
# as a sparse file (the zeros are holes), it costs no disk and no second of writing, and
# needs no `gguf` package; llama-server still maps and checks every byte of it
# (`--check-tensors`: about a second of CPU on two busy cores). The window need not be
# long, whatever the machine's speed: the server is paused the moment it first says 503
# and let go on only once the requests that must meet the load wait on it, which its
# HTTP threads answer at once while the load still has most of its second to go. (At
# 6 GB, before that pause, the load alone cost 16 s of CPU, and the run probed it as long.)
SLOW_N_FF = 524_288
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q"}
_GGUF_SCALARS |= {11: "q", 12: "d"}
_GGUF_ALIGNMENT = 32


def slow_to_load(source: Path, out: Path, n_ff: int = SLOW_N_FF) -> None:
    """`source` (GGUF v3, all F32) with `feed_forward_length` and every ffn tensor grown
    to `n_ff`; those tensors must be zeros in `source`, since they are left as holes."""
    data = source.read_bytes()
    at = 0

    def take(fmt: str) -> int:
        nonlocal at
        (value,) = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return int(value)

    def string() -> bytes:
        nonlocal at
        length = take("Q")
        at += length
        return data[at - length : at]

    def skip(kind: int) -> None:
        nonlocal at
        if kind == 8:
            string()
        elif kind == 9:
            inner, count = take("I"), take("Q")
            for _ in range(count):
                skip(inner)
        else:
            at += struct.calcsize("<" + _GGUF_SCALARS[kind])

    def aligned(n: int) -> int:
        return -(-n // _GGUF_ALIGNMENT) * _GGUF_ALIGNMENT

    assert data[:4] == b"GGUF"
    at = 8  # magic and version
    n_tensors, n_kv = take("Q"), take("Q")
    head = bytearray(data[:at])
    old_ff = 0
    for _ in range(n_kv):
        start = at
        key = string()
        kind = take("I")
        if key.endswith(b".feed_forward_length"):
            old_ff = take("I")
            head += data[start : at - 4] + struct.pack("<I", n_ff)
        else:
            skip(kind)
            head += data[start:at]
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    data_start = aligned(at)
    layout = bytearray()
    kept: list[tuple[int, bytes]] = []
    offset = 0
    for name, dims, kind, old_offset in infos:
        assert kind == 0, "F32 tensors only"
        grown = b"ffn_" in name
        new_dims = [n_ff if grown and d == old_ff else d for d in dims]
        size = 4
        for d in new_dims:
            size *= d
        layout += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(new_dims))
        layout += b"".join(struct.pack("<Q", d) for d in new_dims) + struct.pack(
            "<IQ", kind, offset
        )
        if not grown:
            kept.append((offset, data[data_start + old_offset : data_start + old_offset + size]))
        offset += aligned(size)
    header = bytes(head + layout)
    start = aligned(len(header))
    with out.open("wb") as file:
        file.write(header.ljust(start, b"\0"))
        for where, content in kept:
            file.seek(start + where)
            file.write(content)
        file.truncate(start + offset)


def connections(url: str) -> set[str]:
    """The clients connected to the server at `url`, whether it took the connection or
    not (a paused server's thread may have taken one in the kernel and stopped before it
    read it: its listening socket's backlog does not count them all), by their address:
    the remote ends of /proc/net/tcp's sockets on its port, but the listening one."""
    port = int(url.rsplit(":", 1)[1])
    server = f"0100007F:{port:04X}"
    clients = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == server and fields[3] != "0A":
            clients.add(fields[2])
    return clients


def test_a_model_still_loading_is_waited_for_and_the_run_finishes_once_it_loads(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    model = tmp_path / "slow.gguf"
    slow_to_load(BACKENDS / "tiny-verdict.gguf", model)
    loading = start(
        tmp_path, "loading", "-m", str(model), "-c", "32768", "--check-tensors", wait=False
    )
    try:
        server = loading.server
        deadline = time.monotonic() + 60
        while health(server.url) != 503:  # listening, and still loading
            assert loading.process.poll() is None, server.log.read_text()[-2000:]
            assert time.monotonic() < deadline, "llama-server never answered 503 while loading"
            time.sleep(0.01)
        # Paused, mid-load, until the row's request and the run's first turn both wait on
        # it: on a loaded machine the CLI may take longer to start than the model to load,
        # and the turn must meet the load, whatever the machine's speed. Paused, the server
        # still takes connections (the kernel's); let go on, it answers them at once.
        os.kill(loading.process.pid, signal.SIGSTOP)
        pool = concurrent.futures.ThreadPoolExecutor(2)
        try:
            # The health checks' connections, closing: the ones that count come after.
            before = connections(server.url)
            asked = pool.submit(server.answer, "tiny")
            wait_for(lambda: len(connections(server.url) - before) >= 1, "the row's request")
            running = pool.submit(
                project(tmp_path, server, "tiny").run, "--window-probe-interval", "2s"
            )

            def turn_waits() -> bool:
                assert not running.done(), running.result().stderr
                return len(connections(server.url) - before) >= 2

            wait_for(turn_waits, "the run's first turn to ask the server", timeout=120)
            os.kill(loading.process.pid, signal.SIGCONT)
            answer = asked.result()
            finished = running.result()
        finally:
            os.kill(loading.process.pid, signal.SIGCONT)
            pool.shutdown()
        row(record_property, "a model still loading", answer, finished)
    finally:
        stop(loading)
        model.unlink()
    assert answer == "503 unavailable_error: Loading model"
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    events = finished.events()
    types = [e["type"] for e in events]
    # The first turn met the 503, the run waited and probed, then the turn was served.
    first = next(e for e in events if e["type"] == "turn.finished")
    assert first["capacity"].startswith("the local server is busy"), first
    assert "probe.finished" in types
    assert types.index("wait.started") < types.index("probe.finished")
    last = [e for e in events if e["type"] == "turn.finished"][-1]
    assert last["verdict"] == "done"
