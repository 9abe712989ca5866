"""The proxy's request-size limit (stepguard.serve._limits.BodyLimit), over real HTTP: a body over the
limit is answered 413 whether its size is declared or streamed in chunks, nothing reaches the upstream,
a body within it passes unchanged (guarded and pass-through), and the token is checked first."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest

from tests._paths import ROOT

pytest.importorskip("starlette")

from stepguard.serve import BackgroundServer, Upstream, create_app, load_procedure_folder  # noqa: E402
from tests._stub_server import StubServer  # noqa: E402

pytestmark = pytest.mark.slow

PROCS = load_procedure_folder(ROOT / "examples")
LIMIT = 4096
TOKEN = "limit-token"


@pytest.fixture
def served() -> Iterator[tuple[BackgroundServer, StubServer]]:
    """A proxy with a token and a limit of LIMIT bytes, on the stub (model ``ok``)."""
    with StubServer(hang_s=1.0) as stub, \
            BackgroundServer(create_app(Upstream(f"{stub.base_url}#ok"), PROCS, token=TOKEN, max_body_bytes=LIMIT)) as proxy:
        yield proxy, stub


def _post(server: BackgroundServer, content: bytes | Iterator[bytes], token: str = TOKEN) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", content=content, timeout=30,
                      headers={"Authorization": f"Bearer {token}", "content-type": "application/json"})


def _chat(pad: int) -> bytes:
    return json.dumps({"model": "ok", "messages": [{"role": "user", "content": "x" * pad}]}).encode()


def test_a_declared_body_over_the_limit_is_413_and_never_reaches_the_upstream(served: tuple[BackgroundServer, StubServer]) -> None:
    proxy, stub = served
    reply = _post(proxy, _chat(LIMIT))
    assert reply.status_code == 413
    error = reply.json()["error"]
    assert error["code"] == "request_too_large" and str(LIMIT) in error["message"] and "--max-body-mb" in error["message"]
    assert not stub.requests


def test_a_streamed_body_over_the_limit_is_413_too(served: tuple[BackgroundServer, StubServer]) -> None:
    proxy, stub = served
    def chunks() -> Iterator[bytes]:  # no content-length: chunked transfer encoding
        data = _chat(3 * LIMIT)
        for i in range(0, len(data), 1000):
            yield data[i:i + 1000]

    reply = _post(proxy, chunks())
    assert reply.status_code == 413
    assert reply.json()["error"]["message"] == f"request body sent in chunks: over this proxy's limit of {LIMIT} bytes (stepguard serve --max-body-mb)"
    assert not stub.requests


def _raw_request(proxy: BackgroundServer, head: str, body: bytes, *, close_early: bool) -> bytes:
    """Send a request over a plain socket; with ``close_early``, close it before the body is whole."""
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(proxy.base_url)
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(head.encode() + body)
        if close_early:
            return b""
        return sock.recv(65536)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/files"])
def test_a_body_the_client_stops_sending_is_neither_answered_nor_forwarded(
        served: tuple[BackgroundServer, StubServer], path: str) -> None:
    """A cut body is not a short request: before the limit, a route got the first half as if it were whole."""
    import time

    proxy, stub = served
    whole = _chat(100)
    part = whole + b" " * 10  # a prefix that is itself valid JSON: the most tempting to forward
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(part) + 500}\r\n\r\n")
    _raw_request(proxy, head, part, close_early=True)
    time.sleep(1.0)  # bounded wait for a forward that must not come
    assert not stub.requests and not stub.headers
    assert _post(proxy, whole).status_code == 200  # the proxy still serves


def test_a_chunked_body_is_judged_by_what_arrives_not_a_content_length_beside_it(served: tuple[BackgroundServer, StubServer]) -> None:
    proxy, stub = served
    body = _chat(10)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: 99999999\r\nTransfer-Encoding: chunked\r\n"
            f"Connection: close\r\n\r\n")
    reply = _raw_request(proxy, head, f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n", close_early=False)
    assert reply.startswith(b"HTTP/1.1 200") or reply.startswith(b"HTTP/1.1 400"), reply[:80]  # never 413


def test_bodies_within_the_limit_pass_unchanged(served: tuple[BackgroundServer, StubServer]) -> None:
    proxy, stub = served
    body = _chat(LIMIT - 200)
    assert len(body) <= LIMIT
    reply = _post(proxy, body)
    assert reply.status_code == 200, reply.text
    assert stub.requests[-1]["messages"][0]["content"] == "x" * (LIMIT - 200)  # passed through whole

    def chunks() -> Iterator[bytes]:
        yield body[:100]
        yield body[100:]

    assert _post(proxy, chunks()).status_code == 200
    guarded = json.dumps({"model": "stepguard/invoice", "messages": [{"role": "user", "content": "go"}],
                          "stepguard": {"inputs": {"subtotal": "100.10", "rate": "0.1"}}}).encode()
    assert _post(proxy, guarded).status_code != 413


def test_the_token_is_checked_before_the_size(served: tuple[BackgroundServer, StubServer]) -> None:
    proxy, _ = served
    assert _post(proxy, _chat(LIMIT), token="wrong").status_code == 401


def test_the_limit_reaches_each_worker_from_serve_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard.serve._server import OPTIONS_ENV, app_from_env

    monkeypatch.setenv(OPTIONS_ENV, json.dumps({"upstream": "sim:perfect", "max_body_bytes": 100}))
    with BackgroundServer(app_from_env()) as server:
        assert httpx.post(f"{server.base_url}/chat/completions", content=_chat(200)).status_code == 413
    monkeypatch.setenv(OPTIONS_ENV, json.dumps({"upstream": "sim:perfect"}))
    with BackgroundServer(app_from_env()) as server:  # the default, 32 MiB
        assert httpx.post(f"{server.base_url}/chat/completions", content=_chat(200)).status_code == 200


@pytest.mark.parametrize("bad", [0, -5, None, 1.5, True, "10"])
def test_a_bad_limit_is_refused_when_the_app_is_made_not_when_it_starts(bad: object) -> None:
    with pytest.raises(ValueError, match=rf"max_body_bytes must be a whole number of bytes, at least 1; got {re.escape(repr(bad))}"):
        create_app(Upstream("sim:perfect"), PROCS, max_body_bytes=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("given", ["inf", "1e400", "0", "-1", "nan", "abc"])
def test_the_cli_refuses_a_limit_it_cannot_use_with_a_usage_error(given: str) -> None:
    from typer.testing import CliRunner

    from stepguard.cli import app

    result = CliRunner().invoke(app, ["serve", "--upstream", "sim:perfect", "--max-body-mb", given])
    assert result.exit_code == 2 and "--max-body-mb" in result.output and "Traceback" not in result.output
