"""A loaded diagram: its graph and its blocks compiled for the executor.

Everything a step needs is resolved here once (link targets, templates, effective
static inputs) so that running a block costs a few attribute reads.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from engine.compile.block import Block, RunSettings
from engine.compile.routes import Route, build_route
from engine.compile.templating import Evaluator, Scope, TemplateEnv
from engine.errors import Problem
from engine.format.paths import DataFolder
from engine.format.spec import DiagramSpec, ErrorLevel, MessageLevel
from engine.format.yamlfile import LineMap

if TYPE_CHECKING:
    import networkx as nx

    from engine.tools.registry import ToolRegistry

__all__ = ["CompiledBlock", "CompiledLink", "Diagram"]


def _awaits(block_type: type[Block]) -> bool:
    """Whether the type's `run` is a coroutine function: asked once per type, not per block (a thousand-block load)."""
    found = _AWAITS.get(block_type)
    if found is None:
        run = block_type.run
        # A decorated `async def run` (functools.wraps) is a plain function that returns a coroutine: awaited too.
        found = _AWAITS[block_type] = inspect.iscoroutinefunction(run) or inspect.iscoroutinefunction(inspect.unwrap(run))
    return found


_AWAITS: dict[type[Block], bool] = {}


class CompiledLink:
    __slots__ = ("index", "kind", "target", "when")

    def __init__(self, target: CompiledBlock, when: Evaluator | None, kind: str, index: int) -> None:
        self.target = target
        self.when = when
        self.kind = kind
        self.index = index


class CompiledBlock:
    """One block, ready to run."""

    __slots__ = (
        "awaits",
        "body_region",
        "deferred",
        "error_level",
        "id",
        "impl",
        "inputs",
        "inputs_model",
        "label",
        "line",
        "links",
        "message_level",
        "on_error",
        "ports",
        "reads_outputs",
        "route",
        "set_items",
        "set_names",
        "static_inputs",
        "type_name",
        "written_inputs",
    )

    def __init__(self, impl: Block, line: int | None) -> None:
        self.id: str = impl.id
        self.type_name: str = type(impl).type_name
        self.impl = impl
        self.awaits = _awaits(type(impl))
        """Whether `run` is a coroutine (a request); a plain `run` (Set, Loop) steps without one."""
        self.line = line
        self.label: str | None = impl.spec.label
        self.inputs: list[tuple[str, Evaluator]] = []
        self.deferred: dict[str, Evaluator] = {}
        self.inputs_model: type[BaseModel] = type(impl).Inputs
        self.static_inputs: BaseModel | None = None
        self.written_inputs: dict[str, Any] | None = None
        """With `static_inputs`, the inputs as written, for the trace (None when the block has none)."""
        self.set_items: list[tuple[str, Evaluator]] = []
        self.set_names: tuple[str, ...] = ()
        """The names `set_items` assigns, in order (for the trace's `set`: made once, read at every Debug step)."""
        self.links: list[CompiledLink] = []
        self.on_error: CompiledBlock | None = None
        self.ports: dict[str, CompiledBlock] = {}
        self.error_level: ErrorLevel | None = None
        self.message_level: MessageLevel | None = None
        self.body_region: frozenset[str] = frozenset()
        self.reads_outputs = True
        """False when no `set` and only one unconditional link: the step skips templating."""
        self.route: Route = self._first_route
        """`set` applied, then the next block chosen (engine.compile.routes); written on the block's first step."""

    def _first_route(self, scope: Scope) -> CompiledBlock | None:
        self.route = build_route(self)
        return self.route(scope)

    def __repr__(self) -> str:
        return f"<CompiledBlock {self.id} ({self.type_name})>"


@dataclass(eq=False)
class Diagram:
    """A validated diagram, ready to run any number of times (also concurrently)."""

    name: str
    path: Path
    spec: DiagramSpec
    blocks: dict[str, CompiledBlock]
    start: CompiledBlock
    settings: RunSettings
    variables: list[tuple[str, Evaluator]]
    error_level: ErrorLevel
    message_level: MessageLevel
    env: TemplateEnv
    lines: LineMap
    content_hash: str
    tools: ToolRegistry | None = None
    data_roots: tuple[Path, ...] = ()
    """Folders besides its own the diagram may read data from (`--data-root`)."""
    warnings: list[Problem] = field(default_factory=list)
    """Problems that do not stop it running (an unreachable block); `validate --strict` fails on them."""

    @functools.cached_property
    def graph(self) -> nx.DiGraph:
        """The diagram as a networkx graph (blocks and links), built on first use: running does not need it."""
        from engine.compile.graph import build_graph

        return build_graph(self.blocks.values())

    @property
    def directory(self) -> DataFolder:
        """Where the diagram's relative paths start, with the data roots: the only places it reads files from."""
        return DataFolder(self.path.parent, self.data_roots)
