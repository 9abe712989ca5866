"""What a chat request asks of the proxy: a guarded run (its procedure, inputs and options) or nothing.

A request names a procedure by its ``model`` (``"stepguard/invoice"``) or by the ``stepguard``
object of its body (what the ``openai`` client's ``extra_body={"stepguard": {...}}`` adds)::

    {"model": "stepguard/invoice", "messages": [...],
     "stepguard": {"inputs": {"subtotal": "120.00", "rate": 0.2}, "policy": "repair", "thread_id": "inv-42"}}

Every key of the ``stepguard`` object is checked: an unknown one, or a value of the wrong type
(``"false"`` for a boolean, ``5.0`` for an integer) or out of range (``NaN``, ``1e400``, a temperature
over 2), is a :class:`RequestError` (HTTP 400) naming ``stepguard.<key>``; so are the request's own
``temperature``, ``seed`` and ``stream``, which a guarded run uses.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from stepguard.adapters._client_errors import InvalidGuardedCall
from stepguard.adapters._completion import ResponseShape, response_shape
from stepguard.adapters._guarded_call import _text, context_of
from stepguard.guard import GuardConfig
from stepguard.model import ChatMessage
from stepguard.procedure import Procedure
from stepguard.serve._body import (SEED_RANGE, TOKENS_RANGE, check_tree, flag_field, integer_field, json_kind,
                                  number_field, parse_json, shown)
from stepguard.serve._errors import RequestError

__all__ = ["MODEL_PREFIX", "OPTION_KEYS", "GuardedRequest", "RequestError", "guarded_request", "names_a_procedure"]

MODEL_PREFIX = "stepguard/"
"""A model name with this prefix names a procedure: ``stepguard/<procedure>``."""


def _finite(value: Any) -> Any:
    """A JSON number as a finite float (``None`` kept); anything else is refused, not converted."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise ValueError("must be a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError("must be a finite number")
    return number


_INT32 = 2**31 - 1
_Temperature = Annotated[float, BeforeValidator(_finite), Field(ge=0, le=2)]
_Count = Annotated[StrictInt, Field(ge=0, le=_INT32)]


class _Options(BaseModel):
    """The ``stepguard`` object of a request; every field but the first three is a GuardConfig field."""

    model_config = ConfigDict(extra="forbid")

    procedure: str | None = None
    """The procedure's name (the file name in the procedures folder)."""
    inputs: dict[str, Any] | None = None
    """Input values; default: the last user message, when it is a JSON object."""
    thread_id: str | None = None
    """Checkpoint thread: resume a run a dead worker left, or get a finished run's result again."""
    labels: dict[str, str] | None = None
    """Free labels recorded with the result (GuardConfig.extra)."""
    chunk_size: Annotated[StrictInt, Field(ge=1, le=_INT32)] | None = None
    adaptive: StrictBool | None = None
    policy: str | None = None
    ladder: list[str] | str | None = None
    max_reprompts_per_step: _Count | None = None
    max_reprompts_per_run: _Count | None = None
    max_total_tokens: Annotated[StrictInt, Field(ge=1, le=2**63 - 1)] | None = None
    max_wall_s: Annotated[float, BeforeValidator(_finite), Field(gt=0)] | None = None
    on_exhausted: str | None = None
    temperature: _Temperature | None = None
    seed: Annotated[StrictInt, Field(ge=SEED_RANGE[0], le=SEED_RANGE[1])] | None = None
    resample_temperature: _Temperature | None = None
    max_tokens_per_step: Annotated[StrictInt, Field(ge=TOKENS_RANGE[0], le=TOKENS_RANGE[1])] | None = None


OPTION_KEYS: tuple[str, ...] = tuple(_Options.model_fields)
"""The keys a request's ``stepguard`` object may hold."""

_CONFIG_KEYS = tuple(k for k in OPTION_KEYS if k not in ("procedure", "inputs", "thread_id", "labels"))


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
    client's, :func:`~stepguard.adapters._guarded_call.context_of`); where the inputs came from the
    last user message, that message is the inputs, not context."""


def _bad(message: str, param: str | None, code: str = "invalid_option") -> RequestError:
    return RequestError(400, message, param, code)


def _inputs_from_messages(body: Mapping[str, Any]) -> dict[str, Any]:
    messages = body.get("messages")
    users = [i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "user"] \
        if isinstance(messages, list) else []
    where = f"messages[{users[-1]}].content" if users else "messages"
    content = messages[users[-1]].get("content") if users else None  # type: ignore[index]
    if isinstance(content, list):  # text parts, as the drop-in client reads them
        try:
            content = _text(content, f"messages[{users[-1]}]")
        except InvalidGuardedCall as exc:
            raise _bad(str(exc), exc.location, "invalid_messages") from None
    why = "there is no user message" if not users else f"{where} is not text"
    value = None
    if isinstance(content, str):
        try:
            value = parse_json(content, where, where)
            why = f"{where} is a JSON {json_kind(value)}, not an object"
        except RequestError as exc:
            why = exc.message
    if not isinstance(value, dict):
        raise _bad(f"give the procedure's inputs as stepguard.inputs, or as a JSON object in the last user message: "
                   f"{why}", "stepguard.inputs", "missing_inputs")
    check_tree(value, where)
    return value


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
            :data:`~stepguard.serve._body.MAX_DEPTH` or with text that is not Unicode, no inputs,
            a ``thread_id`` without a checkpointer, a ``stepguard.procedure`` that contradicts the
            model name, or a ``response_format`` the guard cannot honour (as the drop-in client's); 404 for an unknown procedure (the error lists the known ones under ``known``).
    """
    model = body.get("model")
    raw = body.get("stepguard")
    named = model[len(MODEL_PREFIX):] if isinstance(model, str) and model.startswith(MODEL_PREFIX) else None
    if named is None and names_a_procedure(model):  # " stepguard/x", "Stepguard/x": meant as one, never forwarded
        raise _bad(f"model {model!r}: a procedure is named exactly {MODEL_PREFIX}<name> (lower case, no spaces)", "model")
    if raw is None and named is None:
        return None
    check_tree(body)  # before any of it is read: nothing deeper than MAX_DEPTH, no text that is not Unicode
    if raw is not None and not isinstance(raw, Mapping):
        raise _bad("stepguard must be an object: {\"procedure\": ..., \"inputs\": {...}, ...options}", "stepguard")
    raw = dict(raw or {})
    for key in raw:
        if key not in OPTION_KEYS:
            raise _bad(f"stepguard.{key}: unknown option; the options are: {', '.join(OPTION_KEYS)}",
                       f"stepguard.{key}", "unknown_option")
    try:
        opts = _Options.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in ("stepguard", *err["loc"]))
        raise _bad(f"{where}: {err['msg']} (got {shown(err.get('input'))})", where) from None
    name = opts.procedure if opts.procedure is not None else named
    if named is not None and opts.procedure is not None and opts.procedure != named:
        raise _bad(f"the model names procedure {named!r} but stepguard.procedure is {opts.procedure!r}", "stepguard.procedure")
    if not name:
        raise _bad("stepguard.procedure: name the procedure to run", "stepguard.procedure", "missing_procedure")
    if name not in procedures:
        known = sorted(procedures)
        raise RequestError(404, f"unknown procedure {name!r}; known: {', '.join(known) or 'none'}",
                           "stepguard.procedure" if opts.procedure else "model", "procedure_not_found", known=known)
    if opts.thread_id is not None and not checkpoints:
        raise _bad("stepguard.thread_id: this proxy keeps no checkpoints (start it with --checkpoint)", "stepguard.thread_id")
    fields: dict[str, Any] = {}
    temperature = number_field(body, "temperature", 0.0, 2.0)  # the request's own, unless the options set them
    seed = integer_field(body, "seed", *SEED_RANGE)
    stream = flag_field(body, "stream")
    if temperature is not None:
        fields["temperature"] = temperature
    if seed is not None:
        fields["seed"] = seed
    for key in _CONFIG_KEYS:
        value = getattr(opts, key)
        if value is not None:
            fields[key] = value
    if isinstance(fields.get("ladder"), str):
        fields["ladder"] = tuple(r.strip() for r in fields["ladder"].split(",") if r.strip())
    elif "ladder" in fields:
        fields["ladder"] = tuple(fields["ladder"])
    if opts.labels:
        fields["extra"] = dict(opts.labels)
    try:
        config = dataclasses.replace(base or GuardConfig.for_procedure(procedures[name]), **fields)
    except (ValueError, TypeError) as exc:
        raise _bad(f"stepguard: {exc}", "stepguard") from None
    try:
        shape = response_shape(body.get("response_format"), procedures[name])
    except InvalidGuardedCall as exc:
        raise _bad(str(exc), exc.location, "invalid_response_format") from None
    messages = body.get("messages")
    if opts.inputs is not None:
        inputs = opts.inputs
    else:
        inputs = _inputs_from_messages(body)
        last = max(i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "user")
        messages = messages[:last] + messages[last + 1:]  # that message is the inputs
    try:
        context = context_of(messages)
    except InvalidGuardedCall as exc:
        raise _bad(str(exc), exc.location, "invalid_messages") from None
    return GuardedRequest(name, procedures[name], dict(inputs), config, opts.thread_id,
                          stream, model if isinstance(model, str) and model else MODEL_PREFIX + name,
                          shape, context)
