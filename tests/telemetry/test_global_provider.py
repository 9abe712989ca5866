"""A guard built without an observer (GuardedOpenAI, guarded_node) traces through the global TracerProvider."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests._paths import ROOT


def _child() -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "tests._global_child"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_guarded_openai_is_traced_through_the_global_provider_under_the_callers_span():
    spans = _child()
    by_name = {s["name"]: s for s in spans}
    (app,) = [s for s in spans if s["name"] == "request"]
    run = by_name["invoke_workflow telemetry_demo"]
    assert run["parent"] == app["id"] and run["scope"] == "stepguard"  # nested in the caller's trace
    assert sum(s["name"] == "stepguard.chunk" for s in spans) == 1  # the default follows the model: one window
    assert sum(s["name"] == "chat scripted" for s in spans) == 1
    assert {s["trace_id"] for s in spans} == {app["trace_id"]}


def test_without_a_global_provider_the_default_observer_traces_nothing():
    from stepguard import Guard
    from stepguard.guard import GlobalTelemetry
    from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, sum_chain_procedure as _procedure

    guard = Guard(ScriptedModel())
    assert isinstance(guard.observer.inner, GlobalTelemetry)
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        pytest.skip("a global tracer provider was set in this process")
    assert guard.run(_procedure(), INPUTS).status == "verified"
    assert guard.observer.inner._inner.get() is None
