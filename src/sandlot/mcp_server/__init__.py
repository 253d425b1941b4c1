"""sandlot's toolbox over the Model Context Protocol (`sandlot mcp`; needs sandlot[mcp])."""

from .tools import build_server, tool_list

__all__ = ["build_server", "tool_list"]
