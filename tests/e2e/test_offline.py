"""End-to-end: the network drops in the middle of a night and comes back. The run waits
it out as an outage (`offline`), probes, says what is wrong in status, and goes on when
the server answers again; the real CLI, the rehearsal API behind a connection that a
test can cut and restore."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from claudeloop.rehearsal import RehearsalServer, Scenario, parse_scenario
from tests.e2e.conftest import FAST_WAITS, Rehearsal, cli_env, wait_for, write_plan

pytestmark = pytest.mark.e2e


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
        "input": {"command": "while [ ! -f {cwd}/go ]; do sleep 0.2; done; echo went"},
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
        # Turn 2 runs its command: the network drops before its next request.
        wait_for(
            lambda: any(e["type"] == "turn.started" and e["turn"] == 2 for e in events(rehearsal)),
            "turn 2 to start",
        )
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
        assert said["phase"] == "waiting"
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
    assert turns[-2:] == [(3, "available"), (4, "available")]  # the work went on
    assert (rehearsal.project / "step3.txt").exists()
    assert seen[-1]["type"] == "run.finished"
