"""``GuardedOpenAI``: an ``openai`` client whose chat calls can run a procedure under the guard.

Existing code keeps calling ``client.chat.completions.create(...)``. A call that names a procedure
in ``extra_body`` runs it under :class:`~stepguard.guard.Guard`, with the user's own client as the
model; every other call passes straight through to the wrapped client::

    client = GuardedOpenAI(openai.OpenAI(), procedures={"invoice": load_procedure("examples/invoice.yaml")})
    resp = client.chat.completions.create(
        model="gpt-4o-mini", messages=[],
        extra_body={"stepguard": {"procedure": "invoice", "inputs": {"subtotal": "100.10", "rate": "0.1"}}},
    )
    resp.choices[0].message.content   # "104.60": the verified answer
    resp.stepguard.status             # "verified": the GuardResult, attached

Why ``extra_body`` and not a new keyword: ``extra_body`` is a parameter the ``openai`` client
already takes, so the call type-checks unchanged and a stray ``stepguard_procedure=`` can never
reach an unwrapped client as a ``TypeError``. In a guarded call ``messages`` are not sent: the
guard writes its own prompts from the procedure; ``temperature``, ``seed`` and ``max_tokens``
become the model's defaults. Always read ``resp.stepguard.status``: only ``verified`` means every
value was checked (``repaired``/``flagged`` results are returned too, never silently).
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Mapping
from typing import Any

import openai

from stepguard.errors import ModelError, ModelUnavailable
from stepguard.guard import Guard, GuardConfig, GuardResult
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, Usage
from stepguard.procedure import Procedure

from ._attempts import map_error
from ._reply import ReplyError, content_text, quote

__all__ = ["ClientChatModel", "GuardedOpenAI"]

_KEY = "stepguard"


# What a wrapped ``openai`` client raises: its own errors, and, for a body it cannot parse (an HTML
# page, a JSON list), a JSONDecodeError (a ValueError) or an AttributeError from its parsing.
_CLIENT_FAILURES = (openai.OpenAIError, ValueError, AttributeError)


class ClientChatModel:
    """A :class:`~stepguard.model.ChatModel` over an existing ``openai.OpenAI`` or ``AsyncOpenAI`` client.

    Args:
        client: the user's client (its auth, base URL, retries and timeouts are used as they are).
        model: the model name sent with every call.
        defaults: sampling settings used where the guard leaves one unset.
    """

    provider = "openai_compatible"
    simulated = False

    def __init__(self, client: Any, model: str, defaults: GenerationSettings | None = None) -> None:
        self.client = client
        self.model_name = model
        self.spec = f"client#{model}"
        self.defaults = defaults or GenerationSettings()

    def _kwargs(self, messages: list[ChatMessage], settings: GenerationSettings | None) -> dict[str, Any]:
        s, d = settings or GenerationSettings(), self.defaults
        out: dict[str, Any] = {"model": self.model_name, "messages": messages}
        for name in ("temperature", "seed", "max_tokens"):
            value = getattr(s, name) if getattr(s, name) is not None else getattr(d, name)
            if value is not None:
                out[name] = value
        return out

    def _where(self) -> str:
        return f"{str(getattr(self.client, 'base_url', '')).rstrip('/')}/chat/completions"

    def _error(self, exc: Exception) -> ModelError:
        """The stepguard error for a failure inside the wrapped client's ``create``."""
        if isinstance(exc, openai.OpenAIError):
            tries = f"{getattr(self.client, 'max_retries', 0) + 1} attempt(s)"
            return map_error(exc, self._where(), self.spec, tries, f"{getattr(self.client, 'timeout', '?')} s")
        return ModelError(f"{self._where()}: the client could not read the reply: {type(exc).__name__}: {exc}", self.spec)

    def _response(self, raw: Any, t0: float) -> ChatResponse:
        said = getattr(raw, "error", None)
        choices = getattr(raw, "choices", None)
        if said is not None and not choices:
            message = str(said.get("message", said) if isinstance(said, dict) else said)[:300]
            raise ModelUnavailable(f"{self._where()} answered HTTP 200 with an error body: {message!r}", self.spec,
                                   status=200, server_message=message)
        u = getattr(raw, "usage", None)
        usage = Usage(getattr(u, "prompt_tokens", 0) or 0, getattr(u, "completion_tokens", 0) or 0) if u else Usage()
        try:
            if not isinstance(choices, list):
                raise ReplyError("the reply has no list of choices")
            if not choices:
                return ChatResponse("", usage, "empty", time.perf_counter() - t0, getattr(raw, "model", "") or "")
            text = content_text(getattr(getattr(choices[0], "message", None), "content", None), "choices[0].message.content")
        except ReplyError as exc:
            raise ModelError(f"{self._where()} sent a reply that is not a chat completion: {exc}: {quote(repr(raw))}",
                             self.spec, status=200) from None
        return ChatResponse(
            text=text, usage=usage, finish_reason=getattr(choices[0], "finish_reason", None) or "stop",
            latency_s=time.perf_counter() - t0, model=getattr(raw, "model", "") or "",
        )

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """One chat call through the wrapped sync client.

        Raises:
            ModelTimeout, ModelUnavailable, ModelError: the client's errors, mapped as
                :class:`~stepguard.adapters.OpenAICompatibleModel` maps them; a reply that is not a
                chat completion (a content number, whose digits the client already rounded, is refused).
        """
        t0 = time.perf_counter()
        try:
            raw = self.client.chat.completions.create(**self._kwargs(messages, settings))
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc
        return self._response(raw, t0)

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """One chat call through the wrapped async client (errors as :meth:`complete`)."""
        t0 = time.perf_counter()
        try:
            raw = await self.client.chat.completions.create(**self._kwargs(messages, settings))
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc
        return self._response(raw, t0)


def _completion(result: GuardResult, model: str) -> Any:
    """An OpenAI-shaped ``ChatCompletion`` whose content is the answer; the GuardResult as ``.stepguard``."""
    from openai.types.chat import ChatCompletion

    resp = ChatCompletion.model_validate({
        "id": f"stepguard-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": result.answer_text or ""}}],
        "usage": {"prompt_tokens": result.usage.input_tokens, "completion_tokens": result.usage.output_tokens,
                  "total_tokens": result.usage.input_tokens + result.usage.output_tokens},
    })
    resp.stepguard = result  # type: ignore[attr-defined]  # openai models keep extra attributes
    return resp


class _Completions:
    def __init__(self, owner: GuardedOpenAI) -> None:
        self._owner = owner
        self._inner = owner.client.chat.completions

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, **kwargs: Any) -> Any:
        """``chat.completions.create``: guarded when ``extra_body["stepguard"]`` names a procedure."""
        job = self._owner._job(kwargs)
        if job is None:
            return self._inner.create(**kwargs)
        guard, proc, inputs, model, tid = job
        if self._owner.is_async:
            async def run() -> Any:
                return _completion(await guard.arun(proc, inputs, thread_id=tid), model)

            return run()
        return _completion(guard.run(proc, inputs, thread_id=tid), model)


class _Chat:
    def __init__(self, owner: GuardedOpenAI) -> None:
        self._inner = owner.client.chat
        self.completions = _Completions(owner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class GuardedOpenAI:
    """Wrap an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client so chat calls can run procedures guarded.

    Args:
        client: the user's client; every attribute other than ``chat.completions.create`` is its own.
        procedures: ``{name: Procedure}`` callable by name from ``extra_body={"stepguard": {...}}``.
        config: the guard's configuration (default :class:`GuardConfig`).
        checkpointer: a LangGraph checkpointer shared by all guarded calls (optional).

    A guarded call's ``extra_body["stepguard"]`` is ``{"procedure": NAME, "inputs": {...}}`` and
    optionally ``"thread_id"`` (resume with a checkpointer). The result is a ``ChatCompletion`` (awaitable for an async client) whose
    content is the answer and whose ``.stepguard`` is the :class:`GuardResult`.

    Raises (from ``create``):
        KeyError: an unknown procedure name.
        ProcedureError, StepDeviation, BudgetExhausted, ModelError: as :meth:`Guard.run`.
    """

    def __init__(
        self,
        client: Any,
        procedures: Mapping[str, Procedure],
        config: GuardConfig | None = None,
        checkpointer: Any | None = None,
    ) -> None:
        self.client = client
        self.procedures = dict(procedures)
        self.config = config or GuardConfig()
        self.checkpointer = checkpointer
        # The real AsyncOpenAI's ``create`` is a decorated plain function returning a coroutine.
        self.is_async = isinstance(client, openai.AsyncOpenAI) or inspect.iscoroutinefunction(client.chat.completions.create)
        self.chat = _Chat(self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def _job(self, kwargs: dict[str, Any]) -> tuple[Guard, Procedure, dict[str, Any], str, str | None] | None:
        extra = kwargs.get("extra_body") or {}
        spec = extra.get(_KEY) if isinstance(extra, Mapping) else None
        if spec is None:
            return None
        name = spec.get("procedure")
        if name not in self.procedures:
            raise KeyError(f"stepguard: unknown procedure {name!r} (known: {sorted(self.procedures)})")
        defaults = GenerationSettings(kwargs.get("temperature"), kwargs.get("seed"), kwargs.get("max_tokens"))
        model = ClientChatModel(self.client, kwargs["model"], defaults)
        guard = Guard(model, self.config, self.checkpointer)
        inputs = dict(spec.get("inputs") or {})
        return guard, self.procedures[name], inputs, kwargs["model"], spec.get("thread_id")
