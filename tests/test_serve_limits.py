"""The proxy's request-size limit (stepguard.serve._limits.BodyLimit), over real HTTP: a body over the
limit is answered 413 whether its size is declared or streamed in chunks, nothing reaches the upstream,
a body within it passes unchanged (guarded and pass-through), and the token is checked first."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette")

from stepguard.serve import BackgroundServer, Upstream, create_app, load_procedure_folder  # noqa: E402
from tests._stub_server import StubServer  # noqa: E402

PROCS = load_procedure_folder(Path(__file__).parent.parent / "examples")
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
    assert reply.status_code == 413 and "streamed" in reply.json()["error"]["message"]
    assert not stub.requests


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


def test_a_limit_under_one_byte_is_refused() -> None:
    from stepguard.serve._limits import BodyLimit

    with pytest.raises(ValueError, match="max_bytes must be at least 1, got 0"):
        BodyLimit(lambda *a: None, 0)  # type: ignore[arg-type,return-value]
