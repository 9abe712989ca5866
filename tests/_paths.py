"""Where things are, for tests at any depth under tests/: the repository root and the tests' data folder."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA", "ROOT"]

ROOT = Path(__file__).resolve().parent.parent
"""The repository root (examples/, benchmarks/, docs/, stepguard/ below it)."""

DATA = ROOT / "tests" / "data"
"""The tests' recorded data (cassettes, pinned figures, a user's suite)."""
