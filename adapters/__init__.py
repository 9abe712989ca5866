"""Where stepguard meets outside systems: the adapters behind the :class:`~stepguard.model.ChatModel` protocol.

Pick a model with one specification string (see :mod:`stepguard.adapters.models.spec`)::

    from stepguard.adapters import load_model
    model = load_model("local:smollm2-135m")        # embedded llama.cpp server
    model = load_model("http://127.0.0.1:8000/v1#qwen")
    reply = model.complete([{"role": "user", "content": "2 + 3 = ?"}])

Adapters: :class:`OpenAICompatibleModel` (any OpenAI-compatible endpoint), :class:`GuardedOpenAI` (a
drop-in ``openai`` client whose chat calls can run procedures guarded; docs/drop-in-client.md), :class:`LocalModel`
(a GGUF model from a Python package on a local llama.cpp server), ``SimulatedExecutor``
(:mod:`stepguard.adapters.models.sim`), :class:`RecordingModel` / :class:`ReplayModel` (cassettes).
The local-model machinery is imported only when a ``local`` spec asks for it.

Two directions, kept apart (import-linter contracts in pyproject.toml): :mod:`.models`, the models
the core calls (each a :class:`~stepguard.model.ChatModel`), and :mod:`.integrations`, the
integrations that call the core (the drop-in client, the LangGraph node, Inspect AI, lm-eval). What
both read of an OpenAI-compatible endpoint's answers is in ``_openai``; this module is the public
face of all three. ``python -m stepguard.adapters.lm_eval`` keeps its path (:mod:`.lm_eval`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepguard.model import ChatModel

from .models.replay import RecordingModel, ReplayModel, request_key
from .models.spec import VALID_FORMS, ModelSpec, parse_model_spec

if TYPE_CHECKING:
    from stepguard.wire import (
        AsyncGuardedStream,
        GuardedBudgetExhausted,
        GuardedCallError,
        GuardedCheckpointError,
        GuardedModelError,
        GuardedModelOutputTruncated,
        GuardedModelTimeout,
        GuardedModelUnavailable,
        GuardedProcedureError,
        GuardedStepDeviation,
        GuardedStream,
        GuardedThreadInFlight,
        InvalidGuardedCall,
        StepguardOptions,
    )

    from .integrations.langgraph_node import guarded_node
    from .integrations.openai_wrapper import ClientChatModel, GuardedOpenAI
    from .models.local import LocalModel, LocalModelInfo, LocalServer, best_installed_model, list_local_models
    from .models.openai_compat import OPENAI_BASE_URL, OpenAICompatibleModel, provider_for_url

__all__ = [
    "AsyncGuardedStream",
    "ClientChatModel",
    "GuardedBudgetExhausted",
    "GuardedCallError",
    "GuardedCheckpointError",
    "GuardedModelError",
    "GuardedModelOutputTruncated",
    "GuardedModelTimeout",
    "GuardedModelUnavailable",
    "GuardedOpenAI",
    "GuardedProcedureError",
    "GuardedStepDeviation",
    "GuardedThreadInFlight",
    "GuardedStream",
    "InvalidGuardedCall",
    "StepguardOptions",
    "HTTP_KEY_ENV",
    "LocalModel",
    "LocalModelInfo",
    "LocalServer",
    "ModelSpec",
    "OPENAI_BASE_URL",
    "OpenAICompatibleModel",
    "RecordingModel",
    "ReplayModel",
    "VALID_FORMS",
    "best_installed_model",
    "guarded_node",
    "list_local_models",
    "load_model",
    "parse_model_spec",
    "provider_for_url",
    "request_key",
]

HTTP_KEY_ENV = "STEPGUARD_API_KEY"
"""Environment variable holding the key for ``http(s)://`` endpoints (OPENAI_API_KEY is only ever
sent to api.openai.com)."""

# Imported on first use: the ``openai`` package alone takes about a second to import.
_LAZY = {
    "LocalModel": "models.local", "LocalModelInfo": "models.local", "LocalServer": "models.local",
    "best_installed_model": "models.local", "list_local_models": "models.local",
    "OPENAI_BASE_URL": "models.openai_compat", "OpenAICompatibleModel": "models.openai_compat",
    "provider_for_url": "models.openai_compat",
    "GuardedOpenAI": "integrations.openai_wrapper", "ClientChatModel": "integrations.openai_wrapper",
    "guarded_node": "integrations.langgraph_node",
    **{name: "stepguard.wire" for name in (
        "GuardedStream", "AsyncGuardedStream", "StepguardOptions",
        "GuardedBudgetExhausted", "GuardedCallError", "GuardedCheckpointError", "GuardedModelError",
        "GuardedModelOutputTruncated", "GuardedModelTimeout", "GuardedModelUnavailable", "GuardedProcedureError",
        "GuardedStepDeviation", "GuardedThreadInFlight", "InvalidGuardedCall")},
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        home = _LAZY[name]
        return getattr(importlib.import_module(home if home.startswith("stepguard.") else f".{home}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_model(spec: str, *, record_to: str | Path | None = None, procedure: Any = None, **options: Any) -> ChatModel:
    """Build the model a specification string names.

    Args:
        spec: one of the forms in :data:`VALID_FORMS`, e.g. ``"local:qwen2.5-coder-1.5b"``,
            ``"sim:paper"``, ``"openai:gpt-4o-mini"``, ``"http://127.0.0.1:8000/v1#m"``,
            ``"replay:run.jsonl"``.
        record_to: if given, wrap the model in a :class:`RecordingModel` appending to this cassette.
        procedure: the :class:`~stepguard.procedure.Procedure` about to run, or ``None``. Only
            ``sim`` uses it: the simulator computes steps the prompt shows without an expression
            (instruction steps) from it, standing in for a model that reads the instruction
            (:mod:`stepguard.adapters.models.sim`); every other adapter ignores it, as a real model must.
        **options: passed to the adapter: ``seed``, ``temperature``, ``max_tokens``, ``timeout``
            (seconds per attempt, the whole reply, not per read), ``call_timeout`` (``openai:``
            and ``http`` specs: seconds per call, retries and waits included), ``max_retries``,
            ``raise_on_truncation``; for ``local`` also ``n_ctx``, ``n_threads``, ``port``, ``eager``,
            ``draft_tokens``, ``runtime``, ``binary``, ``parallel``; ``sim`` takes ``seed`` and
            ``latency_s`` and ignores the rest; ``replay`` ignores them all.

    Returns:
        A :class:`~stepguard.model.ChatModel`.

    Raises:
        ModelSpecError: the string is not a valid form (the message lists them).
        ModelError: an ``openai:`` spec without ``OPENAI_API_KEY``, or an unreadable cassette.
        LocalServerError: a ``local`` spec whose model or llama-cpp-python is not installed.
        TypeError: an option the adapter does not take.
        ValueError: ``timeout`` or ``call_timeout`` is not a positive number of seconds.
    """
    parsed = parse_model_spec(spec)
    model: ChatModel
    if parsed.kind == "local":
        from .models.local import LocalModel

        model = LocalModel(parsed.target or None, spec=parsed.raw, **options)
    elif parsed.kind == "sim":
        from .models.sim import SimulatedExecutor

        seed = options.get("seed")
        extra = {"latency_s": options["latency_s"]} if "latency_s" in options else {}
        model = SimulatedExecutor(preset=parsed.target, seed=0 if seed is None else seed, procedure=procedure, **extra)
    elif parsed.kind == "openai":
        from .models.openai_compat import OPENAI_BASE_URL, OpenAICompatibleModel

        # the openai client's own convention: OPENAI_BASE_URL replaces the public endpoint
        base_url = os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        model = OpenAICompatibleModel(parsed.target, base_url=base_url, spec=parsed.raw, **options)
    elif parsed.kind == "http":
        from .models.openai_compat import OpenAICompatibleModel

        assert parsed.model is not None
        options.setdefault("api_key_env", HTTP_KEY_ENV)
        model = OpenAICompatibleModel(parsed.model, base_url=parsed.target, spec=parsed.raw, **options)
    else:
        model = ReplayModel(parsed.target, spec=parsed.raw)
    return RecordingModel(model, record_to) if record_to is not None else model
