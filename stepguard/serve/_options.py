"""What a chat request asks of the proxy: a guarded run (its procedure, inputs and options) or nothing.

A request names a procedure by its ``model`` (``"stepguard/invoice"``) or by the ``stepguard``
object of its body (what the ``openai`` client's ``extra_body={"stepguard": {...}}`` adds)::

    {"model": "stepguard/invoice", "messages": [...],
     "stepguard": {"inputs": {"subtotal": "120.00", "rate": 0.2}, "policy": "repair", "thread_id": "inv-42"}}

The ``stepguard`` object is read as the drop-in client reads ``extra_body["stepguard"]``
(:func:`stepguard.wire._request_fields.read_run_object`, the options by
:class:`~stepguard.guard.GuardOptions`): an unknown key, or a value of the wrong type
(``"false"`` for a boolean, ``5.0`` for an integer) or out of range (``NaN``, ``1e400``, a temperature
over 2), is a :class:`RequestError` (HTTP 400) naming ``stepguard.<key>``, with the client's message.
The request's own fields follow the client's rule too
(:func:`~stepguard.wire._request_fields.read_request_fields`): ``temperature``, ``seed``,
``stream`` and ``max_tokens`` read, ``top_p`` and the rest sent, ``n``, ``stop``, ``tools``,
``logprobs``... refused, ``param`` naming the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stepguard.guard import OPTION_NAMES, GuardConfig, OptionError, thread_needs_checkpointer
from stepguard.model import ChatMessage
from stepguard.procedure import Procedure
from stepguard.wire import (
    RUN_KEYS,
    InvalidGuardedCall,
    MessageInputs,
    RequestError,
    ResponseShape,
    RunObject,
    check_tree,
    context_of,
    inputs_from_messages,
    read_request_fields,
    read_run_object,
    response_shape,
)

__all__ = ["MODEL_PREFIX", "OPTION_KEYS", "GuardedRequest", "RequestError", "guarded_request", "names_a_procedure"]

MODEL_PREFIX = "stepguard/"
"""A model name with this prefix names a procedure: ``stepguard/<procedure>``."""

OPTION_KEYS: tuple[str, ...] = (*RUN_KEYS, *OPTION_NAMES)
"""The keys a request's ``stepguard`` object may hold: what to run, then the
:class:`~stepguard.guard.GuardOptions` (the drop-in client's ``extra_body["stepguard"]`` holds the same)."""


@dataclass(frozen=True)
class GuardedRequest:
    """A request the proxy runs under the guard."""

    name: str
    """The procedure's name."""
    procedure: Procedure
    inputs: dict[str, Any]
    """Input values as the request gave them (bound and checked by the guard)."""
    config: GuardConfig
    thread_id: str | None
    stream: bool
    model: str
    """The ``model`` field to answer with: the request's own, else ``stepguard/<name>``."""
    shape: ResponseShape = ResponseShape()
    """What the content is: the answer's text, or with a JSON ``response_format`` the values as JSON."""
    context: tuple[ChatMessage, ...] = ()
    """The request's messages, shown to the model as context in every chunk prompt (as the drop-in
    client's, :func:`~stepguard.wire._guarded_call.context_of`); where the inputs came from the
    last user message, that message is the inputs, not context."""
    max_tokens: int | None = None
    """The request's ``max_tokens`` / ``max_completion_tokens``: a cap on every model call, or ``None``."""
    sent: dict[str, Any] = field(default_factory=dict)
    """The request's fields sent with every model call as given (``top_p``...; :mod:`stepguard.wire._request_fields`)."""


def _bad(message: str, param: str | None, code: str = "invalid_option") -> RequestError:
    return RequestError(400, message, param, code)


def _inputs_from_messages(messages: Any) -> MessageInputs:
    """The inputs in the last user message, as the drop-in client reads them (one function:
    :func:`~stepguard.wire._guarded_call.inputs_from_messages`), checked as the body is.

    Raises:
        RequestError: 400 ``missing_inputs`` (``param`` ``stepguard.inputs``), or ``invalid_json``
            for inputs nested too deeply or with text that is not Unicode.
    """
    try:
        found = inputs_from_messages(messages)
    except InvalidGuardedCall as exc:
        code = "missing_inputs" if exc.location == "inputs" else "invalid_messages"
        message = str(exc).split(": ", 1)[1] if code == "missing_inputs" else str(exc)
        raise _bad(message, "stepguard.inputs" if code == "missing_inputs" else exc.location, code) from None
    check_tree(found.inputs, found.where)
    return found


def names_a_procedure(model: Any) -> bool:
    """Is ``model`` a procedure's name, in any spelling (``stepguard/x``, `` Stepguard/x``)?"""
    return isinstance(model, str) and model.strip().lower().startswith(MODEL_PREFIX)


def guarded_request(body: Mapping[str, Any], procedures: Mapping[str, Procedure], base: GuardConfig | None = None,
                    *, checkpoints: bool = True) -> GuardedRequest | None:
    """Read a chat request: ``None`` when it names no procedure (pass it through), else the guarded run.

    Args:
        body: the request's JSON body (numbers with a fraction read as ``Decimal``, exactly as written).
        procedures: the procedures served, by name.
        base: the proxy's GuardConfig, which the request's options override field by field.
        checkpoints: whether the proxy has a checkpointer (a ``thread_id`` needs one).

    Raises:
        RequestError: 400 for an unknown option, a value of the wrong type or out of range (the
            request's ``temperature``, ``seed`` and ``stream`` too), a body nested deeper than
            :data:`~stepguard.wire._body.MAX_DEPTH` or with text that is not Unicode, no inputs,
            a ``thread_id`` without a checkpointer, a ``stepguard.procedure`` that contradicts the
            model name, or a ``response_format`` the guard cannot honour (as the drop-in client's); 404
            for an unknown procedure (the error lists the known ones under ``known``).
    """
    model = body.get("model")
    raw = body.get("stepguard")
    named = _named(model)
    if raw is None and named is None:
        return None
    check_tree(body)  # before any of it is read: nothing deeper than MAX_DEPTH, no text that is not Unicode
    run = _run_object(raw)
    name = _procedure_name(run, named, procedures)
    if run.thread_id is not None and not checkpoints:
        raise _bad(str(thread_needs_checkpointer("start the proxy with --checkpoint")), "stepguard.thread_id")
    try:  # the drop-in client's rule for the request's own fields (n, stop, max_tokens, top_p...)
        fields = read_request_fields({k: v for k, v in body.items() if k != "stepguard"}, others_sent=True)
    except OptionError as exc:
        raise RequestError(400, str(exc), exc.field, "invalid_value") from None
    config = run.options.over(fields.options).resolve(procedures[name], base=base)
    try:
        shape = dataclasses.replace(response_shape(body.get("response_format"), procedures[name]),
                                    deliver_flagged=run.deliver_flagged)
    except InvalidGuardedCall as exc:
        raise _bad(str(exc), exc.location, "invalid_response_format") from None
    inputs, context = _inputs_and_context(run, body.get("messages"))
    return GuardedRequest(name, procedures[name], dict(inputs), config, run.thread_id,
                          fields.stream, model if isinstance(model, str) and model else MODEL_PREFIX + name,
                          shape, context, fields.max_tokens, fields.sent)


def _named(model: Any) -> str | None:
    """The procedure the ``model`` field names (``stepguard/<name>``), or ``None`` for a model that
    names none. A near spelling (`` stepguard/x``, ``Stepguard/x``) is a 400: meant as one, never forwarded."""
    named = model[len(MODEL_PREFIX):] if isinstance(model, str) and model.startswith(MODEL_PREFIX) else None
    if named is None and names_a_procedure(model):
        raise _bad(f"model {model!r}: a procedure is named exactly {MODEL_PREFIX}<name> (lower case, no spaces)", "model")
    return named


def _run_object(raw: Any) -> RunObject:
    """The body's ``stepguard`` object read as the drop-in client reads it (``{}`` where it is absent).

    Raises:
        RequestError: 400 where it is not an object, or holds an unknown key (``unknown_option``) or a
            bad value (``invalid_option``), ``param`` naming ``stepguard.<key>``.
    """
    if raw is not None and not isinstance(raw, Mapping):
        raise _bad("stepguard must be an object: {\"procedure\": ..., \"inputs\": {...}, ...options}", "stepguard")
    try:
        return read_run_object(dict(raw or {}))
    except OptionError as exc:
        code = "unknown_option" if exc.field not in OPTION_KEYS else "invalid_option"
        raise _bad(str(exc), f"stepguard.{exc.field}", code) from None


def _procedure_name(run: RunObject, named: str | None, procedures: Mapping[str, Procedure]) -> str:
    """The name of the procedure to run: ``stepguard.procedure``, else the model's.

    Raises:
        RequestError: 400 where the two disagree or neither names one; 404 for a procedure not
            served (``known`` lists those that are; the model name to send where the model named it).
    """
    name = run.procedure if run.procedure is not None else named
    if named is not None and run.procedure is not None and run.procedure != named:
        raise _bad(f"the model names procedure {named!r} but stepguard.procedure is {run.procedure!r}", "stepguard.procedure")
    if not name:
        raise _bad("stepguard.procedure: name the procedure to run", "stepguard.procedure", "missing_procedure")
    if name not in procedures:
        known = sorted(procedures)
        from stepguard.procedure import unknown_procedure

        prefix = "" if run.procedure else MODEL_PREFIX  # named by the model: suggest the model name to send
        raise RequestError(404, unknown_procedure(name, known, prefix=prefix),
                           "stepguard.procedure" if run.procedure else "model", "procedure_not_found", known=known)
    return name


def _inputs_and_context(run: RunObject, messages: Any) -> tuple[Mapping[str, Any], tuple[ChatMessage, ...]]:
    """The run's inputs (``stepguard.inputs``, else read from the last user message, which is then
    not context) and the context messages.

    Raises:
        RequestError: 400 for no inputs, or messages the guard cannot show as context.
    """
    if run.inputs is not None:
        inputs = run.inputs
    else:
        found = _inputs_from_messages(messages)
        inputs, messages = found.inputs, found.context  # that message is the inputs
    try:
        return inputs, context_of(messages)
    except InvalidGuardedCall as exc:
        raise _bad(str(exc), exc.location, "invalid_messages") from None
