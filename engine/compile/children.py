"""The diagrams a diagram's blocks run (a Subdiagram's `diagram`): found, confined, loaded once, cycles refused.

A block type names the input that holds such a path (`Block.diagram_input`). Written as a literal path,
the child is loaded with its parent: each file once per load however many blocks name it, its problems
added to the parent's (they name the child's file), one more at the block that names it, and a path
back to a file still being loaded is a cycle, refused at that block. A templated path is loaded when a
run renders it (`Diagram.load_child`), where the executor caps the nesting instead. Knows nothing of
what the blocks do with their child.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.compile.block import BlockRegistry
from engine.compile.templating import has_template
from engine.errors import DiagramInvalid, Problem
from engine.format.paths import DataFolder, PathRefused, shown_path
from engine.format.yamlfile import LineMap

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram

__all__ = ["Loading", "load_children"]


@dataclass
class Loading:
    """One top-level load and the children it reaches: what each child is loaded with, and what is under way."""

    registry: BlockRegistry
    functions: Mapping[str, Any] | None
    data_roots: tuple[Path, ...]
    start_servers: bool
    load: Callable[[Path, Loading], Diagram]
    """Loads one diagram file within this loading (the loader's own reading of a file)."""
    stack: tuple[Path, ...] = ()
    """The resolved files being loaded, outermost first: a child among them closes a cycle."""
    done: dict[Path, Diagram | list[Problem]] = field(default_factory=dict)
    """Each child file loaded so far (resolved path): its diagram, or its problems."""
    environ: Mapping[str, str] | None = None
    """The environment the run will have, in which a child's literal `secret('NAME')`s must be set too."""

    def within(self, path: Path) -> Loading:
        """The loading of `path`'s own children: `path` joins the stack, the rest is shared."""
        return Loading(self.registry, self.functions, self.data_roots, self.start_servers, self.load,
                       (*self.stack, path), self.done, self.environ)


def _chain(stack: tuple[Path, ...], back: Path) -> str:
    names = [path.name for path in stack[stack.index(back):]]
    return " → ".join([*names, back.name])


def load_children(data: Any, lines: LineMap, path: Path, loading: Loading,
                  problems: list[Problem]) -> dict[str, Diagram]:
    """Block id → the child diagram its literal path names, for each block of a type with a `diagram_input`;
    a problem in `problems` for each path refused, each cycle and each child that does not load."""
    children: dict[str, Diagram] = {}
    blocks = data.get("blocks") if isinstance(data, dict) else None
    folder = DataFolder(path.parent, loading.data_roots)
    for index, raw in enumerate(blocks if isinstance(blocks, list) else []):  # another shape is validate's to report
        kind = raw.get("type") if isinstance(raw, dict) else None
        cls = loading.registry.get(kind) if isinstance(kind, str) else None
        inputs = raw.get("with") if cls is not None and cls.diagram_input is not None else None
        if cls is None or cls.diagram_input is None or not isinstance(inputs, dict):
            continue
        written = inputs.get(cls.diagram_input)
        if not isinstance(written, str) or not written or has_template(written):
            continue  # a templated path waits for the run; another type is the block's own check to report
        block_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        field_name = f"with.{cls.diagram_input}"
        mark = lines.mark(("blocks", index, "with", cls.diagram_input))
        line, column = (mark[0], mark[1]) if mark else (None, None)

        def refuse(message: str, code: str, hint: str | None = None, *, block_id: str | None = block_id,
                   line: int | None = line, column: int | None = column, field_name: str = field_name) -> None:
            problems.append(Problem(str(path), line, message, block=block_id, field=field_name, hint=hint, code=code,
                                    column=column))

        try:
            resolved = folder.resolve(written)
        except PathRefused as exc:
            hint = "keep subdiagrams in the diagram's folder, or pass their folder with --data-root" if exc.leaves else None
            refuse(f"subdiagram: {exc}", "path_outside_folder" if exc.leaves else "bad_path", hint)
            continue
        if resolved in loading.stack:
            refuse(f"subdiagram '{shown_path(written)}' closes a cycle ({_chain(loading.stack, resolved)}): a diagram "
                   "cannot run itself through its subdiagrams", "subdiagram_cycle",
                   "break the cycle, or write the path as a template to decide it at run time (nesting is capped at 8)")
            continue
        found = loading.done.get(resolved)
        if found is None:
            try:
                # Named as written beside the parent (messages show that path); known by its resolved one.
                found = loading.load(path.parent / written, loading.within(resolved))
            except DiagramInvalid as exc:
                found = exc.problems
            loading.done[resolved] = found
        if isinstance(found, list):
            errors = [problem for problem in found if problem.severity == "error"]
            problems.extend(errors)
            refuse(f"subdiagram '{shown_path(written)}' does not load ({len(errors)} problem"
                   f"{'s' if len(errors) != 1 else ''}, listed with its file)", "subdiagram_invalid")
            continue
        if block_id is not None:
            children[block_id] = found
    return children
