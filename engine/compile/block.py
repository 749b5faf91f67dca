"""The block contract and the registry that maps `type:` names to block classes.

A block declares data (Inputs, Outputs, Settings, ports) beside one `run`: `async def` for a
block that waits (a request, a tool), a plain `def` for one that does not (Set, Loop), which
the executor then calls without a coroutine.
It raises on failure; only the executor applies error levels. Blocks must not
keep per-run state on themselves: one instance serves every run of a diagram.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from engine.errors import RunError, UsageError
from engine.format.spec import ChatSettings, no_values

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.format.spec import BlockSpec, DiagramSpec
    from engine.runtime.context import RunContext

__all__ = [
    "Block",
    "BlockRegistry",
    "NoInputs",
    "NoOutputs",
    "Report",
    "RunSettings",
    "WithFailures",
    "entry_point_blocks",
]

Report = Callable[[str, str, str | None], None]
"""report(field, message, hint): a load-time problem found by a block's `check`; `field` names an input (`tools.2`),
or one of the type's own Settings keys (`fallback.0.type`), and the problem is placed there."""


class NoInputs(BaseModel):
    """A block without inputs."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOutputs(BaseModel):
    """A block without outputs."""

    model_config = ConfigDict(extra="forbid")


class Block:
    """Base of every block type; subclass it and implement `run`."""

    type_name: ClassVar[str] = "Block"
    Inputs: ClassVar[type[BaseModel]] = NoInputs
    Outputs: ClassVar[type[BaseModel]] = NoOutputs
    Settings: ClassVar[type[BaseModel] | None] = None
    """Extra top-level keys this type takes (Start's `inputs`, `variables`, ...)."""
    body_port: ClassVar[str | None] = None
    """A port whose chain runs inside this block and links back to it (Loop's `body`)."""
    body_names: ClassVar[tuple[str, ...]] = ()
    """Names this block binds for the blocks of its body (Loop's `item`, `index`)."""
    body_exit: ClassVar[str | None] = None
    """The input that ends this block's body early (Loop's `break_when`), named in the hints for leaving it."""
    deferred_inputs: ClassVar[tuple[str, ...]] = ()
    """Inputs the block evaluates itself, when it needs them (`context.evaluate_input`)."""
    condition_inputs: ClassVar[tuple[str, ...]] = ()
    """Inputs the block reads as a condition (`truthy`, as a link's `when`): Loop's `while` and `break_when`.
    `validate` warns where one can only be free text."""
    is_start: ClassVar[bool] = False
    """The block a run begins at; its Settings must be RunSettings."""
    effects: ClassVar[bool] = False
    """Whether a step of this type acts outside the run (calls a vendor, a tool, a function, a server, a person).
    A durable run checkpoints after each such step; a step without effects is simply recomputed on resume."""
    asks_person: ClassVar[bool] = False
    """Whether a step of this type may stop the run for a person's answer (Wait); a scenario scripts its answers by
    block id (`{answer: ...}`), taken through `services.scripted.answer`."""
    code_input: ClassVar[str | None] = None
    """An input naming Python code the block calls (Function's `function`: `module:function` or
    `module:Class.method`). It must be written literally; loading imports it as a tool handler is imported (the
    diagram's folder first, its module one of the diagram's `allowed_modules`), a bad one being a load error, and
    hands the callable to `bind_code` before `check` runs."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "type_name" not in cls.__dict__:
            cls.type_name = cls.__name__

    def __init__(self, spec: BlockSpec, settings: BaseModel | None = None) -> None:
        self.id = spec.id
        self.spec = spec
        self.settings = settings

    @classmethod
    def ports(cls) -> tuple[str, ...]:
        return (cls.body_port,) if cls.body_port else ()

    @classmethod
    def output_names(cls) -> tuple[str, ...]:
        """The names a template reads the outputs by: a field's alias where it has one (HttpRequest's `json`)."""
        return tuple(field.alias or name for name, field in cls.Outputs.model_fields.items())

    @classmethod
    def empty_outputs(cls) -> dict[str, Any]:
        """Each output's empty value: what `when` sees after an ignored error."""
        empty: dict[str, Any] = {}
        for name, field in cls.Outputs.model_fields.items():
            empty[field.alias or name] = None if field.is_required() else field.get_default(call_default_factory=True)
        return empty

    def check(self, constants: Mapping[str, Any], report: Report) -> None:  # optional hook
        """Load-time checks across this block's constant inputs; call `report` per problem."""

    def bind_code(self, code: Callable[..., Any]) -> None:  # hook of blocks with a `code_input`
        """Load time: the callable `code_input` names, imported; keep it for `check` and `run`."""
        raise NotImplementedError(f"{type(self).__name__} declares a code_input and must take its code")

    def check_diagram(self, diagram: DiagramSpec, report: Report) -> None:  # optional hook
        """Load-time checks of this block's inputs as written (`self.spec.with_`, templates and all) against the
        diagram's top-level keys (HttpRequest's URL against `allowed_hosts`); call `report` per problem."""

    diagram_input: ClassVar[str | None] = None
    """An input naming another diagram file that this block runs (Subdiagram's `diagram`). Written as a literal
    path, that diagram is loaded with this one (its problems are this one's, a cycle of such paths is refused) and
    `check_child` meets it; a templated path is loaded when a run renders it."""

    def check_child(self, child: Diagram, constants: Mapping[str, Any], report: Report) -> None:  # optional hook
        """Load-time checks of this block's constant inputs against the diagram it runs (`diagram_input`)."""

    def concurrent_body(self) -> bool:  # optional hook
        """Whether this block runs the passes of its body side by side, each in its own copy of the scope (a Loop
        with `concurrency`): then only what it collects flows out, and its `run` returns an awaitable."""
        return False

    knowledge_input: ClassVar[str | None] = None
    """An input naming one of the diagram's knowledge bases (Retrieve's `knowledge`); written literally, loading
    checks that the base is declared."""

    tools_input: ClassVar[str | None] = None
    """The input through which a tool registry's tools reach this block's model (`tools('group', ...)`)."""

    @classmethod
    def check_offered_tool(cls, name: str, parameters: Mapping[str, Any],
                           strict: bool) -> tuple[str, str | None] | None:  # optional hook
        """Load-time: why a registry tool that `tools_input` may offer cannot be offered (message, hint); None if it can."""
        return None

    def save_state(self, state: Any) -> Any:  # optional hook
        """The state this block keeps in `context.loop_states` between its steps, as plain data for a checkpoint."""
        return state

    def load_state(self, data: Any) -> Any:  # optional hook
        """The state `save_state` wrote, back as the block keeps it (a resumed run)."""
        return data

    def run(self, inputs: Any, context: RunContext) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """The block's work: its outputs. Override as `async def`, or as a plain `def` when nothing is awaited."""
        raise NotImplementedError(f"{type(self).__name__}.run")


class WithFailures(dict[str, Any]):
    """Outputs, plus failures the block kept as data (ToolDispatch's failed calls, each a tool row).

    The block does not decide what they mean; the executor does. When the block's own
    `error_level` is Handle, the first of them is the block's error; otherwise the
    outputs stand, and the model reads the failures in them.
    """

    __slots__ = ("failures",)

    def __init__(self, outputs: Mapping[str, Any], failures: Sequence[RunError] = ()) -> None:
        super().__init__(outputs)
        self.failures: tuple[RunError, ...] = tuple(failures)


class BlockRegistry(Mapping[str, type[Block]]):
    """Type name → block class; a name can be registered once."""

    def __init__(self, blocks: Iterable[type[Block]] = ()) -> None:
        self._blocks: dict[str, type[Block]] = {}
        for block in blocks:
            self.register(block)

    def register(self, block: type[Block]) -> type[Block]:
        name = block.type_name
        existing = self._blocks.get(name)
        if existing is not None and existing is not block:
            raise UsageError(
                f"block type '{name}' is registered twice ({existing.__module__} and {block.__module__})"
            )
        self._blocks[name] = block
        return block

    def __getitem__(self, name: str) -> type[Block]:
        return self._blocks[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._blocks)

    def __len__(self) -> int:
        return len(self._blocks)

    def ports_of(self, type_name: str) -> tuple[str, ...]:
        """The ports of a registered type; none for a name that is not one (the file's links are read regardless)."""
        block = self._blocks.get(type_name)
        return block.ports() if block is not None else ()


def entry_point_blocks(group: str = "diagrama.blocks") -> list[type[Block]]:
    """Block classes that installed packages register under the `diagrama.blocks` group."""
    found: list[type[Block]] = []
    for point in entry_points(group=group):
        block = point.load()
        if not (isinstance(block, type) and issubclass(block, Block)):
            raise UsageError(f"entry point '{point.name}' in {group} is not a Block subclass")
        found.append(block)
    return found


class RunSettings(BaseModel):
    """The Start block's own keys: run inputs, initial variables, limits."""

    model_config = ConfigDict(extra="forbid")

    inputs: dict[str, Any] = Field(default_factory=no_values, description="run inputs and their defaults")
    variables: dict[str, Any] = Field(
        default_factory=no_values, description="initial variables; values may be templates over the inputs"
    )
    max_steps: int = Field(default=1000, ge=1, description="the run fails after this many block steps")
    max_subdiagram_calls: int = Field(default=1000, ge=1, description="Subdiagram calls a run may make, all its "
                                                                      "levels together; the next one fails")
    timeout: float | None = Field(default=None, gt=0, description="deadline for the whole run, seconds")
    durable: bool = Field(default=True, description="checkpoint the run after each block with effects, so that "
                                                    "`diagrama resume` can continue it (false: no checkpoints)")
    cache: bool = Field(default=False, description="prompt caching for every request block that does not say "
                                                   "(its `with: cache`): the stable prefix is marked for the vendor's "
                                                   "cache")
    memory: list[str] = Field(default_factory=lambda: [], description="variables kept per session "
                                                                     "(`diagrama run --session ID`) from run to run")
    output: list[str] = Field(default_factory=lambda: [], description="the variables a run answers as the robot's "
                                                                     "result (`diagrama mcp`, `/mcp`); none: all of them")
    chat: ChatSettings | None = Field(default=None, description="the robot as a chat (`diagrama api`'s "
                                                                "/v1/chat/completions): {input: the Start input the "
                                                                "user's message fills, output: the variable answered}")
