"""The guarding proxy (``stepguard serve``): the official ``openai`` client, sync and async, streaming
and not, and ``curl``, against the proxy served in-process (uvicorn in a thread) on a free port;
pass-through to a stub upstream; auth, option and procedure errors; keys never echoed or logged."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests._paths import ROOT

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install 'stepguard[serve]'")

from stepguard.errors import MissingExtraError  # noqa: E402
from stepguard.serve import BackgroundServer, Upstream, create_app, load_procedure_folder, open_checkpointer  # noqa: E402
from tests._serve_process import start_serve  # noqa: E402
from tests._stub_server import StubServer  # noqa: E402

pytestmark = pytest.mark.slow

PROCS = load_procedure_folder(ROOT / "examples")
INPUTS = {"subtotal": "100.10", "rate": "0.1"}
TOKEN = "proxy-token-123"
SECRET = "sk-upstream-secret-never-shown-9f3a"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer(hang_s=2.0) as server:
        yield server


@pytest.fixture
def proxy(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[BackgroundServer]:
    """The proxy on the stub (model ``ok``), with a token; the upstream key is SECRET."""
    monkeypatch.setenv("STEPGUARD_API_KEY", SECRET)
    app = create_app(Upstream(f"{stub.base_url}#ok"), PROCS, token=TOKEN)
    with BackgroundServer(app) as server:
        yield server


@pytest.fixture
def sim_proxy(tmp_path: Path) -> Iterator[BackgroundServer]:
    """The proxy on ``sim:perfect``, no token, with a SQLite checkpointer."""
    app = create_app(Upstream("sim:perfect"), PROCS, checkpointer=open_checkpointer(tmp_path / "ck.sqlite"))
    with BackgroundServer(app) as server:
        yield server


def _client(server: BackgroundServer, token: str = TOKEN) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=token, max_retries=0)


def _guarded(client: Any, **options: Any) -> Any:
    return client.chat.completions.create(model="stepguard/invoice", messages=[],
                                          extra_body={"stepguard": {"inputs": INPUTS, **options}})


def _extra(obj: Any) -> dict[str, Any]:
    return (obj.model_extra or {}).get("stepguard") or {}


# --- guarded runs -------------------------------------------------------------------------------------------


def test_guarded_call_with_the_sync_client(sim_proxy: BackgroundServer) -> None:
    resp = _guarded(_client(sim_proxy))
    assert resp.choices[0].message.content == "104.60"
    result = _extra(resp)
    assert result["status"] == "verified" and result["reprompts"] == 0 and result["deviations"] == []
    assert {s["var"]: s["value"] for s in result["steps"]}["discount"] == "5.01"
    assert resp.model == "stepguard/invoice" and resp.usage.total_tokens > 0


def test_guarded_call_by_extra_body_alone_keeps_the_model_name(sim_proxy: BackgroundServer) -> None:
    resp = _client(sim_proxy).chat.completions.create(
        model="my-model", messages=[], extra_body={"stepguard": {"procedure": "invoice", "inputs": INPUTS}})
    assert resp.choices[0].message.content == "104.60" and resp.model == "my-model"
    assert _extra(resp)["procedure"] == "invoice"


def test_inputs_from_the_last_user_message(sim_proxy: BackgroundServer) -> None:
    resp = _client(sim_proxy).chat.completions.create(
        model="stepguard/invoice", messages=[{"role": "user", "content": '{"subtotal": 100.10, "rate": 0.1}'}])
    assert resp.choices[0].message.content == "104.60"
    parts = [{"type": "text", "text": '{"subtotal": 100.10, '}, {"type": "text", "text": '"rate": 0.1}'}]
    resp = _client(sim_proxy).chat.completions.create(model="stepguard/invoice", messages=[{"role": "user", "content": parts}])
    assert resp.choices[0].message.content == "104.60"  # text parts are one text, as the drop-in client reads them


def test_guarded_call_with_the_async_client(sim_proxy: BackgroundServer) -> None:
    async def main() -> list[Any]:
        client = openai.AsyncOpenAI(base_url=sim_proxy.base_url, api_key="x", max_retries=0)
        return await asyncio.gather(*(_guarded(client) for _ in range(8)))

    for resp in asyncio.run(main()):
        assert resp.choices[0].message.content == "104.60" and _extra(resp)["status"] == "verified"


def _check_stream(chunks: list[Any]) -> None:
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    steps = [_extra(c) for c in chunks if _extra(c).get("event") == "step"]
    assert content == "104.60"
    assert [(s["var"], s["value"], s["provenance"]) for s in steps] == [
        ("discount", "5.01", "model_verified"), ("net", "95.09", "model_verified"),
        ("tax", "9.51", "model_verified"), ("total", "104.60", "model_verified")]
    assert chunks[-1].choices[0].finish_reason == "stop" and _extra(chunks[-1])["status"] == "verified"


def test_guarded_stream_sync_yields_each_step_as_it_verifies(sim_proxy: BackgroundServer) -> None:
    stream = _client(sim_proxy).chat.completions.create(
        model="stepguard/invoice", messages=[], stream=True, extra_body={"stepguard": {"inputs": INPUTS}})
    _check_stream(list(stream))


def test_guarded_stream_async(sim_proxy: BackgroundServer) -> None:
    async def main() -> list[Any]:
        client = openai.AsyncOpenAI(base_url=sim_proxy.base_url, api_key="x", max_retries=0)
        stream = await client.chat.completions.create(
            model="stepguard/invoice", messages=[], stream=True, extra_body={"stepguard": {"inputs": INPUTS}})
        return [c async for c in stream]

    _check_stream(asyncio.run(main()))


def test_a_json_response_format_is_honoured_as_the_drop_in_client_does(sim_proxy: BackgroundServer) -> None:
    client, fmt = _client(sim_proxy), {"type": "json_object"}
    whole = client.chat.completions.create(model="stepguard/invoice", messages=[], response_format=fmt,  # type: ignore[call-overload]
                                           extra_body={"stepguard": {"inputs": INPUTS}})
    content = whole.choices[0].message.content
    assert json.loads(content) == {"values": {"discount": "5.01", "net": "95.09", "tax": "9.51", "total": "104.60"},
                                   "answer": "104.60", "status": "verified", "first_unverified": None}
    chunks = list(client.chat.completions.create(model="stepguard/invoice", messages=[], response_format=fmt,  # type: ignore[call-overload]
                                                 stream=True, extra_body={"stepguard": {"inputs": INPUTS}}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == content  # the same bytes, streamed
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="stepguard/invoice", messages=[], response_format={"type": "xml"},  # type: ignore[call-overload, typeddict-item]
                                       extra_body={"stepguard": {"inputs": INPUTS}})
    assert err.value.body["param"] == "response_format.type" and err.value.body["code"] == "invalid_response_format"


def test_a_streamed_run_tells_each_deviation_as_the_policy_acts_on_it(stub: StubServer) -> None:
    stub.script = lambda prompt: "no step lines here"
    app = create_app(Upstream(f"{stub.base_url}#scripted"), PROCS)
    with BackgroundServer(app) as server:
        chunks = list(_client(server).chat.completions.create(
            model="stepguard/invoice", messages=[], stream=True,
            extra_body={"stepguard": {"inputs": INPUTS, "policy": "repair", "max_reprompts_per_step": 0}}))
    devs = [_extra(c) for c in chunks if _extra(c).get("event") == "deviation"]
    result = _extra(chunks[-1])
    assert devs and devs[0]["step"] == "discount" and devs[0]["action"] == "repair"
    assert result["status"] == "repaired" and len(result["deviations"]) == len(devs)


def test_a_thread_resumes_and_a_finished_one_answers_again_without_model_calls(sim_proxy: BackgroundServer) -> None:
    client = _client(sim_proxy)
    first = _extra(_guarded(client, thread_id="inv-1"))
    again = _extra(_guarded(client, thread_id="inv-1"))
    assert again["status"] == "verified" and again["thread_id"] == "inv-1"
    assert again["usage"]["model_calls"] == first["usage"]["model_calls"]  # the stored run, no new calls
    with pytest.raises(openai.ConflictError, match="holds a run of other work"):
        client.chat.completions.create(model="stepguard/invoice", messages=[],
                                       extra_body={"stepguard": {"inputs": {**INPUTS, "rate": "0.2"}, "thread_id": "inv-1"}})


def test_a_streamed_request_for_a_thread_of_other_work_is_refused_with_409_before_the_stream(sim_proxy: BackgroundServer) -> None:
    client = _client(sim_proxy)
    _guarded(client, thread_id="inv-2")
    other = {"inputs": {**INPUTS, "rate": "0.2"}, "thread_id": "inv-2"}
    with pytest.raises(openai.ConflictError, match="holds a run of other work"):
        client.chat.completions.create(model="stepguard/invoice", messages=[], stream=True, extra_body={"stepguard": other})
    same = list(client.chat.completions.create(model="stepguard/invoice", messages=[], stream=True,
                                               extra_body={"stepguard": {"inputs": INPUTS, "thread_id": "inv-2"}}))
    assert _extra(same[-1])["status"] == "verified"  # the same work streams its stored run
    fresh = list(client.chat.completions.create(model="stepguard/invoice", messages=[], stream=True,
                                                extra_body={"stepguard": {**other, "thread_id": "inv-3"}}))
    assert _extra(fresh[-1])["status"] == "verified"


def test_only_a_run_with_a_thread_id_is_checkpointed(sim_proxy: BackgroundServer) -> None:
    _guarded(_client(sim_proxy))
    _guarded(_client(sim_proxy), thread_id="kept")
    saver = sim_proxy.server.config.app.state.proxy.checkpointer
    threads = {row[0] for row in saver.conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert threads == {"kept"}


def test_a_run_the_guard_stops_is_422_with_the_partial_result(stub: StubServer) -> None:
    stub.script = lambda prompt: "I think the answer is 7."  # no step lines: a deviation every time
    app = create_app(Upstream(f"{stub.base_url}#scripted"), PROCS)
    with BackgroundServer(app) as server, pytest.raises(openai.UnprocessableEntityError) as err:
        _guarded(_client(server), policy="raise")
    body = err.value.body
    assert body["type"] == "stepguard_run_failed" and body["stepguard"]["status"] == "failed"


def test_a_streamed_run_the_guard_stops_ends_in_an_error_event(stub: StubServer) -> None:
    stub.script = lambda prompt: "no step lines here"
    app = create_app(Upstream(f"{stub.base_url}#scripted"), PROCS)
    with BackgroundServer(app) as server:
        stream = _client(server).chat.completions.create(
            model="stepguard/invoice", messages=[], stream=True, extra_body={"stepguard": {"inputs": INPUTS, "policy": "raise"}})
        with pytest.raises(openai.APIError, match="deviated"):
            list(stream)


# --- request errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "param", "says"), [
    ({"bogus": 1}, "stepguard.bogus", "unknown option"),
    ({"chunk_size": "many"}, "stepguard.chunk_size", "whole number"),
    ({"policy": "pray"}, "stepguard.policy", "policy must be"),
    ({"ladder": ["bridge", "nope"]}, "stepguard.ladder", "unknown ladder rung 'nope'"),
    ({"thread_id": "t"}, "stepguard.thread_id", "thread_id needs a checkpointer"),
    ({"procedure": "medication"}, "stepguard.procedure", "the model names procedure 'invoice'"),
])
def test_bad_options_are_400_naming_the_key(proxy: BackgroundServer, options: dict[str, Any], param: str, says: str) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        _guarded(_client(proxy), **options)
    assert err.value.body["param"] == param and says in err.value.body["message"]


def test_bad_inputs_are_400(proxy: BackgroundServer) -> None:
    with pytest.raises(openai.BadRequestError, match="missing \\['rate'\\]"):
        _client(proxy).chat.completions.create(model="stepguard/invoice", messages=[],
                                               extra_body={"stepguard": {"inputs": {"subtotal": "1"}}})


def test_unknown_procedure_is_404_with_the_known_names(proxy: BackgroundServer) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        _client(proxy).chat.completions.create(model="stepguard/nope", messages=[])
    assert err.value.body["known"] == sorted(PROCS) and "invoice" in err.value.body["message"]


def test_a_wrong_token_is_401(proxy: BackgroundServer) -> None:
    with pytest.raises(openai.AuthenticationError, match="bearer token"):
        _client(proxy, "wrong").models.list()
    with pytest.raises(openai.AuthenticationError):
        _guarded(_client(proxy, "wrong"))


def test_no_token_is_401_and_the_right_one_passes(proxy: BackgroundServer) -> None:
    denied = httpx.get(f"{proxy.base_url}/models")
    assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"{proxy.base_url}/models", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_missing_serve_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard import serve

    monkeypatch.setitem(sys.modules, "starlette", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'stepguard\[serve\]'"):
        serve.__getattr__("create_app")


# --- models and pass-through --------------------------------------------------------------------------------


def test_models_lists_the_procedures_then_the_upstreams(proxy: BackgroundServer) -> None:
    ids = [m.id for m in _client(proxy).models.list()]
    assert ids == [f"stepguard/{n}" for n in sorted(PROCS)] + ["ok"]


def test_passthrough_is_unchanged_and_carries_the_upstream_key_not_the_proxy_token(proxy: BackgroundServer, stub: StubServer) -> None:
    resp = _client(proxy).chat.completions.create(model="ok", messages=[{"role": "user", "content": "hi"}],
                                                  temperature=0.3, extra_body={"custom_field": [1, 2.50]})
    assert resp.choices[0].message.content == "reply to: hi" and resp.id == "chatcmpl-stub"
    assert resp.usage.prompt_tokens_details.cached_tokens == 8
    sent = stub.requests[-1]
    assert sent == {"model": "ok", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.3, "custom_field": [1, 2.5]}
    auth = {k.lower(): v for k, v in stub.headers[-1].items()}["authorization"]
    assert auth == f"Bearer {SECRET}" and TOKEN not in json.dumps(stub.headers)


def test_passthrough_streams(proxy: BackgroundServer) -> None:
    chunks = list(_client(proxy).chat.completions.create(
        model="ok", messages=[{"role": "user", "content": "stream me"}], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "reply to: stream me"
    assert len(chunks) >= 4 and chunks[-1].choices[0].finish_reason == "stop"


def test_passthrough_streams_with_the_async_client(proxy: BackgroundServer) -> None:
    async def main() -> str:
        client = openai.AsyncOpenAI(base_url=proxy.base_url, api_key=TOKEN, max_retries=0)
        stream = await client.chat.completions.create(model="ok", messages=[{"role": "user", "content": "x"}], stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in stream])

    assert asyncio.run(main()) == "reply to: x"


def test_upstream_errors_pass_through_as_they_are(proxy: BackgroundServer) -> None:
    with pytest.raises(openai.BadRequestError, match="context length exceeded"):
        _client(proxy).chat.completions.create(model="error400", messages=[{"role": "user", "content": "x"}])


def test_passthrough_on_a_model_without_an_endpoint(sim_proxy: BackgroundServer) -> None:
    client = _client(sim_proxy)
    resp = client.chat.completions.create(model="anything", messages=[{"role": "user", "content": "hello"}])
    assert resp.choices[0].message.content
    chunks = list(client.chat.completions.create(model="anything", messages=[{"role": "user", "content": "hello"}], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == resp.choices[0].message.content


def test_upstream_keys_are_never_echoed_or_logged(stub: StubServer, monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("STEPGUARD_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    app = create_app(Upstream(f"{stub.base_url}#ok"), PROCS)
    assert SECRET not in repr(app.state.proxy.upstream)
    with BackgroundServer(app, log_level="debug") as server:
        base = server.base_url
        for model, body in [("error500", {}), ("error400", {}), ("ok", {}), ("html502", {}),
                            ("stepguard/invoice", {"stepguard": {"inputs": INPUTS, "policy": "raise"}}),
                            ("stepguard/invoice", {"stepguard": {"bad": 1}})]:
            resp = httpx.post(f"{base}/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "x"}], **body},
                              timeout=30)
            seen.append(resp.text + json.dumps(dict(resp.headers)))
        seen.append(httpx.get(f"{base}/models").text)
        stub.down = True
        seen.append(httpx.post(f"{base}/chat/completions", json={"model": "stepguard/invoice", "messages": [],
                                                                 "stepguard": {"inputs": INPUTS}}, timeout=30).text)
    assert any("upstream" in s for s in seen)  # the failures were answered, and named the upstream
    assert all(SECRET not in s for s in seen)
    assert SECRET not in caplog.text
    assert any(h.get("Authorization") == f"Bearer {SECRET}" or h.get("authorization") == f"Bearer {SECRET}" for h in stub.headers)


# --- the command line, and curl -----------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_against_stepguard_serve(stub: StubServer, tmp_path: Path) -> None:
    from stepguard.adapters import load_model

    sim = load_model("sim:perfect", procedure=PROCS["invoice"])
    stub.script = lambda prompt: sim.complete([{"role": "user", "content": prompt}]).text  # the upstream computes right
    env = {**os.environ, "STEPGUARD_API_KEY": SECRET, "STEPGUARD_PROXY_TOKEN": TOKEN}
    log = tmp_path / "serve.log"
    proc, base = start_serve(["--upstream", f"{stub.base_url}#scripted", "--procedures", str(ROOT / "examples")], log, env=env)
    try:
        assert httpx.get(f"{base}/models").status_code == 401
        def curl(*args: str) -> str:
            out = subprocess.run(["curl", "-sS", "-H", f"Authorization: Bearer {TOKEN}", *args], capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 0, out.stderr
            return out.stdout

        body = json.dumps({"model": "stepguard/invoice", "messages": [], "stepguard": {"inputs": INPUTS}})
        answer = json.loads(curl(f"{base}/chat/completions", "-H", "Content-Type: application/json", "-d", body))
        assert answer["choices"][0]["message"]["content"] == "104.60" and answer["stepguard"]["status"] == "verified"
        plain = json.loads(curl(f"{base}/chat/completions", "-d", json.dumps({"model": "ok", "messages": [{"role": "user", "content": "hi"}]})))
        assert plain["choices"][0]["message"]["content"] == "reply to: hi"
        streamed = curl("-N", f"{base}/chat/completions", "-d", json.dumps({**json.loads(body), "stream": True}))
        events = [json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: {")]
        assert [e["stepguard"]["var"] for e in events if e.get("stepguard", {}).get("event") == "step"] == ["discount", "net", "tax", "total"]
        assert streamed.rstrip().endswith("data: [DONE]")
        denied = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"{base}/models"], capture_output=True, text=True)
        assert denied.stdout == "401"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = log.read_text()
    assert "Uvicorn running" in text or "Application startup complete" in text
    assert SECRET not in text and TOKEN not in text


def test_serve_refuses_before_starting(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from stepguard.cli import app

    runner = CliRunner()
    bad = tmp_path / "procs"
    bad.mkdir()
    (bad / "broken.yaml").write_text("name: x\nsteps: []\n")
    out = runner.invoke(app, ["serve", "--procedures", str(bad), "--upstream", "sim:perfect"])
    assert out.exit_code == 5 and "broken.yaml" in out.output
    out = runner.invoke(app, ["serve", "--upstream", "local", "--workers", "2"])
    assert out.exit_code == 2 and "stepguard model serve" in out.output
    out = runner.invoke(app, ["serve", "--upstream", "nope:x"])
    assert out.exit_code == 2 and "invalid model specification" in out.output
    out = runner.invoke(app, ["serve", "--upstream", "sim:perfect", "--tools", "no_such_module:TOOLS"])
    assert out.exit_code != 0 and "no_such_module" in out.output


# --- tools and context ----------------------------------------------------------------------------------------


def test_tool_steps_run_with_the_tools_given_to_the_proxy_and_are_refused_without() -> None:
    from examples.agent_tools import TOOLS

    body = {"inputs": {"sku": "A-12", "amount": "19.99"}}
    with BackgroundServer(create_app(Upstream("sim:perfect"), PROCS, tools=TOOLS)) as server:
        resp = _client(server).chat.completions.create(model="stepguard/refund", messages=[], extra_body={"stepguard": body})
        result = _extra(resp)
        assert result["status"] == "verified"
        assert {s["var"]: s["provenance"] for s in result["steps"]}["order_id"] == "tool"
    with BackgroundServer(create_app(Upstream("sim:perfect"), PROCS)) as server:
        with pytest.raises(openai.BadRequestError) as err:
            _client(server).chat.completions.create(model="stepguard/refund", messages=[], extra_body={"stepguard": body})
        assert err.value.body["code"] == "missing_tools" and "catalog_lookup" in err.value.body["message"]
        assert "--tools" in err.value.body["message"]
        assert _guarded(_client(server)).choices[0].message.content == "104.60"  # the others are served


def test_the_requests_messages_are_context_in_every_model_call(stub: StubServer) -> None:
    """As the drop-in client: the caller's messages reach the model; a last user message that held the
    inputs is the inputs, not context."""
    with BackgroundServer(create_app(Upstream(f"{stub.base_url}#sim"), PROCS)) as server:
        n = len(stub.requests)
        context = [{"role": "system", "content": "You bill for ACME."}, {"role": "user", "content": "Invoice order 42."}]
        resp = _client(server).chat.completions.create(model="stepguard/invoice", messages=context,
                                                      extra_body={"stepguard": {"inputs": INPUTS}})
        assert resp.choices[0].message.content == "104.60"
        sent = stub.requests[n:]
        assert sent and all("[system] You bill for ACME.\n[user] Invoice order 42." in b["messages"][-1]["content"] for b in sent)
        n = len(stub.requests)
        as_inputs = [*context, {"role": "user", "content": '{"subtotal": 100.10, "rate": 0.1}'}]
        resp = _client(server).chat.completions.create(model="stepguard/invoice", messages=as_inputs)
        assert resp.choices[0].message.content == "104.60"
        prompts = [b["messages"][-1]["content"] for b in stub.requests[n:]]
        assert all("[user] Invoice order 42." in p and '"subtotal": 100.10' not in p for p in prompts)
        bad = {"role": "assistant", "content": None, "tool_calls": [{"function": "x"}]}
        with pytest.raises(openai.BadRequestError) as err:
            _client(server).chat.completions.create(model="stepguard/invoice", messages=[bad],
                                                    extra_body={"stepguard": {"inputs": INPUTS}})
        assert err.value.body["code"] == "invalid_messages" and err.value.body["param"] == "messages[0].tool_calls[0]"
