"""The model specification string: one syntax, used by every command that takes a model.

Valid forms (see :data:`VALID_FORMS`)::

    local                                  the best installed local model (embedded llama.cpp server)
    local:qwen2.5-coder-1.5b               a known local model by name
    local:/path/to/model.gguf              your own GGUF file (not checksummed)
    sim:<preset>                           the seeded simulated executor (never a model's accuracy)
    openai:gpt-4o-mini                     $OPENAI_BASE_URL, else api.openai.com; key from OPENAI_API_KEY
    http://127.0.0.1:8000/v1#model-name    any OpenAI-compatible base URL; model after '#' (a URL of the
                                           chat endpoint itself, .../v1/chat/completions, is read as its base)
    replay:/path/cassette.jsonl            answers recorded earlier (see stepguard.adapters.models.replay)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from stepguard.errors import ModelSpecError

__all__ = ["ModelKind", "ModelSpec", "VALID_FORMS", "parse_model_spec"]

ModelKind = Literal["local", "sim", "openai", "http", "replay"]

VALID_FORMS = (
    "local                               (best installed local model)",
    "local:<name>                        (qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, smollm2-135m)",
    "local:/path/to/model.gguf           (your own GGUF file)",
    "sim:<preset>                        (seeded simulated executor)",
    "openai:<model>                      ($OPENAI_BASE_URL, else api.openai.com; key from OPENAI_API_KEY)",
    "http(s)://host:port/v1#<model>      (any OpenAI-compatible endpoint)",
    "replay:/path/cassette.jsonl         (recorded answers)",
)


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model specification string.

    Attributes:
        kind: which adapter serves it.
        target: what the kind needs: a local model name or GGUF path (``""`` = best installed),
            a simulator preset (``""`` = its default), an OpenAI model name, a base URL, or a
            cassette path.
        model: the model name for ``http`` specs (the part after ``#``); else ``None``.
        raw: the string as given (stripped).
    """

    kind: ModelKind
    target: str
    model: str | None = None
    raw: str = ""


def _fail(spec: str, why: str) -> ModelSpecError:
    forms = "\n  ".join(VALID_FORMS)
    return ModelSpecError(f"invalid model specification {spec!r}: {why}. Valid forms:\n  {forms}")


_ENDPOINTS = ("/chat/completions", "/completions")
"""Paths of an endpoint that a URL may end with where its base URL is meant (the client adds them)."""


def _base_url(url: str) -> str:
    """``url`` as a base URL: a trailing ``/`` and an endpoint's own path (``/chat/completions``, which
    the OpenAI client adds to the base URL itself) taken off: ``http://h/v1/chat/completions`` is ``http://h/v1``."""
    base = url.rstrip("/")
    for path in _ENDPOINTS:
        if base.lower().endswith(path):
            return base[: -len(path)].rstrip("/")
    return base


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse one model specification string.

    Args:
        spec: e.g. ``"local:smollm2-135m"``, ``"openai:gpt-4o-mini"``,
            ``"http://127.0.0.1:8000/v1#qwen"``.

    Returns:
        The parsed :class:`ModelSpec`.

    Raises:
        ModelSpecError: the string is not one of the valid forms; the message lists them.
    """
    if not isinstance(spec, str):
        raise _fail(repr(spec), "not a string")
    raw = spec.strip()
    if not raw:
        raise _fail(raw, "empty")
    lowered = raw.lower()
    if lowered.startswith(("http://", "https://")):
        base, sep, model = raw.partition("#")
        host = base.split("://", 1)[1]
        if not host or host.startswith("/"):
            raise _fail(raw, "the URL has no host")
        if not sep or not model.strip():
            raise _fail(raw, "an endpoint needs the model name after '#'")
        return ModelSpec("http", _base_url(base), model.strip(), raw)
    kind, sep, target = raw.partition(":")
    kind, target = kind.strip().lower(), target.strip()
    if kind == "local":
        return ModelSpec("local", target, None, raw)
    if kind == "sim":
        return ModelSpec("sim", target, None, raw)
    if kind in ("openai", "replay"):
        if not target:
            what = "a model name" if kind == "openai" else "a cassette path"
            raise _fail(raw, f"'{kind}:' needs {what}")
        return ModelSpec("openai" if kind == "openai" else "replay", target, None, raw)
    if not sep:
        raise _fail(raw, f"unknown kind {kind!r}")
    raise _fail(raw, f"unknown kind {kind!r} before ':'")
