"""A misconfigured backend, said in one line with the fix: which model, which server,
which profile table to edit and the command that usually mends it.

The domain says what kind of misconfiguration the signals show (`classify`'s reasons);
this module knows the profile and its server. A 404 is ambiguous on a local server: the
CLI reports a missing model and a missing Messages endpoint alike (`model_not_found`,
measured with CLI 2.1.332), so the server is asked directly which it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import assert_never

from claudeloop.adapters.backend_http import NotFound, served_models, why_not_found
from claudeloop.adapters.claude_code.backend import Backend
from claudeloop.adapters.config.profiles import DEFAULT_BACKEND, BackendProfile
from claudeloop.application.errors import UsageError
from claudeloop.application.ports import Advice
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    AuthFailureKind,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.text import first_line

# For records written before BackendMisconfigured kept its kind: the first words of each
# of `claudeloop.domain.classify.backend_misconfiguration`'s
# reasons, pinned by tests/adapters/test_backend_advice.py.
_KINDS = (
    ("the model was not found", "not_found"),
    ("the model is not loaded", "not_loaded"),
    ("the endpoint or model was not found", "not_found"),
    ("the model failed to load", "load_failed"),
    ("the prompt is too long", "prompt_too_long"),
    ("the server is unreachable", "unreachable"),
)
_DETAIL = re.compile(r"\((?P<detail>.*)\)\s*$")
# LiteLLM names the model it does not know: "Invalid model name passed in model=x. Call".
_UNKNOWN_MODEL = re.compile(r"invalid model name passed in model=(?P<model>\S+?)\.(?:\s|$)", re.I)
# llama-server's router names it too: "model 'x' not found" (a 400).
_NAMED_MISSING = re.compile(r"model '(?P<model>[^']+)' not found", re.I)
_API_ERROR = re.compile(r"^API Error:\s*(?:\d{3}\s+)?")

_GET_MODEL = {
    "ollama": "pull it (`ollama pull {model}`)",
    "lmstudio": "download and load it (`lms get {model}`, `lms load {model}`)",
    "llamacpp": "start llama-server with it (`llama-server -m MODEL.gguf --jinja --alias {model}`)",
    "vllm": "serve it (`vllm serve {model}`)",
    "litellm": "add it to the proxy's model_list",
}
_START_SERVER = {
    "ollama": "`ollama serve`",
    "lmstudio": "`lms server start`",
    "llamacpp": "`llama-server -m MODEL.gguf --jinja --port 8080`",
    "vllm": "`vllm serve {model}`",
    "litellm": "`litellm --config config.yaml`",
}
_LONGER_CONTEXT = {
    "ollama": "`OLLAMA_CONTEXT_LENGTH=32768 ollama serve`",
    "lmstudio": "`lms load {model} --context-length 32768`",
    "llamacpp": "`llama-server -c 32768`",
    "vllm": "`vllm serve {model} --max-model-len 32768`",
}

Diagnose = Callable[[BackendProfile], NotFound]
ListModels = Callable[[BackendProfile], tuple[str, ...]]


def misconfiguration_kind(reason: str) -> str | None:
    for prefix, kind in _KINDS:
        if reason.startswith(prefix):
            return kind
    return None


def advise(
    reason: str,
    profile: BackendProfile,
    *,
    kind: str | None = None,
    diagnose: Diagnose | None = None,
    list_models: ListModels | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Advice:
    """What `reason` (a BackendMisconfigured reason, of `kind`) means for this profile,
    and the fix. Without a kind (a record written before kinds were kept) the reason's
    first words tell it."""
    kind = kind or misconfiguration_kind(reason)
    if not profile.local or profile.base_url is None:
        if kind == "not_found":
            return Advice(
                reason, "fix --model or `model` (`claudeloop config show` says where it is set)"
            )
        if kind == "unreachable":
            url = profile.env.get("ANTHROPIC_BASE_URL") or environ.get("ANTHROPIC_BASE_URL")
            if url:
                return Advice(f"nothing answers at {url}{_said(reason)}", "fix ANTHROPIC_BASE_URL")
            return Advice(
                f"nothing answers at Anthropic's API{_said(reason)}",
                "check the network (a proxy needs HTTPS_PROXY)",
            )
        if kind == "prompt_too_long":
            # The hosted model's window is what it is: the task is what must shrink.
            return Advice(
                reason,
                "give a shorter task (the plan or prompt; files it names are read as the "
                "model needs them), or split the work into smaller runs",
            )
        return Advice(reason)
    url = profile.base_url
    model = profile.model or "?"
    table = f"[profiles.{profile.name}]"
    preset = profile.preset or ""
    match kind:
        case "not_found":
            unknown = _UNKNOWN_MODEL.search(reason)
            named = _NAMED_MISSING.search(reason)
            # A server that says which model it does not know needs no asking which.
            found = (
                NotFound("model", unknown["model"])
                if unknown is not None
                else NotFound("model", named["model"])
                if named is not None
                else (diagnose or _diagnose)(profile)
            )
            if found.cause == "model":
                missing = found.model or model
                get = _GET_MODEL.get(preset, "make the server serve it").format(model=missing)
                field = "small_fast_model" if missing != profile.model else "model"
                # A server that answered with a name has a list of the names it knows.
                served = (list_models or _served)(profile) if named is not None else ()
                has = f", which serves {', '.join(repr(name) for name in served)}" if served else ""
                return Advice(
                    f"the model '{missing}' was not found on {url}{has}",
                    f"{get} or fix `{field}` in {table}",
                )
            if found.cause == "endpoint":
                said = f" ({found.said})" if found.said else ""
                return Advice(
                    f"{url} has no Anthropic Messages endpoint (POST /v1/messages answered "
                    f"404{said})",
                    f"fix `base_url` in {table} (the server's root, without /v1) or use a "
                    "server version that serves /v1/messages",
                )
            return Advice(
                f"the model '{model}' or the Messages endpoint was not found on {url}",
                f"check `model` and `base_url` in {table} "
                f"(`claudeloop doctor --profile {profile.name}` tells which)",
            )
        case "not_loaded":
            return Advice(
                f"the model '{model}' is not loaded on {url} (a router started with "
                "--no-models-autoload)",
                f'load it (`curl -X POST {url}/models/load -d \'{{"model": "{model}"}}\'`) '
                "or start llama-server without --no-models-autoload",
            )
        case "load_failed":
            return Advice(
                f"the model '{model}' failed to load on {url}{_said(reason)}",
                f"check the server's log and free memory, or pick a smaller `model` in {table}",
            )
        case "prompt_too_long":
            longer = _LONGER_CONTEXT.get(preset, "the server's context-size setting")
            return Advice(
                f"the prompt is too long for the context window of '{model}' on {url}",
                f"serve it with a longer context ({longer.format(model=model)}) and set "
                f"`context_window` in {table} so Claude Code compacts before the limit",
            )
        case "unreachable":
            start = _START_SERVER.get(preset, "the server").format(model=model)
            return Advice(
                f"nothing answers at {url}{_said(reason)}",
                f"start {start} or fix `base_url` in {table}",
            )
        case _:
            return Advice(reason, f"check {table} (`claudeloop doctor --profile {profile.name}`)")


# aiohttp's words through LiteLLM for the upstream it could not connect to.
_UPSTREAM_HOST = re.compile(r"cannot connect to host (?P<host>[^\s,]+)", re.IGNORECASE)


def upstream_advice(said: str, profile: BackendProfile, *, timed_out: bool) -> Advice:
    """A proxy that answers but cannot get an answer from its upstream: which model, the
    upstream it named, and where that upstream is configured (the proxy's model_list)."""
    model = f"'{profile.model}'" if profile.model else "the model"
    where = f"the {model} entry's `api_base` in the proxy's model_list"
    if timed_out:
        return Advice(
            f"the proxy at {profile.base_url} answers, but the upstream of {model} timed out (408)",
            "nothing to configure if it is a passing outage (a run waits for it and probes); "
            f"if it lasts, check that the server at {where} answers within the entry's "
            "`timeout`",
        )
    host = _UPSTREAM_HOST.search(said)
    upstream = f" at {host['host']}" if host else ""
    return Advice(
        f"the proxy at {profile.base_url} answers, but cannot connect to the upstream of "
        f"{model}{upstream}",
        f"start that server or fix {where} (a run waits for it and probes)",
    )


def proxy_budget_advice(profile: BackendProfile) -> Advice:
    """The proxy's own budget is spent: its admin raises it, or its period resets it."""
    model = f"'{profile.model}'" if profile.model else "the model"
    return Advice(
        f"the proxy at {profile.base_url} says the budget for {model} is spent",
        "raise or reset the budget on the proxy (the key's `max_budget`, or the "
        "deployment's `max_budget` in its model_list); a run backs off and probes until then",
    )


def _said(reason: str) -> str:
    """The server's words inside a reason, first sentence only, without the CLI's prefix."""
    found = _DETAIL.search(reason)
    if found is None:
        return ""
    detail = found.group("detail")
    if re.search(r"connection refused|econnrefused", detail, re.IGNORECASE):
        return " (connection refused)"
    detail = _API_ERROR.sub("", detail).split(". ")[0].rstrip(".")
    return f" ({detail})" if detail else ""


def _diagnose(profile: BackendProfile) -> NotFound:
    assert profile.base_url is not None
    models = tuple(m for m in (profile.model, profile.small_fast_model) if m)
    if not models:
        return NotFound("unknown")
    return why_not_found(
        profile.base_url, models, token=profile.env.get("ANTHROPIC_AUTH_TOKEN") or None
    )


def _served(profile: BackendProfile) -> tuple[str, ...]:
    assert profile.base_url is not None
    return served_models(profile.base_url, token=profile.env.get("ANTHROPIC_AUTH_TOKEN") or None)


def auth_fix(
    profile: BackendProfile | None, kind: AuthFailureKind = "refused", detail: str = ""
) -> str:
    """What mends refused credentials (exit 77), for the profile that sent them; an
    account the service will not serve (`kind`) has a fix of its own, which no new
    credentials bring. `detail` is what Claude Code said (it names the page to visit)."""
    said = first_line(detail, longest=200)
    quoted = f" (Claude Code said: {said})" if said else ""
    match kind:
        case "refused":
            pass
        case "account_on_hold":
            return (
                f"view the details or appeal at the page Claude Code named{quoted}; new "
                "credentials do not lift a hold, then `claudeloop resume`"
            )
        case "verification_required":
            return (
                f"verify the account at the page Claude Code named{quoted}, then "
                "`claudeloop resume`"
            )
        case "org_not_allowed":
            return (
                "use an Anthropic API key (ANTHROPIC_API_KEY) instead of the subscription "
                "login, or ask the organization's admin to allow Claude Code access"
            )
        case "cloud_credentials":
            return (
                f"check or refresh the cloud provider's credentials{quoted} (Bedrock: "
                "`aws sso login` or AWS_PROFILE; Vertex: `gcloud auth application-default "
                "login`), then `claudeloop resume`"
            )
        case _:
            assert_never(kind)
    if profile is not None and profile.name != DEFAULT_BACKEND.name:
        table = f"[profiles.{profile.name}]"
        # A LiteLLM proxy passes its upstream's 401 on as its own (measured, 1.108).
        upstream = (
            " (or, if its upstream refused, the api_key in the proxy's model_list)"
            if profile.preset == "litellm"
            else ""
        )
        variable = profile.credentials.removeprefix("auth token from $")
        if variable != profile.credentials:
            return f"replace the token in ${variable}, which {table} reads{upstream}"
        if profile.credentials.startswith("auth token from "):
            return f"replace `auth_token` in {table}{upstream}"
        if profile.preset == "llamacpp":
            return (
                "the server wants the key it was started with (`llama-server --api-key`): "
                f"set `auth_token_env` or `auth_token` in {table}"
            )
        if profile.local:
            return f"the server wants a token: set `auth_token_env` or `auth_token` in {table}"
    return (
        "log in again with `claudeloop login`, or replace CLAUDE_CODE_OAUTH_TOKEN (a token "
        "from `claudeloop claude setup-token`) or ANTHROPIC_API_KEY"
    )


# Every way to give Claude Code credentials, each named by a command that exists after
# `pip install claudeloop` (which puts no `claude` on PATH) or a variable.
PROVIDE_CREDENTIALS = (
    "run `claudeloop login`, set ANTHROPIC_API_KEY, set CLAUDE_CODE_OAUTH_TOKEN to a token "
    "from `claudeloop claude setup-token`, set CLAUDE_CODE_USE_BEDROCK, _VERTEX or "
    "_FOUNDRY for a cloud provider, or select a profile with a base_url for a local server"
)


def no_credentials(config_directory: str) -> str:
    """The one line a run or doctor says when Claude Code has no credentials at all."""
    where = f"no login in {config_directory}" if config_directory else "no login"
    return f"no Claude credentials found (none in the environment, {where}): {PROVIDE_CREDENTIALS}"


def advice_for(capacity: CapacityState, said: str, profile: BackendProfile | None) -> Advice | None:
    """The one place a state the backend or the credentials explain is given its words
    for the profile in use: a run's reason (`ProfileAdvisor`) and doctor's model check
    (application/model_check.py) say these. `said`: the reason, or the server's words.
    None for a state no profile changes the words of."""
    local = profile is not None and profile.local
    match capacity:
        case BackendMisconfigured(kind=kind):
            return advise(said, profile, kind=kind) if profile is not None else Advice(said)
        case AuthenticationFailed(kind=kind, detail=detail):
            return Advice(said, auth_fix(profile, kind, detail))
        case CreditsExhausted(source="proxy_budget") if profile is not None and local:
            return proxy_budget_advice(profile)
        case WindowExhausted(rate_limit_type="upstream_unreachable") if profile and local:
            return upstream_advice(said, profile, timed_out=False)
        case WindowExhausted(rate_limit_type="timeout") if profile is not None and local:
            return upstream_advice(said, profile, timed_out=True)
    return None


ProfileInUse = Callable[[str | None], BackendProfile | None]


def profile_in_use(backend: Backend, detours: Callable[[str], Backend] | None) -> ProfileInUse:
    """The profile of the run's own backend, or of the detour named."""

    def profile(detour: str | None) -> BackendProfile | None:
        if detour is None or detours is None:
            return backend.profile
        try:
            return detours(detour).profile
        except UsageError:
            return backend.profile

    return profile


class ProfileAdvisor:
    """The `Advisor` port: the one-line fix for the profile in use, the run's own or a
    switch-profile detour's (adapters/backend_advice.py words them)."""

    def __init__(self, profile_of: ProfileInUse) -> None:
        self._profile_of = profile_of

    def advice(
        self,
        reason: str,
        capacity: AuthenticationFailed | BackendMisconfigured,
        *,
        detour: str | None,
    ) -> Advice:
        """The `Advising` port: the problem and its fix, typed."""
        return advice_for(capacity, reason, self._profile_of(detour)) or Advice(reason)

    def advised(
        self,
        reason: str,
        capacity: AuthenticationFailed | BackendMisconfigured,
        *,
        detour: str | None,
    ) -> str:
        return self.advice(reason, capacity, detour=detour).line
