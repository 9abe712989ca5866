"""A copy step (``S2 = y``) never shows the line shape of an operation it does not have.

Shown ``S2 = y = <the numbers substituted> = <result>`` as every line's shape, the embedded model
wrote ``S2 = 19 = 19 = 38`` and kept writing it when re-asked (docs/fidelity.md, "A copy step's
example").
"""

from __future__ import annotations

from stepguard.guard._prompts import PromptSet
from stepguard.procedure import Procedure


def _proc() -> Procedure:
    return Procedure.model_validate({
        "name": "p", "inputs": [{"name": "x", "type": "integer"}, {"name": "y", "type": "integer"}],
        "steps": [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "y"}, {"var": "S3", "expr": "S1 + S2"},
                  {"var": "S4", "expr": "S3 - S2"}],
    })


def _user(indices: list[int], env: dict[str, int], *, inline: bool = False) -> str:
    return PromptSet().chunk_messages(_proc(), indices, env, inline=inline)[-1]["content"]


def test_a_window_that_starts_with_copies_shows_the_first_operations_shape() -> None:
    user = _user([0, 1, 2, 3], {"x": 9, "y": 19})
    assert "each as\nS3 = S1 + S2 = <the numbers substituted> = <result>" in user
    assert "S1 = x = <" not in user


def test_a_copy_asked_alone_has_no_operation_to_substitute() -> None:
    user = _user([1], {"x": 9, "y": 19})
    assert "as\nS2 = y = <result>" in user
    assert "numbers substituted" not in user


def test_a_copy_with_its_value_written_in_shows_the_result_alone() -> None:
    assert "as\nS2 = <result>" in _user([1], {"x": 9, "y": 19}, inline=True)


def test_a_window_of_operations_is_unchanged() -> None:
    user = _user([2, 3], {"S1": 9, "S2": 19})
    assert "each as\nS3 = S1 + S2 = <the numbers substituted> = <result>" in user


def test_copies_only_show_the_first_copys_shape() -> None:
    assert "each as\nS1 = x = <result>" in _user([0, 1], {"x": 9, "y": 19})
