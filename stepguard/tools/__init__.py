"""Running a user's tools under the guard: tools as Python callables, strict call parsing, timeouts, typed failures.

A procedure file names a tool (``tool: catalog_lookup``); the code behind the name is given to the
guard (``Guard(model, tools=[catalog_lookup])``), never imported by the file. See docs/agent-workflows.md.
"""

from stepguard.tools._calls import ToolCall, calls_from_native, parse_calls
from stepguard.tools._tools import Tool, ToolSet, as_toolset, check_tools, load_tools, missing_tools

__all__ = ["Tool", "ToolCall", "ToolSet", "as_toolset", "calls_from_native", "check_tools", "load_tools", "missing_tools", "parse_calls"]
