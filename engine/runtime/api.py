"""The public Python API the CLI calls: load, validate, run.

Each takes the block registry as an argument; without one, the installed block
types (the `diagrama.blocks` entry points, ours included) are used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from engine.compile.block import BlockRegistry, entry_point_blocks
from engine.compile.diagram import Diagram
from engine.compile.inputs import check_inputs
from engine.compile.loader import load_diagram
from engine.errors import DiagramInvalid, Problem
from engine.format.levels import MessageLevel
from engine.runtime.context import Services
from engine.runtime.execute import RunResult, execute
from engine.runtime.trace import Console

__all__ = ["default_registry", "load", "run", "run_async", "validate"]


@cache
def default_registry() -> BlockRegistry:
    """The block types installed in this environment."""
    return BlockRegistry(entry_point_blocks())


def load(path: str | Path, registry: BlockRegistry | None = None) -> Diagram:
    """Load and validate a diagram; raises DiagramInvalid with every problem."""
    return load_diagram(path, registry if registry is not None else default_registry())


def validate(path: str | Path, registry: BlockRegistry | None = None) -> list[Problem]:
    """Every problem of a diagram file (empty when it is valid)."""
    try:
        load(path, registry)
    except DiagramInvalid as exc:
        return exc.problems
    return []


async def run_async(
    diagram: Diagram | str | Path,
    inputs: Mapping[str, Any] | None = None,
    *,
    registry: BlockRegistry | None = None,
    runs_dir: Path | None = Path("runs"),
    message_level: MessageLevel | None = None,
    services: Services | None = None,
    console: Console | None = None,
    run_id: str | None = None,
    remembered: Mapping[str, Any] | None = None,
    record: Mapping[str, Any] | None = None,
) -> RunResult:
    """Run a diagram (loaded here from a path); `remembered` and `record` as engine.runtime.execute.execute takes them."""
    if not isinstance(diagram, Diagram):
        diagram = load(diagram, registry)
    return await execute(
        diagram,
        check_inputs(diagram, inputs or {}),
        runs_dir=runs_dir,
        message_level=message_level,
        services=services,
        console=console,
        run_id=run_id,
        remembered=remembered,
        record=record,
    )


def run(diagram: Diagram | str | Path, inputs: Mapping[str, Any] | None = None, **options: Any) -> RunResult:
    """Run a diagram to its end and return the result (see run_async for options)."""
    return asyncio.run(run_async(diagram, inputs, **options))
