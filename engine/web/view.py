"""What the studio shows of a diagram file: its data, its problems, and its compiled picture.

The picture (links in order, loop bodies, effective levels) and the names in scope come from
the compiled Diagram — the same code `diagrama validate` and `graph` run. Only a diagram that
does not compile falls back to the links its file names, so the page can still draw it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.compile.block import BlockRegistry
from engine.compile.diagram import Diagram
from engine.compile.loader import load_diagram_text
from engine.compile.picture import diagram_picture
from engine.errors import DiagramInvalid, Problem

if TYPE_CHECKING:
    from engine.web.files import Folder

__all__ = ["compile_text", "layered_layout", "problem_json", "raw_links", "studio_document"]


def problem_json(problem: Problem, *, with_line: bool = True, own: Path | None = None,
                 folder: Folder | None = None) -> dict[str, Any]:
    """A problem for the page. One in another file than the diagram `own` (a registry, a CSV) names that
    file (as the studio's `folder` shows paths) and keeps its line, which the page shows as such."""
    file = _other_file(problem.file, own, folder)
    shown = with_line or file is not None  # an unsaved text's lines may have moved; another file's have not
    return {"file": file, "line": problem.line if shown else None, "column": problem.column if shown else None,
            "block": problem.block, "field": problem.field, "message": problem.message, "hint": problem.hint,
            "code": problem.code, "severity": problem.severity}


def _other_file(file: str, own: Path | None, folder: Folder | None) -> str | None:
    if own is None or folder is None or not file:
        return None
    path = Path(file).resolve()
    return None if path == own.resolve() else folder.relative(path)


def compile_text(text: str, path: Path, registry: BlockRegistry,
                 data_roots: tuple[Path, ...] = ()) -> tuple[Diagram | None, list[Problem]]:
    """The compiled diagram (with its warnings), or None and every problem; what `diagrama validate` reports."""
    try:
        diagram = load_diagram_text(text, path, registry, data_roots=data_roots)
        return diagram, list(diagram.warnings)
    except DiagramInvalid as exc:
        return None, exc.problems
    except RecursionError:
        return None, [Problem(str(path), None, "the file is nested too deeply to read", code="too_deep")]


def raw_links(data: Any) -> list[dict[str, Any]]:
    """Links as a file names them: only for drawing a diagram that does not compile."""
    links: list[dict[str, Any]] = []
    blocks = data.get("blocks") if isinstance(data, dict) else None
    for raw in blocks if isinstance(blocks, list) else []:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            continue
        following = raw.get("next")
        targets = [{"to": following}] if isinstance(following, str) else following if isinstance(following, list) else []
        for order, link in enumerate((t for t in targets if isinstance(t, dict) and isinstance(t.get("to"), str)), 1):
            when = link.get("when")
            links.append({"source": raw["id"], "target": link["to"], "kind": "next",
                          "when": when if isinstance(when, str) else None, "order": order})
        for kind, key in (("error", "on_error"), ("body", "body")):
            if isinstance(raw.get(key), str):
                links.append({"source": raw["id"], "target": raw[key], "kind": kind, "when": None, "order": None})
    known = {raw["id"] for raw in blocks if isinstance(raw, dict) and isinstance(raw.get("id"), str)} \
        if isinstance(blocks, list) else set()
    return [link for link in links if link["target"] in known]


def studio_document(data: Any, diagram: Diagram | None, scope: dict[str, Any] | None) -> dict[str, Any]:
    """The compiled view the canvas draws: links, bodies, levels and names in scope."""
    # Nothing compiled: draw the links the file names; levels and bodies wait for a valid diagram.
    picture = diagram_picture(diagram) if diagram is not None else {"links": raw_links(data), "bodies": [], "levels": {}}
    return picture | {"scope": scope or {}}


def layered_layout(ids: list[str], links: list[dict[str, Any]], start: str | None) -> dict[str, tuple[float, float]]:
    """A simple position per block for views without the canvas's own (elkjs) layout."""
    depth: dict[str, int] = {start: 0} if start in ids else {}
    frontier = [start] if start in ids else []
    forward = [(link["source"], link["target"]) for link in links if link["kind"] != "error"]
    while frontier:
        following = []
        for node in frontier:
            for source, target in forward:
                if source == node and target not in depth:
                    depth[target] = depth[node] + 1
                    following.append(target)
        frontier = following
    for link in links:
        if link["kind"] == "error" and link["source"] in depth and link["target"] not in depth:
            depth[link["target"]] = depth[link["source"]] + 1
    deepest = max(depth.values(), default=0)
    for node in ids:
        if node not in depth:
            deepest += 1
            depth[node] = deepest
    rows: dict[int, int] = {}
    positions = {}
    for node in ids:
        row = rows.get(depth[node], 0)
        rows[depth[node]] = row + 1
        positions[node] = (float(depth[node] * 260), float(row * 140))
    return positions
