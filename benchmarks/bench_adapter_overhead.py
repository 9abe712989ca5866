"""How much time the OpenAI-compatible adapter adds to one chat call, milliseconds.

Runs a minimal OpenAI-compatible echo server (below; standard library only) on 127.0.0.1 and times N calls of
:meth:`stepguard.adapters.OpenAICompatibleModel.complete` against N raw ``httpx`` POSTs of the
same JSON body (JSON decode included), interleaved in small rounds so machine noise hits both
sides alike. Two clocks:

- wall: ``time.perf_counter`` per call (the round trip as a caller sees it);
- caller CPU: ``time.thread_time`` of the calling thread per call. The stub server runs in
  other threads, so this is the client side's own work, and it is robust to a busy machine.

The difference of the medians is the adapter's own overhead (request building, the ``openai``
client's machinery, reply parsing); target < 2 ms.

Usage: ``python benchmarks/bench_adapter_overhead.py [--calls 600] [--prompt-chars 3000]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from stepguard.adapters import OpenAICompatibleModel


class _Echo(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``: a 200 chat completion replying ``reply to: <last message>``."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        last = body["messages"][-1]["content"] if body.get("messages") else ""
        data = json.dumps({
            "id": "chatcmpl-echo", "object": "chat.completion", "created": int(time.time()), "model": body.get("model", "ok"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"reply to: {last}"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Silent."""


@contextmanager
def echo_server() -> Iterator[str]:
    """Serve :class:`_Echo` on a free 127.0.0.1 port in a thread; yields the base URL (``.../v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _time(fn: Callable[[], object], calls: int, wall: list[float], cpu: list[float]) -> None:
    for _ in range(calls):
        w, c = time.perf_counter(), time.thread_time()
        fn()
        cpu.append((time.thread_time() - c) * 1e3)
        wall.append((time.perf_counter() - w) * 1e3)


def main() -> None:
    """Run the benchmark; print mean / median milliseconds per call on both clocks, and the overhead."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=600, help="timed calls per side")
    ap.add_argument("--prompt-chars", type=int, default=3000, help="size of the user message")
    ap.add_argument("--rounds", type=int, default=20, help="interleaved rounds")
    args = ap.parse_args()
    messages = [
        {"role": "system", "content": "Execute the procedure one step per line."},
        {"role": "user", "content": "s1 = 3 + 4\n" * (args.prompt_chars // 11)},
    ]
    results: dict[str, tuple[list[float], list[float]]] = {
        "adapter.complete": ([], []),
        "raw httpx POST": ([], []),
    }
    with echo_server() as base_url:
        model = OpenAICompatibleModel("ok", base_url=base_url, api_key_env=None)
        body = {"model": "ok", "messages": messages, "temperature": 0.0, "seed": 0}
        url = base_url + "/chat/completions"
        with httpx.Client(trust_env=False) as client:
            sides: dict[str, Callable[[], object]] = {
                "adapter.complete": lambda: model.complete(messages),
                "raw httpx POST": lambda: client.post(url, json=body).json(),
            }
            for fn in sides.values():  # warm up connections and caches
                _time(fn, 50, [], [])
            per_round = max(1, args.calls // args.rounds)
            for _ in range(args.rounds):
                for name, fn in sides.items():
                    _time(fn, per_round, *results[name])
        model.close()
    print(f"{args.calls} calls per side, {args.prompt_chars}-character prompt")
    print(f"{'':18}{'wall mean':>10}{'median':>9}{'cpu mean':>10}{'median':>9}   (ms per call)")
    for name, (wall, cpu) in results.items():
        print(f"{name:18}{statistics.mean(wall):10.3f}{statistics.median(wall):9.3f}"
              f"{statistics.mean(cpu):10.3f}{statistics.median(cpu):9.3f}")
    (aw, ac), (rw, rc) = results.values()
    d = [statistics.mean(aw) - statistics.mean(rw), statistics.median(aw) - statistics.median(rw),
         statistics.mean(ac) - statistics.mean(rc), statistics.median(ac) - statistics.median(rc)]
    verdict = "ok" if d[3] < 2.0 else "OVER TARGET"
    print(f"{'overhead':18}{d[0]:10.3f}{d[1]:9.3f}{d[2]:10.3f}{d[3]:9.3f}   "
          f"(target < 2 ms, caller CPU median: {verdict})")


if __name__ == "__main__":
    main()
