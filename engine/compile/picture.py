"""What a compiled diagram looks like as data: its links in order, loop bodies and effective levels.

One function that `diagrama graph` and the studio share, so a picture can never disagree
with `validate`: everything here is read off the compiled Diagram, never off raw YAML.
"""

from __future__ import annotations

from typing import Any

from engine.compile.diagram import CompiledBlock, Diagram
from engine.format.spec import ErrorLevel, MessageLevel

__all__ = ["Link", "diagram_links", "diagram_picture", "effective_levels", "loop_bodies"]

Link = dict[str, Any]
"""{source, target, kind: next|error|<port>, when: template source or None, order: 1-based among next links}"""


def diagram_links(diagram: Diagram) -> list[Link]:
    """Every link of every block, `next` links in the order they are tried."""
    links: list[Link] = []
    for block in diagram.blocks.values():
        for order, link in enumerate(block.links, start=1):
            links.append({"source": block.id, "target": link.target.id, "kind": "next",
                          "when": link.when.source if link.when is not None else None, "order": order})
        for port, target in block.ports.items():
            links.append({"source": block.id, "target": target.id, "kind": port, "when": None, "order": None})
        if block.on_error is not None:
            links.append({"source": block.id, "target": block.on_error.id, "kind": "error", "when": None, "order": None})
    return links


def loop_bodies(diagram: Diagram) -> list[dict[str, Any]]:
    """Each block with a body port and the blocks its body runs, in file order."""
    order = list(diagram.blocks)
    bodies = []
    for block in diagram.blocks.values():
        if block.ports:
            members = sorted(block.body_region - {block.id}, key=order.index)
            bodies.append({"loop": block.id, "members": members})
    return bodies


def _level(block: CompiledBlock, own: ErrorLevel | MessageLevel | None, run_default: ErrorLevel | MessageLevel,
           start: CompiledBlock) -> dict[str, Any]:
    name = run_default.name.capitalize()
    if block is start:
        # Start's own levels are the run's defaults; the compiler keeps them on the Diagram.
        explicit = getattr(start.impl.spec, "error_level" if isinstance(run_default, ErrorLevel) else "message_level")
        inherited = explicit in (None, "Default")
        return {"value": name, "inherited": inherited, "from": "built-in default" if inherited else "this block"}
    if own is None:
        return {"value": name, "inherited": True, "from": f"Start '{start.id}'"}
    return {"value": own.name.capitalize(), "inherited": False, "from": "this block"}


def effective_levels(diagram: Diagram) -> dict[str, dict[str, dict[str, Any]]]:
    """Per block: the error and message level it runs with, and where that value comes from."""
    return {
        block.id: {
            "error_level": _level(block, block.error_level, diagram.error_level, diagram.start),
            "message_level": _level(block, block.message_level, diagram.message_level, diagram.start),
        }
        for block in diagram.blocks.values()
    }


def diagram_picture(diagram: Diagram) -> dict[str, Any]:
    """Links, loop bodies and effective levels in one JSON-ready mapping."""
    return {"links": diagram_links(diagram), "bodies": loop_bodies(diagram), "levels": effective_levels(diagram)}
