"""A real LiteLLM proxy between claudeloop and the rehearsal API: the re-measurement of
the shapes the `litellm_*` rehearsal gates replay (tests/e2e/test_local_backends.py).

Opt-in, because LiteLLM is not a dependency (its proxy extra brings ~75 packages and
pins rich below ours): install it in a separate environment and name its executable,

    python -m venv /tmp/litellm-venv && /tmp/litellm-venv/bin/pip install 'litellm[proxy]'
    CLAUDELOOP_E2E_LITELLM=/tmp/litellm-venv/bin/litellm pytest tests/e2e/test_litellm_proxy.py

Measured with LiteLLM 1.108.7. The proxy listens on 127.0.0.1 and reads its price table
from its own package (LITELLM_LOCAL_MODEL_COST_MAP), so nothing leaves the machine.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from claudeloop.rehearsal import RehearsalServer, parse_scenario
from tests.e2e.conftest import FAST_WAITS, Finished, cli_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not os.environ.get("CLAUDELOOP_E2E_LITELLM"),
        reason="set CLAUDELOOP_E2E_LITELLM to a litellm executable to run against a real proxy",
    ),
]

MASTER_KEY = "sk-e2e-litellm-master"
ANSWER = """
[[turns]]
[[turns.steps]]
kind = "verdict"
complete = true
summary = "Done."
"""


def upstream(gate: str | None, message: str = "") -> RehearsalServer:
    said = f'message = "{message}"\n' if message else ""
    gates = (
        f'\n[[gates]]\nkind = "{gate}"\nafter_seconds = 0\nuntil_lift = true\n{said}'
        if gate
        else ""
    )
    return RehearsalServer(parse_scenario(ANSWER + gates, source=gate or "healthy", fmt="toml"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Proxy:
    url: str
    # model name -> the upstream rehearsal behind it
    upstreams: dict[str, RehearsalServer]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    root = tmp_path_factory.mktemp("litellm")
    # A 500 that does not say a model failed to load: the upstream itself broke.
    servers = {"healthy": upstream(None), "failing": upstream("local_load_failed", "exploded")}
    servers["refusing"] = upstream("auth")
    for server in servers.values():
        server.__enter__()
    models = "".join(
        f"  - model_name: {name}\n    litellm_params:\n      model: anthropic/claude-sonnet-4-5\n"
        f"      api_base: {server.base_url}\n      api_key: upstream-key\n"
        for name, server in servers.items()
    )
    config = root / "config.yaml"
    config.write_text(f"model_list:\n{models}general_settings:\n  master_key: {MASTER_KEY}\n")
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    log = (root / "litellm.log").open("w")
    litellm = os.environ["CLAUDELOOP_E2E_LITELLM"]
    process = subprocess.Popen(
        [litellm, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail(f"LiteLLM did not start; see {root / 'litellm.log'}")
                time.sleep(0.3)
        yield Proxy(url, servers)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        log.close()
        for server in servers.values():
            server.__exit__(None, None, None)


def run_through(proxy: Proxy, tmp_path: Path, model: str, key: str) -> Finished:
    project = tmp_path / "project"
    project.mkdir()
    (project / "claudeloop.toml").write_text(
        f'[profiles.proxy]\npreset = "litellm"\nbase_url = "{proxy.url}"\nmodel = "{model}"\n'
        'auth_token_env = "E2E_PROXY_KEY"\n'
    )
    env = cli_env("http://127.0.0.1:9", tmp_path / "home")
    env |= {"E2E_PROXY_KEY": key, "CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user-config")}
    waits = [*FAST_WAITS[:-2], "--max-wait", "15s"]
    command = [sys.executable, "-m", "claudeloop", "run", "--prompt", "Say done."]
    completed = subprocess.run(
        [*command, "--profile", "proxy", *waits, "--cwd", str(project), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    return Finished(completed.returncode, completed.stdout, completed.stderr, project)


def test_a_healthy_model_through_the_proxy_finishes(proxy: Proxy, tmp_path: Path) -> None:
    finished = run_through(proxy, tmp_path, "healthy", MASTER_KEY)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"


def test_an_unknown_model_exits_78_with_the_model_list_fix(proxy: Proxy, tmp_path: Path) -> None:
    finished = run_through(proxy, tmp_path, "nosuch", MASTER_KEY)
    assert finished.exit_code == 78, finished.stderr
    assert "add it to the proxy's model_list" in finished.result["reason"]


def test_a_key_without_a_database_exits_77_naming_the_variable(
    proxy: Proxy, tmp_path: Path
) -> None:
    finished = run_through(proxy, tmp_path, "healthy", "sk-not-the-master-key")
    assert finished.exit_code == 77, finished.stderr
    assert "$E2E_PROXY_KEY" in finished.result["reason"]


def test_an_upstream_500_is_waited_out_not_the_end(proxy: Proxy, tmp_path: Path) -> None:
    finished = run_through(proxy, tmp_path, "failing", MASTER_KEY)
    assert finished.exit_code == 4, finished.stderr  # waited until --max-wait
    waits = [e for e in finished.events() if e["type"] == "wait.started"]
    assert waits[0]["capacity"].startswith("overloaded")


def test_an_upstream_401_behind_a_cooldown_exits_77(proxy: Proxy, tmp_path: Path) -> None:
    finished = run_through(proxy, tmp_path, "refusing", MASTER_KEY)
    assert finished.exit_code == 77, finished.stderr
