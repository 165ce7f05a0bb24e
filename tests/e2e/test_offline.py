"""End-to-end: the network drops in the middle of a night and comes back, or is not
there at the first turn. The run waits it out as an outage (`offline`), probes, says
what is wrong in status, and goes on when the server answers again; the real CLI, the
rehearsal API behind a connection that a test can cut and restore."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from claudeloop.rehearsal import RehearsalServer, Scenario, parse_scenario
from tests.e2e.conftest import FAST_WAITS, Rehearsal, cli_env, wait_for, write_plan

pytestmark = pytest.mark.e2e

needs_openssl = pytest.mark.skipif(
    shutil.which("openssl") is None and os.environ.get("CI") != "true",
    reason="openssl is not installed (it makes the test's certificate for api.anthropic.com)",
)


class Cable:
    """127.0.0.1:port forwarded to the rehearsal API; `cut` closes the port and every
    connection through it (a dropped network: connection refused), `mend` opens it again
    on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._connections: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.mend()

    def mend(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        assert self._listener is not None
        # shutdown wakes the accept blocked on it; close alone leaves the port listening.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for connection in self._connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()
        self._connections.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                near, _ = listener.accept()
            except OSError:
                return
            self._serve(near)

    def _serve(self, near: socket.socket) -> None:
        far = socket.create_connection(self.target)
        self._connections += [near, far]
        for one, other in ((near, far), (far, near)):
            threading.Thread(target=self._pipe, args=(one, other), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def events(rehearsal: Rehearsal) -> list[dict[str, Any]]:
    logs = list((rehearsal.project / ".claudeloop" / "runs").glob("*/events.jsonl"))
    if not logs:
        return []
    return [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]


def _scenario() -> Scenario:
    """Three turns; turn 2 waits, in a command, for the test to say go: the network
    drops between its requests."""

    def write(n: int) -> dict[str, Any]:
        return {
            "kind": "tool",
            "name": "Write",
            "input": {"file_path": f"{{cwd}}/step{n}.txt", "content": f"step {n}\n"},
        }

    def verdict(n: int) -> dict[str, Any]:
        return {"kind": "verdict", "complete": n == 3, "summary": f"Wrote step{n}.txt."}

    hold = {
        "kind": "tool",
        "name": "Bash",
        "input": {
            "command": "touch {cwd}/holding; while [ ! -f {cwd}/go ]; do sleep 0.2; done; echo went"
        },
    }
    turns = [
        {"steps": [write(1), verdict(1)]},
        {"steps": [hold, write(2), verdict(2)]},
        {"steps": [write(3), verdict(3)]},
    ]
    return parse_scenario(json.dumps({"turns": turns}), source="offline", fmt="json")


def test_a_network_dropped_mid_night_is_waited_out_probed_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with RehearsalServer(_scenario()) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        cable = Cable((host, int(port)))
        rehearsal = Rehearsal(server, project, cli_env(server.base_url, tmp_path / "home"))
        rehearsal.env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{cable.port}"
        _drop_and_mend(rehearsal, cable)


def _drop_and_mend(rehearsal: Rehearsal, cable: Cable) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    try:
        # Turn 2 runs its command, its answer fully read: the network drops before its
        # next request, with none in flight (a request cut mid-answer reads as a
        # service that failed, `overloaded`, which this test is not about).
        wait_for((rehearsal.project / "holding").exists, "turn 2's command to run")
        cable.cut()
        (rehearsal.project / "go").write_text("")
        wait_for(
            lambda: sum(e["type"] == "probe.finished" for e in events(rehearsal)) >= 1,
            "a probe into the dropped network",
        )
        status = subprocess.run(
            [*rehearsal.command("status"), "--json"],
            env=rehearsal.env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        said = json.loads(status.stdout)
        # Waits of a second or two between probes: the status may land in either, and
        # says what is wrong in both.
        assert said["phase"] in ("waiting", "probing")
        assert said["capacity"] == f"no network: 127.0.0.1:{cable.port} cannot be reached"
        cable.mend()
        stdout, stderr = process.communicate(timeout=150)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert json.loads(stdout)["outcome"] == "done"
    seen = events(rehearsal)
    waits = [e["capacity_kind"] for e in seen if e["type"] == "wait.started"]
    assert waits
    assert set(waits) == {"offline"}
    probes = [e["capacity_kind"] for e in seen if e["type"] == "probe.finished"]
    assert probes[-1] == "available"  # the network came back
    assert set(probes[:-1]) == {"offline"}
    turns = [(e["turn"], e["capacity_kind"]) for e in seen if e["type"] == "turn.finished"]
    assert turns[0] == (1, "available")
    assert turns[1] == (2, "offline")
    # The work went on: every turn after the drop answered, numbered on. (How many it
    # takes is the rehearsal's script: where it picks up turn 2 sent again.)
    after = turns[2:]
    assert after
    assert [number for number, _ in after] == list(range(3, 3 + len(after)))
    assert {kind for _, kind in after} == {"available"}
    assert (rehearsal.project / "step3.txt").exists()
    assert seen[-1]["type"] == "run.finished"


class Network(Cable):
    """The way out of a machine behind an HTTPS proxy, kept on 127.0.0.1: Claude Code
    talks to api.anthropic.com, its default address, through `HTTPS_PROXY`; this proxy
    answers the CONNECT, ends the TLS with a certificate for api.anthropic.com that the
    CLI trusts (`NODE_EXTRA_CA_CERTS`) and passes the requests to the rehearsal API.
    `cut` closes the proxy's port (no network: connection refused), `mend` opens it on
    the same port."""

    def __init__(self, target: tuple[str, int], folder: Path) -> None:
        self.authority = folder / "authority.pem"
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(*_certificate_for_anthropic(folder, self.authority))
        self.connects: list[str] = []
        super().__init__(target)

    def _serve(self, near: socket.socket) -> None:
        threading.Thread(target=self._tunnel, args=(near,), daemon=True).start()

    def _tunnel(self, near: socket.socket) -> None:
        with contextlib.suppress(OSError, ssl.SSLError):
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = near.recv(4096)
                if not chunk:
                    return
                head += chunk
            self.connects.append(head.split(b"\r\n", 1)[0].decode())
            near.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            inner = self._tls.wrap_socket(near, server_side=True)
            far = socket.create_connection(self.target)
            threading.Thread(target=Cable._pipe, args=(inner, far), daemon=True).start()
            Cable._pipe(far, inner)


def _certificate_for_anthropic(folder: Path, authority: Path) -> tuple[Path, Path]:
    """A certificate authority of the test's own, and api.anthropic.com's certificate
    signed by it: (certificate, key)."""
    key, request, certificate = folder / "key.pem", folder / "request.pem", folder / "cert.pem"
    extensions = folder / "extensions.cnf"
    extensions.write_text(
        "subjectAltName=DNS:api.anthropic.com\nbasicConstraints=CA:FALSE\n"
        "extendedKeyUsage=serverAuth\n"
    )
    openssl = ["openssl"]
    steps = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-keyout", str(folder / "authority.key"), "-out", str(authority),
         "-subj", "/CN=claudeloop test authority",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(request),
         "-subj", "/CN=api.anthropic.com"],
        ["x509", "-req", "-in", str(request), "-CA", str(authority),
         "-CAkey", str(folder / "authority.key"), "-CAcreateserial", "-days", "2",
         "-out", str(certificate), "-extfile", str(extensions)],
    ]  # fmt: skip
    for step in steps:
        subprocess.run([*openssl, *step], check=True, capture_output=True)
    return certificate, key


def _two_turns() -> Scenario:
    def turn(n: int) -> dict[str, Any]:
        write = {
            "kind": "tool",
            "name": "Write",
            "input": {"file_path": f"{{cwd}}/step{n}.txt", "content": f"step {n}\n"},
        }
        return {"steps": [write, {"kind": "verdict", "complete": n == 2, "summary": f"step {n}"}]}

    return parse_scenario(
        json.dumps({"turns": [turn(1), turn(2)]}), source="offline at start", fmt="json"
    )


@needs_openssl
def test_no_network_at_the_first_turn_is_waited_out_and_the_run_ends_done(
    tmp_path: Path,
) -> None:
    # Claude Code at its default address, api.anthropic.com: no address of the user's,
    # so nothing says the setup is wrong, and a network that is not there yet at the
    # first turn is an outage like any other (a laptop that starts the night offline).
    project = tmp_path / "project"
    project.mkdir()
    with RehearsalServer(_two_turns()) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        network = Network((host, int(port)), tmp_path)
        network.cut()  # the port is chosen, and nothing listens on it yet
        env = cli_env(server.base_url, tmp_path / "home", credentials="api-key")
        del env["ANTHROPIC_BASE_URL"]
        env |= {
            "HTTPS_PROXY": f"http://127.0.0.1:{network.port}",
            "NODE_EXTRA_CA_CERTS": str(network.authority),
        }
        rehearsal = Rehearsal(server, project, env)
        process = rehearsal.start("run", str(write_plan(project)), *FAST_WAITS)
        try:
            wait_for(
                lambda: any(e["type"] == "wait.started" for e in events(rehearsal)),
                "the run to wait for the network",
            )
            status = subprocess.run(
                [*rehearsal.command("status"), "--json"],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            said = json.loads(status.stdout)
            # The first wait may be over by the time status reads it: it says what is
            # wrong while the run probes too.
            assert said["phase"] in ("waiting", "probing")
            assert said["capacity"] == "no network: api.anthropic.com cannot be reached"
            assert server.state()["requests"] == []  # nothing got through
            network.mend()
            stdout, stderr = process.communicate(timeout=150)
        finally:
            network.cut()
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, stderr
    assert json.loads(stdout)["outcome"] == "done"
    assert set(network.connects) == {"CONNECT api.anthropic.com:443 HTTP/1.1"}
    seen = events(rehearsal)
    waits = [e["capacity_kind"] for e in seen if e["type"] == "wait.started"]
    assert waits
    assert set(waits) == {"offline"}  # a wait after each probe into the dropped network
    probes = [e["capacity_kind"] for e in seen if e["type"] == "probe.finished"]
    assert probes[-1] == "available"
    assert set(probes[:-1]) <= {"offline"}  # a probe may have gone out before the mend
    turns = [(e["turn"], e["capacity_kind"]) for e in seen if e["type"] == "turn.finished"]
    assert turns == [(1, "offline"), (2, "available"), (3, "available")]
    assert (project / "step2.txt").exists()
