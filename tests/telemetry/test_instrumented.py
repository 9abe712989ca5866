"""With OpenAI auto-instrumentation on, each guarded model call is still one ``chat`` span (stepguard's).

``opentelemetry-instrumentation-openai-v2`` (in the dev extra) traces every
``client.chat.completions.create``; the guard calls ``create`` on the user's client
(:class:`~stepguard.adapters.integrations.openai_wrapper.ClientChatModel`, :class:`GuardedOpenAI`), so without
care each call would be traced twice and its tokens counted twice.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.instrumentation.openai_v2", exc_type=ImportError)

import openai  # noqa: E402
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from stepguard import Guard, GuardConfig  # noqa: E402
from stepguard.adapters.integrations.openai_wrapper import ClientChatModel  # noqa: E402
from stepguard.telemetry import OtelObserver  # noqa: E402
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, sum_chain_procedure as _procedure  # noqa: E402
from tests._stub_server import StubServer  # noqa: E402


@pytest.fixture
def instrumented() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    memory = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tp)
    try:
        yield tp, memory
    finally:
        instrumentor.uninstrument()


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        server.script = lambda text: ScriptedModel().complete([{"role": "user", "content": text}]).text
        yield server


def _chat_spans(memory: InMemorySpanExporter) -> list:
    return [s for s in memory.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == "chat"]


@pytest.mark.parametrize("suppress", [True, False])
def test_a_guarded_call_through_an_instrumented_client_is_one_chat_span(instrumented, stub, suppress):
    tp, memory = instrumented
    client = openai.OpenAI(base_url=stub.base_url, api_key="sk-test", max_retries=0)
    model = ClientChatModel(client, "scripted")
    result = Guard(model, GuardConfig(chunk_size=5), observer=OtelObserver(tp, suppress_instrumentation=suppress)).run(_procedure(), INPUTS)
    assert result.status == "verified"
    chats = _chat_spans(memory)
    ours = [s for s in chats if s.instrumentation_scope.name == "stepguard"]
    theirs = [s for s in chats if s.instrumentation_scope.name != "stepguard"]
    assert len(ours) == result.usage.model_calls == 3
    if suppress:
        assert theirs == []
    else:  # the combination without suppression: every call traced twice (what the default avoids)
        assert len(theirs) == len(ours)
        assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in chats) == 2 * result.usage.input_tokens


@pytest.mark.slow
def test_the_users_own_calls_stay_traced_by_the_instrumentation(instrumented, stub):
    tp, memory = instrumented
    client = openai.OpenAI(base_url=stub.base_url, api_key="sk-test", max_retries=0)
    Guard(ClientChatModel(client, "scripted"), GuardConfig(chunk_size=5), observer=OtelObserver(tp)).run(_procedure(), INPUTS)
    before = len(_chat_spans(memory))
    client.chat.completions.create(model="ok", messages=[{"role": "user", "content": "hi"}])
    after = _chat_spans(memory)
    assert len(after) == before + 1 and after[-1].instrumentation_scope.name != "stepguard"
