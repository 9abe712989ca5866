"""The guard's decisions as GenAI guardrail spans and findings (semantic-conventions-genai,
docs/gen-ai/gen-ai-security.md; docs/tracing.md): one ``run_guardrail stepguard`` span a chunk, beside
the chat span it checks, with the verdict, the policy's action, the policy and the rule (the step's
check), and a ``gen_ai.guardrail.security.finding`` event a deviation."""

from __future__ import annotations

import pytest

from stepguard import Guard, GuardConfig
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, sum_chain_procedure as _procedure
from tests._traced import Traced


@pytest.fixture
def traced() -> Traced:
    return Traced()


def _guardrails(traced: Traced) -> list:
    return sorted(traced.named("run_guardrail"), key=lambda s: s.start_time)


def test_each_chunk_check_is_a_guardrail_span_beside_the_chat_span_it_checks(traced: Traced) -> None:
    result = Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5, ladder=("restate",)),
                   observer=traced.observer()).run(_procedure(), INPUTS)
    assert result.status == "verified" and result.reprompts == 1
    spans = _guardrails(traced)
    chunks = {c.context.span_id: c for c in traced.named("stepguard.chunk")}
    assert len(spans) == len(chunks) == result.chunks
    for span in spans:
        a = span.attributes
        assert span.name == "run_guardrail stepguard" and span.parent.span_id in chunks
        assert a["gen_ai.operation.name"] == "run_guardrail" and a["gen_ai.guardrail.component.name"] == "stepguard"
        assert a["gen_ai.guardrail.target.type"] == "output" and a["gen_ai.guardrail.target.subtype"] == "llm"
        assert a["gen_ai.guardrail.security.policy.id"] == "stepguard.procedure/telemetry_demo"
        assert a["openinference.span.kind"] == "GUARDRAIL"
    denied = [s for s in spans if s.attributes["gen_ai.guardrail.verdict.type"] == "deny"]
    assert len(denied) == 1
    d = denied[0].attributes
    assert d["gen_ai.guardrail.action.type"] == "block"  # reprompt: the wrong value is not committed
    assert d["gen_ai.guardrail.security.policy.rule.id"] == "telemetry_demo/S7"
    assert d["gen_ai.guardrail.verdict.reason"] == "arithmetic_error" and d["stepguard.rung"] == "restate"
    (finding,) = denied[0].events
    assert finding.name == "gen_ai.guardrail.security.finding"
    f = finding.attributes
    assert f["gen_ai.guardrail.security.risk.category"] == "custom:arithmetic_error"
    assert f["gen_ai.guardrail.security.policy.id"] == "stepguard.procedure/telemetry_demo"
    assert f["gen_ai.guardrail.target.type"] == "output" and f["gen_ai.guardrail.security.policy.rule.id"] == "telemetry_demo/S7"
    allowed = [s for s in spans if s.attributes["gen_ai.guardrail.verdict.type"] == "allow"]
    assert all(s.attributes["gen_ai.guardrail.action.type"] == "allow" and not s.events for s in allowed)
    assert all("gen_ai.guardrail.verdict.reason" not in s.attributes for s in allowed)
    # the check runs after the model call it checks
    calls = {c.parent.span_id: c for c in traced.named("chat")}
    for span in spans:
        assert span.start_time >= calls[span.parent.span_id].end_time


@pytest.mark.parametrize(("policy", "action"), [("repair", "modify"), ("flag", "audit")])
def test_the_policys_action_is_the_guardrail_action(traced: Traced, policy: str, action: str) -> None:
    Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5, policy=policy),  # type: ignore[arg-type]
          observer=traced.observer()).run(_procedure(), INPUTS)
    denied = [s for s in _guardrails(traced) if s.attributes["gen_ai.guardrail.verdict.type"] == "deny"]
    assert [s.attributes["gen_ai.guardrail.action.type"] for s in denied] == [action]
    assert [e.attributes["gen_ai.guardrail.action.type"] for s in denied for e in s.events] == [action]


def test_no_content_in_the_guardrail_attributes_even_with_capture_on(traced: Traced) -> None:
    """The convention: a verdict's reason MUST NOT carry content; values stay in the opt-in evaluation explanation."""
    Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5, ladder=("restate",)),
          observer=traced.observer(capture_content=True)).run(_procedure(), INPUTS)
    explained = [e.attributes.get("gen_ai.evaluation.explanation") for c in traced.named("stepguard.chunk") for e in c.events]
    assert any(explained)  # content capture is on: the evaluation events carry the values
    words = {"run_guardrail", "stepguard", "output", "llm", "deny", "allow", "block", "arithmetic_error", "custom:arithmetic_error",
             "stepguard.procedure/telemetry_demo", "telemetry_demo/S7", "S7", "GUARDRAIL", "restate"}
    for span in _guardrails(traced):
        texts = [v for v in span.attributes.values() if isinstance(v, str)]
        texts += [v for e in span.events for v in e.attributes.values() if isinstance(v, str)]
        assert set(texts) <= words, set(texts) - words


def test_only_deviation_events_still_give_a_guardrail_span_a_chunk(traced: Traced) -> None:
    result = Guard(ScriptedModel(), GuardConfig(chunk_size=4), observer=traced.observer(step_events="deviations")
                   ).run(_procedure(), INPUTS)
    spans = _guardrails(traced)
    assert len(spans) == result.chunks == 3
    assert {s.attributes["gen_ai.guardrail.verdict.type"] for s in spans} == {"allow"}
