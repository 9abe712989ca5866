"""LocalModel lets no more calls reach its server at once than the server has slots (``parallel``):
the rest wait in the client, where their wait counts neither against the per-call timeout nor into
their latency. Checked with a stand-in for the HTTP client (the gate, not the server, is under test)."""

from __future__ import annotations

import asyncio
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from stepguard.adapters.models import _server, local
from stepguard.errors import LocalServerError


class _Tracker:
    """A client that records how many calls are inside it at once."""

    def __init__(self) -> None:
        self.inside = self.most = self.calls = 0
        self._lock = threading.Lock()

    def _enter(self) -> None:
        with self._lock:
            self.inside += 1
            self.calls += 1
            self.most = max(self.most, self.inside)

    def _leave(self) -> None:
        with self._lock:
            self.inside -= 1

    def complete(self, messages: Any, settings: Any = None) -> str:
        self._enter()
        time.sleep(0.05)  # long enough for the other callers to arrive
        self._leave()
        return "ok"

    async def acomplete(self, messages: Any, settings: Any = None) -> str:
        self._enter()
        await asyncio.sleep(0.05)
        self._leave()
        return "ok"

    def close(self) -> None:
        pass


@pytest.fixture
def model_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.setattr(local, "resolve_model", lambda name=None: (tmp_path / "m.gguf", "m"))
    monkeypatch.setattr(local.LocalServer, "pid", property(lambda self: 1))

    def make(runtime: str, parallel: int | None) -> tuple[local.LocalModel, _Tracker]:
        model = local.LocalModel("m", runtime=runtime, binary=binary, parallel=parallel)
        tracker = _Tracker()
        model._inner = tracker  # type: ignore[assignment]
        monkeypatch.setattr(model.server, "stop", lambda: None)
        return model, tracker

    return make


def _llama_cpp_missing() -> str | None:
    """Why the python runtime cannot be made here (llama-cpp-python[server] not installed), or None."""
    try:
        _server.check_llama_cpp()
    except LocalServerError as exc:
        return str(exc)
    return None


needs_llama = pytest.mark.skipif(_llama_cpp_missing() is not None, reason=str(_llama_cpp_missing()))


@pytest.mark.slow
@pytest.mark.parametrize(("runtime", "parallel"), [pytest.param("python", None, marks=needs_llama), ("native", 1), ("native", 3)])
def test_threads_beyond_the_slots_wait_in_the_client(model_of: Any, runtime: str, parallel: int | None) -> None:
    model, tracker = model_of(runtime, parallel)
    threads = [threading.Thread(target=model.complete, args=([],)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert tracker.calls == 8 and tracker.most == (parallel or 1)


def test_async_calls_beyond_the_slots_wait_and_a_cancelled_wait_holds_no_slot(model_of: Any) -> None:
    model, tracker = model_of("native", 2)

    async def main() -> None:
        await asyncio.gather(*(model.acomplete([]) for _ in range(6)))
        assert tracker.calls == 6 and tracker.most == 2
        busy = [asyncio.ensure_future(model.acomplete([])) for _ in range(2)]
        waiting = asyncio.ensure_future(model.acomplete([]))  # no slot free: it waits
        await asyncio.sleep(0.01)
        waiting.cancel()
        await asyncio.gather(*busy)
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert [model._slots.acquire(blocking=False) for _ in range(3)] == [True, True, False]  # both free, no more
        model._slots.release()
        model._slots.release()

    asyncio.run(main())
