"""Request bodies and fields the proxy cannot take, over real HTTP: each is a 400 in the OpenAI shape that
says why and where, and nothing of it reaches the upstream (a body the proxy cannot read may name a
procedure: forwarding it would run it unguarded).

Kinds: bytes that are not UTF-8, text that is not JSON, an integer longer than Python converts, nesting
too deep (the body, or inputs read from the last user message), text that is not Unicode (a lone
surrogate escape), numbers that are not finite or out of range (``temperature``, ``seed``, the
``stepguard`` options), and booleans that are not JSON booleans (``"stream": "false"``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests._paths import ROOT

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install 'stepguard[serve]'")

from stepguard.serve import BackgroundServer, Upstream, create_app, load_procedure_folder  # noqa: E402
from tests._stub_server import StubServer  # noqa: E402

PROCS = load_procedure_folder(ROOT / "examples")
GUARDED: dict[str, Any] = {"model": "stepguard/invoice", "messages": [{"role": "user", "content": "x"}],
                           "stepguard": {"inputs": {"subtotal": "120", "rate": "0.2"}}}


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(hang_s=1.0) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(stub: StubServer) -> Iterator[BackgroundServer]:
    """The proxy on the stub's ``sim`` model, which answers the guard's prompts right."""
    with BackgroundServer(create_app(Upstream(f"{stub.base_url}#sim"), PROCS)) as server:
        yield server


@pytest.fixture(scope="module")
def sim_proxy() -> Iterator[BackgroundServer]:
    """The proxy on ``sim:perfect``: it answers plain requests itself."""
    with BackgroundServer(create_app(Upstream("sim:perfect"), PROCS)) as server:
        yield server


def _post(server: BackgroundServer, body: bytes) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", content=body, timeout=60,
                      headers={"content-type": "application/json"})


def _refused(server: BackgroundServer, stub: StubServer | None, body: bytes, says: str,
             param: str | None = None) -> dict[str, Any]:
    """POST ``body``: a 400 in the OpenAI shape whose message holds ``says`` and whose ``param`` is
    ``param`` (or, for one ending in ``...``, starts with what comes before); the upstream got nothing."""
    before = len(stub.requests) if stub else 0
    reply = _post(server, body)
    assert reply.status_code == 400, reply.text[:300]
    error = reply.json()["error"]
    assert set(error) >= {"message", "type", "param", "code"} and error["type"] == "invalid_request_error"
    assert says in error["message"], error["message"]
    if param is not None and param.endswith("..."):
        assert error["param"].startswith(param[:-3]) and error["param"].endswith("(64 levels down)"), error["param"]
    else:
        assert error["param"] == param
    if stub is not None:
        assert len(stub.requests) == before  # nothing forwarded, nothing run
    return error


def _with(raw: dict[str, Any], tail: bytes) -> bytes:
    """``raw`` as JSON with ``tail`` (``b',"key": value'``) written in before its closing brace."""
    return json.dumps(raw).encode()[:-1] + tail + b"}"


# --- defect 1: a body the proxy cannot read is refused, never forwarded ----------------------------------------


def test_an_integer_longer_than_python_converts_is_400_not_forwarded_unguarded(
        proxy: BackgroundServer, stub: StubServer) -> None:
    error = _refused(proxy, stub, _with(GUARDED, b',"seed":' + b"1" * 4400), "a number too long to read")
    assert "4400 digits" in error["message"] and error["code"] == "invalid_json"


def test_bytes_that_are_not_utf8_are_400_naming_the_byte(proxy: BackgroundServer, stub: StubServer) -> None:
    body = json.dumps(GUARDED).encode().replace(b'"x"', b'"\xff"')
    offset = body.index(b"\xff")
    _refused(proxy, stub, body, f"the request body is not UTF-8 text: byte 0xff at offset {offset}")


@pytest.mark.parametrize(("body", "says"), [
    (b'{"model": "stepguard/invoice", ',
     "not valid JSON: Expecting property name enclosed in double quotes (line 1, column 32)"),
    (b'{"model": "ok", "messages": []', "not valid JSON"),
    (b"", "not valid JSON: Expecting value (line 1, column 1)"),
    (b'[{"model": "ok"}]', "must be a JSON object (a chat completion request), not a JSON array"),
])
def test_malformed_json_is_400_not_the_upstreams_reaction(proxy: BackgroundServer, stub: StubServer,
                                                          body: bytes, says: str) -> None:
    _refused(proxy, stub, body, says)


def test_a_plain_request_the_proxy_can_read_still_passes_through(proxy: BackgroundServer, stub: StubServer) -> None:
    body = _with({"model": "ok", "messages": [{"role": "user", "content": "hi"}]}, b', "temperature": NaN')
    reply = _post(proxy, body)  # not standard JSON, but read; the upstream judges its own request
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "reply to: hi"


# --- defect 2: nesting too deep is a 400, never a plain-text 500 ----------------------------------------------


def test_a_body_nested_too_deeply_to_parse_is_400(proxy: BackgroundServer, stub: StubServer) -> None:
    _refused(proxy, stub, b"[" * 100000, "nested too deeply to read")


def test_inputs_in_the_last_user_message_nested_too_deeply_are_400(proxy: BackgroundServer, stub: StubServer) -> None:
    body = json.dumps({"model": "stepguard/invoice", "messages": [{"role": "user", "content": "[" * 100000}]}).encode()
    error = _refused(proxy, stub, body, "messages[0].content is nested too deeply to read", "stepguard.inputs")
    assert error["code"] == "missing_inputs"


@pytest.mark.parametrize(("where", "param"), [
    ("stepguard.inputs.subtotal", "stepguard.inputs.subtotal[0][0][0]..."),
    ("response_format.json_schema", "response_format.json_schema[0][0][0]..."),
])
def test_a_guarded_request_deeper_than_the_limit_is_400_naming_where(proxy: BackgroundServer, stub: StubServer,
                                                                     where: str, param: str) -> None:
    body = json.loads(json.dumps(GUARDED))
    holder, *path, last = where.split(".")
    node = body.setdefault(holder, {})
    for key in path:
        node = node.setdefault(key, {})
    deep: Any = 1
    for _ in range(200):  # parseable, but deeper than a chat request ever is
        deep = [deep]
    node[last] = deep
    _refused(proxy, stub, json.dumps(body).encode(), "nested too deeply (at most 64 levels", param)


def test_deep_inputs_in_the_message_content_name_the_message(proxy: BackgroundServer, stub: StubServer) -> None:
    content = '{"subtotal": ' + "[" * 200 + "1" + "]" * 200 + ', "rate": "0.2"}'
    body = json.dumps({"model": "stepguard/invoice", "messages": [{"role": "user", "content": content}]}).encode()
    _refused(proxy, stub, body, "nested too deeply (at most 64 levels",
             "messages[0].content.subtotal[0][0][0]...")


@pytest.mark.parametrize(("raw", "param"), [
    (b'"model": "x\\ud800", "stepguard": {"procedure": "invoice", "inputs": {"subtotal": "1", "rate": "0.2"}}', "model"),
    (b'"model": "stepguard/invoice", "messages": [{"role": "user", "content": "a\\udfff"}], '
     b'"stepguard": {"inputs": {"subtotal": "1", "rate": "0.2"}}', "messages[0].content"),
])
def test_text_with_a_lone_surrogate_is_400_not_a_500(proxy: BackgroundServer, stub: StubServer,
                                                    raw: bytes, param: str) -> None:
    _refused(proxy, stub, b"{" + raw + b"}", "not Unicode text: a lone surrogate", param)


def test_an_error_no_route_answers_is_an_openai_shaped_500(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard.serve import _app

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_app, "guarded_request", broken)
    with BackgroundServer(create_app(Upstream(f"{stub.base_url}#sim"), PROCS)) as server:
        reply = _post(server, json.dumps(GUARDED).encode())
    assert reply.status_code == 500 and reply.json()["error"] == {
        "message": "internal error: RuntimeError", "type": "server_error", "param": None, "code": "internal_error"}


# --- defect 3: numbers that are not finite or out of range ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("tail", "param", "says"), [
    (b',"temperature": NaN', "temperature", "temperature must be a finite number, not nan"),
    (b',"temperature": 1e400', "temperature", "not 1E+400"),
    (b',"temperature": Infinity', "temperature", "not inf"),
    (b',"temperature": -0.5', "temperature", "from 0 to 2"),
    (b',"temperature": "0.5"', "temperature", "not '0.5'"),
    (b',"temperature": true', "temperature", "not True"),
    (b',"seed": 1e400', "seed", "seed must be a whole number"),
    (b',"seed": 1.5', "seed", "not 1.5"),
    (b',"seed": ' + b"9" * 30, "seed", "from -9223372036854775808 to 9223372036854775807"),
])
def test_the_requests_own_sampling_fields_are_checked(proxy: BackgroundServer, stub: StubServer,
                                                      tail: bytes, param: str, says: str) -> None:
    error = _refused(proxy, stub, _with(GUARDED, tail), says, param)
    assert error["code"] == "invalid_value"


@pytest.mark.slow
@pytest.mark.parametrize(("key", "raw", "says"), [
    ("temperature", b"NaN", "temperature must be a finite number, not nan"),
    ("temperature", b"1e400", "temperature must be a finite number, not 1E+400"),
    ("temperature", b"3", "temperature must be a number from 0 to 2, not 3.0"),
    ("resample_temperature", b"-Infinity", "resample_temperature must be a finite number, not -inf"),
    ("max_wall_s", b"1e400", "max_wall_s must be a finite number, not 1E+400"),
    ("max_wall_s", b"0", "max_wall_s must be positive seconds"),
    ("seed", b"1e400", "seed must be a whole number from -9223372036854775808 to 9223372036854775807, not inf"),
    ("seed", b"99999999999999999999", "to 9223372036854775807, not 99999999999999999999"),
    ("max_tokens_per_step", b"1000000000000", "max_tokens_per_step must be a whole number from 1 to 2147483647"),
    ("max_tokens_per_step", b"0", "from 1 to 2147483647, not 0"),
    ("max_total_tokens", b"12.0", "max_total_tokens must be a whole number from 1 to 9223372036854775807, not 12.0"),
    ("chunk_size", b"true", "chunk_size must be a whole number from 1 to 2147483647, not True"),
    ("chunk_size", b"0", "chunk_size must be a whole number from 1 to 2147483647, not 0"),
    ("max_reprompts_per_step", b"-1", "from 0 to 2147483647, not -1"),
    ("max_reprompts_per_run", b'"3"', "max_reprompts_per_run must be a whole number from 0 to 2147483647, not '3'"),
])
def test_numeric_options_that_are_not_finite_or_out_of_range_are_400_naming_the_option(
        proxy: BackgroundServer, stub: StubServer, key: str, raw: bytes, says: str) -> None:
    body = json.dumps(GUARDED).encode()[:-2] + b',"' + key.encode() + b'": ' + raw + b"}}"
    _refused(proxy, stub, body, says, f"stepguard.{key}")


def test_a_finite_temperature_and_seed_still_run(proxy: BackgroundServer, stub: StubServer) -> None:
    body = dict(GUARDED, temperature=0.5, seed=2**63 - 1, stream=False, stepguard={**GUARDED["stepguard"], "adaptive": True})
    reply = _post(proxy, json.dumps(body).encode())
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "136.80"
    sent = stub.requests[-1]
    assert sent["temperature"] == 0.5 and sent["seed"] == 2**63 - 1


@pytest.mark.slow
@pytest.mark.parametrize(("tail", "param", "says"), [
    (b',"temperature": NaN', "temperature", "finite number"),
    (b',"seed": "7"', "seed", "must be an integer"),
    (b',"max_tokens": "5"', "max_tokens", 'max_tokens must be an integer from 1 to 2147483647, not "5"'),
    (b',"max_tokens": 0', "max_tokens", "from 1"),
    (b',"stream": "false"', "stream", "a JSON boolean"),
])
def test_a_plain_request_the_proxy_answers_itself_is_checked_too(sim_proxy: BackgroundServer,
                                                                 tail: bytes, param: str, says: str) -> None:
    _refused(sim_proxy, None, _with({"model": "x", "messages": [{"role": "user", "content": "hi"}]}, tail), says, param)


# --- defect 4: booleans are JSON booleans ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("value", ['"false"', '"true"', "0", "1", '"no"', "[]"])
def test_stream_that_is_not_a_json_boolean_is_400_not_a_stream(proxy: BackgroundServer, stub: StubServer,
                                                               value: str) -> None:
    body = _with(GUARDED, f',"stream": {value}'.encode())
    reply = _post(proxy, body)
    assert "text/event-stream" not in reply.headers.get("content-type", "")
    _refused(proxy, stub, body, f"stream must be true or false, not {json.loads(value)!r}", "stream")


@pytest.mark.slow
@pytest.mark.parametrize("value", ['"false"', "0", '"yes"'])
def test_the_adaptive_option_is_a_json_boolean(proxy: BackgroundServer, stub: StubServer, value: str) -> None:
    body = json.dumps(GUARDED).encode()[:-2] + f',"adaptive": {value}}}}}'.encode()
    _refused(proxy, stub, body, f"adaptive must be true or false, not {json.loads(value)!r}", "stepguard.adaptive")


@pytest.mark.slow
def test_stream_null_or_false_answers_whole_and_true_streams(proxy: BackgroundServer) -> None:
    for stream in (None, False):
        reply = _post(proxy, json.dumps({**GUARDED, "stream": stream}).encode())
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "136.80"
    reply = _post(proxy, json.dumps({**GUARDED, "stream": True}).encode())
    assert reply.headers["content-type"].startswith("text/event-stream") and reply.text.rstrip().endswith("[DONE]")


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/v1/chat/completions/", "/v1//chat/completions", "/v1/chat//completions/"])
def test_another_spelling_of_the_chat_path_is_read_and_guarded_too(proxy: BackgroundServer, stub: StubServer,
                                                                   path: str) -> None:
    """Not only the exact path: a request naming a procedure never reaches the upstream unguarded."""
    root = proxy.base_url[: -len("/v1")]
    before = len(stub.requests)
    reply = httpx.post(root + path, content=_with(GUARDED, b',"seed":' + b"1" * 4400), timeout=60)
    assert reply.status_code == 400 and "a number too long to read" in reply.json()["error"]["message"]
    reply = httpx.post(root + path, json=GUARDED, timeout=60)
    assert reply.status_code == 200 and reply.json()["stepguard"]["status"] == "verified"
    assert all(r.get("model") != "stepguard/invoice" for r in stub.requests[before:])  # the guard's calls only


@pytest.mark.parametrize(("content", "says"), [
    ("compute it", "messages[0].content is not valid JSON: Expecting value (line 1, column 1)"),
    ('["120", "0.2"]', "messages[0].content is a JSON array, not an object"),
    ('{"subtotal": ' + "1" * 4400 + "}", "messages[0].content holds a number too long to read"),
])
def test_inputs_the_last_user_message_cannot_give_say_why(proxy: BackgroundServer, stub: StubServer,
                                                          content: str, says: str) -> None:
    body = json.dumps({"model": "stepguard/invoice", "messages": [{"role": "user", "content": content}]}).encode()
    error = _refused(proxy, stub, body, says, "stepguard.inputs")
    assert error["message"].startswith("give the procedure's inputs as stepguard.inputs, or as a JSON object in the "
                                       "last user message: ") and error["code"] == "missing_inputs"


def test_a_body_that_is_a_json_string_is_400(proxy: BackgroundServer, stub: StubServer) -> None:
    _refused(proxy, stub, b'"hello"', "must be a JSON object (a chat completion request), not a JSON string")


BY_OPTION: dict[str, Any] = {"model": "gpt", "messages": [{"role": "user", "content": "x"}],
                             "stepguard": {"procedure": "invoice", "inputs": {"subtotal": "120", "rate": "0.2"}}}


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/v1/completions", "/v1/responses", "/v1/chat/completion", "/v1/embeddings"])
@pytest.mark.parametrize("body", [GUARDED, BY_OPTION])
def test_a_procedure_named_on_another_path_is_refused_not_forwarded(proxy: BackgroundServer, stub: StubServer, path: str,
                                                                    body: dict[str, Any]) -> None:
    """Only /v1/chat/completions runs procedures; an upstream that ignores the model (llama.cpp does)
    answered /v1/completions for stepguard/invoice unguarded, and a `stepguard` object with another model."""
    root = proxy.base_url[: -len("/v1")]
    before = len(stub.requests)
    for content in (json.dumps(body).encode(), _with(body, b',"seed":' + b"1" * 4400)):
        reply = httpx.post(root + path, content=content, timeout=60)
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "unsupported_endpoint", reply.text
    reply = httpx.put(root + "/v1/chat/completions", json=body, timeout=60)
    assert reply.status_code in (400, 405), reply.text
    assert len(stub.requests) == before


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/v1/chat/completions/.", "/v1/./chat/completions", "/v1/x/../chat/completions", "/v1//chat/completions"])
def test_dot_segments_reach_the_guard_too(proxy: BackgroundServer, stub: StubServer, path: str) -> None:
    root = proxy.base_url[: -len("/v1")]
    with httpx.Client(base_url=root) as client:  # the path sent as written, not normalised by the client
        request = client.build_request("POST", root, json=BY_OPTION, timeout=60)
        request.url = request.url.copy_with(raw_path=path.encode())
        reply = client.send(request)
    assert reply.status_code == 200 and reply.json()["stepguard"]["status"] == "verified", reply.text
    assert all(r.get("model") != "gpt" or r.get("stepguard") is None for r in stub.requests)


@pytest.mark.slow
@pytest.mark.parametrize(("body", "says", "param"), [
    (b'{"model": "stepguard/invoice", "model": "gpt", "messages": []}', "holds the key 'model' twice", None),
    (json.dumps({**GUARDED, "model": "Stepguard/invoice"}).encode(), "a procedure is named exactly stepguard/<name>", "model"),
    (json.dumps({**GUARDED, "model": " stepguard/invoice"}).encode(), "a procedure is named exactly stepguard/<name>", "model"),
])
def test_a_procedure_name_spelled_otherwise_is_refused_not_forwarded(proxy: BackgroundServer, stub: StubServer,
                                                                     body: bytes, says: str, param: str | None) -> None:
    _refused(proxy, stub, body, says, param)
