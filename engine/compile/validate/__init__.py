"""Checks across a diagram's blocks, and their compilation for the executor, stage by stage.

Every problem found is collected (with file, line, block and field) and raised together as
DiagramInvalid: the blocks' own keys (`blocks`), the code they call (`code`), links, one Start, reachability and loop
bodies (`links`), template syntax and names nothing binds (`values`, in the scope `scope` gives).
Warnings (an unreachable block) do not stop a diagram loading: they are kept on `Diagram.warnings`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.compile.block import BlockRegistry, RunSettings
from engine.compile.diagram import Diagram, resolve_levels
from engine.compile.graph import LinkMap
from engine.compile.templating import TemplateEnv
from engine.compile.validate.blocks import build_blocks, read_blocks
from engine.compile.validate.code import import_code
from engine.compile.validate.compilation import Compilation
from engine.compile.validate.concurrency import check_concurrent_bodies
from engine.compile.validate.links import check_bodies, check_reachable, check_start, link_blocks
from engine.compile.validate.scope import template_scope
from engine.compile.validate.triggers import check_triggers
from engine.compile.validate.values import compile_values
from engine.errors import DiagramInvalid, Problem
from engine.format.yamlfile import LineMap

__all__ = ["compile_diagram", "template_scope"]


# Long: the stages in order, one call each, then the compiled Diagram's fields.
def compile_diagram(
    data: Any,
    lines: LineMap,
    path: Path,
    registry: BlockRegistry,
    *,
    source: str = "",
    functions: Mapping[str, Any] | None = None,
    extra_problems: list[Problem] | None = None,
    data_roots: tuple[Path, ...] = (),
    children: Mapping[str, Diagram] | None = None,
) -> Diagram:
    """Validate parsed YAML and compile it; raise DiagramInvalid with every problem.

    Paths the diagram names must stay inside its folder or one of `data_roots`. `children`: the diagram each
    block runs, by block id, loaded already (engine.compile.children).
    """
    env = TemplateEnv(functions)
    c = Compilation.of(data, lines, path, registry, env, data_roots)
    c.children = dict(children or {})
    if extra_problems:
        c.problems.items.extend(extra_problems)
    spec = read_blocks(c)
    if spec is None:
        raise DiagramInvalid(c.problems.items)
    build_blocks(c)
    import_code(c, spec.allowed_modules)
    link_blocks(c)
    start = check_start(c)
    links = LinkMap(c.blocks.values())
    if start is not None:
        check_reachable(c, links, start)
        check_bodies(c, links)
        compile_values(c, start, links)
        check_triggers(c, start)
        check_concurrent_bodies(c, links)
    if c.problems.errors or start is None:
        raise DiagramInvalid(c.problems.items)
    for block in c.blocks.values():
        block.reads_outputs = bool(block.set_items) or any(link.when is not None for link in block.links)
        block.set_names = tuple(name for name, _ in block.set_items)
        block.shares_target = len({link.target.id for link in block.links}) < len(block.links)
    settings = start.impl.settings
    assert isinstance(settings, RunSettings)
    error_level, message_level = resolve_levels(c.blocks.values(), start)
    return Diagram(
        name=spec.diagram,
        path=path,
        spec=spec,
        blocks=c.blocks,
        start=start,
        settings=settings,
        variables=c.variables,
        error_level=error_level,
        message_level=message_level,
        env=env,
        lines=lines,
        content_hash=hashlib.sha256(source.encode()).hexdigest(),
        data_roots=data_roots,
        warnings=sorted(c.problems.warnings, key=lambda p: (p.file, p.line or 0, p.column or 0)),
    )
