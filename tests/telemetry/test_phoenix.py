"""Traces in a real backend: a guarded run exports to Arize Phoenix over OTLP/HTTP and is read back.

Phoenix comes from ``STEPGUARD_PHOENIX_URL`` (CI starts it with ``scripts/start_phoenix.sh``);
when that is unset, this module starts one itself with the same script, in its own venv. It
skips only when that venv cannot be created (no package registry); a Phoenix that is installed
but does not serve is a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
import warnings
from pathlib import Path

import pytest

from stepguard import Guard, GuardConfig
from stepguard.telemetry import OtelObserver, TelemetryExportWarning, configure_telemetry, shutdown
from tests._fakes import ScriptedModel, sum_chain_procedure
from tests._paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

START = ROOT / "scripts" / "start_phoenix.sh"


@pytest.fixture(scope="module")
def phoenix_url():
    """Base URL of a Phoenix that serves the UI, the REST API and OTLP/HTTP on one port."""
    url = os.environ.get("STEPGUARD_PHOENIX_URL", "").strip()
    if url:
        yield url.rstrip("/")
        return
    work = tempfile.mkdtemp(prefix="stepguard-phoenix-")
    proc = subprocess.run(["bash", str(START)], env={**os.environ, "PHOENIX_WORKING_DIR": work},
                          capture_output=True, text=True, timeout=840)
    if proc.returncode == 2:
        pytest.skip(f"the Phoenix venv could not be created (no package registry?): {proc.stderr.strip()[-400:]}")
    assert proc.returncode == 0, f"Phoenix did not start (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    port = proc.stdout.strip().splitlines()[-1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        pid = int((Path(work) / "phoenix.pid").read_text())
        os.kill(pid, signal.SIGTERM)


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


def _spans(base: str, project: str, want: int, wait_s: float = 60.0) -> list[dict]:
    """All spans of ``project`` (Phoenix REST ``GET /v1/projects/{project}/spans``), once ``want`` have landed."""
    deadline, spans = time.monotonic() + wait_s, []
    while time.monotonic() < deadline:
        try:
            spans = _get(f"{base}/v1/projects/{urllib.parse.quote(project)}/spans?limit=1000")["data"]
        except urllib.error.HTTPError as exc:  # 404 until the project's first span is stored
            if exc.code != 404:
                raise
        if len(spans) >= want:
            return spans
        time.sleep(0.5)
    raise AssertionError(f"only {len(spans)} of {want} spans reached Phoenix in {wait_s}s")


def test_guarded_run_with_a_deviation_lands_in_phoenix(phoenix_url, monkeypatch):
    monkeypatch.delenv("OTEL_METRICS_EXPORTER", raising=False)  # Phoenix takes traces only
    project = f"stepguard-test-{uuid.uuid4().hex[:8]}"
    tp, mp = configure_telemetry(otlp_endpoint=phoenix_url, resource_attributes={"openinference.project.name": project})
    model = ScriptedModel(faults={"S7": ["wrong"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", TelemetryExportWarning)
        result = Guard(model, GuardConfig(chunk_size=5, ladder=("restate",)), observer=OtelObserver(tp, mp)).run(sum_chain_procedure(name="phoenix_demo"), {"x": 7, "y": 3})
        assert shutdown(timeout_s=15), "spans were not flushed to Phoenix in time"
    assert result.status == "verified" and result.reprompts == 1
    spans = _spans(phoenix_url, project, want=1 + 3 * result.chunks)  # the run, and per chunk: itself, its call, its check

    assert len({s["context"]["trace_id"] for s in spans}) == 1
    roots = [s for s in spans if s["parent_id"] is None]
    assert [r["name"] for r in roots] == ["invoke_workflow phoenix_demo"]
    root = roots[0]
    chunks = [s for s in spans if s["name"] == "stepguard.chunk"]
    calls = [s for s in spans if s["name"] == "chat scripted"]
    assert len(chunks) == len(calls) == result.chunks == 4
    chunk_ids = {c["context"]["span_id"] for c in chunks}
    assert all(c["parent_id"] == root["context"]["span_id"] for c in chunks)
    assert all(c["parent_id"] in chunk_ids for c in calls)
    assert root["span_kind"] == "CHAIN" and calls[0]["span_kind"] == "LLM"

    r = root["attributes"]
    assert r["gen_ai.operation.name"] == "invoke_workflow" and r["stepguard.procedure.name"] == "phoenix_demo"
    assert r["stepguard.result.status"] == "verified" and r["stepguard.reprompts"] == 1 and r["stepguard.steps"] == 12
    a = calls[0]["attributes"]
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "test"
    assert a["gen_ai.request.model"] == "scripted" and a["gen_ai.response.model"] == "scripted"
    assert list(a["gen_ai.response.finish_reasons"]) == ["stop"] and a["gen_ai.usage.input_tokens"] == 100
    assert "gen_ai.input.messages" not in a  # no content by default

    events = [e for c in chunks for e in c["events"] if e["name"] == "gen_ai.evaluation.result"]
    fails = [e["attributes"] for e in events if e["attributes"]["gen_ai.evaluation.score.label"] == "fail"]
    assert fails == [{
        "gen_ai.evaluation.name": "stepguard.step_check", "gen_ai.evaluation.score.label": "fail",
        "gen_ai.evaluation.score.value": 0.0, "stepguard.step": "S7", "stepguard.deviation.kind": "arithmetic_error",
        "stepguard.policy.action": "reprompt", "stepguard.rung": "restate",
    }]
    assert len(events) == 13  # 12 passes (one per step) and the deviation

    # the guard's decisions by the GenAI guardrail conventions (docs/tracing.md), beside the evaluation events
    guards = [s for s in spans if s["name"] == "run_guardrail stepguard"]
    assert len(guards) == result.chunks and all(g["parent_id"] in chunk_ids for g in guards)
    assert all(g["span_kind"] == "GUARDRAIL" for g in guards)
    denied = [g for g in guards if g["attributes"]["gen_ai.guardrail.verdict.type"] == "deny"]
    assert len(denied) == 1
    d = denied[0]["attributes"]
    assert d["gen_ai.operation.name"] == "run_guardrail" and d["gen_ai.guardrail.component.name"] == "stepguard"
    assert d["gen_ai.guardrail.target.type"] == "output" and d["gen_ai.guardrail.action.type"] == "block"
    assert d["gen_ai.guardrail.security.policy.id"] == "stepguard.procedure/phoenix_demo"
    assert d["gen_ai.guardrail.security.policy.rule.id"] == "phoenix_demo/S7"
    assert d["gen_ai.guardrail.verdict.reason"] == "arithmetic_error"
    findings = [e for e in denied[0]["events"] if e["name"] == "gen_ai.guardrail.security.finding"]
    assert len(findings) == 1
    f = findings[0]["attributes"]
    assert f["gen_ai.guardrail.security.risk.category"] == "custom:arithmetic_error"
    assert f["gen_ai.guardrail.security.policy.id"] == "stepguard.procedure/phoenix_demo" and f["gen_ai.guardrail.target.type"] == "output"
    assert {g["attributes"]["gen_ai.guardrail.verdict.type"] for g in guards} == {"allow", "deny"}
