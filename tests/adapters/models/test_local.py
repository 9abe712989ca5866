"""The local-model machinery without a real model: registry, assembly, checksums, process handling.

The server process here is a small fake that answers ``GET /v1/models`` (or dies, stays silent,
or ignores SIGTERM), so start/stop/cleanup are tested without llama-cpp-python.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stepguard.adapters.models import _model_files as files
from stepguard.adapters.models import _server
from stepguard.adapters.models.local import LocalServer, list_local_models, resolve_model
from stepguard.errors import LocalServerError
from tests._serve_process import gone

FAKE_SERVER = textwrap.dedent(
    """
    import signal, sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer
    mode, port = sys.argv[1], int(sys.argv[2])
    print("fake server starting", mode, flush=True)
    if mode == "die":
        print("error: failed to load model", flush=True)
        sys.exit(3)
    if mode == "silent":
        time.sleep(600)
    if mode == "ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()
            self.wfile.write(b"{}")
        def log_message(self, *a):
            pass
    HTTPServer(("127.0.0.1", port), H).serve_forever()
    """
)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(_server, "check_llama_cpp", lambda: None)
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")

    def make(mode: str = "ok", **kw) -> LocalServer:
        class Fake(LocalServer):
            def command(self) -> list[str]:
                return [sys.executable, str(script), mode, str(self.port)]

        return Fake(gguf, **kw)

    return make


def test_server_starts_answers_and_stops_leaving_nothing(fake) -> None:
    with fake() as server:
        pid = server.pid
        assert pid and server.base_url.startswith("http://127.0.0.1:") and server.ready_s < 10
    assert server.pid is None and gone(pid)


def test_server_that_dies_reports_its_log(fake) -> None:
    with pytest.raises(LocalServerError, match="exited with code 3") as info:
        fake("die").start()
    assert "failed to load model" in str(info.value)


@pytest.mark.slow
def test_server_that_never_answers_times_out_and_is_killed(fake) -> None:
    server = fake("silent", ready_timeout=1.0)
    with pytest.raises(LocalServerError, match="did not answer"):
        server.start()
    assert server.pid is None


@pytest.mark.slow
def test_sigterm_ignored_means_sigkill_after_grace(fake) -> None:
    server = fake("ignore_term", stop_grace=0.5).start()
    pid = server.pid
    started = time.monotonic()
    server.stop()
    assert gone(pid) and time.monotonic() - started < 5


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigterm", "sigint", "sighup", "atexit"])
def test_caller_signals_and_exit_stop_the_server(fake, tmp_path: Path, how: str) -> None:
    script = tmp_path / "fake_server.py"
    child = textwrap.dedent(
        f"""
        import os, signal, sys, time
        from stepguard.adapters.models import _server
        _server.check_llama_cpp = lambda: None
        class Fake(_server.LocalServer):
            def command(self):
                return [sys.executable, {str(script)!r}, "ok", str(self.port)]
        server = Fake({str(tmp_path / 'm.gguf')!r}).start()
        print(server.pid, flush=True)
        if {how!r} in ("sigterm", "sighup"):  # sighup: the terminal was closed
            os.kill(os.getpid(), getattr(signal, {how!r}.upper())); time.sleep(10)
        elif {how!r} == "sigint":
            with server:
                os.kill(os.getpid(), signal.SIGINT); time.sleep(10)
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    pid = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 10
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone(pid), proc.stderr


def test_missing_llama_cpp_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_server.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(LocalServerError, match=r'pip install -e "\.\[local\]"'):
        _server.check_llama_cpp()


# -- files: locate, assemble, verify ----------------------------------------------------------


@pytest.fixture
def chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Two fake chunk packages whose __init__ raises, to prove they are never imported."""
    site = tmp_path / "site"
    data = [os.urandom(100_000), os.urandom(50_001)]
    for i, blob in enumerate(data, 1):
        pkg = site / f"fakechunk_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
    monkeypatch.syspath_prepend(str(site))
    cache = tmp_path / "cache"
    monkeypatch.setenv("STEPGUARD_CACHE_DIR", str(cache))
    digest = hashlib.sha256(b"".join(data)).hexdigest()
    model = files.KnownModel(
        "fake-2part", "fake", digest,
        tuple((f"fakechunk_part{i}", f"data/part{i:02d}.bin") for i in (1, 2)), "fakechunk-part1..2",
    )
    return model, b"".join(data), cache


def test_assemble_verify_and_remember(chunks) -> None:
    model, whole, cache = chunks
    path = files.ensure_file(model)
    assert path == cache / "fake-2part.gguf" and path.read_bytes() == whole
    assert "fakechunk_part1" not in sys.modules
    assert files.recorded_sha256(path) == model.sha256
    # Same size and mtime: the remembered digest is trusted, not recomputed.
    st = path.stat()
    path.write_bytes(b"\0" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert files.ensure_file(model) == path
    # Changed mtime: hashed again, found damaged, assembled again.
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert files.ensure_file(model).read_bytes() == whole
    assert not [p for p in cache.iterdir() if p.name.endswith(".part")]


def test_checksum_mismatch_leaves_no_file(chunks) -> None:
    model, _, cache = chunks
    wrong = files.KnownModel(model.name, model.title, "0" * 64, model.parts, model.requirement)
    with pytest.raises(LocalServerError, match="expected 0000"):
        files.ensure_file(wrong)
    assert not (cache / "fake-2part.gguf").exists()
    assert not [p for p in cache.iterdir() if p.name.endswith(".part")]


def test_missing_part_means_not_installed(chunks) -> None:
    model, _, _ = chunks
    absent = files.KnownModel("x", "x", model.sha256, (*model.parts, ("fakechunk_part9", "data/part09.bin")), "x")
    assert files.locate_parts(absent) is None
    with pytest.raises(LocalServerError, match="pip install x"):
        files.ensure_file(absent)


def test_resolve_user_gguf_and_errors(tmp_path: Path) -> None:
    own = tmp_path / "My-Model.Q4.gguf"
    own.write_bytes(b"GGUF")
    assert resolve_model(str(own)) == (own.resolve(), "My-Model.Q4")
    with pytest.raises(LocalServerError, match="not found"):
        resolve_model(str(tmp_path / "absent.gguf"))
    with pytest.raises(LocalServerError, match="unknown local model 'nope'.*smollm2-135m"):
        resolve_model("nope")


def test_list_local_models_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPGUARD_CACHE_DIR", str(tmp_path))
    infos = list_local_models()
    assert [i.name for i in infos] == ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"]
    for i in infos:
        assert i.checksum in ("ok", "unverified", "mismatch", "missing")
        assert i.installed == (i.checksum != "missing")


def test_cli_model_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from stepguard.cli.model import app

    monkeypatch.setenv("STEPGUARD_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    assert "smollm2-135m" in result.output and "checksum" in result.output


# -- server settings: prompt-lookup drafting (docs/speed.md) ----------------------------------


def _parse_with_llama_cpp(cmd: list[str]):  # type: ignore[no-untyped-def]
    """The settings llama-cpp-python's own server would take from ``cmd`` (after ``-m llama_cpp.server``)."""
    import argparse

    cli = pytest.importorskip("llama_cpp.server.cli")
    settings = pytest.importorskip("llama_cpp.server.settings")
    parser = argparse.ArgumentParser()
    cli.add_args_from_model(parser, settings.Settings)
    args = parser.parse_args(cmd[cmd.index("llama_cpp.server") + 1:])
    return cli.parse_model_from_args(settings.ModelSettings, args)


def test_default_command_drafts_nothing_and_three_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_server.DRAFT_TOKENS_ENV, raising=False)
    plain = LocalServer(tmp_path / "m.gguf", port=1234, seed=0).command()
    assert "--draft_model" not in plain and _parse_with_llama_cpp(plain).draft_model is None
    cmd = LocalServer(tmp_path / "m.gguf", port=1234, seed=0, draft_tokens=3).command()
    i = cmd.index("--draft_model")
    assert cmd[i:i + 4] == ["--draft_model", "prompt-lookup-decoding", "--draft_model_num_pred_tokens", "3"]
    model_settings = _parse_with_llama_cpp(cmd)  # the server itself reads it so
    assert model_settings.draft_model == "prompt-lookup-decoding"
    assert model_settings.draft_model_num_pred_tokens == 3
    assert model_settings.n_threads == 2 and model_settings.seed == 0 and model_settings.n_ctx == 8192
    assert cmd[:i] == plain  # drafting adds its two options and changes nothing else


@pytest.mark.parametrize(("given", "env", "expected"), [(0, None, 0), (5, None, 5), (None, "0", 0), (None, "7", 7),
                                                         (2, "0", 2), (None, " ", 0)])
def test_draft_tokens_given_or_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given, env,
                                                expected) -> None:
    if env is None:
        monkeypatch.delenv(_server.DRAFT_TOKENS_ENV, raising=False)
    else:
        monkeypatch.setenv(_server.DRAFT_TOKENS_ENV, env)
    server = LocalServer(tmp_path / "m.gguf", port=1234, draft_tokens=given)
    cmd = server.command()
    assert server.draft_tokens == expected
    if expected:
        assert cmd[cmd.index("--draft_model_num_pred_tokens") + 1] == str(expected)
    else:
        assert "--draft_model" not in cmd and "--draft_model_num_pred_tokens" not in cmd
        assert _parse_with_llama_cpp(cmd).draft_model is None


def test_extra_args_come_after_and_override_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_server.DRAFT_TOKENS_ENV, raising=False)
    cmd = LocalServer(tmp_path / "m.gguf", port=1, draft_tokens=3,
                      extra_args=("--draft_model_num_pred_tokens", "6")).command()
    assert _parse_with_llama_cpp(cmd).draft_model_num_pred_tokens == 6


@pytest.mark.parametrize("env", ["-1", "three", "2.5"])
def test_bad_draft_tokens_are_refused_with_the_variable_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              env: str) -> None:
    monkeypatch.setenv(_server.DRAFT_TOKENS_ENV, env)
    with pytest.raises(LocalServerError, match="STEPGUARD_DRAFT_TOKENS"):
        LocalServer(tmp_path / "m.gguf")
    monkeypatch.delenv(_server.DRAFT_TOKENS_ENV)
    with pytest.raises(LocalServerError, match=">= 0"):
        LocalServer(tmp_path / "m.gguf", draft_tokens=-2)


def test_run_json_records_the_draft_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard.bench._runmeta import describe_model

    monkeypatch.delenv(_server.DRAFT_TOKENS_ENV, raising=False)

    class Model:
        spec, model_name, provider = "local:m", "m", "llama.cpp"

        def __init__(self, **kw) -> None:
            self.server = LocalServer(tmp_path / "m.gguf", alias="m", **kw)

    assert describe_model(Model())["server"]["draft_tokens"] == 0  # type: ignore[arg-type]
    assert describe_model(Model(draft_tokens=3))["server"]["draft_tokens"] == 3  # type: ignore[arg-type]


def test_cli_serve_passes_draft_tokens_and_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from stepguard.adapters.models import local
    from stepguard.cli import app

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    seen: list[list[str]] = []

    def refuse(self: LocalServer) -> LocalServer:
        seen.append(self.command())
        raise LocalServerError("not started in this test")

    monkeypatch.setattr(local.LocalServer, "start", refuse)
    result = CliRunner().invoke(app, ["model", "serve", str(gguf), "--draft-tokens", "0", "--port", "5"])
    assert result.exit_code != 0 and seen and "--draft_model" not in seen[0]
    result = CliRunner().invoke(app, ["model", "serve", str(gguf), "--draft-tokens", "4", "--port", "5"])
    assert seen[1][seen[1].index("--draft_model_num_pred_tokens") + 1] == "4"
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv(_server.SERVER_BINARY_ENV, str(binary))
    result = CliRunner().invoke(app, ["model", "serve", str(gguf), "--runtime", "native", "--port", "5"])
    assert result.exit_code != 0 and seen[2][0] == str(binary)
    result = CliRunner().invoke(app, ["model", "serve", str(gguf), "--runtime", "rust", "--port", "5"])
    assert result.exit_code == 2 and "'rust': give one of python, native" in result.output  # usage, before any start
    assert len(seen) == 3
