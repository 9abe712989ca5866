"""The procedures a proxy serves: every procedure file in a folder, by file name."""

from __future__ import annotations

import re
from pathlib import Path

from stepguard.errors import ProcedureError
from stepguard.procedure import Procedure, load_procedure

__all__ = ["load_procedure_folder"]

_SUFFIXES = (".yaml", ".yml", ".json")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def load_procedure_folder(folder: str | Path) -> dict[str, Procedure]:
    """Load every procedure file in ``folder`` (not its sub-folders), keyed by file name without suffix.

    ``invoice.yaml`` is served as the model ``stepguard/invoice``. Input-set files that sit beside
    procedures in the benchmark's layout (``NAME.inputs.yaml``, ``NAME.prompt.yaml``) are skipped.

    Args:
        folder: a folder of ``.yaml``, ``.yml`` or ``.json`` procedure files.

    Returns:
        ``{name: Procedure}``, sorted by name.

    Raises:
        ProcedureError: ``folder`` is not a folder, a file is not a valid procedure (the error names
            the file and field), two files share a name (``a.yaml`` and ``a.json``), or a name has
            characters other than letters, digits, ``.``, ``_`` and ``-``.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ProcedureError("not a folder of procedure files", str(root))
    out: dict[str, Procedure] = {}
    for path in sorted(root.iterdir()):
        if path.suffix.lower() not in _SUFFIXES or not path.is_file() or path.stem.endswith((".inputs", ".prompt")):
            continue
        name = path.stem
        if not _NAME.fullmatch(name):
            raise ProcedureError(f"the name {name!r} cannot be a model name (letters, digits, '.', '_', '-')", str(path))
        if name in out:
            raise ProcedureError(f"two procedure files are named {name!r}: keep one", str(path))
        out[name] = load_procedure(path)
    return dict(sorted(out.items()))
