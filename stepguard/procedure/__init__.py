"""Procedures: declared inputs and ordered steps; loading and saving YAML and JSON; the JSON Schema;
input values read strictly from a file (:func:`load_inputs_file`)."""

from stepguard.procedure._format import format_value, json_text
from stepguard.procedure._inputs_file import load_inputs_file, parse_inputs_text
from stepguard.procedure._io import LoadLimits, load_procedure, no_duplicate_keys, parse_procedure, procedure_json_schema, save_procedure
from stepguard.procedure._model import InputSpec, Procedure, Step, StepKind, ValueShape, ValueType, field_error, use_step_models
from stepguard.procedure._values import (
    apply_scale,
    as_written,
    check_input_names,
    coerce_value,
    did_you_mean,
    round_to_scale,
    unknown_procedure,
)

__all__ = [
    "InputSpec",
    "LoadLimits",
    "Procedure",
    "Step",
    "StepKind",
    "ValueShape",
    "ValueType",
    "apply_scale",
    "as_written",
    "check_input_names",
    "coerce_value",
    "did_you_mean",
    "unknown_procedure",
    "field_error",
    "format_value",
    "json_text",
    "load_inputs_file",
    "load_procedure",
    "no_duplicate_keys",
    "parse_inputs_text",
    "parse_procedure",
    "procedure_json_schema",
    "round_to_scale",
    "save_procedure",
    "use_step_models",
]

# The built-in step kinds register their step models (stepguard.kinds): last, once every name above is bound.
import stepguard.kinds as _kinds  # noqa: F401
