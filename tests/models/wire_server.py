"""A real local HTTP server for wire-level provider fakes (used by the Anthropic, Gemini,
Ollama tests).

The Anthropic and Google SDKs send through ``httpx2``, which respx does not patch, so these
provider tests talk to a threaded HTTP server on 127.0.0.1 instead: every SDK code path (request
building, SSE/NDJSON parsing, error classes) runs for real. Tests script replies in order and
assert on the recorded requests. A test module declares the fixture it needs with
``yield from serve()``.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer; ``drop`` closes the connection without answering."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def sse(events: Iterable[tuple[str | None, Any]]) -> bytes:
    """Server-sent events: ``(event name or None, JSON data)`` pairs."""
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def ndjson(lines: Iterable[Any]) -> bytes:
    """Newline-delimited JSON."""
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


class FakeServer:
    """Scripted replies (first in, first out) and recorded requests."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.block_on_close = False
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reply(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def json(self, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        hdrs = {"content-type": "application/json", **(headers or {})}
        self.reply(Reply(status=status, body=json.dumps(data).encode(), headers=hdrs))

    def sse(self, events: Iterable[tuple[str | None, Any]]) -> None:
        self.reply(Reply(body=sse(events), headers={"content-type": "text/event-stream"}))

    def ndjson(self, lines: Iterable[Any], status: int = 200) -> None:
        hdrs = {"content-type": "application/x-ndjson"}
        self.reply(Reply(status=status, body=ndjson(lines), headers=hdrs))

    def drop(self) -> None:
        self.reply(Reply(drop=True))

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    def bodies(self) -> list[Any]:
        return [r.json() for r in self.requests]


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.requests.append(Recorded(self.command, self.path, headers, body))
            try:
                reply = server.replies.popleft()
            except IndexError:
                reply = Reply(status=599, body=b'{"error": "no scripted reply left"}')
            if reply.drop:
                self.close_connection = True
                return
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()

        do_GET = do_POST = _serve

    return Handler


def serve() -> Iterator[FakeServer]:
    """A running fake provider server for the length of a fixture; ``url`` is its base URL."""
    fake = FakeServer()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def refused_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
