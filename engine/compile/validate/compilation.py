"""What one diagram's compilation holds between its stages, and compiling one template value.

The stages (blocks, links, values) read and fill a Compilation; none keeps state of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine.compile.block import Block, BlockRegistry
from engine.compile.diagram import CompiledBlock, Diagram
from engine.compile.templating import Evaluator, TemplateEnv, TemplateSyntax, has_template
from engine.compile.validate.problems import Problems
from engine.format.paths import DataFolder, PathRefused
from engine.format.spec import BlockSpec, DiagramSpec
from engine.format.yamlfile import LineMap

__all__ = ["Compilation", "check_csv_path", "compile_template"]


@dataclass
class Compilation:
    data: Any
    lines: LineMap
    path: Path
    registry: BlockRegistry
    env: TemplateEnv
    problems: Problems
    folder: DataFolder
    """The diagram's folder and the data roots: the only places a path it names may reach."""
    specs: list[tuple[int, BlockSpec, type[Block], BaseModel | None]] = field(default_factory=list)
    """Blocks whose own keys are fine: (index in the file, common keys, class, settings)."""
    blocks: dict[str, CompiledBlock] = field(default_factory=dict)
    index_of: dict[str, int] = field(default_factory=dict)
    known_ids: set[str] = field(default_factory=set)
    """Every id written, including blocks that failed their own checks (a link to one is no second problem)."""
    variables: list[tuple[str, Evaluator]] = field(default_factory=list)
    children: dict[str, Diagram] = field(default_factory=dict)
    """Block id → the diagram it runs, loaded with this one (engine.compile.children)."""
    spec: DiagramSpec | None = None
    """The diagram's top-level keys, when they are fine (blocks check themselves against them: `check_diagram`)."""
    start_written: bool = False
    """A block of a start type was written, even one that failed its own checks."""

    @classmethod
    def of(cls, data: Any, lines: LineMap, path: Path, registry: BlockRegistry, env: TemplateEnv,
           data_roots: tuple[Path, ...] = ()) -> Compilation:
        return cls(data, lines, path, registry, env, Problems(str(path), lines), DataFolder(path.parent, data_roots))


def compile_template(c: Compilation, value: Any, path: tuple[str | int, ...], block: str | None,
                     field: str) -> Evaluator | None:
    """The value's evaluator; None, with a problem on the template's own line, when its syntax is wrong."""
    try:
        return c.env.compile(value)
    except TemplateSyntax as exc:
        offset = (exc.lineno - 1) if exc.lineno and exc.lineno > 1 else 0
        message = f"template syntax error: {exc}" if exc.code == "template_syntax" else str(exc)
        c.problems.add(path, message, block=block, field=field, hint=exc.hint, code=exc.code, line_offset=offset)
        return None


def check_csv_path(c: Compilation, value: Any, path: tuple[str | int, ...], block: str | None, field: str) -> bool:
    """False, with a problem, when `value` is a `{csv: path}` table whose constant path leaves the diagram's folder.

    Only the path is checked here, never the file read: a refused file's content must not reach any message.
    Templated paths are checked the same way when a run resolves them.
    """
    if not (isinstance(value, dict) and set(value) == {"csv"} and isinstance(value["csv"], str)):
        return True
    written = value["csv"]
    if has_template(written):
        return True
    try:
        c.folder.resolve(written)
    except PathRefused as exc:
        hint = "keep data files in the diagram's folder, or pass their folder with --data-root" if exc.leaves else None
        c.problems.add((*path, "csv"), f"CSV file: {exc}", block=block, field=field, hint=hint,
                       code="path_outside_folder" if exc.leaves else "bad_path")
        return False
    return True
