"""Tools: registries of handlers from allowed modules, argument checks, embedding-based selection, standard tools.

This `__all__` is the face blocks may use; nothing here calls a model or knows a vendor.
"""

from __future__ import annotations

from engine.tools.arguments import check_arguments
from engine.tools.calls import HandlerTimeout, call_handler
from engine.tools.registry import Tool, ToolRegistry, ToolsTable, load_registries

__all__ = ["HandlerTimeout", "Tool", "ToolRegistry", "ToolsTable", "call_handler", "check_arguments", "load_registries"]
