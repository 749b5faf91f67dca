"""Diagram files → validated, compiled Diagrams.

Reads the YAML (engine.format.yamlfile), hands it to engine.compile.validate, and wires in what a
diagram names beside its blocks (tool registries). Knows nothing of what blocks do.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from engine.compile.block import BlockRegistry
from engine.compile.diagram import Diagram
from engine.compile.validate import compile_diagram
from engine.errors import DiagramInvalid, Problem
from engine.format.yamlfile import read_yaml_text

__all__ = ["load_diagram", "load_diagram_text"]


@contextlib.contextmanager
def _no_gc_pauses() -> Iterator[None]:
    # Loading builds tens of thousands of small objects and no cycles worth
    # collecting; the cyclic GC would otherwise run dozens of times mid-load.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            # What loading built is long-lived: hand it to the oldest generation directly
            # (freeze, then unfreeze) instead of making the next young collection walk it.
            gc.freeze()
            gc.enable()
            gc.unfreeze()


def load_diagram_text(
    text: str,
    path: Path,
    registry: BlockRegistry,
    *,
    functions: Mapping[str, Any] | None = None,
) -> Diagram:
    with _no_gc_pauses():
        return _load_text(text, path, registry, functions)


def _load_text(text: str, path: Path, registry: BlockRegistry, functions: Mapping[str, Any] | None) -> Diagram:
    problems: list[Problem] = []
    data, lines = read_yaml_text(text, str(path), problems)
    extra: dict[str, Any] = dict(functions or {})
    tools = None
    if isinstance(data, dict) and data.get("tools") is not None:
        from engine.tools.registry import load_registries  # tools are optional until a diagram names them

        try:
            tools = load_registries(data["tools"], path, lines)
        except DiagramInvalid as exc:
            problems.extend(exc.problems)
        else:
            extra["tools"] = tools.template_function()
    diagram = compile_diagram(data, lines, path, registry, source=text, functions=extra, extra_problems=problems)
    diagram.tools = tools
    return diagram


def load_diagram(path: str | Path, registry: BlockRegistry, *, functions: Mapping[str, Any] | None = None) -> Diagram:
    """Load and validate a diagram file; raise DiagramInvalid listing every problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DiagramInvalid([Problem(str(path), None, "no such file", code="no_file")]) from None
    except IsADirectoryError:
        raise DiagramInvalid([Problem(str(path), None, "is a folder, not a diagram file", code="no_file")]) from None
    except UnicodeDecodeError:
        raise DiagramInvalid([Problem(str(path), None, "the file is not UTF-8 text", code="not_text")]) from None
    except OSError as exc:
        raise DiagramInvalid([Problem(str(path), None, f"cannot read: {exc.strerror}", code="no_file")]) from None
    return load_diagram_text(text, path, registry, functions=functions)
