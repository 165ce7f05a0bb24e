"""A real LiteLLM proxy between claudeloop and upstreams of ours: every answer the proxy
gives, each ending the way docs/guides/local-models.md's LiteLLM table says.

`make test` installs the proxy into a venv of its own (`make litellm`: .venv-litellm/,
the range in tests/e2e/litellm-requirements.txt; its proxy extra pins rich below ours),
and these tests find it there; CLAUDELOOP_E2E_LITELLM naming another executable wins.
Without either they skip saying how to get it, except under CI, where a missing proxy
fails: CI never skips them.

Measured with LiteLLM 1.108.7. The proxy listens on 127.0.0.1, reads its price table
from its own package (LITELLM_LOCAL_MODEL_COST_MAP) and sends no telemetry, so nothing
leaves the machine. The upstreams are rehearsal APIs, a port that accepts and never
answers (a timeout), a closed port (unreachable), LiteLLM's own `mock_response`
exceptions, and the real llama-server of ../shared/backends when it is there. One proxy
serves the whole run, every worker's (tests/e2e/litellm_stack.py): the tests that need a
deployment in a state of its own (the budget spent) each use a deployment no other uses.

`pytest -s` or the terminal summary prints the table: case, the proxy's answer, what
claudeloop did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Finished, cli_env
from tests.e2e.litellm_stack import FACTS, MASTER_KEY, ROOT, free_port
from tests.e2e.preloaded import run_claudeloop
from tests.shared_services import Started, shared_service

pytestmark = pytest.mark.e2e

Record = Callable[[str, object], None]

OWN_LITELLM = ROOT / ".venv-litellm" / "bin" / "litellm"


def litellm_executable() -> str:
    named = os.environ.get("CLAUDELOOP_E2E_LITELLM")
    if named:
        return named
    if OWN_LITELLM.is_file():
        return str(OWN_LITELLM)
    how = (
        "run `make litellm` (it installs LiteLLM into .venv-litellm/) or set "
        "CLAUDELOOP_E2E_LITELLM to a litellm executable"
    )
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the LiteLLM proxy tests, and there is no proxy: {how}")
    pytest.skip(f"no LiteLLM proxy: {how}")


@dataclass
class Proxy:
    url: str
    log: Path
    # Why the llama-server deployments are missing, when they are.
    no_llama: str = ""


@pytest.fixture(scope="session")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Proxy:
    """The run's one proxy (tests/e2e/litellm_stack.py), every worker's."""
    litellm = litellm_executable()

    def start(folder: Path) -> Started:
        log = folder / "stack.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.litellm_stack", str(folder), litellm],
            cwd=ROOT,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        while not (folder / FACTS).exists():
            if process.poll() is not None:
                raise RuntimeError(f"the LiteLLM proxy did not start; see {log}")
            time.sleep(0.2)
        facts = json.loads((folder / FACTS).read_text())
        return Started(facts=facts, process_groups=(process.pid,))

    facts = shared_service("litellm", tmp_path_factory, start)
    return Proxy(facts["url"], Path(facts["log"]), facts["no_llama"])


def answer(proxy: Proxy, model: str, key: str = MASTER_KEY) -> tuple[int, str]:
    """The proxy's own answer to one small request for `model`: status and body."""
    body = json.dumps(
        {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    request = urllib.request.Request(
        f"{proxy.url}/v1/messages",
        data=body,
        headers={"x-api-key": key, "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def first_message(body: str) -> str:
    """The error's message, or what an answer holds: its text, or the tool it calls."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = body
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        said = parsed["error"].get("message", body)
    elif isinstance(parsed, dict) and parsed.get("content"):
        block = parsed["content"][0]
        said = block.get("text") or f"a {block.get('type')} block ({block.get('name')})"
    else:
        said = body
    return str(said).strip().splitlines()[0][:110] if str(said).strip() else ""


def profile(url: str, model: str) -> str:
    # The marker model answers only in text: its run trusts the marker (the others do not
    # need it, and a local profile has it off).
    trust = "done_marker_fallback = true\n" if model == "llama" else ""
    return (
        f'[profiles.proxy]\npreset = "litellm"\nbase_url = "{url}"\nmodel = "{model}"\n'
        f'auth_token_env = "E2E_PROXY_KEY"\n{trust}'
    )


def project_env(tmp_path: Path, url: str, model: str, key: str) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "claudeloop.toml").write_text(profile(url, model))
    env = cli_env("http://127.0.0.1:9", tmp_path / "home")
    # The tests' own variables are no setting: claudeloop refuses unknown CLAUDELOOP_*.
    env = {name: value for name, value in env.items() if not name.startswith("CLAUDELOOP_E2E_")}
    env |= {"E2E_PROXY_KEY": key, "CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user-config")}
    return project, env


def run_through(
    url: str, tmp_path: Path, model: str, key: str = MASTER_KEY, *extra: str
) -> Finished:
    project, env = project_env(tmp_path, url, model, key)
    # A wait ends at --max-wait, its one probe due then (the probe intervals are longer):
    # a refused turn, a wait, one probe, exit 4.
    waits = [*FAST_WAITS[:-2], "--max-wait", "1s"]
    command = ["run", "--prompt", "Say done.", "--profile", "proxy", *waits, "--json", *extra]
    completed = run_claudeloop([*command, "--cwd", str(project)], env, timeout=240)
    return Finished(completed.returncode, completed.stdout, completed.stderr, project)


@dataclass(frozen=True)
class Doctor:
    exit_code: int
    model: dict[str, str]


def doctor(url: str, tmp_path: Path, model: str) -> Doctor:
    project, env = project_env(tmp_path, url, model, MASTER_KEY)
    completed = run_claudeloop(
        ["doctor", "--profile", "proxy", "--json", "--cwd", str(project)], env, timeout=180
    )
    checks = json.loads(completed.stdout)["checks"]
    (model_check,) = [check for check in checks if check["name"] == "model"]
    return Doctor(completed.returncode, model_check)


def waits(finished: Finished) -> list[str]:
    return [e["capacity"] for e in finished.events() if e["type"] == "wait.started"]


def probes(finished: Finished) -> list[str]:
    return [e["capacity"] for e in finished.events() if e["type"] == "probe.finished"]


def outcome(finished: Finished) -> str:
    result = finished.result
    said = first_message(result["reason"])
    return f"exit {finished.exit_code} {result['outcome']}: {said}"


def row(record: Record, case: str, served: tuple[int, str], ended: str) -> None:
    """One line of the table the terminal summary prints (tests/e2e/conftest.py)."""
    status, body = served
    record("backend_table", json.dumps(["LiteLLM", case, f"{status} {first_message(body)}", ended]))


def test_without_a_proxy_ci_fails_and_elsewhere_skips_saying_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CLAUDELOOP_E2E_LITELLM", raising=False)
    monkeypatch.setattr(sys.modules[__name__], "OWN_LITELLM", tmp_path / "no" / "litellm")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="run `make litellm`"):
        litellm_executable()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the LiteLLM proxy tests"):
        litellm_executable()
    monkeypatch.setenv("CLAUDELOOP_E2E_LITELLM", "/opt/litellm/bin/litellm")
    assert litellm_executable() == "/opt/litellm/bin/litellm"


def test_a_healthy_model_through_the_proxy_finishes(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    finished = run_through(proxy.url, tmp_path, "healthy")
    row(record_property, "happy path", answer(proxy, "healthy"), outcome(finished))
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"


def test_an_unknown_model_exits_78_with_the_model_list_fix(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    finished = run_through(proxy.url, tmp_path, "nosuch")
    row(record_property, "unknown model", answer(proxy, "nosuch"), outcome(finished))
    assert finished.exit_code == 78, finished.stderr
    assert "add it to the proxy's model_list" in finished.result["reason"]


def test_a_key_without_a_database_exits_77_naming_the_variable(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    wrong = "sk-not-the-master-key"
    finished = run_through(proxy.url, tmp_path, "healthy", wrong)
    row(record_property, "a wrong key", answer(proxy, "healthy", wrong), outcome(finished))
    assert finished.exit_code == 77, finished.stderr
    assert "$E2E_PROXY_KEY" in finished.result["reason"]


def test_an_upstream_500_is_waited_out_not_the_end(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    finished = run_through(proxy.url, tmp_path, "failing")
    row(record_property, "upstream 5xx", answer(proxy, "failing"), outcome(finished))
    assert finished.exit_code == 4, finished.stderr  # waited until --max-wait
    assert waits(finished)[0].startswith("the service is overloaded")
    assert probes(finished)  # probed, not given up on


def test_an_upstream_401_behind_a_cooldown_exits_77(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    finished = run_through(proxy.url, tmp_path, "refusing")
    row(record_property, "upstream 401", answer(proxy, "refusing"), outcome(finished))
    assert finished.exit_code == 77, finished.stderr


def test_a_429_through_the_proxy_is_waited_out(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    finished = run_through(proxy.url, tmp_path, "ratelimited")
    row(record_property, "429 (RateLimitError)", answer(proxy, "ratelimited"), outcome(finished))
    assert finished.exit_code == 4, finished.stderr
    assert waits(finished)[0] == "usage window closed, no reset announced"
    assert probes(finished)


def test_a_context_too_long_exits_78_with_the_context_fix(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    finished = run_through(proxy.url, tmp_path, "toolong")
    row(record_property, "context too long", answer(proxy, "toolong"), outcome(finished))
    assert finished.exit_code == 78, finished.stderr
    assert finished.result["reason"].startswith(
        "the prompt is too long for the context window of 'toolong'"
    )


def test_a_proxy_that_is_down_exits_78_with_the_command_that_starts_it(
    tmp_path: Path, record_property: Record
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    finished = run_through(closed, tmp_path, "healthy")
    row(record_property, "proxy down (port closed)", (0, "connection refused"), outcome(finished))
    assert finished.exit_code == 78, finished.stderr
    assert finished.result["reason"] == (
        f"nothing answers at {closed} (connection refused): start `litellm --config "
        "config.yaml` or fix `base_url` in [profiles.proxy]"
    )


def test_an_upstream_timeout_is_an_outage_waited_out_and_probed(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    finished = run_through(proxy.url, tmp_path / "run", "hanging")
    row(record_property, "upstream timeout", answer(proxy, "hanging"), outcome(finished))
    assert finished.exit_code == 4, finished.stderr  # waited until --max-wait, no error turns
    said = "the upstream timed out (408), no reset announced"
    # Probed, not given up on, and every probe met the same timeout.
    assert probes(finished)
    assert set(waits(finished) + probes(finished)) == {said}
    assert finished.result["turns"] == 0
    checked = doctor(proxy.url, tmp_path / "doctor", "hanging")
    assert checked.exit_code == 0, checked
    assert checked.model["status"] == "warn"
    assert "the upstream of 'hanging' timed out (408)" in checked.model["detail"]


def test_an_unreachable_upstream_is_waited_for_in_those_words_and_doctor_names_it(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    finished = run_through(proxy.url, tmp_path / "run", "unreachable")
    row(record_property, "upstream unreachable", answer(proxy, "unreachable"), outcome(finished))
    assert finished.exit_code == 4, finished.stderr
    said = "the proxy's upstream is unreachable, no reset announced"
    assert probes(finished)
    assert set(waits(finished) + probes(finished)) == {said}
    checked = doctor(proxy.url, tmp_path / "doctor", "unreachable")
    assert checked.exit_code == 78, checked
    assert checked.model["status"] == "fail"
    assert (
        "cannot connect to the upstream of 'unreachable' at 127.0.0.1:9"
        in (checked.model["detail"])
    )
    assert "`api_base` in the proxy's model_list" in checked.model["fix"]


def test_a_spent_deployment_budget_is_the_proxys_credits_out_backed_off(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    spending = answer(proxy, "budgeted")
    assert spending[0] == 200, spending  # one answer spends the whole budget
    finished = run_through(proxy.url, tmp_path, "budgeted")
    row(record_property, "deployment budget spent", answer(proxy, "budgeted"), outcome(finished))
    assert finished.exit_code == 4, finished.stderr
    # Backed off as credits, the proxy's: no longer a cooldown of a few seconds; its
    # probe found the same.
    assert probes(finished)
    assert set(waits(finished) + probes(finished)) == {"the proxy's budget is spent (credits out)"}
    # Its kind says money ran out, which a notification tells as credits (issue 41).
    kinds = {
        e.get("capacity_kind")
        for e in finished.events()
        if e["type"] in ("wait.started", "probe.finished")
    }
    assert kinds == {"proxy_budget"}
    checked = doctor(proxy.url, tmp_path / "doctor", "budgeted")
    assert checked.exit_code == 1, checked
    assert checked.model["detail"].endswith("says the budget for 'budgeted' is spent")


def test_llama_server_behind_the_proxy_finishes_done_and_verify_catches_a_done_that_wrote_nothing(
    proxy: Proxy, tmp_path: Path, record_property: Record
) -> None:
    if proxy.no_llama:
        pytest.skip(proxy.no_llama)
    verdict = answer(proxy, "llama-verdict")
    for model, case, said in [
        ("llama-verdict", "llama-server behind it (verdict model)", verdict),
        ("llama", "llama-server behind it (marker model, fallback on)", answer(proxy, "llama")),
    ]:
        finished = run_through(proxy.url, tmp_path / model, model)
        row(record_property, case, said, outcome(finished))
        assert finished.exit_code == 0, finished.stderr
        assert finished.result["outcome"] == "done"

    # The verdict model claims done on every turn and writes nothing: its one turn's
    # Done is checked and refused, and the cap ends the run.
    check = ["--verify", "test -f step1.txt", "--max-turns", "1"]
    checked = run_through(proxy.url, tmp_path / "verify", "llama-verdict", MASTER_KEY, *check)
    case = "llama-server verdict model, --verify fails"
    row(record_property, case, verdict, outcome(checked))
    assert checked.exit_code == 3, checked.stderr  # the turns ran out, never done
    verified = [e for e in checked.events() if e["type"] == "verify.finished"]
    assert verified, checked.event_types()
    assert not any(e["passed"] for e in verified)
    assert not (checked.project / "step1.txt").exists()
