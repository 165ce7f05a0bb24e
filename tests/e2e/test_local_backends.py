"""Local backend profiles end to end: a `claudeloop.toml` profile whose server is the
rehearsal API answering with Ollama's or llama-server's own error bodies, the real
Claude Code CLI, and the one-line reason and fix a user reads at exit 78."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Finished, Rehearsal

pytestmark = pytest.mark.e2e

MODEL = "qwen3"


def write_config(project: Path, text: str) -> None:
    (project / "claudeloop.toml").write_text(text)


def local_profile(
    base_url: str, *, preset: str = "ollama", name: str = "local", model: str = MODEL
) -> str:
    return f'[profiles.{name}]\npreset = "{preset}"\nbase_url = "{base_url}"\nmodel = "{model}"\n'


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def isolated(rehearsal: Rehearsal) -> Rehearsal:
    """The user config directory moved into the test's tree."""
    rehearsal.env["CLAUDELOOP_CONFIG_DIR"] = str(rehearsal.project.parent / "user-config")
    return rehearsal


def run_local(rehearsal: Rehearsal, *args: str) -> Finished:
    return isolated(rehearsal).run("--prompt", "Write step1.txt", "--profile", "local", *args)


def doctor(rehearsal: Rehearsal, *args: str) -> tuple[int, dict[str, dict[str, str]], str]:
    finished = isolated(rehearsal).claudeloop("doctor", *args)
    data = finished.result
    checks = {check["name"]: check for check in data["checks"]}
    assert data["exit_code"] == finished.exit_code
    return finished.exit_code, checks, finished.stderr


@pytest.mark.scenario("one_step", credentials="api_key")
def test_a_local_profile_passes_doctor_sends_its_models_no_api_key_and_costs_nothing(
    rehearsal: Rehearsal,
) -> None:
    write_config(rehearsal.project, local_profile(rehearsal.server.base_url))
    code, checks, stderr = doctor(rehearsal, "--profile", "local")
    assert code == 0, (checks, stderr)
    # A local server's dummy token has no end that Claude Code knows: no login to check.
    assert checks.pop("login")["status"] == "skip"
    assert [c["status"] for c in checks.values()] == ["ok"] * 9  # the sandbox too
    assert checks["model"]["detail"] == f"'{MODEL}' answered a probe"
    assert checks["credentials"]["detail"] == "a dummy auth token (the server needs none)"
    assert [r["model"] for r in rehearsal.requests()] == [MODEL]  # doctor's one probe

    finished = run_local(rehearsal, *FAST_WAITS)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert finished.result["dollars"] == 0  # cost = "zero" for an Ollama preset
    requests = [r for r in rehearsal.requests() if r["kind"] in ("turn", "probe")]
    assert requests
    assert {r["model"] for r in requests} == {MODEL}  # no side request for a claude-* model
    # ANTHROPIC_API_KEY is set in this environment: a local profile never sends it.
    assert "api_key" not in {r["credentials"] for r in requests}
    started = finished.events()[0]
    assert started["type"] == "run.started"
    assert started["profile"] == "local"
    assert started["model"] == MODEL


@pytest.mark.scenario("one_step")
def test_a_base_url_without_the_messages_endpoint_exits_78_and_says_so(
    rehearsal: Rehearsal,
) -> None:
    url = rehearsal.server.base_url + "/api"
    write_config(rehearsal.project, local_profile(url))
    finished = run_local(rehearsal, *FAST_WAITS)
    assert finished.exit_code == 78, finished.stderr
    reason = finished.result["reason"]
    assert reason.startswith(f"{url} has no Anthropic Messages endpoint")
    assert "fix `base_url` in [profiles.local]" in reason


@pytest.mark.scenario("local_load_failed")
def test_a_model_that_fails_to_load_exits_78_with_the_servers_words(
    rehearsal: Rehearsal,
) -> None:
    url = rehearsal.server.base_url
    write_config(rehearsal.project, local_profile(url))
    finished = run_local(rehearsal, *FAST_WAITS)
    assert finished.exit_code == 78, finished.stderr
    reason = finished.result["reason"]
    assert reason.startswith(f"the model '{MODEL}' failed to load on {url} (model failed to load")
    assert "pick a smaller `model` in [profiles.local]" in reason
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []


@pytest.mark.scenario("local_context_overflow")
def test_a_prompt_longer_than_the_context_exits_78_and_names_context_window(
    rehearsal: Rehearsal,
) -> None:
    url = rehearsal.server.base_url
    write_config(rehearsal.project, local_profile(url, preset="llamacpp"))
    finished = run_local(rehearsal, *FAST_WAITS)
    assert finished.exit_code == 78, finished.stderr
    reason = finished.result["reason"]
    assert reason.startswith(f"the prompt is too long for the context window of '{MODEL}'")
    assert "`llama-server -c 32768`" in reason
    assert "`context_window` in [profiles.local]" in reason


@pytest.mark.scenario("one_step")
def test_connection_refused_exits_78_and_says_to_start_the_server(
    rehearsal: Rehearsal,
) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    write_config(rehearsal.project, local_profile(url))
    finished = run_local(rehearsal, *FAST_WAITS)
    assert finished.exit_code == 78, finished.stderr
    assert finished.result["reason"] == (
        f"nothing answers at {url} (connection refused): start `ollama serve` "
        "or fix `base_url` in [profiles.local]"
    )


@pytest.mark.scenario("local_busy_once")
def test_a_full_local_queue_waits_probes_and_finishes(rehearsal: Rehearsal) -> None:
    write_config(rehearsal.project, local_profile(rehearsal.server.base_url))
    finished = run_local(rehearsal, *FAST_WAITS, "--window-probe-interval", "1s")
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    waits = [e for e in finished.events() if e["type"] == "wait.started"]
    assert waits
    assert "the local server is busy" in waits[0]["capacity"]
    requests = rehearsal.requests()
    busy = [r for r in requests if r["gate"] == "local_busy"]
    assert busy[0]["kind"] == "turn"
    assert [r for r in requests if r["kind"] == "probe"][-1]["gate"] is None


@pytest.mark.scenario("local_model_missing")
def test_a_missing_model_exits_78_like_doctor_and_a_resume_on_another_profile_needs_it_named(
    rehearsal: Rehearsal,
) -> None:
    url = rehearsal.server.base_url
    profiles = local_profile(url) + local_profile(url, name="bigger", model="qwen3-32b")
    # Doctor, on the profile the configuration names: the same finding as the run's.
    write_config(rehearsal.project, 'profile = "local"\n' + profiles)
    code, checks, _ = doctor(rehearsal)
    assert code == 78
    assert checks["model"]["status"] == "fail"
    assert checks["model"]["detail"] == f"the model '{MODEL}' was not found on {url}"
    assert checks["model"]["fix"] == (
        f"pull it (`ollama pull {MODEL}`) or fix `model` in [profiles.local]"
    )

    first = run_local(rehearsal, *FAST_WAITS)
    assert first.exit_code == 78, first.stderr
    reason = first.result["reason"]
    assert reason == (
        f"the model '{MODEL}' was not found on {url}: pull it (`ollama pull {MODEL}`) "
        "or fix `model` in [profiles.local]"
    )
    # The same line in the event log, state.json and summary.md.
    assert first.events()[-1]["reason"] == reason
    state = json.loads((first.run_directory() / "state.json").read_text())
    assert reason in json.dumps(state)
    assert reason in (first.run_directory() / "summary.md").read_text()

    write_config(rehearsal.project, 'profile = "bigger"\n' + profiles)
    refused = rehearsal.claudeloop("resume")
    assert refused.exit_code == 2
    error = refused.stderr.strip()
    assert error.startswith("claudeloop: error: run ")
    assert "made with profile 'local'" in error
    assert "--profile bigger" in error
    assert len(error.splitlines()) == 1
    rehearsal.server.lift()
    switched = rehearsal.claudeloop("resume", "--profile", "bigger", *FAST_WAITS)
    assert switched.exit_code == 0, switched.stderr
    lifted = rehearsal.server.state()["lifted_at"]
    after = [r for r in rehearsal.requests() if r["kind"] == "turn" and r["at"] >= lifted]
    assert {r["model"] for r in after} == {"qwen3-32b"}


@pytest.mark.scenario("one_step")
def test_doctor_exits_78_when_nothing_answers_and_skips_the_probe(rehearsal: Rehearsal) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    write_config(rehearsal.project, local_profile(url, preset="lmstudio"))
    code, checks, _ = doctor(rehearsal, "--profile", "local")
    assert code == 78
    assert checks["backend"]["status"] == "fail"
    assert checks["backend"]["detail"] == f"nothing answers at {url} (connection refused)"
    assert checks["backend"]["fix"] == (
        "start `lms server start` or fix `base_url` in [profiles.local]"
    )
    assert checks["model"]["status"] == "skip"


@pytest.mark.scenario("one_step")
def test_doctor_exits_2_on_an_invalid_config_file(rehearsal: Rehearsal) -> None:
    write_config(rehearsal.project, "max_turns = 0\n")
    code, checks, _ = doctor(rehearsal, "--no-probe")
    assert code == 2
    assert checks["config"]["status"] == "fail"
    assert checks["config"]["detail"] == (
        f"{rehearsal.project / 'claudeloop.toml'}: max_turns = 0: expected a whole number above 0"
    )
    assert checks["cli"]["status"] == "ok"
    assert checks["model"]["status"] == "skip"


@pytest.mark.scenario("one_step")
def test_doctor_passes_on_the_inherited_environment(rehearsal: Rehearsal) -> None:
    code, checks, stderr = doctor(rehearsal)
    assert code == 0, (checks, stderr)
    assert checks["profile"]["detail"] == "default: Claude Code's own environment (no profile)"
    assert checks["credentials"]["detail"] == "OAuth token (CLAUDE_CODE_OAUTH_TOKEN)"
    assert checks["backend"]["detail"].startswith(f"{rehearsal.server.base_url} answers")
    assert checks["model"]["detail"] == "the default model answered a probe"


@pytest.mark.scenario("auth_from_start")
def test_doctor_exits_77_when_the_credentials_are_refused(rehearsal: Rehearsal) -> None:
    code, checks, _ = doctor(rehearsal)
    assert code == 77  # what a run into the same refusal ends with
    assert checks["credentials"]["status"] == "ok"  # present; the service refuses them
    assert checks["model"] == {
        "name": "model",
        "status": "fail",
        "detail": "the credentials were refused (401)",
        "fix": "log in again with `claudeloop login`, or replace CLAUDE_CODE_OAUTH_TOKEN (a "
        "token from `claudeloop claude setup-token`) or ANTHROPIC_API_KEY",
    }


@pytest.mark.scenario("one_step")
def test_doctor_exits_77_when_there_are_no_credentials_at_all(rehearsal: Rehearsal) -> None:
    del rehearsal.env["CLAUDE_CODE_OAUTH_TOKEN"]
    code, checks, _ = doctor(rehearsal)
    assert code == 77
    config = rehearsal.env["CLAUDE_CONFIG_DIR"]
    assert checks["credentials"]["status"] == "fail"
    assert checks["credentials"]["detail"] == (
        f"no Claude credentials found (none in the environment, no login in {config})"
    )
    assert checks["credentials"]["fix"].startswith("run `claudeloop login`, set ANTHROPIC_API_KEY")
    assert checks["backend"]["status"] == "ok"
    # The probe would only be refused: it is not sent.
    assert checks["model"]["detail"] == "not probed: no credentials"
    assert rehearsal.requests() == []


# A LiteLLM proxy, as one (1.108) answered in front of this rehearsal: the gates replay
# its bodies, so these run without LiteLLM installed.
KEY_VARIABLE = "E2E_LITELLM_KEY"


def litellm_profile(base_url: str) -> str:
    return (
        f'[profiles.local]\npreset = "litellm"\nbase_url = "{base_url}"\nmodel = "{MODEL}"\n'
        f'auth_token_env = "{KEY_VARIABLE}"\n'
    )


def with_key(rehearsal: Rehearsal) -> Rehearsal:
    rehearsal.env[KEY_VARIABLE] = "sk-e2e-proxy-key-not-real"
    return rehearsal


@pytest.mark.scenario("litellm_unknown_model")
def test_a_proxy_that_does_not_know_the_model_exits_78_with_the_model_list_fix_like_doctor(
    rehearsal: Rehearsal,
) -> None:
    url = rehearsal.server.base_url
    write_config(rehearsal.project, litellm_profile(url))
    code, checks, _ = doctor(with_key(rehearsal), "--profile", "local")
    assert code == 78
    assert checks["model"]["status"] == "fail"
    assert checks["model"]["detail"] == f"the model '{MODEL}' was not found on {url}"
    assert checks["model"]["fix"] == (
        "add it to the proxy's model_list or fix `model` in [profiles.local]"
    )

    finished = run_local(rehearsal, *FAST_WAITS)
    assert finished.exit_code == 78, finished.stderr
    assert finished.result["reason"] == (
        f"the model '{MODEL}' was not found on {url}: add it to the proxy's model_list "
        "or fix `model` in [profiles.local]"
    )
    assert finished.event_types().count("turn.started") == 1


@pytest.mark.scenario("litellm_no_db")
def test_a_litellm_profile_needs_a_key_and_one_the_proxy_refuses_exits_77_like_doctor(
    rehearsal: Rehearsal,
) -> None:
    url = rehearsal.server.base_url
    # Without the proxy's key, a configuration error naming the setting: the run is
    # refused and doctor says so, and neither asks the proxy anything.
    write_config(
        rehearsal.project,
        f'[profiles.local]\npreset = "litellm"\nbase_url = "{url}"\nmodel = "{MODEL}"\n',
    )
    keyless = run_local(rehearsal, *FAST_WAITS)
    assert keyless.exit_code == 2, keyless.stderr
    (line,) = keyless.stderr.strip().splitlines()
    assert 'preset "litellm" needs the proxy\'s key' in line
    assert "auth_token_env" in line
    code, checks, _ = doctor(rehearsal, "--profile", "local")
    assert code == 2
    assert checks["profile"]["status"] == "fail"
    assert 'preset "litellm" needs the proxy\'s key' in checks["profile"]["detail"]
    assert rehearsal.requests() == []

    # With a key the proxy cannot check (it has no database): exit 77, naming the
    # profile's variable, in doctor as in the run.
    write_config(rehearsal.project, litellm_profile(url))
    code, checks, _ = doctor(with_key(rehearsal), "--profile", "local")
    assert code == 77
    assert checks["model"] == {
        "name": "model",
        "status": "fail",
        "detail": "the credentials were refused (API Error: 400 No connected db.)",
        "fix": f"replace the token in ${KEY_VARIABLE}, which [profiles.local] reads (or, if "
        "its upstream refused, the api_key in the proxy's model_list)",
    }
    asked_before = len(rehearsal.requests())  # doctor's probe
    finished = run_local(rehearsal, *FAST_WAITS)
    assert finished.exit_code == 77, finished.stderr
    reason = finished.result["reason"]
    assert reason.endswith(
        f": replace the token in ${KEY_VARIABLE}, which [profiles.local] reads (or, if its "
        "upstream refused, the api_key in the proxy's model_list)"
    )
    assert (
        "sk-e2e-proxy-key-not-real" not in (finished.run_directory() / "events.jsonl").read_text()
    )
    # The run sent no probe: a refused key is no wait.
    assert [r for r in rehearsal.requests()[asked_before:] if r["kind"] == "probe"] == []


@pytest.mark.scenario("litellm_outage_then_cooldown")
def test_a_passing_proxy_outage_and_cooldown_are_each_waited_probed_and_the_run_finishes(
    rehearsal: Rehearsal,
) -> None:
    write_config(rehearsal.project, litellm_profile(rehearsal.server.base_url))
    finished = run_local(with_key(rehearsal), *FAST_WAITS, "--window-probe-interval", "1s")
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    waits = [e["capacity"] for e in finished.events() if e["type"] == "wait.started"]
    assert len(waits) == 2, waits
    assert waits[0].startswith("the service is overloaded")  # the upstream's 500, turn 1
    assert waits[1].startswith("the proxy is cooling down")  # the proxy's 429, turn 2
    requests = rehearsal.requests()
    for gate in ("litellm_upstream_error", "litellm_cooldown"):
        assert next(r for r in requests if r["gate"] == gate)["kind"] == "turn"
    # Each wait ended on a probe that went through.
    probes = [r for r in requests if r["kind"] == "probe"]
    assert len(probes) == 2
    assert all(r["gate"] is None for r in probes)


@pytest.mark.scenario("one_step")
def test_nothing_answering_at_anthropic_base_url_exits_78_like_doctor(
    rehearsal: Rehearsal,
) -> None:
    # No profile: the user's own ANTHROPIC_BASE_URL points where nothing listens.
    url = f"http://127.0.0.1:{unused_port()}"
    rehearsal.env["ANTHROPIC_BASE_URL"] = url
    finished = isolated(rehearsal).run("--prompt", "Write step1.txt", *FAST_WAITS)
    assert finished.exit_code == 78, finished.stderr
    assert finished.result["reason"] == (
        f"nothing answers at {url} (connection refused): fix ANTHROPIC_BASE_URL"
    )
    assert "wait.started" not in finished.event_types()
    code, checks, _ = doctor(rehearsal)
    assert code == 78
    assert checks["backend"]["status"] == "fail"


@pytest.mark.scenario("malformed_always")
def test_doctor_fails_a_probe_that_ends_in_an_error_no_rule_names(rehearsal: Rehearsal) -> None:
    code, checks, _ = doctor(rehearsal)
    assert code == 1
    assert checks["model"]["status"] == "fail"
    assert checks["model"]["detail"].startswith("the probe ended in an error: ")
