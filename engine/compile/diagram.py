"""A loaded diagram: its graph and its blocks compiled for the executor.

Everything a step needs is resolved here once (link targets, templates, effective
static inputs, each block's error and message level) so that running a block costs a
few attribute reads.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel

from engine.compile.block import Block, RunSettings
from engine.compile.routes import Route, build_route
from engine.compile.templating import Evaluator, Scope, TemplateEnv
from engine.errors import Problem
from engine.format.levels import (
    DEFAULT_ERROR_LEVEL,
    DEFAULT_MESSAGE_LEVEL,
    ERROR_LEVELS,
    MESSAGE_LEVELS,
    ErrorLevel,
    LevelSource,
    MessageLevel,
    own_else_run,
)
from engine.format.paths import DataFolder
from engine.format.spec import DiagramSpec
from engine.format.yamlfile import LineMap

if TYPE_CHECKING:
    import networkx as nx

    from engine.tools.knowledge.index import KnowledgeBase
    from engine.tools.registry import ToolRegistry

__all__ = ["CompiledBlock", "CompiledLink", "Diagram", "InheritedLevels", "resolve_levels"]


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
        "child",
        "deferred",
        "effects",
        "error_level",
        "error_level_from",
        "id",
        "impl",
        "inputs",
        "inputs_model",
        "label",
        "line",
        "links",
        "message_level",
        "message_level_from",
        "on_error",
        "ports",
        "reads_outputs",
        "route",
        "set_items",
        "set_names",
        "shares_target",
        "static_inputs",
        "type_name",
        "written_inputs",
    )

    def __init__(self, impl: Block, line: int | None) -> None:
        self.id: str = impl.id
        self.type_name: str = type(impl).type_name
        self.impl = impl
        # A block whose body passes run side by side (a Loop with `concurrency`) awaits them.
        self.awaits = _awaits(type(impl)) or impl.concurrent_body()
        self.effects: bool = type(impl).effects or impl.concurrent_body()
        """Whether a durable run checkpoints after this block's steps (Block.effects; a concurrent Loop too: its
        passes, whose blocks may have effects, run inside its one step)."""
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
        self.error_level: ErrorLevel = DEFAULT_ERROR_LEVEL
        """The level a plain run applies to this block's errors: its own, else the run's (`resolve_levels`)."""
        self.message_level: MessageLevel = DEFAULT_MESSAGE_LEVEL
        """The level a plain run traces this block at; a run's `--message-level` changes it unless it is the
        block's own (`Diagram.message_levels`)."""
        self.error_level_from = LevelSource.DEFAULT
        """Where `error_level` comes from: the block itself, the Start block, or the built-in default."""
        self.message_level_from = LevelSource.DEFAULT
        """Where `message_level` comes from; only a level from the block itself outlasts a run's override."""
        self.body_region: frozenset[str] = frozenset()
        self.child: Diagram | None = None
        """The diagram this block runs (its type's `diagram_input`), loaded with this one when its path is literal."""
        self.reads_outputs = True
        """False when no `set` and only one unconditional link: the step skips templating."""
        self.shares_target = False
        """Whether two of its links go to the same block (a condition and the fallback): its route then notes which
        it took (`Scope.link`), for the trace, as the target alone does not tell."""
        self.route: Route = self._first_route
        """`set` applied, then the next block chosen (engine.compile.routes); written on the block's first step."""

    @property
    def own_error_level(self) -> ErrorLevel | None:
        """The error level written on the block itself (not Start's, which is the run's)."""
        return self.error_level if self.error_level_from is LevelSource.BLOCK else None

    @property
    def own_message_level(self) -> MessageLevel | None:
        """The message level written on the block itself: a run's `--message-level` leaves it."""
        return self.message_level if self.message_level_from is LevelSource.BLOCK else None

    def _first_route(self, scope: Scope) -> CompiledBlock | None:
        self.route = build_route(self)
        return self.route(scope)

    def __repr__(self) -> str:
        return f"<CompiledBlock {self.id} ({self.type_name})>"


def resolve_levels(blocks: Iterable[CompiledBlock], start: CompiledBlock) -> tuple[ErrorLevel, MessageLevel]:
    """Each block's error and message level and where each comes from, decided once; the run's two levels.

    The run's levels are the Start block's, else the built-in defaults. What Start writes is the run's
    level, not Start's own: a run's `--message-level` replaces it, for Start as for every block that
    writes none.
    """
    written_error = ERROR_LEVELS[start.impl.spec.error_level]
    written_message = MESSAGE_LEVELS[start.impl.spec.message_level]
    error_level = own_else_run(written_error, DEFAULT_ERROR_LEVEL)
    message_level = own_else_run(written_message, DEFAULT_MESSAGE_LEVEL)
    for block in blocks:
        spec = block.impl.spec
        own_error = None if block is start else ERROR_LEVELS[spec.error_level]
        own_message = None if block is start else MESSAGE_LEVELS[spec.message_level]
        block.error_level = own_else_run(own_error, error_level)
        block.message_level = own_else_run(own_message, message_level)
        block.error_level_from = _source(own_error, written_error)
        block.message_level_from = _source(own_message, written_message)
    return error_level, message_level


def _source(own: ErrorLevel | MessageLevel | None, start: ErrorLevel | MessageLevel | None) -> LevelSource:
    if own is not None:
        return LevelSource.BLOCK
    return LevelSource.DEFAULT if start is None else LevelSource.START


class InheritedLevels(NamedTuple):
    """A diagram's levels as a Subdiagram's child (Diagram.inherited_levels)."""

    errors: Mapping[CompiledBlock, ErrorLevel] | None
    """Each block's error level; None where the child's stand (its Start sets one, or the caller's is the default)."""
    messages: Mapping[CompiledBlock, MessageLevel] | None
    """Each block's message level; None where the child's stand."""
    highest: MessageLevel
    """The highest of them: what the trace's chain must serve."""


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
    knowledge: dict[str, KnowledgeBase] = field(default_factory=dict)
    """Its knowledge bases by name: its own `knowledge:` and its registry files'."""
    data_roots: tuple[Path, ...] = ()
    """Folders besides its own the diagram may read data from (`--data-root`)."""
    warnings: list[Problem] = field(default_factory=list)
    """Problems that do not stop it running (an unreachable block); `validate --strict` fails on them."""
    load_child: Callable[[Path], Diagram] | None = None
    """Loads a diagram file (resolved, inside the folder or a data root) as this one was loaded: the diagrams a run
    reaches through a templated Subdiagram path (engine.compile.children)."""
    published: int | None = None
    """The published version this is (`diagrama api` serving it: engine.runs.published); None: the file as it is."""
    _inherited: dict[tuple[ErrorLevel, MessageLevel], InheritedLevels] = field(default_factory=dict, repr=False)

    @functools.cached_property
    def graph(self) -> nx.DiGraph:
        """The diagram as a networkx graph (blocks and links), built on first use: running does not need it."""
        from engine.compile.graph import build_graph

        return build_graph(self.blocks.values())

    def message_levels(self, run: MessageLevel | None) -> Mapping[CompiledBlock, MessageLevel] | None:
        """Each block's message level in a run at `run` (`--message-level`); None when that changes no block's,
        and each block's `message_level` stands. Made once a run, so that a step reads one of the two."""
        if run is None or run == self.message_level:
            return None
        return {block: own_else_run(block.own_message_level, run) for block in self.blocks.values()}

    def inherited_levels(self, error: ErrorLevel, message: MessageLevel) -> InheritedLevels:
        """Each block's levels when this diagram runs as a Subdiagram of a block at `error` and `message`: a level
        the Start block writes stands (the child sets it), else the block's own, else the caller's. Made once per
        pair (six at most), so that a call costs a dictionary read."""
        key = (error, message)
        found = self._inherited.get(key)
        if found is None:
            errors = None
            if self.start.error_level_from is LevelSource.DEFAULT and error != self.error_level:
                errors = {block: own_else_run(block.own_error_level, error) for block in self.blocks.values()}
            messages = None
            if self.start.message_level_from is LevelSource.DEFAULT and message != self.message_level:
                messages = {block: own_else_run(block.own_message_level, message) for block in self.blocks.values()}
            highest = max(messages.values() if messages is not None else (b.message_level for b in self.blocks.values()))
            found = self._inherited[key] = InheritedLevels(errors, messages, highest)
        return found

    @functools.cached_property
    def listed_secrets(self) -> tuple[str, ...]:
        """The names its `secrets:` lists, and those of the subdiagrams loaded with it: what a run of it redacts."""
        names = dict.fromkeys(self.spec.secrets)
        for block in self.blocks.values():
            if block.child is not None:
                names.update(dict.fromkeys(block.child.listed_secrets))
        if self.tools is not None:  # a registry may list its own, for its http tools
            names.update(dict.fromkeys(name for tool in self.tools.tools.values() for name in tool.secrets))
        return tuple(names)

    @functools.cached_property
    def directory(self) -> DataFolder:
        """Where the diagram's relative paths start, with the data roots: the only places it reads files from."""
        return DataFolder(self.path.parent, self.data_roots)
