"""Each ``# type: ignore`` in stepguard/ and adapters/ names its error code and says why, on its line.

The files in rework on other branches (pyproject.toml's "in rework" blocks, where mypy ignores
errors) are left out until the lead merges them; then remove them from ``IN_REWORK``.
"""

from __future__ import annotations

import re

from tests._paths import ROOT

IN_REWORK: tuple[str, ...] = ()
"""Files another branch is editing (the same list as pyproject.toml's "in rework" blocks)."""

_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[a-z0-9-]+(?:,\s*[a-z0-9-]+)*\])?(?P<rest>.*)$")


def test_each_type_ignore_has_its_code_and_reason() -> None:
    bare = []
    for folder in ("stepguard", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(IN_REWORK):
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = _IGNORE.search(line)
                if m and (not m.group("codes") or not re.match(r"\s*#\s*\S", m.group("rest"))):
                    bare.append(f"{rel}:{n}: {line.strip()}")
    assert not bare, "give each ignore its [code] and a reason comment:\n" + "\n".join(bare)
