"""The tool groups a diagram's `tools:` registries offer, for the tools field's group picker: from the compiled
diagram when it compiles, else read from the registries it names (so the picker is there while building, when the
diagram still has problems), each group with the description its registry file gives it (`groups:`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import DiagramInvalid
from engine.format.yamlfile import LineMap, read_yaml
from engine.web.files import Folder
from engine.web.models import Registry

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.tools.registry import ToolRegistry

__all__ = ["tool_groups"]


def tool_groups(diagram: Diagram | None, data: Any, path: Path, folder: Folder) -> list[Registry]:
    """The diagram's tools by group. An MCP server's group is there without its tools: the studio does not start
    servers to list them."""
    tools = diagram.tools if diagram is not None else _read_registries(data, path, folder)
    if tools is None:
        return []
    described: dict[str, str] = {}
    for source in sorted({tool.source for tool in tools.tools.values()}):
        described.update(_descriptions(Path(source)))
    groups: dict[str, dict[str, Any]] = {}
    for tool in tools.tools.values():
        name = tool.entry.group or ""
        group = groups.setdefault(name, {"group": name, "description": described.get(name, ""), "tools": []})
        group["tools"].append({"name": tool.name, "description": tool.entry.description, "enabled": tool.entry.enabled})
    for name in sorted(tools.groups() - set(groups)):
        groups[name] = {"group": name, "description": described.get(name, ""), "tools": []}
    return [Registry.model_validate(group) for group in groups.values()]


def _read_registries(data: Any, path: Path, folder: Folder) -> ToolRegistry | None:
    """The registries a diagram that does not compile names, read as the loader reads them; None when it names
    none, names one outside the folder, or one that has problems of its own (the diagram's problems say so)."""
    spec = data.get("tools") if isinstance(data, dict) else None
    names = [spec] if isinstance(spec, str) else spec if isinstance(spec, list) else []
    if not names or not all(isinstance(name, str) and name and folder.inside(name, path.parent) for name in names):
        return None
    from engine.tools.registry import load_registries  # tools are optional until a diagram names them

    try:
        return load_registries(names, path, LineMap(str(path)))
    except (DiagramInvalid, OSError, RecursionError):  # no picker; the diagram's problems say why
        return None


def _descriptions(source: Path) -> dict[str, str]:
    try:
        data, _ = read_yaml(source)
    except (DiagramInvalid, OSError, RecursionError):
        return {}
    groups = data.get("groups") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in groups.items()} if isinstance(groups, dict) else {}
