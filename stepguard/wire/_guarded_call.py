"""Reading a guarded ``chat.completions.create`` call: ``extra_body["stepguard"]``, messages, sampling options.

Everything here runs before any model call; a request the guard cannot honour is refused with
:class:`InvalidGuardedCall` naming the argument, never half-honoured.

Which settings win (docs/drop-in-client.md has the table), by one rule shared with the proxy
(:mod:`stepguard.wire._request_fields`):

- ``extra_body["stepguard"]``'s options (:class:`~stepguard.guard.GuardOptions`, the same
  names, parsing and messages as the CLI and the proxy) over the call's ``temperature`` and ``seed``,
  over the client's ``GuardConfig`` (default: the defaults by procedure); a ``resample`` rung uses
  ``resample_temperature`` and ``seed + attempt``, because a retry at the same temperature and seed
  resends the same request.
- ``max_tokens`` / ``max_completion_tokens``: a cap on every model call; the guard asks for less where
  its own allowance (``max_tokens_per_step`` x steps + 32, or the token budget left) is smaller.
- ``top_p`` and the others of :data:`~stepguard.wire._request_fields.SENT_AS_GIVEN`,
  ``extra_headers``, ``extra_query``, ``timeout`` and ``extra_body``'s other keys: sent with every
  model call as given.
- ``n`` other than 1, ``tools``, ``stop``, ``logprobs`` and the others of
  :data:`~stepguard.wire._request_fields.REFUSED`, and any other argument: refused.
- ``thread_id`` on a client without a checkpointer: refused (nothing would keep the thread).

Inputs: ``extra_body["stepguard"]["inputs"]``, else the JSON object of the last user message, read
by :func:`inputs_from_messages`, the proxy's function too (that message is then not context).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import openai

from stepguard.guard import GuardConfig, GuardOptions, OptionError
from stepguard.model import ChatMessage
from stepguard.procedure import Procedure

from ._client_errors import InvalidGuardedCall
from ._completion import ResponseShape, response_shape
from ._request_fields import RunObject, read_request_fields, read_run_object

__all__ = ["MISSING_INPUTS", "NOT_IN_IDENTITY", "GuardedCall", "MessageInputs", "StepguardOptions", "guarded_spec",
           "inputs_from_messages", "read_call"]

KEY = "stepguard"
_WHERE = f'extra_body["{KEY}"]'

_REQUEST_OPTIONS = ("extra_headers", "extra_query", "timeout")
"""The client's per-request options, used for every model call of the run."""
NOT_IN_IDENTITY = frozenset({*_REQUEST_OPTIONS, "user", "metadata", "service_tier", "store", "prompt_cache_key",
                             "prompt_cache_retention", "safety_identifier"})
"""Sent arguments that do not change a reply (bookkeeping, routing, caching): left out of the run identity."""

StepguardOptions = RunObject
"""What ``extra_body["stepguard"]`` holds, read: ``procedure``, ``inputs``, ``thread_id`` and the
:class:`~stepguard.guard.GuardOptions` (the proxy's ``stepguard`` object is read the same way)."""


@dataclass(frozen=True)
class GuardedCall:
    """A guarded call, read and checked: what the run needs, and how to answer."""

    procedure: Procedure
    options: RunObject
    config: GuardConfig
    model: str
    context: tuple[ChatMessage, ...]
    shape: ResponseShape
    stream: bool
    max_tokens: int | None = None
    """The caller's cap on every model call, or None."""
    max_tokens_name: str = "max_tokens"
    """The argument the cap is sent as (the one the caller used)."""
    sent: dict[str, Any] = field(default_factory=dict)
    """Arguments sent with every model call as given (sampling options, request options, extra_body)."""


def _given(value: Any) -> bool:
    """Whether an argument was given (not None, not the client's NOT_GIVEN / omit sentinels)."""
    sentinels = tuple(t for t in (getattr(openai, "NotGiven", None), getattr(openai, "Omit", None)) if t is not None)
    return value is not None and not isinstance(value, sentinels)


def guarded_spec(kwargs: Mapping[str, Any]) -> Any:
    """The raw ``extra_body["stepguard"]`` of a call, or None for a call that is not guarded."""
    extra = kwargs.get("extra_body")
    return extra.get(KEY) if isinstance(extra, Mapping) else None


def _options(raw: Any, procedures: Mapping[str, Procedure]) -> RunObject:
    if not isinstance(raw, Mapping):
        raise InvalidGuardedCall(
            f'must be an object such as {{"procedure": "{next(iter(procedures), "NAME")}", "inputs": {{...}}}}, '
            f"not {type(raw).__name__} {str(raw)[:60]!r}", _WHERE)
    try:
        options = read_run_object(raw)
    except OptionError as exc:
        raise InvalidGuardedCall(str(exc), f"{_WHERE}.{exc.field}") from None
    if options.procedure is None:
        raise InvalidGuardedCall("name the procedure to run", f"{_WHERE}.procedure")
    if options.procedure not in procedures:
        from stepguard.procedure import unknown_procedure

        raise InvalidGuardedCall(unknown_procedure(options.procedure, procedures), f"{_WHERE}.procedure")
    return options


def _text(content: Any, where: str) -> str:
    """A message's content as text: a string, or a list of text parts joined."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        out = []
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            if kind != "text" or not isinstance(part.get("text"), str):
                raise InvalidGuardedCall(f"a {kind!r} part cannot be given to a guarded run (text parts only)",
                                         f"{where}.content[{j}]")
            out.append(part["text"])
        return "".join(out)
    raise InvalidGuardedCall(f"content must be text or a list of text parts, not {type(content).__name__}", f"{where}.content")


def _calls(message: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    """An assistant message's tool calls (``tool_calls[j].function``, ``function_call``), each an object.

    Raises:
        InvalidGuardedCall: ``tool_calls`` is not a list, or a call or its function is not an object.
    """
    raw = message.get("tool_calls")
    if raw is not None and (isinstance(raw, (str, bytes, Mapping)) or not hasattr(raw, "__iter__")):
        raise InvalidGuardedCall(f"tool_calls must be a list of tool calls, not {type(raw).__name__}", f"{where}.tool_calls")
    calls: list[Mapping[str, Any]] = []
    for j, call in enumerate(raw or []):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise InvalidGuardedCall("a tool call must be an object with a function object {name, arguments}",
                                     f"{where}.tool_calls[{j}]")
        calls.append(function)
    single = message.get("function_call")
    if single is not None:
        if not isinstance(single, Mapping):
            raise InvalidGuardedCall(f"function_call must be an object {{name, arguments}}, not {type(single).__name__}",
                                     f"{where}.function_call")
        calls.append(single)
    return calls


def context_of(messages: Any) -> tuple[ChatMessage, ...]:
    """The caller's ``messages`` as the guard's context: ``{"role", "content"}`` text messages, in order.

    A message's ``name`` prefixes its text (``bob: ...``); an assistant's tool calls are written as
    ``called NAME(ARGUMENTS)``; a ``tool`` message keeps its role. Nothing is left out.

    Raises:
        InvalidGuardedCall: messages that are not a list of messages, or content that is not text
            (an image, audio, a file).
    """
    if messages is None or not _given(messages):
        return ()
    if isinstance(messages, (str, bytes, Mapping)) or not hasattr(messages, "__iter__"):
        raise InvalidGuardedCall(f"must be a list of messages, not {type(messages).__name__}", "messages")
    out: list[ChatMessage] = []
    for i, m in enumerate(messages):
        if hasattr(m, "model_dump"):
            m = m.model_dump(exclude_none=True)
        where = f"messages[{i}]"
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise InvalidGuardedCall("a message must be an object with a role", where)
        text = _text(m.get("content"), where)
        calls = _calls(m, where)
        text = "\n".join([t for t in [text] if t] + [f"called {c.get('name')}({c.get('arguments', '')})" for c in calls])
        if m.get("name"):
            text = f"{m['name']}: {text}"
        out.append({"role": m["role"], "content": text})
    return tuple(out)


MISSING_INPUTS = "give the procedure's inputs as stepguard.inputs, or as a JSON object in the last user message"
"""What a guarded call without inputs is told, by the client and the proxy alike (then why the last user message is not them)."""


@dataclass(frozen=True)
class MessageInputs:
    """Inputs read from a JSON last user message (:func:`inputs_from_messages`)."""

    inputs: dict[str, Any]
    """The input values, numbers with a fraction as exact ``Decimal`` (as written)."""
    where: str
    """The message's content, as the request spells it: ``messages[1].content``."""
    context: list[Any]
    """The other messages, in order: that message is the inputs, not context."""


def inputs_from_messages(messages: Any) -> MessageInputs:
    """The inputs a guarded call gives as a JSON object in its last user message, for the client and the proxy.

    A call whose ``stepguard`` object has no ``inputs`` gives them this way: the last message whose
    role is ``user`` holds a JSON object (text, or text parts joined) such as
    ``{"weight_kg": 2.5, "zone": "EU"}``. Read as the proxy reads a body: numbers with a fraction as
    exact ``Decimal``, a key given twice refused, no ``NaN`` or integer past Python's digits limit.

    Raises:
        InvalidGuardedCall: there is no user message, or its content is not text, not JSON, or not
            an object; ``location`` is ``"inputs"`` and the message :data:`MISSING_INPUTS` and why.
    """
    from stepguard.wire._body import json_kind, parse_json
    from stepguard.wire._errors import RequestError

    listed = [m.model_dump(exclude_none=True) if hasattr(m, "model_dump") else m for m in messages] \
        if isinstance(messages, (list, tuple)) else []
    users = [i for i, m in enumerate(listed) if isinstance(m, Mapping) and m.get("role") == "user"]
    where = f"messages[{users[-1]}].content" if users else "messages"
    content = listed[users[-1]].get("content") if users else None
    if isinstance(content, list):  # text parts, as the context is read
        content = _text(content, f"messages[{users[-1]}]")
    why = "there is no user message" if not users else f"{where} is not text"
    value = None
    if isinstance(content, str):
        try:
            value = parse_json(content, where, where)
            why = f"{where} is a JSON {json_kind(value)}, not an object"
        except RequestError as exc:
            why = exc.message
    if not isinstance(value, dict):
        raise InvalidGuardedCall(f"{MISSING_INPUTS}: {why}", "inputs")
    return MessageInputs(value, where, listed[:users[-1]] + listed[users[-1] + 1:])


def read_call(kwargs: Mapping[str, Any], procedures: Mapping[str, Procedure], base: GuardConfig | None,
              *, checkpoints: bool = True) -> GuardedCall:
    """Read and check a guarded call's arguments (``extra_body["stepguard"]`` present).

    The call's fields follow :mod:`stepguard.wire._request_fields` (the proxy's rule too); the
    options resolve as :meth:`~stepguard.guard.GuardOptions.resolve` says: ``base`` (else the
    defaults by procedure), then the call's ``temperature``/``seed``, then ``extra_body["stepguard"]``'s.

    Raises:
        InvalidGuardedCall: anything the guard cannot honour, named (see the module docstring), and a
            ``thread_id`` when ``checkpoints`` is false (nothing would keep the thread).
    """
    args = {k: v for k, v in kwargs.items() if _given(v)}
    run = _options(guarded_spec(args), procedures)
    procedure = procedures[run.procedure]  # type: ignore[index]  # _options checked it is named
    try:
        fields = read_request_fields(args, others_sent=False, own=("extra_body", *_REQUEST_OPTIONS))
    except OptionError as exc:
        raise InvalidGuardedCall(str(exc), exc.field) from None
    if not isinstance(args.get("model"), str):
        raise InvalidGuardedCall("the model name is required", "model")
    if run.thread_id is not None and not checkpoints:
        from stepguard.guard import thread_needs_checkpointer

        raise InvalidGuardedCall(str(thread_needs_checkpointer("GuardedOpenAI(..., checkpointer=...)")), f"{_WHERE}.thread_id")
    extra = {k: v for k, v in args.get("extra_body", {}).items() if k != KEY}
    sent = {**fields.sent, **{k: args[k] for k in _REQUEST_OPTIONS if k in args}}
    if extra:
        sent["extra_body"] = extra
    options: GuardOptions = run.options.over(fields.options)
    messages = args.get("messages")
    if run.inputs is None:  # the proxy's rule: the inputs are the JSON last user message
        try:
            found = inputs_from_messages(messages)
        except InvalidGuardedCall as exc:
            if exc.location != "inputs":  # a message the guard cannot read at all: refused where it is, as the proxy does
                raise
            raise InvalidGuardedCall(str(exc).split(": ", 1)[1], f"{_WHERE}.inputs") from None
        run, messages = dataclasses.replace(run, inputs=found.inputs), found.context
    return GuardedCall(
        procedure=procedure,
        options=run,
        config=options.resolve(procedure, base=base),
        model=args["model"],
        context=context_of(messages),
        shape=response_shape(args.get("response_format"), procedure),
        stream=fields.stream,
        max_tokens=fields.max_tokens,
        max_tokens_name=fields.max_tokens_name,
        sent=sent,
    )
