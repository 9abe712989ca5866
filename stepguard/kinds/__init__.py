"""Step kinds: one module per kind, registered by name (:func:`register_kind`).

Each kind holds its step model (a :class:`stepguard.procedure.Step` subclass, so a procedure file's
errors name the kind's own fields) and how its steps are prompted, read, checked, corrected,
executed and committed (:class:`Kind`: its parts :class:`Prompting`, :class:`Checking` and
:class:`Acting`, each method given the step as a :class:`StepContext`). The built-in kinds:

* ``compute`` (:mod:`stepguard.kinds.compute`): the model computes the value; the default;
* ``tool`` (:mod:`stepguard.kinds.tool`): a named tool, called with checked arguments;
* ``extract`` (:mod:`stepguard.kinds.extract`): a value read from a text input;
* ``text`` (:mod:`stepguard.kinds.text`): text, a list or JSON, checked by rules.
"""

from stepguard.kinds._base import (
    ACCEPTABLE_GRADES,
    Kind,
    StepContext,
    Value,
    bounded_steps,
    get_kind,
    kind_of,
    parse_committed,
    register_kind,
    step_kinds,
    unregister_kind,
)
from stepguard.kinds._parts import Acting, Checking, Prompting
from stepguard.kinds._reading import ArgVerdict, KindVerdict
from stepguard.kinds.compute import Compute, ComputeStep
from stepguard.kinds.extract import Extract, ExtractStep, verify_extract
from stepguard.kinds.text import Text, TextStep, verify_text
from stepguard.kinds.tool import Tool, ToolArg, ToolStep, verify_tool_call

__all__ = [
    "ACCEPTABLE_GRADES",
    "Acting",
    "ArgVerdict",
    "Checking",
    "Compute",
    "ComputeStep",
    "Extract",
    "ExtractStep",
    "Kind",
    "KindVerdict",
    "Prompting",
    "StepContext",
    "Text",
    "TextStep",
    "Tool",
    "ToolArg",
    "ToolStep",
    "Value",
    "bounded_steps",
    "get_kind",
    "kind_of",
    "parse_committed",
    "register_kind",
    "step_kinds",
    "unregister_kind",
    "verify_extract",
    "verify_text",
    "verify_tool_call",
]
