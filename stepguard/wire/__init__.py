"""The OpenAI wire format of a guarded run: one home for what the drop-in client
(:class:`stepguard.adapters.GuardedOpenAI`) and the proxy (:mod:`stepguard.serve`) share.

Both read a guarded chat request the same way and answer in the same shapes, so the rules live
here and each side imports them; neither imports the other's private modules:

* reading a request: ``extra_body["stepguard"]`` and messages (:func:`read_call`,
  :func:`inputs_from_messages`), which request fields the guard reads, sends or refuses
  (:func:`read_request_fields`), and a request body read strictly (:func:`read_body`,
  :func:`parse_json`, :class:`RequestError`);
* answering: a ``ChatCompletion`` or a stream of chunks built from a :class:`~stepguard.guard.GuardResult`
  (:func:`completion`, :func:`completion_body`, :class:`Chunker`, :class:`ContentWriter`,
  :func:`response_shape`);
* the errors a guarded call raises, both ``openai``'s and stepguard's (:class:`GuardedCallError` and
  its subclasses, :func:`client_error`).

This room imports the core's public API (``guard``, ``kinds``, ``procedure``, ``model``, ``errors``)
and ``openai``; ``adapters`` and ``serve`` import it, never the reverse.
"""

from stepguard.wire._body import (
    MAX_DEPTH,
    SEED_RANGE,
    TOKENS_RANGE,
    check_tree,
    flag_field,
    integer_field,
    json_kind,
    number_field,
    parse_json,
    read_body,
    shown,
)
from stepguard.wire._client_errors import (
    GuardedBudgetExhausted,
    GuardedCallError,
    GuardedCheckpointError,
    GuardedModelError,
    GuardedModelOutputTruncated,
    GuardedModelTimeout,
    GuardedModelUnavailable,
    GuardedProcedureError,
    GuardedStepDeviation,
    GuardedThreadInFlight,
    InvalidGuardedCall,
    client_error,
)
from stepguard.wire._completion import (
    WITHHELD,
    WITHHELD_STATUSES,
    AsyncGuardedStream,
    Chunker,
    ContentWriter,
    GuardedStream,
    ResponseShape,
    Slot,
    achunks,
    chunk,
    chunk_body,
    chunks,
    completion,
    completion_body,
    finish_reason,
    new_id,
    response_shape,
    usage_body,
    withheld,
)
from stepguard.wire._errors import RequestError
from stepguard.wire._guarded_call import (
    MISSING_INPUTS,
    NOT_IN_IDENTITY,
    GuardedCall,
    MessageInputs,
    StepguardOptions,
    context_of,
    guarded_spec,
    inputs_from_messages,
    read_call,
)
from stepguard.wire._request_fields import (
    READ_BY_GUARD,
    REFUSED,
    REFUSED_MESSAGE,
    RUN_KEYS,
    SENT_AS_GIVEN,
    RequestFields,
    RunObject,
    read_request_fields,
    read_run_object,
)

__all__ = [
    "MAX_DEPTH",
    "MISSING_INPUTS",
    "NOT_IN_IDENTITY",
    "READ_BY_GUARD",
    "REFUSED",
    "REFUSED_MESSAGE",
    "RUN_KEYS",
    "SEED_RANGE",
    "WITHHELD",
    "WITHHELD_STATUSES",
    "SENT_AS_GIVEN",
    "TOKENS_RANGE",
    "AsyncGuardedStream",
    "Chunker",
    "ContentWriter",
    "GuardedBudgetExhausted",
    "GuardedCall",
    "GuardedCallError",
    "GuardedCheckpointError",
    "GuardedModelError",
    "GuardedModelOutputTruncated",
    "GuardedModelTimeout",
    "GuardedModelUnavailable",
    "GuardedProcedureError",
    "GuardedStepDeviation",
    "GuardedStream",
    "GuardedThreadInFlight",
    "InvalidGuardedCall",
    "MessageInputs",
    "RequestError",
    "RequestFields",
    "ResponseShape",
    "RunObject",
    "Slot",
    "StepguardOptions",
    "achunks",
    "check_tree",
    "chunk",
    "chunk_body",
    "chunks",
    "client_error",
    "completion",
    "completion_body",
    "finish_reason",
    "context_of",
    "flag_field",
    "guarded_spec",
    "inputs_from_messages",
    "integer_field",
    "json_kind",
    "new_id",
    "number_field",
    "parse_json",
    "read_body",
    "read_call",
    "read_request_fields",
    "read_run_object",
    "response_shape",
    "shown",
    "usage_body",
    "withheld",
]
