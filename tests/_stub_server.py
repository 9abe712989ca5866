"""A tiny OpenAI-compatible stub server for adapter tests and the overhead benchmark.

A threading ``http.server`` on 127.0.0.1 serving ``POST /v1/chat/completions`` and
``GET /v1/models``. The behaviour is chosen per request by the ``model`` field, so one server
serves every case at once:

    ok        200, text "reply to: <last user message>", usage with cached tokens
    length    200, finish_reason "length"
    error500  500 (with ``retry-after-ms: 10`` so the client's retries are quick)
    error429  429 (same), then ok from the third request of that model on
    hang      accepts the request and answers nothing for ``hang_s`` seconds
    reset     sends headers and half a body, then resets the connection (RST)
    retry_after  429 with ``Retry-After: 1`` (seconds) on the first request of that model, then ok
    error503  503 always (with ``retry-after-ms: 10``)
    truncated 200 with a JSON body cut in the middle
    renamed   200, but the reply names another model (``renamed-by-server``)
    scripted  200; the reply text is ``StubServer.script(last user message)`` (a callable set by the test)
    lines     200, streamed one line an event ``line_s`` apart (the scripted text), the first after
              ``first_s``; ``lines_sent`` counts what was written before the client closed the
              connection. With ``hold_at = k`` the server, having written k lines, waits for
              ``release`` (a ``threading.Event``, at most ``hold_s`` seconds) before the rest:
              a test sets it once it has seen what must come while the model is still writing.
              With ``fault_at = k`` the stream goes wrong after k lines, as ``fault`` says: ``reset``
              (half of the next line, then the connection reset) or ``garbage`` (an event that is
              not JSON). With ``quiet = "reasoning"`` (``"tool_calls"``, ``"empty"``) it sends, before
              line ``quiet_at`` (default 0), ``quiet_events`` events with no text, ``line_s`` apart (a reasoning model's
              ``reasoning_content``, tool-call deltas, empty deltas); ``quiet_sent`` counts those
              written. A held stream (``hold_at``) watches its connection: a client that closes it
              ends the stream (``aborted["lines"]``)
    sim       200; the reply is the seeded simulated executor's (``sim:perfect``) to the whole request:
              a guard's chunk prompts answered right, as a model that executes them exactly would
    simpaper  200; the reply is ``sim:paper``'s (seed 0) to the whole request, the request's ``seed`` and
              ``temperature`` read as the simulator's settings: a model that errs as the paper's
              models do, the same reply to the same request from any client (Inspect, lm-eval, ours)

Any model that answers 200 with a text (ok, length, scripted, sim) answers ``"stream": true`` with
server-sent events: the role, the text in two content deltas, the finish reason, ``[DONE]``.

A request with ``"stream": true`` to any other model is answered as server-sent events (three
content chunks, a finish chunk, ``[DONE]``). ``StubServer.headers`` keeps each request's headers.

Hostile shapes and behaviours (the reply text is the scripted one when a script is set, else
"reply to: <last user message>"):

    parts            content as a list of parts: a ``thinking`` part, then the text in two ``text`` parts
    number           content a JSON number, written as ``StubServer.number`` (default 0.10000000000000000001)
    null             content null
    content_object   content an object
    choices_object   ``choices`` an object, not a list
    choices_empty    ``choices: []``
    no_choices       a body without ``choices``
    list_body        a JSON list as the body
    usage_garbage    ``usage.prompt_tokens`` is ``"lots"``
    error200         200 whose body is ``{"error": {"message": "model overloaded"}}``
    error400         400 ``{"error": {"message": "context length exceeded: 9000 > 8192 tokens"}}`` (not retried)
    html502          502 with an HTML body (retried, quick)
    html200          200 with an HTML body
    invalid_json     200 with ``{"choices": [``...garbage
    drip             headers, then a valid body one byte every ``drip_s`` seconds
    drip_headers     the status line and headers one byte every ``drip_s`` seconds
    hang_forever     accepts the request and answers nothing until the server stops
    reset_early      resets the connection (RST) before sending anything

``StubServer.aborted[model]`` counts drips that stopped because the client closed the socket.

``StubServer.down = True`` makes every request answer 503 until it is set back to False (a server
that fails mid-run and recovers).
"""

from __future__ import annotations

import json
import select
import socket
import struct
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
        with self.server.lock:
            self.server.headers.append(dict(self.headers))
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
            srv.headers.append(dict(self.headers))
        retry_fast = {"retry-after-ms": "10"}
        if srv.down or model == "error503":
            self._send(503, {"error": {"message": "unavailable"}}, retry_fast)
        elif model == "reset":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-stub", "choi')
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        elif model == "retry_after" and n <= 1:
            self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "1"})
        elif model == "truncated":
            data = json.dumps(_completion(model, "S1 = 1", "stop")).encode()[:40]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif model == "renamed":
            self._send(200, _completion("renamed-by-server", "reply", "stop"))
        elif model == "scripted":
            last = body["messages"][-1]["content"] if body.get("messages") else ""
            self._reply(body, model, srv.script(last) if srv.script else "", "stop")
        elif model == "sim":
            self._reply(body, model, _SIM.complete(body.get("messages") or []).text, "stop")
        elif model == "simpaper":
            self._reply(body, model, _SIM_PAPER.complete(body.get("messages") or [], _settings(body)).text, "stop")
        elif model == "lines" and body.get("stream"):
            self._lines(model, self._text(body))
        elif model == "lines":
            self._reply(body, model, self._text(body), "stop")
        elif model == "error500":
            self._send(500, {"error": {"message": "boom"}}, retry_fast)
        elif model == "error429" and n <= 2:
            self._send(429, {"error": {"message": "slow down"}}, retry_fast)
        elif model == "hang":
            srv.stopping.wait(srv.hang_s)
            self.close_connection = True
        elif model in _HOSTILE:
            self._hostile(model, body)
        elif body.get("stream"):
            self._stream(model, self._text(body))
        else:
            last = body["messages"][-1]["content"] if body.get("messages") else ""
            finish = "length" if model == "length" else "stop"
            self._reply(body, model, f"reply to: {last}", finish)

    def _reply(self, body: dict[str, Any], model: str, text: str, finish: str) -> None:
        """A 200 chat completion, or its server-sent events when the request asks for a stream."""
        if not body.get("stream"):
            self._send(200, _completion(model, text, finish))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        k = len(text) // 2
        base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        deltas = [({"role": "assistant", "content": ""}, None), ({"content": text[:k]}, None),
                  ({"content": text[k:]}, None), ({}, finish)]
        for delta, why in deltas:
            event = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": why}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


    def _lines(self, model: str, text: str) -> None:
        """The text streamed one line an event, ``line_s`` apart; ``lines_sent`` counts the lines
        written before the client closed the connection (``aborted["lines"]`` counts the closes)."""
        srv = self.server
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {"id": "chatcmpl-lines", "object": "chat.completion.chunk", "created": 0, "model": model}
        try:
            self.wfile.write(f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': {'role': 'assistant'}}]})}\n\n".encode())
            self.wfile.flush()  # the headers and the role now, the first token after first_s
            time.sleep(srv.first_s)
            for i, line in enumerate(text.splitlines(keepends=True)):
                if i == srv.quiet_at and srv.quiet:
                    self._quiet(model, base)
                if i == srv.hold_at and not self._hold():
                    raise ConnectionResetError("the client closed the connection while the stream was held")
                if i == srv.fault_at:
                    self._fault(base, line)
                    return
                event = {**base, "choices": [{"index": 0, "delta": {"content": line}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                with srv.lock:
                    srv.lines_sent[model] += 1
                time.sleep(srv.line_s)
            end = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 50, "completion_tokens": len(text) // 4}}
            self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            with srv.lock:
                srv.aborted[model] += 1

    def _quiet(self, model: str, base: dict[str, Any]) -> None:
        """``quiet_events`` events with no text (``quiet``), ``line_s`` apart."""
        srv = self.server
        for _ in range(srv.quiet_events):
            event = {**base, "choices": [{"index": 0, "delta": _QUIET[srv.quiet or "empty"], "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            with srv.lock:
                srv.quiet_sent[model] += 1
            time.sleep(srv.line_s)

    def _hold(self) -> bool:
        """Wait for ``release`` (at most ``hold_s``); False as soon as the client closes the connection."""
        srv = self.server
        end = time.monotonic() + srv.hold_s
        while not srv.release.is_set() and time.monotonic() < end:
            ready, _, _ = select.select([self.connection], [], [], 0.02)
            if ready:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return False
                except OSError:
                    return False
        return True

    def _fault(self, base: dict[str, Any], line: str) -> None:
        """Break a ``lines`` stream as ``fault`` says, instead of writing ``line``."""
        if self.server.fault == "garbage":
            self.wfile.write(b"data: {\"choices\": [{\"delta\": oops\n\n")
            self.wfile.flush()
            return
        half = {**base, "choices": [{"index": 0, "delta": {"content": line[: len(line) // 2]}, "finish_reason": None}]}
        self.wfile.write(f"data: {json.dumps(half)}\n\n".encode())
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    def _text(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"] if body.get("messages") else ""
        return self.server.script(last) if self.server.script else f"reply to: {last}"

    def _stream(self, model: str, text: str) -> None:
        """A streamed reply (SSE): the text in three content chunks, then the finish chunk and [DONE]."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        k = max(1, len(text) // 3)
        deltas = [{"role": "assistant", "content": ""}] + [{"content": text[i:i + k]} for i in range(0, len(text), k)]
        for i, delta in enumerate([*deltas, {}]):
            finish = "stop" if i == len(deltas) else None
            event = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": model,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _raw(self, status: int, data: bytes, ctype: str = "application/json", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drip(self, model: str, data: bytes) -> None:
        """Send ``data`` one byte every ``drip_s`` seconds; stop when the client goes away."""
        self.close_connection = True
        self.wfile.flush()
        srv = self.server
        try:
            for i in range(len(data)):
                if srv.stopping.wait(srv.drip_s):
                    return
                self.connection.sendall(data[i : i + 1])
        except OSError:
            with srv.lock:
                srv.aborted[model] += 1

    def _hostile(self, model: str, body: dict[str, Any]) -> None:
        srv = self.server
        text = self._text(body)
        reply = _completion(model, text, "stop")
        message = reply["choices"][0]["message"]
        if model == "parts":
            k = len(text) // 2
            message["content"] = [{"type": "thinking", "thinking": "let me see: 42"},
                                  {"type": "text", "text": text[:k]}, {"type": "text", "text": text[k:]}]
        elif model == "number":
            message["content"] = "@NUMBER@"
            data = json.dumps(reply).replace('"@NUMBER@"', srv.number).encode()
            self._raw(200, data)
            return
        elif model == "null":
            message["content"] = None
        elif model == "content_object":
            message["content"] = {"text": text}
        elif model == "choices_object":
            reply["choices"] = {"0": reply["choices"][0]}
        elif model == "choices_empty":
            reply["choices"] = []
        elif model == "no_choices":
            del reply["choices"]
        elif model == "list_body":
            reply = [reply]  # type: ignore[assignment]
        elif model == "usage_garbage":
            reply["usage"]["prompt_tokens"] = "lots"
        elif model == "error200":
            reply = {"error": {"message": "model overloaded", "type": "server_error", "code": 503}}
        elif model == "error400":
            self._send(400, {"error": {"message": "context length exceeded: 9000 > 8192 tokens"}})
            return
        elif model in ("html502", "html200"):
            page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
            status = 502 if model == "html502" else 200
            self._raw(status, page, "text/html", {"retry-after-ms": "10"})
            return
        elif model == "invalid_json":
            self._raw(200, b'{"choices": [{"message": {"content": "S1 = 1"}}, oops')
            return
        elif model == "drip":
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self._drip(model, data)
            return
        elif model == "drip_headers":
            data = json.dumps(reply).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
            self._drip(model, head.encode() + data)
            return
        elif model == "hang_forever":
            srv.stopping.wait()
            self.close_connection = True
            return
        elif model == "reset_early":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        self._send(200, reply)  # type: ignore[arg-type]


_QUIET: dict[str, dict[str, Any]] = {
    "reasoning": {"reasoning_content": "thinking about the next step "},
    "tool_calls": {"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]},
    "empty": {},
}
"""The delta of each kind of event with no text (``StubServer.quiet``)."""


_HOSTILE = frozenset({
    "parts", "number", "null", "content_object", "choices_object", "choices_empty", "no_choices", "list_body",
    "usage_garbage", "error200", "error400", "html502", "html200", "invalid_json", "drip", "drip_headers",
    "hang_forever", "reset_early",
})
"""The hostile models (see the module docstring)."""


def _sim() -> Any:
    from stepguard.adapters.models.sim import SimulatedExecutor

    return SimulatedExecutor(preset="perfect", seed=0)


_SIM = _sim()


def _sim_paper() -> Any:
    from stepguard.adapters.models.sim import SimulatedExecutor

    return SimulatedExecutor(preset="paper", seed=0)


_SIM_PAPER = _sim_paper()


def _settings(body: dict[str, Any]) -> Any:
    """A request's seed and temperature as the simulator's settings (``0`` and ``0.0`` alike: clients
    write a float either way)."""
    from stepguard.model import GenerationSettings

    temperature, seed = body.get("temperature"), body.get("seed")
    return GenerationSettings(temperature=None if temperature is None else float(temperature), seed=None if seed is None else int(seed))


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
    request_queue_size = 128  # 32 clients connecting at once overflowed the default 5: 1 s SYN retries

    def __init__(self, hang_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.stopping = threading.Event()
        self.hang_s = hang_s
        self.down = False
        self.script: Any = None
        self.drip_s = 1.0
        self.number = "0.10000000000000000001"
        self.aborted: Counter[str] = Counter()
        self.lines_sent: Counter[str] = Counter()
        self.line_s = 0.05
        self.first_s = 0.0
        self.hold_at: int | None = None
        self.hold_s = 10.0
        self.release = threading.Event()
        self.fault_at: int | None = None
        self.fault = "reset"
        self.quiet: str | None = None
        self.quiet_at = 0
        self.quiet_events = 200
        self.quiet_sent: Counter[str] = Counter()


class StubServer:
    """Run the stub in a background thread: ``with StubServer() as stub: stub.base_url``.

    Args:
        hang_s: how long the ``hang`` model holds a request, seconds.
        drip_s: seconds between the bytes of the ``drip`` models.
    """

    def __init__(self, hang_s: float = 10.0, drip_s: float = 1.0) -> None:
        self._server = _Server(hang_s)
        self._server.drip_s = drip_s
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

    @property
    def headers(self) -> list[dict[str, str]]:
        """The headers of each request received so far (GET and POST)."""
        return self._server.headers

    @property
    def line_s(self) -> float:
        """Seconds between the ``lines`` model's lines."""
        return self._server.line_s

    @line_s.setter
    def line_s(self, seconds: float) -> None:
        self._server.line_s = seconds

    @property
    def first_s(self) -> float:
        """Seconds before the ``lines`` model's first line (its time to first token)."""
        return self._server.first_s

    @first_s.setter
    def first_s(self, seconds: float) -> None:
        self._server.first_s = seconds

    @property
    def hold_at(self) -> int | None:
        """Lines the ``lines`` model writes before it waits for :attr:`release`; ``None``: never waits."""
        return self._server.hold_at

    @hold_at.setter
    def hold_at(self, lines: int | None) -> None:
        self._server.hold_at = lines

    @property
    def fault_at(self) -> int | None:
        """Lines the ``lines`` model writes before its stream goes wrong (:attr:`fault`); ``None``: never."""
        return self._server.fault_at

    @fault_at.setter
    def fault_at(self, lines: int | None) -> None:
        self._server.fault_at = lines

    @property
    def fault(self) -> str:
        """How a ``lines`` stream goes wrong at :attr:`fault_at`: ``reset`` or ``garbage``."""
        return self._server.fault

    @fault.setter
    def fault(self, how: str) -> None:
        self._server.fault = how

    @property
    def quiet(self) -> str | None:
        """Events with no text the ``lines`` model sends before its first line: ``reasoning``,
        ``tool_calls``, ``empty``, or ``None`` (none)."""
        return self._server.quiet

    @quiet.setter
    def quiet(self, kind: str | None) -> None:
        self._server.quiet = kind

    @property
    def quiet_at(self) -> int:
        """Lines the ``lines`` model writes before its events with no text (:attr:`quiet`)."""
        return self._server.quiet_at

    @quiet_at.setter
    def quiet_at(self, lines: int) -> None:
        self._server.quiet_at = lines

    @property
    def quiet_events(self) -> int:
        """How many events with no text (:attr:`quiet`) the ``lines`` model sends."""
        return self._server.quiet_events

    @quiet_events.setter
    def quiet_events(self, n: int) -> None:
        self._server.quiet_events = n

    @property
    def quiet_sent(self) -> Counter[str]:
        """Events with no text written, per model name (counted before the client's close is seen)."""
        return self._server.quiet_sent

    @property
    def hold_s(self) -> float:
        """Most seconds a held ``lines`` stream waits for :attr:`release`."""
        return self._server.hold_s

    @hold_s.setter
    def hold_s(self, seconds: float) -> None:
        self._server.hold_s = seconds

    @property
    def release(self) -> threading.Event:
        """Set it to let a held ``lines`` stream go on (see :attr:`hold_at`)."""
        return self._server.release

    @property
    def lines_sent(self) -> Counter[str]:
        """Lines the ``lines`` model wrote, per model name."""
        return self._server.lines_sent

    @property
    def aborted(self) -> Counter[str]:
        """Drips stopped because the client closed the socket, per model name."""
        return self._server.aborted

    @property
    def number(self) -> str:
        """The JSON number literal the ``number`` model sends as content."""
        return self._server.number

    @number.setter
    def number(self, literal: str) -> None:
        self._server.number = literal

    @property
    def down(self) -> bool:
        """While True, every request is answered 503."""
        return self._server.down

    @down.setter
    def down(self, value: bool) -> None:
        self._server.down = value

    @property
    def script(self) -> Any:
        """``callable(last user message) -> reply text`` for the ``scripted`` model."""
        return self._server.script

    @script.setter
    def script(self, fn: Any) -> None:
        self._server.script = fn

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
