"""The paper's figures are cited by version (issue 45): "61% at 5 steps" is its first version's
(arXiv 2605.00817v1, 2026-05-01); its third (2026-05-24, retitled) reports 63%. Every paragraph of
the README, the docs and the report's own captions that gives 61% names v1."""

from __future__ import annotations

from stepguard.bench import overlay, report
from tests._paths import ROOT


def _paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n\n") if "61%" in p]


def test_every_61_percent_names_the_version() -> None:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [(f.name, p) for f in files for p in _paragraphs(f.read_text(encoding="utf-8"))]
    assert found
    for name, paragraph in found:
        assert "v1" in paragraph, (name, paragraph[:200])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "2605.00817v1, 2026-05-01" in readme and "63% at 5" in readme


def test_the_reports_own_captions_name_v1() -> None:
    assert "2605.00817v1" in report.OVERLAY_CAPTION and "2605.00817v1" in overlay.PAPER_LABEL
