"""Span, attribute, event and metric names: one place, each with the convention it comes from.

Sources:

- **GenAI** = OpenTelemetry semantic conventions for generative AI, as of semantic-conventions
  v1.41 (the last release that carried them; ``opentelemetry-semantic-conventions`` 0.66b2 still
  ships them as ``opentelemetry.semconv._incubating``). The conventions have since moved to
  the ``semantic-conventions-genai`` repository (v0.1.0), which renames a few of them; where it
  does, both are noted and the compatible one is also emitted (see ``docs/tracing.md``).
- **GenAI guardrails** = the guardrail conventions of ``semantic-conventions-genai``
  (``docs/gen-ai/gen-ai-security.md``, status Development; the text followed and its version are
  in ``docs/tracing.md``): the guard's check of a chunk's reply as a ``run_guardrail`` span and each
  deviation as a ``gen_ai.guardrail.security.finding`` event.
- **OTel** = stable general conventions (``error.type``, ``server.*``).
- **OpenInference** = Arize's conventions, so that Phoenix draws the spans natively.
- **stepguard** = ours, always under the ``stepguard.`` prefix, in the words of
  ``architecture.md`` (procedure, step, chunk, deviation, policy, rung).
"""

from __future__ import annotations

from typing import Final

# --- spans --------------------------------------------------------------------------------
OP_WORKFLOW: Final = "invoke_workflow"
"""GenAI ``gen_ai.operation.name`` of the run span; span name ``invoke_workflow {procedure}``
(GenAI "Invoke workflow span", kind INTERNAL)."""
OP_CHAT: Final = "chat"
"""GenAI ``gen_ai.operation.name`` of a model call; span name ``chat {gen_ai.request.model}``,
kind CLIENT (GenAI "Inference" span)."""
OP_EXECUTE_TOOL: Final = "execute_tool"
"""GenAI ``gen_ai.operation.name`` of a tool step's executed call; span name ``execute_tool
{gen_ai.tool.name}``, kind INTERNAL (GenAI "Execute tool span"), under the chunk (the step) that asked it."""
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
"""GenAI: the tool's name."""
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
"""GenAI: ``function`` (a callable run by the application)."""
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
"""GenAI (opt-in content): the call's arguments, a JSON object."""
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
"""GenAI (opt-in content): the tool's result, as the value text the step commits."""
TOOL_ARGUMENT_EVALUATION: Final = "stepguard.tool_argument"
"""``gen_ai.evaluation.name`` of a tool argument's check (one event per argument on the ``execute_tool`` span)."""
TOOL_ARGUMENT: Final = "stepguard.tool.argument"
"""stepguard: the argument an evaluation event is about."""
CHUNK_SPAN: Final = "stepguard.chunk"
"""stepguard: one chunk (its prompt, the model call, the check, the policy's action). A constant
name, low in cardinality; which steps it holds is in its attributes."""

# --- GenAI attributes ---------------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
"""GenAI (since v1.37; it replaced ``gen_ai.system``): on the ``chat`` spans, and on the run span,
which ``semantic-conventions-genai`` v0.1.0 models as an "invoke agent internal" span, where it is
Required (``gen_ai.request.model`` there: Conditionally Required, when available)."""
GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"
"""GenAI v1.41 workflow name; ``semantic-conventions-genai`` v0.1.0 replaces it with
``gen_ai.agent.name``, so the run span carries both."""
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
"""GenAI "session, thread" id: the guard's checkpoint ``thread_id`` (a resumed run shares it)."""
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_SEED: Final = "gen_ai.request.seed"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
"""The id the server gave the reply (a chat completion's ``id``); set when the adapter read one."""
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
"""``("cut",)`` for a streamed reply the guard closed early (its ``stepguard.stream.cut.*`` say where and why)."""
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
"""True for a call read as the model's stream (GenAI, development: "whether the GenAI request was made
in streaming mode"); absent for a call read whole."""
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
"""Seconds from the request to the first text delta of a streamed reply (GenAI, development)."""
STREAM_CUT_STEP: Final = "stepguard.stream.cut.step"
"""The step whose line made the guard close the stream (GenAI names no attribute for a client's cut)."""
STREAM_CUT_KIND: Final = "stepguard.stream.cut.kind"
"""Why the stream was cut: the step's deviation kind, ``budget_exhausted`` (the wall-time budget ran out)
or ``closed`` (the caller stopped reading)."""
STREAM_CUT_VERIFIED: Final = "stepguard.stream.cut.verified_steps"
"""Steps of the window verified in the stream before the cut."""
STREAM_CUT_CHARS: Final = "stepguard.stream.cut.chars"
"""Characters of the reply kept at the cut (up to the last complete line judged)."""
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
"""Input tokens, cached ones included (GenAI)."""
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
"""The part of the input served from the provider's prompt cache (GenAI; set only when > 0)."""
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
"""Opt-in content: the messages sent, as a JSON string in the GenAI input-messages schema."""
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
"""Opt-in content: the reply, as a JSON string in the GenAI output-messages schema."""
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
"""Metric attribute of ``gen_ai.client.token.usage``: ``input`` or ``output``."""
ERROR_TYPE: Final = "error.type"
"""OTel: the exception's class name (``ModelTimeout``), or ``stepguard.run_failed`` for a run
that ended with status ``failed`` without raising."""
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

# --- GenAI evaluation event ---------------------------------------------------------------
EVALUATION_EVENT: Final = "gen_ai.evaluation.result"
"""GenAI event: one per checked step, added to the chunk span (the parent of the evaluated
``chat`` span; the chat span has ended by the time the check runs)."""
EVALUATION_NAME: Final = "gen_ai.evaluation.name"
EVALUATION_NAME_VALUE: Final = "stepguard.step_check"
"""Our value of ``gen_ai.evaluation.name``."""
EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
"""``pass`` or ``fail``."""
EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
"""1.0 for pass, 0.0 for fail."""
EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
"""The deviation's detail (it quotes values and expressions: recorded only with content capture)."""

# --- GenAI guardrail span and finding event ------------------------------------------------
OP_GUARDRAIL: Final = "run_guardrail"
"""GenAI guardrails ``gen_ai.operation.name`` of the check of one chunk's reply; span name
``run_guardrail {gen_ai.guardrail.component.name}`` (``run_guardrail stepguard``), kind INTERNAL
("Run guardrail internal span": the evaluation runs in-process), a child of the chunk span beside
the ``chat`` span whose output it checks."""
GUARDRAIL_COMPONENT: Final = "gen_ai.guardrail.component.name"
"""The guardrail component: ``stepguard``."""
GUARDRAIL_COMPONENT_VALUE: Final = "stepguard"
GUARDRAIL_TARGET_TYPE: Final = "gen_ai.guardrail.target.type"
"""``output``: the guard checks what the model wrote."""
GUARDRAIL_TARGET_SUBTYPE: Final = "gen_ai.guardrail.target.subtype"
"""``llm``: the content of an LLM operation's response."""
GUARDRAIL_VERDICT_TYPE: Final = "gen_ai.guardrail.verdict.type"
"""``allow`` (every step of the chunk checked) or ``deny`` (a step deviated)."""
GUARDRAIL_VERDICT_REASON: Final = "gen_ai.guardrail.verdict.reason"
"""The first deviation's kind (``arithmetic_error``): low in cardinality and free of content, as
the convention asks; the values and expressions stay in the opt-in evaluation explanation."""
GUARDRAIL_ACTION_TYPE: Final = "gen_ai.guardrail.action.type"
"""What the policy did (:data:`GUARDRAIL_ACTIONS`); ``allow`` when nothing deviated."""
GUARDRAIL_POLICY_ID: Final = "gen_ai.guardrail.security.policy.id"
"""The policy evaluated: the procedure, ``stepguard.procedure/{name}``."""
GUARDRAIL_RULE_ID: Final = "gen_ai.guardrail.security.policy.rule.id"
"""The rule that produced the verdict: the step's check, ``{procedure}/{step}`` (``invoice/total``)."""
GUARDRAIL_RISK_CATEGORY: Final = "gen_ai.guardrail.security.risk.category"
"""On a finding (Required there): ``custom:{deviation kind}``, the convention's form for categories of its own."""
GUARDRAIL_FINDING_EVENT: Final = "gen_ai.guardrail.security.finding"
"""GenAI guardrails event: one per deviation the check found, on the ``run_guardrail`` span."""
GUARDRAIL_ACTIONS: Final = {"reprompt": "block", "raise": "block", "stop": "block", "repair": "modify", "flag": "audit",
                            "note": "audit"}
"""The policy's action as ``gen_ai.guardrail.action.type``: ``reprompt`` blocks the model's value (it is
not committed; the step is asked again), ``raise`` and ``stop`` block the run, ``repair`` modifies the
value (the evaluator's replaces it), ``flag`` and ``note`` record it and change nothing (``audit``)."""

# --- stepguard attributes -----------------------------------------------------------------
PROCEDURE_NAME: Final = "stepguard.procedure.name"
STEPS: Final = "stepguard.steps"
"""Number of steps in the procedure."""
CHUNK_SIZE: Final = "stepguard.chunk_size"
POLICY: Final = "stepguard.policy"
ON_EXHAUSTED: Final = "stepguard.on_exhausted"
MODEL_SPEC: Final = "stepguard.model"
"""The model spec (``sim:paper``, ``http://host/v1#name``) with any user:password and query removed."""
SIMULATED: Final = "stepguard.simulated"
THREAD_ID: Final = "stepguard.thread_id"
RESULT_STATUS: Final = "stepguard.result.status"
"""verified / bounded / repaired / flagged / failed, or ``error`` when the run raised before a result."""
RESULT_GRADES: Final = "stepguard.result.grades"
"""The grade of each committed value, in step order, as ``var=grade`` strings (``["subtotal=exact",
"discount=bounded"]``); a step with no value is left out (:data:`stepguard.guard.Grade`)."""
REPROMPTS: Final = "stepguard.reprompts"
REPAIRED: Final = "stepguard.repaired"
CHUNKS: Final = "stepguard.chunks"
FIRST_UNVERIFIED: Final = "stepguard.first_unverified"
USAGE_MODEL_CALLS: Final = "stepguard.usage.model_calls"
USAGE_INPUT_TOKENS: Final = "stepguard.usage.input_tokens"
"""Run totals live under ``stepguard.`` so that backends summing ``gen_ai.usage.*`` over spans
do not count them twice."""
USAGE_OUTPUT_TOKENS: Final = "stepguard.usage.output_tokens"
ANSWER: Final = "stepguard.answer"
"""Opt-in content: the answer value."""
CHUNK_INDEX: Final = "stepguard.chunk.index"
"""0-based chunk number within the run (a re-prompt is a new chunk)."""
CHUNK_FIRST_STEP: Final = "stepguard.chunk.first_step"
CHUNK_LAST_STEP: Final = "stepguard.chunk.last_step"
CHUNK_STEPS: Final = "stepguard.chunk.steps"
CHUNK_VERIFIED: Final = "stepguard.chunk.verified"
"""Steps of the chunk that verified and were committed."""
ATTEMPT: Final = "stepguard.attempt"
"""Re-prompts so far for the chunk's first step (0 on a first try)."""
RUNG: Final = "stepguard.rung"
"""The re-prompt ladder rung (restate / narrow / resample): on a chunk span, the rung it was asked
on; on a ``reprompt`` evaluation event, the rung of the re-prompt it triggered."""
STEP: Final = "stepguard.step"
DEVIATION_KIND: Final = "stepguard.deviation.kind"
POLICY_ACTION: Final = "stepguard.policy.action"
"""reprompt / repair / flag / raise."""

# --- OpenInference (Phoenix) --------------------------------------------------------------
# Only the span kind: Phoenix (tested 20.26) derives llm.model_name, llm.token_count.*,
# llm.input_messages.* and session.id from the gen_ai.* attributes itself.
OI_SPAN_KIND: Final = "openinference.span.kind"
OI_CHAIN: Final = "CHAIN"
OI_GUARDRAIL: Final = "GUARDRAIL"
OI_LLM: Final = "LLM"
OI_INPUT_VALUE: Final = "input.value"
"""Opt-in content on the run span: the inputs as JSON (Phoenix's Input column)."""
OI_OUTPUT_VALUE: Final = "output.value"
"""Opt-in content on the run span: the answer (Phoenix's Output column)."""
OI_PROJECT_NAME: Final = "openinference.project.name"
"""Resource attribute: the Phoenix project the spans land in (``default`` when absent)."""

# --- metrics ------------------------------------------------------------------------------
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
"""GenAI v1.41 histogram, unit ``{token}``, one record per call and token type.
(``semantic-conventions-genai`` v0.1.0 splits it into ``gen_ai.client.inference.usage.*``.)"""
TOKEN_USAGE_BUCKETS: Final = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
"""Explicit bucket boundaries the GenAI convention gives for ``gen_ai.client.token.usage``."""
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
"""GenAI v1.41 histogram, unit ``s``: wall time of one model call, failures included (with
``error.type``). (v0.1.0 of the GenAI repository names it ``gen_ai.client.inference.duration``.)"""
DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
"""Explicit bucket boundaries (seconds) the GenAI convention gives for the duration histogram."""
METRIC_STEPS_VERIFIED: Final = "stepguard.steps.verified"
"""Counter, unit ``{step}``: steps that verified and were committed."""
METRIC_DEVIATIONS: Final = "stepguard.deviations"
"""Counter, unit ``{deviation}``, by ``stepguard.deviation.kind`` and ``stepguard.policy.action``."""
METRIC_REPROMPTS: Final = "stepguard.reprompts"
"""Counter, unit ``{reprompt}``: corrective prompts sent."""
METRIC_REPAIRS: Final = "stepguard.repairs"
"""Counter, unit ``{repair}``: repair actions taken (the evaluator's value supplied)."""

# --- environment --------------------------------------------------------------------------
ENV_CAPTURE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI instrumentations' opt-in for content: ``true`` (or ``span_only`` / ``span_and_event``)."""
