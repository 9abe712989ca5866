"""A tiny OpenAI-compatible stub server for adapter tests and the overhead benchmark.

A threading ``http.server`` on 127.0.0.1 serving ``POST /v1/chat/completions`` and
``GET /v1/models``. The behaviour is chosen per request by the ``model`` field, so one server
serves every case at once:

    ok        200, text "reply to: <last user message>", usage with cached tokens
    length    200, finish_reason "length"
    error500  500 (with ``retry-after-ms: 10`` so the client's retries are quick)
    error429  429 (same), then ok from the third request of that model on
    hang      accepts the request and answers nothing for ``hang_s`` seconds
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls between header and body writes
    wbufsize = 1 << 16  # headers and body leave in one write (flushed after each request)
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "ok", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": "not found"}})
            return
        model = body.get("model", "ok")
        srv = self.server
        with srv.lock:
            srv.counts[model] += 1
            n = srv.counts[model]
            srv.requests.append(body)
        retry_fast = {"retry-after-ms": "10"}
        if model == "error500":
            self._send(500, {"error": {"message": "boom"}}, retry_fast)
        elif model == "error429" and n <= 2:
            self._send(429, {"error": {"message": "slow down"}}, retry_fast)
        elif model == "hang":
            srv.stopping.wait(srv.hang_s)
            self.close_connection = True
        else:
            last = body["messages"][-1]["content"] if body.get("messages") else ""
            finish = "length" if model == "length" else "stop"
            self._send(200, _completion(model, f"reply to: {last}", finish))


def _completion(model: str, text: str, finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 5,
            "total_tokens": 17,
            "prompt_tokens_details": {"cached_tokens": 8},
        },
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, hang_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.requests: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        self.hang_s = hang_s


class StubServer:
    """Run the stub in a background thread: ``with StubServer() as stub: stub.base_url``.

    Args:
        hang_s: how long the ``hang`` model holds a request, seconds.
    """

    def __init__(self, hang_s: float = 10.0) -> None:
        self._server = _Server(hang_s)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def counts(self) -> Counter[str]:
        """Requests received so far, per model name."""
        return self._server.counts

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far."""
        return self._server.requests

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
