"""Prompt forms as versioned data: the wording the guard's prompt code writes, one file a version.

``stepguard/guard/prompts/forms/<version>.json`` holds a version's ``texts`` (``string.Template``
texts the prompt code fills: the count line, the rounding note, the context block's head) and its
``history`` (what each version changed, from 2 on). The forms in use are the file of the highest
version (:func:`current_forms`). A version also covers what no file holds: the kinds' step lines
and correction notes, and what the rungs derive, so a change to any of them is a bump too
(``tests/guard/test_prompt_forms.py`` pins the requests to the version). Which checkpoints a bump lets
resume: :mod:`stepguard.guard._forms_resume`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from stepguard.errors import StepguardError

__all__ = ["FORMS_DIR", "TEXT_KEYS", "PromptForms", "current_forms", "load_forms"]

FORMS_DIR = Path(__file__).parent / "prompts" / "forms"
"""The built-in forms files, ``<version>.json``."""

TEXT_KEYS: tuple[str, ...] = ("count_one", "count_many", "context_head", "rounding_note", "rounding_rule", "choices_note",
                              "type_note", "integer_note")
"""The texts every forms file holds (``rounding_rule`` maps a rounding mode to its words; the others are texts)."""


def _bad(where: str, message: str) -> StepguardError:
    return StepguardError(f"{where}: {message}")


@dataclass(frozen=True)
class PromptForms:
    """One version of the prompt forms.

    Attributes:
        version: the forms version (1 or more): part of the prompts' fingerprint, so of a run's identity.
        history: version -> what that version changed (every version from 2 to :attr:`version`).
        texts: key (:data:`TEXT_KEYS`) -> a ``string.Template`` text, or for ``rounding_rule`` a mapping
            of rounding mode to its words.
    """

    version: int
    history: Mapping[int, str]
    texts: Mapping[str, Any]

    def text(self, key: str, **fields: object) -> str:
        """The text ``key`` with its ``$name`` fields filled from ``fields``.

        Raises:
            KeyError: no text ``key``, or a field the text names is not given.
        """
        return Template(self.texts[key]).substitute({k: str(v) for k, v in fields.items()})

    def rounding(self, mode: str) -> str:
        """The words for a rounding mode (``ROUND_HALF_UP`` -> ``half up``)."""
        words: Mapping[str, str] = self.texts["rounding_rule"]
        return words[mode]


def load_forms(path: str | Path) -> PromptForms:
    """The forms in the JSON file ``path``: ``{"version": n, "history": {"2": ..., ...}, "texts": {...}}``.

    Raises:
        StepguardError: the file cannot be read or is not JSON; ``version`` is not a whole number of 1 or
            more; ``history`` does not say what each version from 2 to ``version`` changed; ``texts``
            misses a key of :data:`TEXT_KEYS` or holds one that is not text. The message names the
            file and the field.
    """
    where = str(path)
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _bad(where, f"cannot read the prompt forms: {exc}") from None
    if not isinstance(raw, dict):
        raise _bad(where, "the prompt forms must be a JSON object with version, history and texts")
    version = raw.get("version")
    if type(version) is not int or version < 1:
        raise _bad(where, f"'version' must be a whole number of 1 or more, not {version!r}")
    history = raw.get("history") or {}
    missing = [v for v in range(2, version + 1) if not isinstance(history.get(str(v)), str)] if isinstance(history, dict) else [2]
    if missing:
        raise _bad(where, f"'history' must say what each version from 2 to {version} changed (missing: {missing})")
    texts = raw.get("texts")
    if not isinstance(texts, dict):
        raise _bad(where, "'texts' must be an object of the forms' texts")
    for key in TEXT_KEYS:
        value = texts.get(key)
        words = isinstance(value, dict) and all(isinstance(w, str) for w in value.values())
        if not (words if key == "rounding_rule" else isinstance(value, str)):
            what = "missing" if value is None else "not a mapping of words" if key == "rounding_rule" else "not text"
            raise _bad(where, f"'texts.{key}' is {what}")
    return PromptForms(version, {int(k): str(v) for k, v in history.items() if str(k).isdigit()}, dict(texts))


def current_forms(folder: Path = FORMS_DIR) -> PromptForms:
    """The forms of the highest version in ``folder`` (files named ``<version>.json``).

    Raises:
        StepguardError: no forms file there, or one that does not load (:func:`load_forms`), or a file
            whose ``version`` is not its name.
    """
    files = sorted((int(p.stem), p) for p in folder.glob("*.json") if p.stem.isdigit())
    if not files:
        raise _bad(str(folder), "no prompt forms file (<version>.json) found")
    number, path = files[-1]
    forms = load_forms(path)
    if forms.version != number:
        raise _bad(str(path), f"the file is named for version {number} and holds version {forms.version}")
    return forms
