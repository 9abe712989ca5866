"""Procedures: declared inputs and ordered steps; the built-in step kinds' step models; loading and
saving YAML and JSON; the JSON Schema; input values read strictly from a file (:func:`load_inputs_file`).

This room imports the evaluator only: a step kind's behaviour (:mod:`stepguard.kinds`) imports the
step models from here, and a kind registered later brings its model (:func:`use_step_models`)."""

from stepguard.procedure._format import format_value, json_text
from stepguard.procedure._inputs_file import load_inputs_file, parse_inputs_text
from stepguard.procedure._io import LoadLimits, load_procedure, no_duplicate_keys, parse_procedure, procedure_json_schema, save_procedure
from stepguard.procedure._model import (
    InputSpec,
    Procedure,
    Step,
    StepKind,
    ValueShape,
    ValueType,
    apply_scale,
    field_error,
    step_models,
    use_step_models,
)
from stepguard.procedure._steps import (
    BUILT_IN_STEP_MODELS,
    ComputeStep,
    ExtractStep,
    Occurrence,
    Percent,
    TextFormat,
    TextStep,
    ToolArg,
    ToolStep,
)
from stepguard.procedure._values import as_written, check_input_names, coerce_value, did_you_mean, round_to_scale, unknown_procedure

__all__ = [
    "BUILT_IN_STEP_MODELS",
    "ComputeStep",
    "ExtractStep",
    "InputSpec",
    "LoadLimits",
    "Occurrence",
    "Percent",
    "Procedure",
    "Step",
    "StepKind",
    "TextFormat",
    "TextStep",
    "ToolArg",
    "ToolStep",
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
    "step_models",
    "use_step_models",
]

use_step_models(BUILT_IN_STEP_MODELS)
