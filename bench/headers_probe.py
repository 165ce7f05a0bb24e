"""Measure what the bundled Claude Code CLI makes of each `anthropic-ratelimit-unified-*`
header it reads beyond the 5h/7d/overage ones (issue 26, item 2).

A loopback HTTP server on 127.0.0.1 answers `/v1/messages` with a short text answer (or
a 429), under the headers of one case; the real CLI runs `claude -p --output-format
stream-json --verbose` against it, and this prints, per case, the `rate_limit_event`
lines, every `system` message but `init`, the result's fields, the exit code, stderr,
and how many requests the CLI sent (a retry shows as a second request).

    .venv/bin/python -m bench.headers_probe            # every case, a table of facts
    .venv/bin/python -m bench.headers_probe grace_200  # one case, its whole stream

It prints facts; it never fails. The figures are in docs/architecture/claude-code-signals.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import claude_agent_sdk

P = "anthropic-ratelimit-unified-"
CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


def _base(status: str, reset: int, *, five: str = "allowed", util: float = 0.4) -> dict[str, str]:
    return {
        P + "status": status,
        P + "reset": str(reset),
        P + "representative-claim": "five_hour",
        P + "5h-status": five,
        P + "5h-utilization": f"{util:g}",
        P + "5h-reset": str(reset),
        P + "7d-status": "allowed",
        P + "7d-utilization": "0.05",
        P + "7d-reset": str(reset + 6 * 86400),
    }


@dataclass(frozen=True)
class Case:
    name: str
    status: int
    headers: dict[str, str]
    credentials: str = "oauth"
    # Headers of every request after the first (None: the same as the first).
    later: dict[str, str] | None = None
    later_status: int | None = None
    env: dict[str, str] = field(default_factory=dict)


def cases(now: int) -> list[Case]:
    reset = now + 3600
    rejected = _base("rejected", reset, five="rejected", util=1.0)
    allowed = _base("allowed", reset)
    slow = {
        P + "slow-offer": "treatment",
        P + "slow-max-wait": "900",
        P + "slow-retry-after": "30",
    }
    slow_active = {
        P + "slow-status": "active",
        P + "slow-budget-utilization": "0.25",
        P + "slow-budget-reset": str(reset + 86400),
    }
    grace = {
        P + "grace-status": "active",
        P + "grace-5h-utilization": "0.3",
        P + "grace-7d-utilization": "0",
    }
    return [
        Case("baseline_200", 200, allowed),
        Case("baseline_429", 429, rejected),
        Case("slow_offer_429", 429, rejected | slow),
        Case("slow_offer_control_429", 429, rejected | slow | {P + "slow-offer": "control"}),
        Case("slow_offer_200", 200, allowed | slow),
        Case("slow_status_200", 200, allowed | slow_active),
        Case("slow_status_429", 429, rejected | slow_active | {P + "slow-status": "slot_busy"}),
        Case("slow_budget_exhausted_429", 429, rejected | {P + "slow-status": "budget_exhausted"}),
        Case("grace_200", 200, allowed | grace),
        Case("grace_eligible_200", 200, allowed | grace | {P + "grace-status": "eligible"}),
        Case(
            "grace_7d_200",
            200,
            allowed | grace | {P + "grace-5h-utilization": "0", P + "grace-7d-utilization": "0.2"},
        ),
        Case("grace_429", 429, rejected | grace),
        Case(
            "grace_window_rejected_200",
            200,
            _base("allowed", reset, five="rejected", util=1.1) | grace,
        ),
        Case("window_rejected_200", 200, _base("allowed", reset, five="rejected", util=1.1)),
        Case("grace_overage_200", 200, rejected | grace | {P + "overage-status": "allowed"}),
        Case("fallback_200", 200, allowed | {P + "fallback": "available"}),
        Case("fallback_429", 429, rejected | {P + "fallback": "available"}),
        Case("upgrade_paths_200", 200, allowed | {P + "upgrade-paths": "max_5x, max_20x"}),
        Case("upgrade_paths_429", 429, rejected | {P + "upgrade-paths": "max_5x,max_20x"}),
        Case(
            "daily_cap_429",
            429,
            rejected
            | {
                P + "representative-claim": "overage",
                P + "overage-status": "rejected",
                P + "overage-disabled-reason": "org_level_disabled",
                P + "overage-daily-cap-paused": "true",
            },
        ),
        Case(
            "daily_cap_reset_429",
            429,
            rejected
            | {
                P + "representative-claim": "overage",
                P + "overage-status": "rejected",
                P + "overage-disabled-reason": "org_level_disabled_until",
                P + "overage-reset": str(now + 7200),
                P + "overage-daily-cap-paused": "true",
            },
        ),
        Case("daily_cap_200", 200, allowed | {P + "overage-daily-cap-paused": "true"}),
        Case(
            "daily_cap_429_api_key",
            429,
            rejected | {P + "overage-daily-cap-paused": "true"},
            credentials="api_key",
        ),
        Case("grace_200_api_key", 200, allowed | grace, credentials="api_key"),
        Case("slow_offer_429_retries", 429, rejected | slow, env={"CLAUDE_CODE_MAX_RETRIES": "2"}),
    ]


def _sse(text: str) -> bytes:
    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    start: dict[str, Any] = {
        "id": "msg_probe",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    parts = [
        event("message_start", {"type": "message_start", "message": start}),
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 3},
            },
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    return "".join(parts).encode()


class _Server(ThreadingHTTPServer):
    case: Case
    requests: list[dict[str, str]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        if "count_tokens" in self.path:
            self._send(200, {}, json.dumps({"input_tokens": 10}).encode(), "application/json")
            return
        case = self.server.case
        first = not self.server.requests
        self.server.requests.append({k.lower(): v for k, v in self.headers.items()})
        headers = case.headers if first or case.later is None else case.later
        status = case.status if first or case.later_status is None else case.later_status
        if status == 200:
            self._send(200, headers, _sse("probe answer"), "text/event-stream")
        else:
            body = {
                "type": "error",
                "error": {"type": "rate_limit_error", "message": "rate limited"},
            }
            self._send(status, headers, json.dumps(body).encode(), "application/json")

    def _send(self, status: int, headers: dict[str, str], body: bytes, media: str) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-type", media)
        self.send_header("request-id", "req_probe")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@dataclass
class Observation:
    case: Case
    exit_code: int
    lines: list[dict[str, Any]]
    stderr: str
    requests: list[dict[str, str]]


def observe(case: Case) -> Observation:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.case = case
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with tempfile.TemporaryDirectory() as home:
            env = {
                k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))
            }
            env |= {
                "HOME": home,
                "CLAUDE_CONFIG_DIR": str(Path(home) / ".claude"),
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0",
                "IS_SANDBOX": "1",
            }
            if case.credentials == "oauth":
                env["CLAUDE_CODE_OAUTH_TOKEN"] = "probe-oauth-token-not-real"
            else:
                env["ANTHROPIC_API_KEY"] = "probe-api-key-not-real"
            env |= case.env
            done = subprocess.run(
                [
                    str(CLI),
                    "-p",
                    "say hi",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--model",
                    "claude-sonnet-4-5",
                    "--permission-mode",
                    "bypassPermissions",
                ],
                env=env,
                cwd=home,
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
    finally:
        server.shutdown()
    lines = []
    for line in done.stdout.splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            lines.append({"unparsed": line})
    return Observation(case, done.returncode, lines, done.stderr.strip(), server.requests)


_RESULT_FIELDS = ("subtype", "is_error", "api_error_status", "terminal_reason", "result")


def summary(seen: Observation) -> dict[str, Any]:
    events = [
        line["rate_limit_info"] for line in seen.lines if line.get("type") == "rate_limit_event"
    ]
    for info in events:
        info.pop("unifiedWindows", None)
    systems = [
        {k: v for k, v in line.items() if k not in ("uuid", "session_id")}
        for line in seen.lines
        if line.get("type") == "system" and line.get("subtype") != "init"
    ]
    result = next((line for line in seen.lines if line.get("type") == "result"), {})
    errors = [
        line["message"].get("content")
        for line in seen.lines
        if line.get("type") == "assistant" and line.get("error")
    ]
    return {
        "case": seen.case.name,
        "exit": seen.exit_code,
        "requests": len(seen.requests),
        "usage_limit_request_header": sorted(
            {r.get("anthropic-usage-limit", "") for r in seen.requests} - {""}
        ),
        "rate_limit_events": events,
        "system": systems,
        "assistant_errors": [
            line.get("error")
            for line in seen.lines
            if line.get("type") == "assistant" and line.get("error")
        ],
        "error_text": errors,
        "result": {k: result.get(k) for k in _RESULT_FIELDS},
        "stderr": seen.stderr[-400:],
    }


def main(argv: list[str]) -> None:
    version = (CLI.parent / "claude.version").read_text().strip()
    print(f"CLI {version} ({CLI})")
    now = int(time.time())
    chosen = [c for c in cases(now) if not argv or c.name in argv]
    for case in chosen:
        seen = observe(case)
        if argv:
            for line in seen.lines:
                print(json.dumps(line))
        print(json.dumps(summary(seen), indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
