"""Child process of tests/telemetry/test_global_provider.py: sets OpenTelemetry's global tracer provider
(which can be set only once per process), runs a GuardedOpenAI call against the stub server, and
prints the finished spans as JSON lines ``{"name", "scope", "trace_id", "parent"}``."""

from __future__ import annotations

import json

import openai
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepguard.adapters.integrations.openai_wrapper import GuardedOpenAI
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, sum_chain_procedure as _procedure
from tests._stub_server import StubServer

memory = InMemorySpanExporter()
tp = TracerProvider()
tp.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(tp)
with StubServer() as stub:
    stub.script = lambda text: ScriptedModel().complete([{"role": "user", "content": text}]).text
    client = GuardedOpenAI(openai.OpenAI(base_url=stub.base_url, api_key="sk-test", max_retries=0), {"demo": _procedure()})
    with trace.get_tracer("app").start_as_current_span("request"):
        resp = client.chat.completions.create(model="scripted", messages=[], extra_body={"stepguard": {"procedure": "demo", "inputs": INPUTS}})
assert resp.stepguard.status == "verified", resp.stepguard.status
for s in memory.get_finished_spans():
    print(json.dumps({"name": s.name, "scope": s.instrumentation_scope.name, "trace_id": s.context.trace_id,
                      "parent": s.parent.span_id if s.parent else None, "id": s.context.span_id}))
