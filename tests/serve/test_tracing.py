"""Traces from the proxy (issue 32 item 3): ``stepguard serve --trace-file`` writes, for a guarded request,
the spans and evaluation events ``stepguard run --trace-file`` writes for the same procedure and inputs.

The proxy is a real subprocess on 127.0.0.1 (``--upstream sim:perfect``); its worker configures
telemetry in the app's lifespan and flushes it when it stops, so the file is read after SIGTERM.
Span names and attributes are compared; ids, times and the thread id are not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from tests._paths import ROOT

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install 'stepguard[serve]'")

from google.protobuf.json_format import MessageToDict
from starlette.testclient import TestClient

from stepguard.cli import app
from stepguard.procedure import load_procedure
from stepguard.serve import create_app
from stepguard.serve._server import OPTIONS_ENV
from stepguard.serve._upstream import Upstream
from stepguard.telemetry import read_trace_file
from tests._serve_process import start_serve

INVOICE = ROOT / "examples" / "invoice.yaml"
INPUTS = {"subtotal": "100.10", "rate": "0.1"}
IDS = {"gen_ai.conversation.id", "stepguard.thread_id"}
"""Attributes that differ by run (a fresh thread id each), left out of the comparison."""


def _value(v: dict[str, Any]) -> Any:
    (kind, value), = v.items()
    return tuple(_value(x) for x in value.get("values", ())) if kind == "arrayValue" else value


def _attrs(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {a["key"]: _value(a["value"]) for a in items if a["key"] not in IDS}


def spans(path: Path) -> list[tuple[str, dict[str, Any], list[tuple[str, dict[str, Any]]]]]:
    """Each span's name, attributes and events (name, attributes), in file order."""
    out = []
    for request in read_trace_file(path):
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    d = MessageToDict(span)
                    out.append((d["name"], _attrs(d.get("attributes", [])),
                                [(e["name"], _attrs(e.get("attributes", []))) for e in d.get("events", [])]))
    return sorted(out, key=lambda s: (s[0], json.dumps(s[1], sort_keys=True, default=str)))


def _run_trace(tmp_path: Path) -> Path:
    trace = tmp_path / "run.otlp.jsonl"
    argv = ["run", str(INVOICE), *(a for k, v in INPUTS.items() for a in ("-i", f"{k}={v}")), "--model", "sim:perfect",
            "--trace-file", str(trace)]
    out = CliRunner().invoke(app, argv)
    assert out.exit_code == 0, out.output
    return trace


def _request() -> dict[str, Any]:
    """The guarded request a caller sends: the inputs as JSON in the last user message (no other context)."""
    return {"model": "stepguard/invoice", "messages": [{"role": "user", "content": json.dumps(INPUTS)}]}


def _serve(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str, Path]:
    folder = tmp_path / "procs"
    folder.mkdir()
    (folder / "invoice.yaml").write_text(INVOICE.read_text())
    log = tmp_path / "serve.log"
    proc, base = start_serve(["--upstream", "sim:perfect", "--procedures", str(folder), *extra], log,
                             env={**os.environ, OPTIONS_ENV: ""})
    return proc, base, log


@pytest.mark.slow
def test_serve_trace_file_writes_the_spans_run_writes(tmp_path: Path) -> None:
    want = spans(_run_trace(tmp_path))
    trace = tmp_path / "serve.otlp.jsonl"
    proc, base, log = _serve(tmp_path, "--trace-file", str(trace))
    try:
        reply = httpx.post(f"{base}/chat/completions", json=_request(), timeout=60)
        assert reply.status_code == 200, reply.text
        assert reply.json()["stepguard"]["status"] == "verified"
        plain = httpx.post(f"{base}/chat/completions", json={"model": "sim:perfect", "messages": [{"role": "user", "content": "hi"}]},
                           timeout=60)
        assert plain.status_code == 200  # a pass-through request makes no workflow span
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM), log.read_text()
    assert "traces file" in log.read_text()  # the start-up line says where the spans go
    got = spans(trace)
    assert [s[0] for s in got] == [s[0] for s in want]
    assert sum(s[0] == "invoke_workflow invoice" for s in got) == 1
    assert got == want  # the same names, span attributes, evaluation events and their attributes


def test_create_app_trace_file_flushes_when_the_app_stops(tmp_path: Path) -> None:
    """The same through ``create_app`` (the app's lifespan configures and flushes), streamed too."""
    want = spans(_run_trace(tmp_path))
    trace = tmp_path / "app.otlp.jsonl"
    application = create_app(Upstream("sim:perfect"), {"invoice": load_procedure(INVOICE)}, trace_file=trace)
    with TestClient(application) as client:
        assert client.post("/v1/chat/completions", json=_request()).status_code == 200
        assert application.state.proxy.observer is not None
    assert spans(trace) == want
    assert application.state.proxy.observer is None  # closed with the app


def test_without_the_flags_the_proxy_traces_only_through_a_global_provider(tmp_path: Path) -> None:
    application = create_app(Upstream("sim:perfect"), {"invoice": load_procedure(INVOICE)})
    with TestClient(application) as client:
        assert client.post("/v1/chat/completions", json=_request()).status_code == 200
        assert application.state.proxy.observer is None


def test_an_observer_and_a_trace_file_are_not_both_taken(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not both"):
        create_app(Upstream("sim:perfect"), {}, trace_file=tmp_path / "t", observer=object())
