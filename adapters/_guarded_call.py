"""Reading a guarded ``chat.completions.create`` call: ``extra_body["stepguard"]``, messages, sampling options.

Everything here runs before any model call; a request the guard cannot honour is refused with
:class:`InvalidGuardedCall` naming the argument, never half-honoured.

Which settings win (docs/drop-in-client.md has the table):

- ``temperature``, ``seed``: the caller's are the guard's first-try settings (``GuardConfig.temperature``
  and ``.seed``); a ``resample`` rung uses ``resample_temperature`` and ``seed + attempt``, because a
  retry at the same temperature and seed resends the same request.
- ``max_tokens`` / ``max_completion_tokens``: a cap on every model call; the guard asks for less where
  its own allowance (``max_tokens_per_step`` x steps + 32, or the token budget left) is smaller.
- ``top_p``, ``frequency_penalty``, ``presence_penalty``, ``reasoning_effort``, ``verbosity``, ``user``,
  ``metadata``, ``service_tier``, ``store``, ``prompt_cache_key``, ``safety_identifier``, ``extra_headers``,
  ``extra_query``, ``timeout`` and ``extra_body``'s other keys: sent with every model call as given.
- ``n`` other than 1, ``tools``, ``tool_choice``, ``functions``, ``function_call``, ``parallel_tool_calls``,
  ``logprobs``, ``top_logprobs``, ``logit_bias``, ``stop``, ``audio``, ``modalities``, ``prediction``,
  ``web_search_options`` and anything else: refused (the reply is the guard's, built from many calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError

from stepguard.guard import GuardConfig
from stepguard.guard._config import ExhaustedAction, Policy
from stepguard.model import ChatMessage
from stepguard.procedure import Procedure

from ._client_errors import InvalidGuardedCall
from ._completion import ResponseShape, response_shape

__all__ = ["NOT_IN_IDENTITY", "GuardedCall", "StepguardOptions", "guarded_spec", "read_call"]

KEY = "stepguard"
_WHERE = f'extra_body["{KEY}"]'

_SENT_AS_GIVEN = (
    "top_p", "frequency_penalty", "presence_penalty", "reasoning_effort", "verbosity", "user", "metadata",
    "service_tier", "store", "prompt_cache_key", "prompt_cache_retention", "safety_identifier",
)
"""Sampling and bookkeeping arguments sent with every model call of the run."""
_REQUEST_OPTIONS = ("extra_headers", "extra_query", "timeout")
"""The client's per-request options, used for every model call of the run."""
NOT_IN_IDENTITY = frozenset({*_REQUEST_OPTIONS, "user", "metadata", "service_tier", "store", "prompt_cache_key",
                             "prompt_cache_retention", "safety_identifier"})
"""Sent arguments that do not change a reply (bookkeeping, routing, caching): left out of the run identity."""
_READ_HERE = ("model", "messages", "temperature", "seed", "max_tokens", "max_completion_tokens",
              "response_format", "stream", "stream_options", "extra_body", "n")


class StepguardOptions(BaseModel):
    """What ``extra_body["stepguard"]`` holds. Any other key is refused, named.

    The guard's options override the client's ``GuardConfig`` for this call (``None``: keep it).
    """

    model_config = ConfigDict(extra="forbid")

    procedure: str = Field(description="The name of a procedure given to GuardedOpenAI(procedures=...).")
    inputs: dict[str, Any] = Field(default_factory=dict, description="Input values: ints, decimal strings.")
    thread_id: str | None = Field(None, description="Checkpoint thread: the same one resumes the same work.")
    policy: Policy | None = None
    on_exhausted: ExhaustedAction | None = None
    chunk_size: StrictInt | None = None
    adaptive: StrictBool | None = None
    ladder: list[str] | None = None
    max_reprompts_per_step: StrictInt | None = None
    max_reprompts_per_run: StrictInt | None = None
    max_total_tokens: StrictInt | None = None
    max_wall_s: StrictFloat | None = None
    resample_temperature: StrictFloat | None = None
    max_tokens_per_step: StrictInt | None = None
    labels: dict[str, str] | None = Field(None, description="Labels recorded with the result (GuardConfig.extra).")

    def config(self, base: GuardConfig, temperature: float | None, seed: int | None) -> GuardConfig:
        """``base`` with this call's options, and the caller's ``temperature`` and ``seed``.

        Raises:
            InvalidGuardedCall: a value GuardConfig refuses (a negative budget, an unknown rung).
        """
        changes: dict[str, Any] = {
            k: v for k, v in self.model_dump(exclude={"procedure", "inputs", "thread_id", "labels"}).items()
            if v is not None
        }
        if "ladder" in changes:
            changes["ladder"] = tuple(changes["ladder"])
        if self.labels is not None:
            changes["extra"] = {**base.extra, **self.labels}
        if temperature is not None:
            changes["temperature"] = float(temperature)
        if seed is not None:
            changes["seed"] = int(seed)
        try:
            return replace(base, **changes)
        except ValueError as exc:
            raise InvalidGuardedCall(str(exc), _WHERE) from None


@dataclass(frozen=True)
class GuardedCall:
    """A guarded call, read and checked: what the run needs, and how to answer."""

    procedure: Procedure
    options: StepguardOptions
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


def _options(raw: Any, procedures: Mapping[str, Procedure]) -> StepguardOptions:
    if not isinstance(raw, Mapping):
        raise InvalidGuardedCall(
            f'must be an object such as {{"procedure": "{next(iter(procedures), "NAME")}", "inputs": {{...}}}}, '
            f"not {type(raw).__name__} {str(raw)[:60]!r}", _WHERE)
    try:
        options = StepguardOptions.model_validate(dict(raw))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            known = ", ".join(StepguardOptions.model_fields)
            hint = " (the caller's temperature and seed are create() arguments)" if loc in ("temperature", "seed") else ""
            raise InvalidGuardedCall(f"unknown key {loc!r}{hint}; known keys: {known}", f"{_WHERE}.{loc}") from None
        raise InvalidGuardedCall(f"{err['msg']} (got {str(err.get('input'))[:60]!r})", f"{_WHERE}.{loc}") from None
    if options.procedure not in procedures:
        raise InvalidGuardedCall(f"unknown procedure {options.procedure!r}; known: {', '.join(sorted(procedures)) or '(none)'}",
                                 f"{_WHERE}.procedure")
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
        out.append({"role": m["role"], "content": text})  # type: ignore[typeddict-item]
    return tuple(out)


def _stream_flag(value: Any) -> bool:
    """``stream`` as given: True, False or None; ``"false"`` would stream, so it is refused."""
    if value is not None and type(value) is not bool:
        raise InvalidGuardedCall(f"must be True or False, not {value!r}", "stream")
    return bool(value)


def read_call(kwargs: Mapping[str, Any], procedures: Mapping[str, Procedure], base: GuardConfig | None) -> GuardedCall:
    """Read and check a guarded call's arguments (``extra_body["stepguard"]`` present).

    Raises:
        InvalidGuardedCall: anything the guard cannot honour, named (see the module docstring).
    """
    args = {k: v for k, v in kwargs.items() if _given(v)}
    options = _options(guarded_spec(args), procedures)
    procedure = procedures[options.procedure]
    for name in args:
        if name not in _READ_HERE and name not in _SENT_AS_GIVEN and name not in _REQUEST_OPTIONS:
            raise InvalidGuardedCall("is not supported in a guarded call: its reply is the guard's, built from many "
                                     "model calls (see docs/drop-in-client.md)", name)
    if type(args.get("n", 1)) is not int or args.get("n", 1) != 1:  # True == 1 == 1.0 to Python
        raise InvalidGuardedCall("a guarded call gives one choice; n must be 1", "n")
    temperature = args.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2):
        raise InvalidGuardedCall(f"must be a number from 0 to 2, not {temperature!r}", "temperature")
    seed = args.get("seed")
    if seed is not None and (type(seed) is not int or not -(2**63) <= seed < 2**63):
        raise InvalidGuardedCall(f"must be a 64-bit whole number, not {seed!r}", "seed")
    if not isinstance(args.get("model"), str):
        raise InvalidGuardedCall("the model name is required", "model")
    caps = [(k, args[k]) for k in ("max_completion_tokens", "max_tokens") if k in args]
    for k, v in caps:
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v < 2**31:
            raise InvalidGuardedCall(f"must be a whole number of tokens from 1 to {2**31 - 1}, not {v!r}", k)
    extra = {k: v for k, v in args.get("extra_body", {}).items() if k != KEY}
    sent = {k: args[k] for k in (*_SENT_AS_GIVEN, *_REQUEST_OPTIONS) if k in args}
    if extra:
        sent["extra_body"] = extra
    stream = _stream_flag(args.get("stream"))
    stream_options = args.get("stream_options")
    if stream_options is not None and not stream:
        raise InvalidGuardedCall("is only for stream=True", "stream_options")
    return GuardedCall(
        procedure=procedure,
        options=options,
        config=options.config(base or GuardConfig.for_procedure(procedure), args.get("temperature"), args.get("seed")),
        model=args["model"],
        context=context_of(args.get("messages")),
        shape=response_shape(args.get("response_format"), procedure),
        stream=stream,
        max_tokens=min(v for _, v in caps) if caps else None,
        max_tokens_name=caps[0][0] if caps else "max_tokens",
        sent=sent,
    )
