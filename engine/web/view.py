"""What the studio shows of a diagram file: its data, its problems, and its compiled picture.

The picture (links in order, loop bodies, effective levels: engine.web.picture) and the names in
scope come from the compiled Diagram — the same code `diagrama validate` and `graph` run. Only a
diagram that does not compile falls back to the links its file names (read as the validator reads
them), so the page can still draw it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.compile.block import BlockRegistry
from engine.compile.diagram import Diagram
from engine.compile.loader import load_diagram_text
from engine.errors import DiagramInvalid, Problem
from engine.web.picture import diagram_picture, subdiagram_files, written_picture

if TYPE_CHECKING:
    from engine.web.files import Folder

__all__ = ["compile_text", "problem_json", "studio_document"]


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


def studio_document(data: Any, diagram: Diagram | None, scope: dict[str, Any] | None,
                    registry: BlockRegistry, locate: Callable[[str], str | None] | None = None) -> dict[str, Any]:
    """The compiled view the canvas draws: links, bodies, levels and names in scope; with `locate` (a path as a
    block writes it → the file in the served folder, or None), the diagram file each Subdiagram block runs."""
    # Nothing compiled: draw the links the file names; levels and bodies wait for a valid diagram.
    picture = diagram_picture(diagram) if diagram is not None else written_picture(data, registry)
    files = subdiagram_files(data, registry, locate) if locate is not None else {}
    return picture | {"scope": scope or {}, "subdiagrams": files}
