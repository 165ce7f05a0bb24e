"""A small HTTP server on 127.0.0.1 that keeps what apprise's `json://` service posts."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Receiver:
    port: int
    # Each notification as posted: {"title", "message", "type", ...}, "path", and
    # "click": the X-Click header an ntfy notification's click action travels in.
    received: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200

    def url(self, path: str = "notify") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def titles(self) -> list[str]:
        return [str(item.get("title", "")) for item in self.received]


@contextmanager
def notification_receiver(status: int = 200) -> Iterator[Receiver]:
    """Answers every POST with `status` and keeps its JSON body."""
    received: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                body = {"unreadable": True}
            with lock:
                received.append({**body, "path": self.path, "click": self.headers.get("X-Click")})
            self.send_response(receiver.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(port=int(server.server_address[1]), received=received, status=status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
