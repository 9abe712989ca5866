"""``stepguard serve`` before and around serving: a host or port it cannot listen on is a one-line usage
error (exit 2, never uvicorn's 3, which is "flagged" here), usage errors are found before the
embedded runtime is checked, a proxy that fails to start exits 6, and the socket bound up front
serves with one worker and with several."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests._paths import ROOT

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install 'stepguard[serve]'")

from stepguard.cli import app  # noqa: E402
from stepguard.errors import LocalServerError  # noqa: E402
from stepguard.serve._server import OPTIONS_ENV, TOKEN_ENV  # noqa: E402
from tests._stub_server import StubServer  # noqa: E402


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another socket listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


@pytest.fixture(autouse=True)
def _serve_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` hands its options to workers in the environment: restored after each test."""
    monkeypatch.setenv(OPTIONS_ENV, "{}")
    monkeypatch.delenv(TOKEN_ENV, raising=False)


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error: ")]


def test_a_port_in_use_is_a_one_line_usage_error_naming_it(taken: int) -> None:
    out = CliRunner().invoke(app, ["serve", "--upstream", "sim:perfect", "--port", str(taken)])
    assert out.exit_code == 2, out.output
    assert _errors(out.output) == [f"error: cannot listen on 127.0.0.1:{taken}: address already in use "
                                   f"(another process listens there: stop it, or choose another port)"]
    assert "Traceback" not in out.output and "Errno" not in out.output


@pytest.mark.parametrize(("host", "says"), [
    ("192.0.2.1", "cannot assign requested address (not an address of this machine: choose another host)"),
    ("no-such-host.invalid", "(not a host name or address this machine can resolve)"),
])
def test_a_host_it_cannot_listen_on_is_a_usage_error(host: str, says: str) -> None:
    out = CliRunner().invoke(app, ["serve", "--upstream", "sim:perfect", "--host", host, "--port", "0"])
    assert out.exit_code == 2, out.output
    [line] = _errors(out.output)
    assert line.startswith(f"error: cannot listen on {host}:0: ") and says in line


def test_a_port_out_of_range_is_a_usage_error() -> None:
    out = CliRunner().invoke(app, ["serve", "--upstream", "sim:perfect", "--port", "70000"])
    assert out.exit_code == 2 and "--port" in out.output


def _no_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where the embedded model's runtime check fails (exit 6 if it were reached)."""
    import stepguard.adapters.models._server as runtime
    import stepguard.adapters.models.local as local

    def check_runtime(*args: object, **kwargs: object) -> None:
        raise LocalServerError("the llama runtime is not installed (test)")

    monkeypatch.setattr(runtime, "check_runtime", check_runtime)
    monkeypatch.setattr(local, "check_runtime", check_runtime)  # the name the CLI imports


def test_usage_errors_come_before_the_runtime_check(monkeypatch: pytest.MonkeyPatch, taken: int) -> None:
    _no_runtime(monkeypatch)
    out = CliRunner().invoke(app, ["serve", "--upstream", "local", "--workers", "2"])
    assert out.exit_code == 2 and "stepguard model serve" in out.output and "runtime" not in out.output, out.output
    out = CliRunner().invoke(app, ["serve", "--upstream", "local", "--port", str(taken)])
    assert out.exit_code == 2 and "address already in use" in out.output, out.output
    out = CliRunner().invoke(app, ["serve", "--upstream", "local", "--port", "0"])  # the command line is right: now 6
    assert out.exit_code == 6 and "the llama runtime is not installed (test)" in out.output, out.output


def test_a_proxy_whose_start_up_fails_exits_6_not_uvicorns_3(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard.errors import ModelError
    from stepguard.serve._upstream import Upstream

    def start(self: Upstream) -> None:
        raise ModelError("the upstream would not start (test)", self.spec)

    monkeypatch.setattr(Upstream, "start", start)
    out = CliRunner().invoke(app, ["serve", "--upstream", "sim:perfect", "--port", "0"])
    assert out.exit_code == 6, out.output
    assert _errors(out.output) == ["error: the proxy did not start (the log above says why)"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_it_serves_on_the_socket_it_bound(tmp_path: Path, workers: int) -> None:
    """``--port 0`` binds a free port and prints it; one worker and several serve on that socket."""
    with StubServer() as stub:
        log = tmp_path / "serve.log"
        cmd = [sys.executable, "-m", "stepguard", "serve", "--upstream", f"{stub.base_url}#ok", "--port", "0",
               "--workers", str(workers)]
        with open(log, "w") as fh:
            proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, OPTIONS_ENV: ""}, stdout=fh, stderr=subprocess.STDOUT)
        try:
            base = None
            for _ in range(600):
                found = re.search(r"base URL: (http://127\.0\.0\.1:\d+/v1)", log.read_text())
                if found:
                    base = found.group(1)
                    try:
                        if httpx.get(f"{base}/models", timeout=5).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                assert proc.poll() is None, log.read_text()
                time.sleep(0.1)
            else:
                pytest.fail(log.read_text())
            body = {"model": "ok", "messages": [{"role": "user", "content": "hi"}]}
            reply = httpx.post(f"{base}/chat/completions", content=json.dumps(body), timeout=30)
            assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "reply to: hi"
        finally:
            proc.terminate()  # one worker: uvicorn stops gracefully, then dies of the signal it deferred
            assert proc.wait(timeout=30) in (0, -signal.SIGTERM), log.read_text()
        assert "Application shutdown complete" in log.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf"])
def test_a_timeout_not_above_zero_is_a_usage_error_before_anything_starts(timeout: str) -> None:
    """`serve --timeout 0` printed its base URL, then a ValueError traceback, exit 1."""
    out = CliRunner().invoke(app, ["serve", "--upstream", "http://127.0.0.1:9/v1#m", "--port", "0", "--timeout", timeout])
    assert out.exit_code == 2 and "--timeout" in out.output and "base URL" not in out.output, out.output


@pytest.mark.slow
@pytest.mark.parametrize(("host", "token", "warned"), [
    ("0.0.0.0", None, True), ("0.0.0.0", "s3cret", False), ("127.0.0.1", None, False), ("localhost", None, False),
])
def test_listening_beyond_this_machine_with_no_token_is_warned_of(monkeypatch: pytest.MonkeyPatch, host: str,
                                                                   token: str | None, warned: bool) -> None:
    """``--host 0.0.0.0`` with no token started without a word (issue 45): anyone on the network could
    run procedures on the upstream (and its key). A token, or a loopback address, says nothing."""
    import stepguard.serve as serve

    monkeypatch.setattr(serve, "serve", lambda **kwargs: None)
    args = ["serve", "--upstream", "sim:perfect", "--host", host, "--port", "0", *(["--token", token] if token else [])]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    said = [line for line in out.output.splitlines() if line.startswith("warning: listening on")]
    assert bool(said) is warned, out.output
    if warned:
        assert "with no token" in said[0] and "STEPGUARD_PROXY_TOKEN" in said[0]
