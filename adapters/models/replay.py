"""Record and replay model calls: a cassette is a JSONL file, one call per line.

Each line is ``{"key": ..., "request": {"model", "messages", "settings"}, "response": {...}}``.
The key is the sha256 of the canonical JSON (sorted keys, no spaces) of the model name, the
messages and the settings, so a run re-asks exactly what it asked before. When one key was
recorded several times (the same prompt re-asked), replay answers in the recorded order and
then repeats the last answer.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stepguard.errors import ModelError
from stepguard.model import ChatMessage, ChatModel, ChatResponse, ClosableModel, GenerationSettings, Usage

__all__ = ["RecordingModel", "ReplayModel", "request_key"]


def request_key(model_name: str, messages: list[ChatMessage], settings: GenerationSettings | None) -> str:
    """Return the stable cassette key of one request.

    Args:
        model_name: the ``gen_ai.request.model`` value of the model asked.
        messages: the chat messages sent.
        settings: the per-call settings; ``None`` counts the same as ``GenerationSettings()``.

    Returns:
        A 64-character hex sha256 digest.
    """
    payload = {
        "model": model_name,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "settings": _settings_key(settings or GenerationSettings()),
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _settings_key(settings: GenerationSettings) -> dict[str, Any]:
    """The settings as keyed: ``tools`` only when some were offered (so keys recorded before tool
    steps existed stay valid)."""
    out = settings.sent()  # never the plan: a key recorded before plans existed stays valid
    if not out.get("tools"):
        out.pop("tools", None)
    return out


def _response_to_json(r: ChatResponse) -> dict[str, Any]:
    return {**asdict(r), "usage": r.usage.model_dump(include={"input_tokens", "output_tokens", "cached_tokens"})}  # a reply's counts


def _response_from_json(d: dict[str, Any]) -> ChatResponse:
    return ChatResponse(
        text=d["text"],
        usage=Usage(**d.get("usage", {})),
        finish_reason=d.get("finish_reason", "stop"),
        latency_s=float(d.get("latency_s", 0.0)),
        model=d.get("model", ""),
        simulated=bool(d.get("simulated", False)),
        response_id=str(d.get("response_id", "")),
        tool_calls=tuple(dict(c) for c in d.get("tool_calls") or ()),
    )


class RecordingModel(ClosableModel):
    """Wrap a model and append every call it answers to a cassette (JSONL).

    Failed calls are not recorded. Safe to share between threads and tasks.

    Args:
        inner: the model that answers.
        path: the cassette file; created with its folder if missing, appended to otherwise.
    """

    def __init__(self, inner: ChatModel, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.spec = inner.spec
        self.provider = inner.provider
        self.model_name = inner.model_name
        self.simulated = inner.simulated
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"RecordingModel({self.inner!r}, path={str(self.path)!r})"

    def _append(self, messages: list[ChatMessage], settings: GenerationSettings | None, r: ChatResponse) -> None:
        line = {
            "key": request_key(self.model_name, messages, settings),
            "request": {
                "model": self.model_name,
                "messages": list(messages),
                "settings": (settings or GenerationSettings()).sent(),
            },
            "response": _response_to_json(r),
        }
        text = json.dumps(line, ensure_ascii=False) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(text)

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """Ask the inner model, record the call, return its reply (errors pass through)."""
        r = self.inner.complete(messages, settings)
        self._append(messages, settings, r)
        return r

    async def acomplete(
        self, messages: list[ChatMessage], settings: GenerationSettings | None = None
    ) -> ChatResponse:
        """Async twin of :meth:`complete`."""
        r = await self.inner.acomplete(messages, settings)
        self._append(messages, settings, r)
        return r

    def close(self) -> None:
        """Close the inner model, where it has a ``close``."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


class ReplayModel(ClosableModel):
    """A model that answers from a cassette and never calls anything.

    Args:
        path: the cassette written by :class:`RecordingModel`.
        model_name: which recorded model to answer as; ``None`` takes the cassette's only one.
        spec: the model specification string (default ``"replay:<path>"``).

    Raises:
        ModelError: the cassette is missing or unreadable (names file and line), or holds
            several models and ``model_name`` is not given.
    """

    provider = "stepguard.replay"

    def __init__(self, path: str | Path, model_name: str | None = None, spec: str | None = None) -> None:
        self.path = Path(path)
        self.spec = spec or f"replay:{self.path}"
        answers: dict[str, list[ChatResponse]] = defaultdict(list)
        models: set[str] = set()
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ModelError(f"cannot read cassette {self.path}: {exc.strerror or exc}", self.spec) from exc
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                answers[row["key"]].append(_response_from_json(row["response"]))
                models.add(row["request"]["model"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ModelError(f"{self.path}:{n}: not a cassette line ({exc})", self.spec) from exc
        if model_name is None:
            if len(models) > 1:
                raise ModelError(f"{self.path} holds models {sorted(models)}: pass model_name", self.spec)
            model_name = next(iter(models), "replay")
        self.model_name = model_name
        self._answers = dict(answers)
        self._served: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self.simulated = any(r.simulated for rs in self._answers.values() for r in rs)

    def __repr__(self) -> str:
        return f"ReplayModel(path={str(self.path)!r}, model_name={self.model_name!r})"

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """Return the recorded reply to this exact request.

        Raises:
            ModelError: the request is not in the cassette; the message names its key.
        """
        key = request_key(self.model_name, messages, settings)
        recorded = self._answers.get(key)
        if not recorded:
            last = messages[-1]["content"][:80] if messages else ""
            raise ModelError(
                f"request {key} is not in cassette {self.path} (last message starts {last!r})", self.spec
            )
        with self._lock:
            i = self._served[key]
            self._served[key] = i + 1
        return recorded[min(i, len(recorded) - 1)]

    async def acomplete(
        self, messages: list[ChatMessage], settings: GenerationSettings | None = None
    ) -> ChatResponse:
        """Async twin of :meth:`complete`."""
        return self.complete(messages, settings)

    def close(self) -> None:
        """Nothing to release; present so every adapter can be closed alike."""
