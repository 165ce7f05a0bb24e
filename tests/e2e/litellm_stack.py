"""The LiteLLM proxy of tests/e2e/test_litellm_proxy.py and its upstreams, as one process
the whole test run shares (tests/shared_services.py): every xdist worker's tests of the
proxy talk to it, instead of each worker starting a proxy of its own (half a minute of
CPU each, most of it LiteLLM's import).

`python -m tests.e2e.litellm_stack FOLDER LITELLM` starts, in this process and its
process group: rehearsal APIs as upstreams, a port that accepts and never answers (a
timeout), the real llama-servers of ../shared/backends when they are there, and the
proxy before them all; writes what the tests need (the proxy's URL, its log, why the
llama-server deployments are missing) to FOLDER/proxy.json once the proxy answers; and
serves until its group is sent SIGTERM.

Measured with LiteLLM 1.108.7. The proxy listens on 127.0.0.1, reads its price table
from its own package (LITELLM_LOCAL_MODEL_COST_MAP) and sends no telemetry, so nothing
leaves the machine.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from claudeloop.rehearsal import RehearsalServer, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
MASTER_KEY = "sk-e2e-litellm-master"
FACTS = "proxy.json"
ANSWER = """
[[turns]]
[[turns.steps]]
kind = "verdict"
complete = true
summary = "Done."
"""
# What a spent deployment budget costs here: the rehearsal bills 200 + 40 tokens, which
# LiteLLM prices at $0.0012 as claude-sonnet-4-5; any budget below that is spent by one.
DEPLOYMENT_BUDGET = 0.0001


def shared_backends() -> Path:
    """The real local servers of ../shared/backends (CLAUDELOOP_E2E_BACKENDS overrides)."""
    named = os.environ.get("CLAUDELOOP_E2E_BACKENDS")
    return Path(named) if named else ROOT.parent / "shared" / "backends"


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


class Silent:
    """A port that accepts connections and never answers: an upstream that times out."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.socket.getsockname()[1])
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)


@dataclass(frozen=True)
class Deployment:
    name: str
    api_base: str
    extra: str = ""

    def yaml(self) -> str:
        return (
            f"  - model_name: {self.name}\n    litellm_params:\n"
            f"      model: anthropic/claude-sonnet-4-5\n      api_base: {self.api_base}\n"
            f"      api_key: upstream-key\n{self.extra}"
        )


def start_llama_server(model: Path, log: Path) -> str:
    """A real llama-server on `model`, in this process group; its URL."""
    port = free_port()
    serve = [str(model.parent / "llama-server"), "-m", str(model), "--jinja", "-c", "65536"]
    process = subprocess.Popen(
        [*serve, "--host", "127.0.0.1", "--port", str(port)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_until_up(f"{url}/health", process, log, "llama-server")
    return url


def wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"{what} did not start; see {log}") from None
            time.sleep(0.3)


def serve(folder: Path, litellm: str) -> None:
    # Until the run ends: its stop sends SIGTERM to this whole process group, the proxy
    # and the llama-servers with it. (A handler, not a blocked signal: a mask would be
    # inherited by the proxy, which must die of it too.)
    ended = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: ended.set())
    # A 500 that does not say a model failed to load: the upstream itself broke.
    servers = {
        "healthy": upstream(None),
        "failing": upstream("local_load_failed", "exploded"),
        "refusing": upstream("auth"),
        "budgeted": upstream(None),
    }
    for server in servers.values():
        server.__enter__()
    silent = Silent()
    deployments = [
        Deployment("healthy", servers["healthy"].base_url),
        Deployment("failing", servers["failing"].base_url),
        Deployment("refusing", servers["refusing"].base_url),
        Deployment(
            "budgeted",
            servers["budgeted"].base_url,
            f"      max_budget: {DEPLOYMENT_BUDGET}\n      budget_duration: 1d\n",
        ),
        Deployment("hanging", f"http://127.0.0.1:{silent.port}", "      timeout: 1\n"),
        Deployment("unreachable", "http://127.0.0.1:9"),
        Deployment(
            "ratelimited", "http://127.0.0.1:9", "      mock_response: litellm.RateLimitError\n"
        ),
        Deployment(
            "toolong",
            "http://127.0.0.1:9",
            "      mock_response: litellm.ContextWindowExceededError\n",
        ),
    ]
    backends = shared_backends()
    no_llama = (
        ""
        if (backends / "llama-server").is_file()
        else f"no llama-server in {backends} (set CLAUDELOOP_E2E_BACKENDS to its folder)"
    )
    if not no_llama:
        for name, model in (("llama", "tiny.gguf"), ("llama-verdict", "tiny-verdict.gguf")):
            url = start_llama_server(backends / model, folder / f"{name}.log")
            deployments.append(Deployment(name, url))
    config = folder / "config.yaml"
    config.write_text(
        "model_list:\n"
        + "".join(deployment.yaml() for deployment in deployments)
        # No retries of the proxy's own: each failed request answers at once, in the same
        # words (measured: the 500s, the timeout, the 429s and the spent budget), where
        # two retries with their backoff held each 5 to 11 s. An upstream's 401 is never
        # retried: its cooldown behind it is the same.
        + "router_settings:\n  num_retries: 0\n"
        + f"general_settings:\n  master_key: {MASTER_KEY}\n"
    )
    port = free_port()
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY_DISABLED": "True",
    }
    log = folder / "litellm.log"
    process = subprocess.Popen(
        [litellm, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_until_up(f"{url}/health/liveliness", process, log, "LiteLLM")
    facts = {"url": url, "log": str(log), "no_llama": no_llama}
    written = folder / f"{FACTS}.part"
    written.write_text(json.dumps(facts))
    written.rename(folder / FACTS)
    while not ended.wait(1):
        pass


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2])
