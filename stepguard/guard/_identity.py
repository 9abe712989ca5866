"""What decides a guarded run's result, as a key for any state that is resumed or reused.

A checkpoint thread, the LangGraph node's nested thread, a run store: each holds the state of one
piece of work. Resuming it for other work returned an old answer marked verified (issue 14), so
each is keyed by a :func:`run_identity`: the procedure's content, the inputs, the settings that
change prompts or verdicts, the prompt templates, the model, the tools and the caller's context
messages. A stored identity that differs from the one asked for is named field by field by
:func:`identity_diff`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from stepguard.evaluator import Number
from stepguard.guard._config import ADDED_AFTER_STORES, GuardConfig
from stepguard.guard._prompts import PromptSet, format_value
from stepguard.model import ChatMessage, ChatModel
from stepguard.procedure import Procedure
from stepguard.tools import as_decimal

__all__ = ["identity_diff", "identity_digest", "run_identity"]

_LABELS_ONLY = ("extra", "prompt_dir")
"""GuardConfig fields that do not decide a result: free labels, and the template folder's path
(its templates' content is keyed instead, under ``prompts``)."""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_NOTHING = object()
_ADDED_LATER = {"streamed": False, "window": 100, "follow": False, **ADDED_AFTER_STORES}
"""Settings added after runs were first stored, left out at these (their defaults, what a run of an
earlier version did), so a stored run or checkpoint of the same work still resumes."""


def run_identity(
    procedure: Procedure,
    inputs: Mapping[str, Number | str],
    config: GuardConfig,
    model: ChatModel,
    prompts: PromptSet,
    tools: Mapping[str, str] | None = None,
    context: Sequence[ChatMessage] = (),
    *,
    places: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The identity of one guarded run, JSON-able: ``{procedure, inputs, settings, prompts, model, tools[, context]}``.

    Args:
        procedure: the procedure (keyed by the sha256 of its canonical JSON, so an edited file is other work).
        inputs: the bound input values (exact; shown as their text, so a difference can be named).
        places: input name -> the decimal places the caller wrote it with (:func:`stepguard.tools.input_places`);
            in a procedure that calls a tool, such an input is keyed at those places (``25.00``),
            since its tools receive it so; elsewhere the places decide nothing and are not keyed.
        config: the guard configuration; every field but ``extra`` (labels) and ``prompt_dir`` counts.
        model: the model (its ``spec``, ``model_name`` and, where it has one, ``seed``: a simulated
            executor's seed decides its replies).
            A model with request options of its own that change replies (``identity_options``, a
            dict: the drop-in client's ``top_p``, its per-call ``max_tokens``) adds them as ``options``.
        prompts: the prompt templates in use (keyed by the sha256 of their texts).
        tools: the tools given to the guard, ``{name: version or ""}`` (:meth:`stepguard.tools.ToolSet.identity`):
            a checkpoint made with one set of tools (or one version of a tool) is not resumed with another.
        context: the caller's messages shown to the model with every chunk (keyed by the sha256
            of their JSON); the key is absent when there are none, so identities written before
            context existed still match.

    Returns:
        ``{"procedure": sha256 hex, "inputs": {name: text}, "settings": {field: value text},
        "prompts": sha256 hex, "model": {"spec": ..., "name": ..., "seed": ...}, "tools": {name: version}}``,
        plus ``"context": sha256 hex`` when ``context`` is not empty.
    """
    settings = {k: v for k, v in asdict(config).items() if k not in _LABELS_ONLY and _ADDED_LATER.get(k, _NOTHING) != v}
    if not any(s.tools_needed() for s in procedure.steps):
        places = None
    out: dict[str, Any] = {
        "procedure": _sha(procedure.model_dump_json(exclude={"accept_bounded"})),  # the opt-in names a status, not work
        "inputs": {k: _input_text(v, (places or {}).get(k)) for k, v in sorted(inputs.items())},
        "settings": json.loads(json.dumps(settings, default=str, sort_keys=True)),
        "prompts": prompts.fingerprint(),
        "model": {"spec": str(getattr(model, "spec", type(model).__name__)), "name": str(getattr(model, "model_name", "")),
                  "seed": str(getattr(model, "seed", None))},
        "tools": {k: str(v) for k, v in sorted((tools or {}).items())},
    }
    options = getattr(model, "identity_options", None)
    if options:
        out["model"]["options"] = json.dumps(options, sort_keys=True, default=str)
    if context:
        out["context"] = _sha(json.dumps([dict(m) for m in context], sort_keys=True, ensure_ascii=False))
    return out


def _input_text(value: Number | str, places: int | None) -> str:
    """An input as keyed: its exact text, at its written places where known (``25.00``)."""
    exact = as_decimal(value, places) if places is not None and not isinstance(value, (str, bool)) else None
    return format(exact, "f") if exact is not None else format_value(value)


def identity_digest(identity: Mapping[str, Any]) -> str:
    """A short stable key (16 hex characters of a sha256) of an identity, for thread names."""
    return _sha(json.dumps(identity, sort_keys=True, separators=(",", ":")))[:16]


def identity_diff(stored: Mapping[str, Any] | None, now: Mapping[str, Any]) -> list[str]:
    """What differs between a stored identity and the one asked for, one phrase per field.

    Args:
        stored: the identity saved with the state (``None``: state written without one).
        now: the identity of the run asked for.

    Returns:
        Phrases such as ``"inputs.hours: stored 47.25, now 50"`` or ``"the procedure's content"``;
        empty when they match.
    """
    if not stored:
        return ["the thread holds state written without a run identity (an older stepguard, or another graph)"]
    out: list[str] = []
    if stored.get("procedure") != now["procedure"]:
        out.append("the procedure's content")
    for group in ("inputs", "settings", "model", "tools"):
        old, new = stored.get(group) or {}, now.get(group) or {}
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                if group == "tools":  # a version may be "": say what differs in words
                    out.append(f"tools.{key}: stored {_tool_said(old, key)}, now {_tool_said(new, key)}")
                else:
                    out.append(f"{group}.{key}: stored {old.get(key, '(none)')}, now {new.get(key, '(none)')}")
    if stored.get("prompts") != now["prompts"]:
        out.append("the prompt templates' text")
    if stored.get("context") != now.get("context"):
        out.append("the caller's context messages")
    return out


def _tool_said(tools: Mapping[str, Any], key: str) -> str:
    """How one tool stands in an identity's ``tools`` group, in words (a version may be "")."""
    return "(not given)" if key not in tools else f"version {tools[key]}" if tools[key] else "given"
