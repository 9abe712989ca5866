"""One table of calls through ``GuardedOpenAI`` and the proxy gives the same outcome for each (issue 32 item 5):
inputs from a JSON last user message, ``tools``, a misspelt input ("did you mean"), a value shown as the
user wrote it. The client is the real ``openai`` client on the stub server's simulated model; the proxy
is ``create_app`` over ``sim:perfect`` under Starlette's TestClient. The CLI's rows follow."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from typer.testing import CliRunner

from tests._paths import ROOT

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install 'stepguard[serve]'")

from starlette.testclient import TestClient

from stepguard.adapters import GuardedOpenAI, InvalidGuardedCall
from stepguard.cli import app
from stepguard.procedure import load_procedure, parse_procedure
from stepguard.serve import create_app
from stepguard.serve._upstream import Upstream
from stepguard.wire import GuardedProcedureError
from tests._stub_server import StubServer

PARCEL_TEXT = """
name: parcel
inputs:
  weight_kg: {type: decimal}
  items: {type: integer}
steps:
  - {var: base, expr: weight_kg * 2, type: decimal, scale: 2}
  - {var: total, expr: base + items, type: decimal, scale: 2}
"""
COVER_TEXT = """
name: cover
inputs:
  insured: {type: boolean}
  insured_value: {type: decimal}
  price: {type: decimal}
steps:
  - {var: fee, expr: "insured_value * 2 if insured else price", type: decimal, scale: 2}
"""
PROCEDURES = {"invoice": load_procedure(ROOT / "examples" / "invoice.yaml"), "parcel": parse_procedure(PARCEL_TEXT, "parcel.yaml"),
              "cover": parse_procedure(COVER_TEXT, "cover.yaml")}
SYSTEM = {"role": "system", "content": "You price parcels. Reply with the final price."}

# (name, procedure, the call's messages, its stepguard object's inputs or None, other fields, the outcome both ways)
ROWS: list[tuple[str, str, list[dict[str, Any]], dict[str, Any] | None, dict[str, Any], tuple[Any, ...]]] = [
    ("inputs in the last user message", "invoice", [SYSTEM, {"role": "user", "content": '{"subtotal": 100.10, "rate": 0.1}'}],
     None, {}, ("ok", "verified", "104.60")),
    ("inputs in the object", "invoice", [SYSTEM, {"role": "user", "content": "go"}], {"subtotal": "100.10", "rate": "0.1"},
     {}, ("ok", "verified", "104.60")),
    ("inputs in text parts", "parcel", [{"role": "user", "content": [{"type": "text", "text": '{"weight_kg": 2.5, '},
                                                                     {"type": "text", "text": '"items": 3}'}]}],
     None, {}, ("ok", "verified", "8.00")),
    ("no inputs anywhere", "invoice", [{"role": "user", "content": "price it"}], None, {},
     ("refused", "inputs", "give the procedure's inputs as stepguard.inputs, or as a JSON object in the last user message: "
                           "messages[0].content is not valid JSON: Expecting value (line 1, column 1)")),
    ("tools on a guarded call", "invoice", [{"role": "user", "content": "go"}], {"subtotal": "100.10", "rate": "0.1"},
     {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
     ("refused", "tools", "tools is not supported in a guarded call")),
    ("a misspelt input", "invoice", [{"role": "user", "content": '{"subtotl": 100.10, "rate": 0.1}'}], None, {},
     ("inputs", "'subtotl': did you mean 'subtotal'?")),
    ("an integer given 2.5", "parcel", [{"role": "user", "content": '{"weight_kg": 1, "items": 2.5}'}], None, {},
     ("inputs", "inputs.items: expected an integer, got 2.5")),
]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture(scope="module")
def client(stub: StubServer) -> Iterator[GuardedOpenAI]:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0, timeout=30)
    yield GuardedOpenAI(real, PROCEDURES)
    real.close()


@pytest.fixture(scope="module")
def proxy() -> Iterator[TestClient]:
    with TestClient(create_app(Upstream("sim:perfect"), PROCEDURES)) as c:
        yield c


def via_client(client: GuardedOpenAI, name: str, messages: list[dict[str, Any]], inputs: dict[str, Any] | None,
               fields: dict[str, Any]) -> tuple[Any, ...]:
    run = {"procedure": name, **({"inputs": inputs} if inputs is not None else {})}
    try:
        reply = client.chat.completions.create(model="sim", messages=messages, extra_body={"stepguard": run}, **fields)
    except InvalidGuardedCall as exc:
        field = exc.location.removeprefix('extra_body["stepguard"].')
        return ("refused", field, str(exc).split(": ", 1)[1])
    except GuardedProcedureError as exc:
        return ("inputs", str(exc))
    return ("ok", reply.stepguard.status, reply.choices[0].message.content)


def via_proxy(proxy: TestClient, name: str, messages: list[dict[str, Any]], inputs: dict[str, Any] | None,
              fields: dict[str, Any]) -> tuple[Any, ...]:
    body = {"model": f"stepguard/{name}", "messages": messages, **fields,
            **({"stepguard": {"inputs": inputs}} if inputs is not None else {})}
    reply = proxy.post("/v1/chat/completions", content=json.dumps(body), headers={"content-type": "application/json"})
    data = reply.json()
    if reply.status_code != 200:
        error = data["error"]
        if error["code"] == "invalid_inputs":
            return ("inputs", error["message"])
        return ("refused", error["param"].removeprefix("stepguard."), error["message"])
    return ("ok", data["stepguard"]["status"], data["choices"][0]["message"]["content"])


def _matches(got: tuple[Any, ...], want: tuple[Any, ...]) -> bool:
    if got[0] != want[0]:
        return False
    if want[0] == "inputs":
        return want[1] in got[1]
    if want[0] == "refused":
        return got[1] == want[1] and got[2].startswith(want[2])
    return got == want


@pytest.mark.parametrize(("name", "messages", "inputs", "fields", "want"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_the_same_call_has_the_same_outcome_through_the_client_and_the_proxy(client: GuardedOpenAI, proxy: TestClient, name: str,
                                                                            messages: list[dict[str, Any]], inputs: dict[str, Any] | None,
                                                                            fields: dict[str, Any], want: tuple[Any, ...]) -> None:
    got_client = via_client(client, name, messages, inputs, fields)
    got_proxy = via_proxy(proxy, name, messages, inputs, fields)
    assert _matches(got_client, want), got_client
    assert _matches(got_proxy, want), got_proxy
    if want[0] != "ok":  # the same words both ways (the client's error names its procedure the same way)
        assert got_client[-1] == got_proxy[-1]


def test_the_json_message_is_the_inputs_not_context(stub: StubServer, client: GuardedOpenAI) -> None:
    n = len(stub.requests)
    message = '{"subtotal": 100.10, "rate": 0.1}'
    reply = client.chat.completions.create(model="sim", messages=[SYSTEM, {"role": "user", "content": message}],
                                           extra_body={"stepguard": {"procedure": "invoice"}})
    assert reply.stepguard.status == "verified"
    prompts = [m["content"] for body in stub.requests[n:] for m in body["messages"]]
    assert any("[system] You price parcels." in p for p in prompts)  # the system prompt is context
    assert not any(message in p for p in prompts)  # the inputs' message is not


# --------------------------------------------------------------------------------------------- the CLI
def test_run_takes_an_inputs_file_json_or_yaml_and_flags_win(tmp_path: Path) -> None:
    proc = ROOT / "examples" / "invoice.yaml"
    (tmp_path / "in.json").write_text('{"subtotal": 100.10, "rate": 0.1}')
    (tmp_path / "in.yaml").write_text("subtotal: 100.10\nrate: 0.1\n")
    for name in ("in.json", "in.yaml"):
        out = CliRunner().invoke(app, ["run", str(proc), "--inputs-file", str(tmp_path / name), "--model", "sim:perfect", "--json"])
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["answer"] == "104.60"
    out = CliRunner().invoke(app, ["run", str(proc), "--inputs-file", str(tmp_path / "in.json"), "-i", "subtotal=50",
                                   "--model", "sim:perfect", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["answer"] == "55.00"  # -i overrides the file's value


def test_run_inputs_file_is_strict_and_names_the_file(tmp_path: Path) -> None:
    proc = ROOT / "examples" / "invoice.yaml"
    (tmp_path / "dup.yaml").write_text("subtotal: 1\nsubtotal: 2\nrate: 0.1\n")
    (tmp_path / "list.yaml").write_text("- {subtotal: 1, rate: 0.1}\n")
    out = CliRunner().invoke(app, ["run", str(proc), "--inputs-file", str(tmp_path / "dup.yaml"), "--model", "sim:perfect"])
    assert out.exit_code == 5 and "dup.yaml" in out.output and "duplicate key 'subtotal' (line 2)" in out.output
    out = CliRunner().invoke(app, ["run", str(proc), "--inputs-file", str(tmp_path / "list.yaml"), "--model", "sim:perfect"])
    assert out.exit_code == 5 and "must hold an object of input values" in out.output


def test_run_says_did_you_mean_and_shows_a_value_as_written(tmp_path: Path) -> None:
    proc = ROOT / "examples" / "invoice.yaml"
    out = CliRunner().invoke(app, ["run", str(proc), "-i", "subtotl=100.10", "-i", "rate=0.1", "--model", "sim:perfect"])
    assert out.exit_code == 5 and "'subtotl': did you mean 'subtotal'?" in out.output
    (tmp_path / "parcel.yaml").write_text(PARCEL_TEXT)
    out = CliRunner().invoke(app, ["run", str(tmp_path / "parcel.yaml"), "-i", "weight_kg=1", "-i", "items=2.5", "--model", "sim:perfect"])
    assert out.exit_code == 5 and "inputs.items: expected an integer, got 2.5" in out.output  # the proxy's words too


def test_a_failed_run_with_no_answer_has_content_null_both_ways(client: GuardedOpenAI, proxy: TestClient) -> None:
    """A failed run under on_exhausted=flag answers content null (not ""), finish_reason content_filter (the
    guard withheld what it could not verify, never "stop") and status failed, through the client and the
    proxy, streamed or not; a verified run's content is unchanged."""
    run = {"inputs": {"subtotal": "100.10", "rate": "0.1"}, "on_exhausted": "flag", "max_total_tokens": 1, "follow": False}
    messages = [{"role": "user", "content": "go"}]
    reply = client.chat.completions.create(model="sim", messages=messages, extra_body={"stepguard": {"procedure": "invoice", **run}})
    assert (reply.stepguard.status, reply.choices[0].message.content, reply.choices[0].finish_reason) == ("failed", None, "content_filter")
    body = {"model": "stepguard/invoice", "messages": messages, "stepguard": run}
    data = proxy.post("/v1/chat/completions", json=body).json()
    assert (data["stepguard"]["status"], data["choices"][0]["message"]["content"], data["choices"][0]["finish_reason"]) == (
        "failed", None, "content_filter")
    stream = client.chat.completions.create(model="sim", messages=messages, stream=True,
                                            extra_body={"stepguard": {"procedure": "invoice", **run}})
    last = list(stream)[-1]
    assert (last.choices[0].delta.content, last.choices[0].finish_reason, last.stepguard.status) == (None, "content_filter", "failed")
    json_reply = client.chat.completions.create(model="sim", messages=messages, response_format={"type": "json_object"},
                                                extra_body={"stepguard": {"procedure": "invoice", **run}})
    assert json.loads(json_reply.choices[0].message.content or "")["answer"] is None  # JSON content: its answer is null
    ok = client.chat.completions.create(model="sim", messages=messages,
                                        extra_body={"stepguard": {"procedure": "invoice", "inputs": run["inputs"]}})
    assert ok.choices[0].message.content == "104.60"


def test_inputs_are_echoed_as_written_through_the_cli_the_client_and_the_proxy(tmp_path: Path, client: GuardedOpenAI,
                                                                               proxy: TestClient) -> None:
    """A boolean input is JSON true (not the text "True"), a decimal keeps the places it was written with."""
    want = {"insured": True, "insured_value": "50.00", "price": "1249.50"}
    (tmp_path / "cover.yaml").write_text(COVER_TEXT)
    out = CliRunner().invoke(app, ["run", str(tmp_path / "cover.yaml"), "-i", "insured=true", "-i", "insured_value=50.00",
                                   "-i", "price=1249.50", "--model", "sim:perfect", "--json", "-q"])
    assert json.loads(out.stdout)["inputs"] == want, out.output
    (tmp_path / "in.yaml").write_text("insured: true\ninsured_value: 50.00\nprice: 1249.50\n")
    out = CliRunner().invoke(app, ["run", str(tmp_path / "cover.yaml"), "--inputs-file", str(tmp_path / "in.yaml"),
                                   "--model", "sim:perfect", "--json", "-q"])
    assert json.loads(out.stdout)["inputs"] == want, out.output
    message = [{"role": "user", "content": '{"insured": true, "insured_value": 50.00, "price": 1249.50}'}]
    reply = client.chat.completions.create(model="sim", messages=message, extra_body={"stepguard": {"procedure": "cover"}})
    assert reply.stepguard.inputs == want
    data = proxy.post("/v1/chat/completions", json={"model": "stepguard/cover", "messages": message}).json()
    assert data["stepguard"]["inputs"] == want
    data = proxy.post("/v1/chat/completions", json={"model": "stepguard/cover", "messages": [{"role": "user", "content": "go"}],
                                                    "stepguard": {"inputs": {"insured": False, "insured_value": "7",
                                                                             "price": "3.10"}}}).json()
    assert data["stepguard"]["inputs"] == {"insured": False, "insured_value": "7", "price": "3.10"}


def test_a_misspelt_procedure_gets_did_you_mean_through_the_client_and_the_proxy(client: GuardedOpenAI, proxy: TestClient) -> None:
    messages = [{"role": "user", "content": '{"subtotal": 100.10, "rate": 0.1}'}]
    with pytest.raises(InvalidGuardedCall) as exc:
        client.chat.completions.create(model="sim", messages=messages, extra_body={"stepguard": {"procedure": "invoic"}})
    assert "unknown procedure 'invoic' (did you mean 'invoice'?); known: cover, invoice, parcel" in str(exc.value)
    by_object = proxy.post("/v1/chat/completions", json={"model": "anything", "messages": messages,
                                                         "stepguard": {"procedure": "invoic"}})
    assert by_object.status_code == 404
    assert by_object.json()["error"]["message"] == "unknown procedure 'invoic' (did you mean 'invoice'?); known: cover, invoice, parcel"
    by_model = proxy.post("/v1/chat/completions", json={"model": "stepguard/invoic", "messages": messages}).json()["error"]
    assert by_model["message"] == "unknown procedure 'invoic' (did you mean 'stepguard/invoice'?); known: cover, invoice, parcel"
    assert by_model["param"] == "model" and by_model["known"] == ["cover", "invoice", "parcel"]
    far = proxy.post("/v1/chat/completions", json={"model": "stepguard/zzz", "messages": messages}).json()["error"]["message"]
    assert far == "unknown procedure 'zzz'; known: cover, invoice, parcel"  # nothing close: no guess
