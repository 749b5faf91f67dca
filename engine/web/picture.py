"""A compiled diagram as the studio draws it: its links in order, loop bodies and each block's levels.

Everything here is read off the compiled Diagram (engine.compile.graph's links and bodies, the levels
`resolve_levels` decided), never worked out again from the file, so the page cannot disagree with
`validate`, `graph` or a run. Only a diagram that does not compile is drawn from the links its file
names, read by the validator's own reading (engine.format.links).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.compile.block import BlockRegistry
from engine.compile.diagram import CompiledBlock, Diagram
from engine.compile.graph import loop_bodies, outgoing
from engine.compile.templating import has_template
from engine.format.levels import ErrorLevel, LevelSource, MessageLevel, level_name
from engine.format.links import written_ids, written_links

__all__ = ["Link", "diagram_links", "diagram_picture", "effective_levels", "subdiagram_files", "written_picture"]

Link = dict[str, Any]
"""{source, target, kind: next|error|<port>, when: template source or None, order: 1-based among next links}"""


def diagram_links(diagram: Diagram) -> list[Link]:
    """Every link of every block, `next` links in the order they are tried."""
    return [{"source": block.id, "target": target, "kind": kind, "when": when,
             "order": index + 1 if index is not None else None}
            for block in diagram.blocks.values() for target, kind, when, index in outgoing(block)]


def _level(block: CompiledBlock, value: ErrorLevel | MessageLevel, source: LevelSource,
           start: CompiledBlock) -> dict[str, Any]:
    # Start's level is the run's: written there ("this block"), or the built-in one.
    if block is start or source is LevelSource.BLOCK:
        written = source is not LevelSource.DEFAULT
        return {"value": level_name(value), "inherited": not written,
                "from": "this block" if written else "built-in default"}
    return {"value": level_name(value), "inherited": True, "from": f"Start '{start.id}'"}


def effective_levels(diagram: Diagram) -> dict[str, dict[str, dict[str, Any]]]:
    """Per block: the error and message level a plain run gives it, and where that value comes from."""
    start = diagram.start
    return {block.id: {"error_level": _level(block, block.error_level, block.error_level_from, start),
                       "message_level": _level(block, block.message_level, block.message_level_from, start)}
            for block in diagram.blocks.values()}


def diagram_picture(diagram: Diagram) -> dict[str, Any]:
    """Links, loop bodies and effective levels in one JSON-ready mapping."""
    return {"links": diagram_links(diagram),
            "bodies": [{"loop": loop, "members": members} for loop, members in loop_bodies(diagram.blocks.values())],
            "levels": effective_levels(diagram)}


def written_picture(data: Any, registry: BlockRegistry) -> dict[str, Any]:
    """What can be drawn of a diagram that does not compile: the links its file names between blocks it has.
    Levels and bodies wait for a diagram that compiles."""
    links = written_links(data, registry.ports_of)
    known = set(written_ids(data))
    return {"links": [{"source": link.source, "target": link.target, "kind": link.kind,
                       "when": link.when if isinstance(link.when, str) else None,
                       "order": link.position + 1 if link.kind == "next" else None}
                      for link in links if link.source is not None and link.target in known],
            "bodies": [], "levels": {}}


def subdiagram_files(data: Any, registry: BlockRegistry, locate: Callable[[str], str | None]) -> dict[str, Any]:
    """Block id → the diagram file each block of a type that runs one (`Block.diagram_input`: a Subdiagram) names
    with a literal path: {written, file}, `file` being where `locate` finds it (its path in the served folder, the
    one the page opens on a double-click), or None. Read off the file's data, so a child that does not load yet can
    still be opened and fixed."""
    files: dict[str, Any] = {}
    blocks = data.get("blocks") if isinstance(data, dict) else None
    for raw in blocks if isinstance(blocks, list) else []:
        kind = raw.get("type") if isinstance(raw, dict) else None
        cls = registry.get(kind) if isinstance(kind, str) else None
        inputs = raw.get("with") if cls is not None and cls.diagram_input is not None else None
        if cls is None or cls.diagram_input is None or not isinstance(inputs, dict) or not isinstance(raw.get("id"), str):
            continue
        written = inputs.get(cls.diagram_input)
        if isinstance(written, str) and written and not has_template(written):
            files[raw["id"]] = {"written": written, "file": locate(written)}
    return files
