"""Running a user's tools under the guard: tools as Python callables, strict call parsing, timeouts, typed failures.

A procedure file names a tool (``tool: catalog_lookup``); the code behind the name is given to the
guard (``Guard(model, tools=[catalog_lookup])``), never imported by the file. See docs/agent-workflows.md.
"""

from stepguard.tools._calls import ToolCall, calls_from_native, parse_calls
from stepguard.tools._decimals import Env, as_decimal, input_places, written_places
from stepguard.tools._tools import (
    Tool,
    ToolSet,
    as_toolset,
    call_kwargs,
    check_tools,
    kwargs_from_json,
    kwargs_json,
    load_tools,
    missing_tools,
)

__all__ = ["Env", "Tool", "ToolCall", "ToolSet", "as_decimal", "as_toolset", "call_kwargs", "calls_from_native", "check_tools",
           "input_places", "kwargs_from_json", "kwargs_json", "load_tools", "missing_tools", "parse_calls", "written_places"]
