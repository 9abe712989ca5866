"""The install: a wheel built from a clean copy of the tree ships every file of ``stepguard/`` and
``adapters/`` (as ``stepguard.adapters``), and, installed in a fresh virtual environment without
the ``bench`` extra, ``stepguard check``, ``stepguard run --model sim:perfect`` on every example and
the ``init`` starter all succeed from a directory outside the source tree. Also: which extras the
set-up scripts install, and the message when the ``bench`` extra is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests._paths import ROOT

sys.path.insert(0, str(ROOT / "examples"))
from run_example import AGENT_EXAMPLES, EXAMPLES

INPUTS = {**EXAMPLES, **AGENT_EXAMPLES}

_JUNK = ("__pycache__", ".pyc")


def _source_files() -> set[str]:
    """Every file the wheel must hold, by its installed path."""
    out = set()
    for top, installed in (("stepguard", "stepguard"), ("adapters", "stepguard/adapters")):
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and not any(j in str(path) for j in _JUNK):
                out.add(f"{installed}/{path.relative_to(ROOT / top).as_posix()}")
    return out


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 240) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(args)}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built like CI builds it: ``pip wheel . --no-deps`` on a copy without build leftovers."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "runs", "reports", "site"))
    _run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(tmp / "dist")], src)
    (found,) = (tmp / "dist").glob("stepguard-*.whl")
    return found


@pytest.mark.slow
def test_wheel_ships_every_package_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if n.startswith("stepguard/")}
    assert shipped == _source_files(), (sorted(_source_files() - shipped), sorted(shipped - _source_files()))
    assert {"stepguard/guard/prompts/chunk.txt", "stepguard/py.typed", "stepguard/adapters/models/sim.py"} <= shipped
    assert not any(n.startswith(("adapters/", "tests/")) for n in names)  # no top-level `adapters` to shadow PyPI's
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Provides-Extra: bench" in text and "License-Expression: Apache-2.0" in text
    assert "Project-URL" not in text  # no public address is recorded yet: none is made up
    assert "matplotlib" not in text.split("Provides-Extra")[0] and "scipy" not in text.split("Provides-Extra")[0]


@pytest.mark.slow
def test_installed_wheel_checks_and_runs_every_example_and_the_starter(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    _run([str(bindir / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp_path, timeout=300)
    work = tmp_path / "elsewhere"  # outside the source tree: nothing can come from the checkout
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    sg = str(bindir / "stepguard")
    where = _run([str(bindir / "python"), "-c", "import stepguard, stepguard.adapters as a; print(stepguard.__file__, a.__file__)"], work, env)
    assert str(ROOT) not in where.stdout and "site-packages" in where.stdout
    examples = sorted((ROOT / "examples").glob("*.yaml"))
    assert {p.stem for p in examples} == set(INPUTS)
    shutil.copy(ROOT / "examples" / "agent_tools.py", work / "agent_tools.py")
    for path in examples:
        shutil.copy(path, work / path.name)
        assert "is valid" in _run([sg, "check", path.name], work, env).stdout
        args = [a for k, v in INPUTS[path.stem].items() for a in ("-i", f"{k}={v}")]
        if path.stem in AGENT_EXAMPLES:  # tool steps call only the tools given
            args += ["--tools", "agent_tools.py:TOOLS"]
        out = _run([sg, "run", path.name, *args, "--model", "sim:perfect"], work, env).stdout
        assert "status verified" in out, out
    _run([sg, "init", "starter.yaml"], work, env)
    assert "is valid" in _run([sg, "check", "starter.yaml"], work, env).stdout
    out = _run([sg, "run", "starter.yaml", "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:perfect"], work, env).stdout
    assert "status verified" in out and "answer total = 104.6" in out, out
    # the core installed without the bench extra; the report says what to install
    report = subprocess.run([sg, "bench", "report", "nowhere", "--out", "report"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert report.returncode == 2 and "pip install 'stepguard[bench]'" in report.stderr, report.stderr[-2000:]
    assert "Traceback" not in report.stderr


@pytest.mark.parametrize(("args", "extras"), [
    (["--model", "sim:paper"], "[bench]"),
    (["--model=sim:mild", "--sizes", "5:1"], "[bench]"),
    (["--model", "http://127.0.0.1:8000/v1#m"], "[bench]"),
    ([], "[local,bench]"),
    (["--model", "local:smollm2-135m"], "[local,bench]"),
])
def test_demo_installs_the_model_runtime_only_for_local_models(args: list[str], extras: str) -> None:
    env = {**os.environ, "STEPGUARD_DRY_RUN": "1"}
    env.pop("STEPGUARD_EXTRAS", None)
    out = _run(["bash", "scripts/demo.sh", *args], ROOT, env)
    assert out.stdout.strip() == f"would install: -e .{extras}"


def test_setup_installs_the_bench_extra_by_default() -> None:
    env = {**os.environ, "STEPGUARD_DRY_RUN": "1"}
    env.pop("STEPGUARD_EXTRAS", None)
    assert _run(["bash", "scripts/setup.sh"], ROOT, env).stdout.strip() == "would install: -e .[local,bench,dev,lmeval]"


@pytest.mark.slow
@pytest.mark.parametrize("module", ["stepguard.bench.stats", "stepguard.bench.compare", "stepguard.bench.plots"])
def test_a_missing_bench_extra_names_the_install(module: str) -> None:
    """Each module that needs matplotlib or scipy, in a child where they cannot be imported."""
    code = f"""
import sys
for name in ("scipy", "scipy.stats", "matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
    sys.modules[name] = None
from stepguard.errors import MissingExtraError
try:
    import {module} as m
    m.wilson_interval(1, 2) if hasattr(m, "wilson_interval") else m.mcnemar_exact(1, 2)
except MissingExtraError as exc:
    assert isinstance(exc, ImportError) and exc.extra == "bench"
    print(exc)
else:
    raise SystemExit("no MissingExtraError")
"""
    out = _run([sys.executable, "-c", code], ROOT)
    assert "pip install 'stepguard[bench]'" in out.stdout


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--model", "sim:paper", "--help"]])
def test_demo_help_prints_usage_and_sets_up_nothing(args: list[str]) -> None:
    """``bash scripts/demo.sh --help`` ran the whole set-up, model packages included (issue 45)."""
    env = {**os.environ, "STEPGUARD_DRY_RUN": "1"}  # were it to set up, it would say "would install"
    env.pop("STEPGUARD_EXTRAS", None)
    out = _run(["bash", "scripts/demo.sh", *args], ROOT, env)
    assert out.returncode == 0 and out.stdout.startswith("usage: bash scripts/demo.sh")
    assert "would install" not in out.stdout and "sim:paper" in out.stdout
