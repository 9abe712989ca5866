"""A copy step (``S2 = y``) asked alone shows no operation's shape; a chunk keeps its first step's.

Asked alone as ``S2 = y = <the numbers substituted> = <result>``, the embedded model wrote ``S2 = y
= 19 = 38`` on every re-ask; a window that opened with copies shown the first operation's shape
instead made it skip the copies (docs/lab/fidelity-history.md, "A copy step's example").
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


def test_a_window_that_starts_with_copies_keeps_its_first_steps_shape() -> None:
    """Shown ``S3 = S1 + S2 = ...`` as the shape, the model started its reply at S3."""
    user = _user([0, 1, 2, 3], {"x": 9, "y": 19})
    assert "each as\nS1 = x = <the numbers substituted> = <result>" in user


def test_a_copy_asked_alone_has_no_operation_to_substitute() -> None:
    user = _user([1], {"x": 9, "y": 19})
    assert "as\nS2 = y = <result>" in user
    assert "numbers substituted" not in user


def test_a_copy_with_its_value_written_in_shows_the_result_alone() -> None:
    assert "as\nS2 = <result>" in _user([1], {"x": 9, "y": 19}, inline=True)


def test_a_window_of_operations_is_unchanged() -> None:
    user = _user([2, 3], {"S1": 9, "S2": 19})
    assert "each as\nS3 = S1 + S2 = <the numbers substituted> = <result>" in user


def test_two_copies_keep_the_first_copys_shape() -> None:
    assert "each as\nS1 = x = <the numbers substituted> = <result>" in _user([0, 1], {"x": 9, "y": 19})
