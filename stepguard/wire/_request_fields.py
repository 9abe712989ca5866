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
    _refuse_fields(given, others_sent, own)
    n = given.get("n", 1)
    if type(n) is not int or n != 1:  # True == 1 == 1.0 to Python
        raise OptionError("n", f"n must be 1: a guarded call gives one choice, not {n!r}")
    options = GuardOptions.parse({k: given[k] for k in ("temperature", "seed") if k in given})
    caps = _token_caps(given)
    stream = _stream(given)
    sent = {k: v for k, v in given.items()
            if k not in READ_BY_GUARD and k not in own and (k in SENT_AS_GIVEN or others_sent)}
    return RequestFields(options, stream, min(v for _, v in caps) if caps else None,
                         caps[0][0] if caps else "max_tokens", sent)


def _refuse_fields(given: Mapping[str, Any], others_sent: bool, own: tuple[str, ...]) -> None:
    """Refuse the first field of :data:`REFUSED`, or (``others_sent`` false) in no list, in the request's order.

    Raises:
        OptionError: ``field`` names it, with :data:`REFUSED_MESSAGE`.
    """
    for name in given:
        known = name in READ_BY_GUARD or name in SENT_AS_GIVEN or name in own
        if name in REFUSED or (not known and not others_sent):
            raise OptionError(name, f"{name} {REFUSED_MESSAGE}")


def _token_caps(given: Mapping[str, Any]) -> list[tuple[str, int]]:
    """``(field, cap)`` for ``max_completion_tokens`` then ``max_tokens``, those given.

    Raises:
        OptionError: a cap that is not a whole number of tokens in :data:`_TOKENS`.
    """
    caps = [(k, given[k]) for k in ("max_completion_tokens", "max_tokens") if k in given]
    for k, v in caps:
        if type(v) is not int or not _TOKENS[0] <= v <= _TOKENS[1]:
            raise OptionError(k, f"{k} must be a whole number of tokens from {_TOKENS[0]} to {_TOKENS[1]}, not {v!r}")
    return caps


def _stream(given: Mapping[str, Any]) -> bool:
    """``stream`` (default false), and ``stream_options`` only with it.

    Raises:
        OptionError: ``stream`` not a boolean, or ``stream_options`` without it.
    """
    stream = given.get("stream", False)
    if type(stream) is not bool:  # "false" would stream
        raise OptionError("stream", f"stream must be true or false, not {stream!r}")
    if "stream_options" in given and not stream:
        raise OptionError("stream_options", "stream_options is only for stream=true")
    return stream


RUN_KEYS = ("procedure", "inputs", "thread_id", "deliver_flagged")
"""The keys of a ``stepguard`` object that say what to run and how its answer is delivered; every other
key is a :class:`GuardOptions` field."""


@dataclass(frozen=True)
class RunObject:
    """A request's ``stepguard`` object (``extra_body["stepguard"]`` for the client), read."""

    procedure: str | None
    inputs: dict[str, Any] | None
    thread_id: str | None
    options: GuardOptions
    deliver_flagged: bool = False
    """Write a flagged or failed run's unchecked values into the content, ``finish_reason`` ``"stop"``
    (default: withheld, ``"content_filter"``; :attr:`~stepguard.wire.ResponseShape.deliver_flagged`)."""


def read_run_object(raw: Mapping[str, Any]) -> RunObject:
    """Read a ``stepguard`` object: :data:`RUN_KEYS` and the options (``None`` values taken as absent).

    Raises:
        OptionError: an unknown key (the message lists the keys), a ``procedure`` or ``thread_id``
            that is not text, a ``thread_id`` empty or white space, ``inputs`` that are not an object,
            a ``deliver_flagged`` that is not a boolean, or an option refused; ``field`` names it.
    """
    from stepguard.guard import OPTION_NAMES, check_thread_id

    for key in raw:
        if key not in RUN_KEYS and key not in OPTION_NAMES:
            raise OptionError(str(key), f"unknown option {key!r}; the options are: {', '.join((*RUN_KEYS, *OPTION_NAMES))}")
    for key in ("procedure", "thread_id"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise OptionError(key, f"{key} must be text, not {raw[key]!r}")
    check_thread_id(raw.get("thread_id"))  # "" would name no thread: every retry would run anew
    inputs = raw.get("inputs")
    if inputs is not None and not isinstance(inputs, Mapping):
        raise OptionError("inputs", f"inputs must be an object of input values, not {inputs!r}")
    deliver = raw.get("deliver_flagged", False)
    if deliver is not None and type(deliver) is not bool:  # "false" would deliver
        raise OptionError("deliver_flagged", f"deliver_flagged must be true or false, not {deliver!r}")
    options = GuardOptions.parse({k: v for k, v in raw.items() if k not in RUN_KEYS})
    return RunObject(raw.get("procedure"), None if inputs is None else dict(inputs), raw.get("thread_id"), options,
                     bool(deliver))
