"""One rule for a guarded chat request's own fields, for the drop-in client and the proxy alike.

A guarded request's reply is the guard's, built from many model calls, so each field of the request
is one of (docs/drop-in-client.md and docs/proxy.md have the table):

- **read by the guard**: ``model``, ``messages``, ``response_format``, ``stream``, ``stream_options``
  (with ``stream`` only); ``temperature`` and ``seed`` (the first tries' sampling, read as the
  :class:`~stepguard.guard.GuardOptions` of the same names); ``n`` (1 only: one choice);
  ``max_tokens`` / ``max_completion_tokens``: a cap on every model call of the run.
- **sent with every model call as given**: :data:`SENT_AS_GIVEN` (``top_p``, penalties, bookkeeping).
- **refused**, naming the field: :data:`REFUSED` (``tools``, ``stop``, ``logprobs``...), since the
  guard cannot give what they ask of one reply.

The same value gets the same answer and the same message both ways; only where a field is named
differs (``n`` for the client, ``param: "n"`` for the proxy).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stepguard.guard import GuardOptions, OptionError

__all__ = ["READ_BY_GUARD", "REFUSED", "REFUSED_MESSAGE", "RUN_KEYS", "SENT_AS_GIVEN", "RequestFields", "RunObject",
           "read_request_fields", "read_run_object"]

READ_BY_GUARD = ("model", "messages", "temperature", "seed", "max_tokens", "max_completion_tokens", "response_format",
                 "stream", "stream_options", "n")
"""Fields the guard reads itself."""
SENT_AS_GIVEN = (
    "top_p", "frequency_penalty", "presence_penalty", "reasoning_effort", "verbosity", "user", "metadata",
    "service_tier", "store", "prompt_cache_key", "prompt_cache_retention", "safety_identifier",
)
"""Sampling and bookkeeping fields sent with every model call of the run."""
REFUSED = ("tools", "tool_choice", "functions", "function_call", "parallel_tool_calls", "logprobs", "top_logprobs",
           "logit_bias", "stop", "audio", "modalities", "prediction", "web_search_options")
"""Fields a guarded reply cannot honour."""
REFUSED_MESSAGE = ("is not supported in a guarded call: its reply is the guard's, built from many model calls "
                   "(see docs/drop-in-client.md)")
"""What a refused field is told (after its name)."""
_TOKENS = (1, 2**31 - 1)


@dataclass(frozen=True)
class RequestFields:
    """A guarded request's own fields, read."""

    options: GuardOptions
    """``temperature`` and ``seed``, as options (the ``stepguard`` object's own win over them)."""
    stream: bool
    max_tokens: int | None = None
    """The cap on every model call, or ``None``."""
    max_tokens_name: str = "max_tokens"
    """The field the cap was given as."""
    sent: dict[str, Any] = field(default_factory=dict)
    """Fields sent with every model call as given."""


def read_request_fields(fields: Mapping[str, Any], *, others_sent: bool, own: tuple[str, ...] = ()) -> RequestFields:
    """Read a guarded request's fields (``None`` values taken as absent).

    Args:
        fields: the request's fields (the client's ``create`` arguments, the proxy's body).
        others_sent: whether a field in no list is sent as given (the proxy: what the client's
            ``extra_body`` adds arrives as body fields) or refused (the client: an unknown argument).
        own: further fields the caller reads itself (``extra_body``, ``stepguard``, ``extra_headers``).

    Raises:
        OptionError: a refused field (:data:`REFUSED_MESSAGE`), ``n`` other than 1, a ``max_tokens``
            that is not a whole number from 1 to 2**31-1, a ``temperature`` or ``seed`` GuardConfig
            refuses, a ``stream`` that is not a boolean, ``stream_options`` without ``stream``; ``field``
            names it.
    """
    given = {k: v for k, v in fields.items() if v is not None}
    for name in given:
        known = name in READ_BY_GUARD or name in SENT_AS_GIVEN or name in own
        if name in REFUSED or (not known and not others_sent):
            raise OptionError(name, f"{name} {REFUSED_MESSAGE}")
    n = given.get("n", 1)
    if type(n) is not int or n != 1:  # True == 1 == 1.0 to Python
        raise OptionError("n", f"n must be 1: a guarded call gives one choice, not {n!r}")
    options = GuardOptions.parse({k: given[k] for k in ("temperature", "seed") if k in given})
    caps = [(k, given[k]) for k in ("max_completion_tokens", "max_tokens") if k in given]
    for k, v in caps:
        if type(v) is not int or not _TOKENS[0] <= v <= _TOKENS[1]:
            raise OptionError(k, f"{k} must be a whole number of tokens from {_TOKENS[0]} to {_TOKENS[1]}, not {v!r}")
    stream = given.get("stream", False)
    if type(stream) is not bool:  # "false" would stream
        raise OptionError("stream", f"stream must be true or false, not {stream!r}")
    if "stream_options" in given and not stream:
        raise OptionError("stream_options", "stream_options is only for stream=true")
    sent = {k: v for k, v in given.items()
            if k not in READ_BY_GUARD and k not in own and (k in SENT_AS_GIVEN or others_sent)}
    return RequestFields(options, stream, min(v for _, v in caps) if caps else None,
                         caps[0][0] if caps else "max_tokens", sent)


RUN_KEYS = ("procedure", "inputs", "thread_id")
"""The keys of a ``stepguard`` object that say what to run; every other key is a :class:`GuardOptions` field."""


@dataclass(frozen=True)
class RunObject:
    """A request's ``stepguard`` object (``extra_body["stepguard"]`` for the client), read."""

    procedure: str | None
    inputs: dict[str, Any] | None
    thread_id: str | None
    options: GuardOptions


def read_run_object(raw: Mapping[str, Any]) -> RunObject:
    """Read a ``stepguard`` object: :data:`RUN_KEYS` and the options (``None`` values taken as absent).

    Raises:
        OptionError: an unknown key (the message lists the keys), a ``procedure`` or ``thread_id``
            that is not text, ``inputs`` that are not an object, or an option refused; ``field`` names it.
    """
    from stepguard.guard import OPTION_NAMES

    for key in raw:
        if key not in RUN_KEYS and key not in OPTION_NAMES:
            raise OptionError(str(key), f"unknown option {key!r}; the options are: {', '.join((*RUN_KEYS, *OPTION_NAMES))}")
    for key in ("procedure", "thread_id"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise OptionError(key, f"{key} must be text, not {raw[key]!r}")
    inputs = raw.get("inputs")
    if inputs is not None and not isinstance(inputs, Mapping):
        raise OptionError("inputs", f"inputs must be an object of input values, not {inputs!r}")
    options = GuardOptions.parse({k: v for k, v in raw.items() if k not in RUN_KEYS})
    return RunObject(raw.get("procedure"), None if inputs is None else dict(inputs), raw.get("thread_id"), options)
