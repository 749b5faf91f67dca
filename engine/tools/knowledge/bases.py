"""The knowledge bases a file declares (`knowledge:` in a diagram or a registry file), checked where they are written.

Each base's folder must lie inside the diagram's folder or a data root (engine.format.paths) and exist;
a name declared twice is refused. Problems carry the file, line and field; the key's own shape is
KnowledgeSpec's (a diagram's is reported by DiagramSpec, a registry file's here).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.errors import Problem
from engine.format.knowledge import KnowledgeSpec
from engine.format.paths import DataFolder, PathRefused
from engine.format.validation import dotted, validation_message
from engine.format.yamlfile import LineMap
from engine.tools.knowledge.index import KnowledgeBase

__all__ = ["declared_bases"]


def declared_bases(raw: Any, file: Path, lines: LineMap, folder: DataFolder, found: dict[str, KnowledgeBase],
                   problems: list[Problem], *, report_shape: bool, environ: Mapping[str, str] | None = None) -> None:
    """Add the bases `raw` (a file's `knowledge:` value) declares to `found`, each folder relative to `file`; a
    problem for each that cannot be used (its shape too when `report_shape`: a registry file's)."""
    if not isinstance(raw, dict):
        return
    source = str(file)
    for name, value in raw.items():
        where: tuple[str | int, ...] = ("knowledge", name)
        try:
            spec = KnowledgeSpec.model_validate(value)
        except ValidationError as exc:
            if report_shape:
                for error in exc.errors(include_url=False):
                    loc = tuple(error["loc"])
                    problems.append(Problem(source, lines.line((*where, *loc)), validation_message(error),
                                            field=f"knowledge.{name}.{dotted(loc)}", code="invalid_knowledge"))
            continue
        line = lines.line((*where, "folder"))
        if name in found:
            other = found[name]
            problems.append(Problem(source, lines.line(where), f"knowledge base '{name}' is declared twice (also in "
                                    f"{other.declared_in}{f':{other.line}' if other.line else ''})",
                                    field=f"knowledge.{name}", hint="give one of them another name",
                                    code="duplicate_knowledge"))
            continue
        try:
            target = folder.resolve(str(file.parent.absolute() / spec.folder))
        except PathRefused as exc:
            message = str(exc).replace(str(file.parent.absolute() / spec.folder), spec.folder)
            problems.append(Problem(source, line, f"knowledge base '{name}': {message}", field=f"knowledge.{name}.folder",
                                    hint="keep documents in the diagram's folder, or pass their folder with --data-root"
                                    if exc.leaves else None, code="path_outside_folder" if exc.leaves else "bad_path"))
            continue
        if not target.is_dir():
            problems.append(Problem(source, line, f"knowledge base '{name}': the folder '{spec.folder}' does not exist",
                                    field=f"knowledge.{name}.folder", hint=f"make it, or correct the path (from "
                                    f"{file.parent})", code="no_knowledge_folder"))
            continue
        found[name] = KnowledgeBase(name, spec, target, declared_in=source, line=lines.line(where), environ=environ)
