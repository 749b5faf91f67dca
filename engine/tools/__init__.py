"""Tools: registries of handlers from allowed modules, argument checks, selection by words and embeddings, standard tools.

This `__all__` is the face blocks may use; nothing here calls a model or knows a vendor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.format.lazy import lazy_face

if TYPE_CHECKING:
    from engine.tools.arguments import check_arguments
    from engine.tools.calls import HandlerTimeout, call_handler, described, start_call
    from engine.tools.knowledge.index import KnowledgeBase, Passage
    from engine.tools.knowledge_tools import KNOWLEDGE_TOP_K, knowledge_answer, traced_passages
    from engine.tools.registry import Tool, ToolRegistry, load_registries
    from engine.tools.tools_table import ToolsTable

# Names load on first use (PEP 562): loading a registry to check a diagram needs neither the
# event-loop machinery that calls handlers nor the argument checks a run makes.
_HOMES = {
    "engine.tools.arguments": ["check_arguments"],
    "engine.tools.calls": ["HandlerTimeout", "call_handler", "described", "start_call"],
    "engine.tools.knowledge.index": ["KnowledgeBase", "Passage"],
    "engine.tools.knowledge_tools": ["KNOWLEDGE_TOP_K", "knowledge_answer", "traced_passages"],
    "engine.tools.registry": ["Tool", "ToolRegistry", "load_registries"],
    "engine.tools.tools_table": ["ToolsTable"],
}


__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())


__all__ = ["KNOWLEDGE_TOP_K", "HandlerTimeout", "KnowledgeBase", "Passage", "Tool", "ToolRegistry", "ToolsTable",
           "call_handler", "check_arguments", "described", "knowledge_answer", "load_registries", "start_call",
           "traced_passages"]
