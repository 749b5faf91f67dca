"""The models of a diagram file, and the JSON Schema editors read; no I/O here.

Blocks are checked in two stages: the common keys here, then the block type's own
Inputs and Settings models (see engine.compile.block). The published schema joins both.
The facts other layers read about a block's keys (which every block has, which name other
blocks, which a wrong value of only falls back to its default) are derived here from BlockSpec,
and the level names from engine.format.levels: written once, read by the compiler and the studio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from engine.format.hosts import read_host_entry
from engine.format.knowledge import KNOWLEDGE_NAME_PATTERN, KnowledgeSpec
from engine.format.levels import DEFAULT, ERROR_LEVELS, MESSAGE_LEVELS, ErrorLevel, MessageLevel
from engine.format.links import LINK_KEYS
from engine.format.notes import NoteSpec
from engine.format.triggers import ScheduleSpec, WebhookSpec

__all__ = [
    "BLOCK_ID_PATTERN",
    "COMMON_BLOCK_KEYS",
    "DEFAULTED_KEYS",
    "ERROR_LEVELS",
    "LINK_KEYS",
    "MESSAGE_LEVELS",
    "SECRET_NAME_PATTERN",
    "BlockSpec",
    "Budget",
    "ChatSettings",
    "DiagramSpec",
    "ErrorLevel",
    "LinkSpec",
    "MessageLevel",
    "no_values",
    "tighter",
]

BLOCK_ID_PATTERN = r"^[A-Za-z0-9_-]+$"
SECRET_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""An environment variable's name, as `secrets:` lists them."""


def _host_entry(value: str) -> str:
    read_host_entry(value)  # a ValueError names what is wrong; pydantic makes it the problem's message
    return value


HostEntryText = Annotated[str, AfterValidator(_host_entry)]
SecretName = Annotated[str, Field(pattern=SECRET_NAME_PATTERN)]


def _capitalised(value: Any) -> Any:
    # "debug" and "DEBUG" are what people type; the schema still documents "Debug".
    if isinstance(value, str):
        return value.strip().capitalize()
    return value


if TYPE_CHECKING:  # a Literal made of the names at run time is one mypy cannot read; to it they are text
    ErrorLevelName = str
    MessageLevelName = str
else:  # the names of engine.format.levels, as a Literal: the published schema lists them as an enum
    ErrorLevelName = Annotated[Literal[tuple(ERROR_LEVELS)], BeforeValidator(_capitalised)]
    MessageLevelName = Annotated[Literal[tuple(MESSAGE_LEVELS)], BeforeValidator(_capitalised)]


def no_values() -> dict[str, Any]:
    """An empty mapping, for a field's default (a block's `with` or `set`, Start's `inputs`). Not `default_factory=dict`:
    pydantic reads a factory's signature, and a builtin's is parsed from text by tokenize (~2 ms a command); nor
    `default={}`, which pydantic deep-copies for every model and shows in the published schema."""
    return {}


class LinkSpec(BaseModel):
    """One outgoing link: go `to` a block, when the condition holds (none: always)."""

    model_config = ConfigDict(extra="forbid")

    to: str = Field(description="id of the block to go to")
    when: str | bool | None = Field(
        default=None, description="condition template, e.g. '{{ called_tools | length > 0 }}'"
    )


class Budget(BaseModel):
    """A limit a run's requests may not pass: any subset of USD, tokens (input and output) and requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usd: float | None = Field(default=None, gt=0, description="US dollars, at the price table's prices")
    tokens: int | None = Field(default=None, gt=0, description="input and output tokens together")
    requests: int | None = Field(default=None, gt=0, description="requests sent to the vendors")

    @model_validator(mode="after")
    def _some_limit(self) -> Budget:
        if self.usd is None and self.tokens is None and self.requests is None:
            raise ValueError("a budget names at least one of usd, tokens, requests")
        return self

    def within(self, other: Budget | None) -> Budget:
        """The tighter of this budget and `other`, limit by limit (a limit only one names stands)."""
        if other is None:
            return self
        return Budget(usd=_least(self.usd, other.usd), tokens=_least(self.tokens, other.tokens),
                      requests=_least(self.requests, other.requests))

    def shown(self) -> str:
        """`usd=0.5, tokens=20000`, as `--budget` takes it."""
        return ", ".join(f"{name}={value:g}" for name, value in
                         (("usd", self.usd), ("tokens", self.tokens), ("requests", self.requests)) if value is not None)


class ChatSettings(BaseModel):
    """Start's `chat`: which input a chat's message fills and which variable is the answer (`diagrama api`'s
    OpenAI-compatible endpoint, engine.web.service.chat)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: str = Field(description="the Start input the last user message fills")
    output: str = Field(description="the variable whose value at the run's end is the answer")


def _least(one: float | None, other: float | None) -> Any:
    return other if one is None else one if other is None else min(one, other)


def tighter(one: Budget | None, other: Budget | None) -> Budget | None:
    """The tighter of two budgets that may be absent (None: no limit)."""
    return other if one is None else one.within(other)


class BlockSpec(BaseModel):
    """The keys every block has; a block type adds its own Settings and ports."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str = Field(pattern=BLOCK_ID_PATTERN, description="unique id: letters, digits, '_' and '-'")
    type: str = Field(description="block type, e.g. ClaudeRequest")
    label: str | None = Field(default=None, description="text shown in the visual view")
    position: tuple[float, float] | None = Field(default=None, description="[x, y] in the visual view")
    with_: dict[str, Any] = Field(default_factory=no_values, alias="with", description="block inputs")
    set: dict[str, Any] = Field(
        default_factory=no_values, description="variables to assign from the block's outputs after success"
    )
    next: str | list[LinkSpec] | None = Field(
        default=None, description="next block id, or a list of {to, when} tried in order"
    )
    on_error: str | None = Field(default=None, description="block that handles this block's errors")
    error_level: ErrorLevelName = DEFAULT
    message_level: MessageLevelName = DEFAULT
    budget: Budget | None = Field(default=None, description="on Start, the run's limit: {usd, tokens, requests}, any "
                                                             "subset; on another block, a tighter one for its "
                                                             "requests (a Subdiagram's or Loop's: for those inside it)")


COMMON_BLOCK_KEYS = frozenset(field.alias or name for name, field in BlockSpec.model_fields.items())
"""The keys every block may have, as a file writes them; a block type adds its ports and settings."""

DEFAULTED_KEYS = frozenset({"label", "position", "error_level", "message_level"})
"""Keys that change neither links nor values: a wrong one is reported, and the block goes on with the default."""


class DiagramSpec(BaseModel):
    """A diagram file: blocks joined by links."""

    model_config = ConfigDict(extra="forbid")

    diagram: str = Field(description="the diagram's name")
    version: Literal[1] = Field(default=1, description="format version")
    description: str = ""
    tools: str | list[str] | None = Field(
        default=None, description="tool registry files or folders, relative to this file"
    )
    allowed_hosts: tuple[HostEntryText, ...] = Field(
        default=(), description="hosts HttpRequest blocks may call: api.example.com, *.example.com (its subdomains), "
                                "localhost:8080 (that port only); none by default"
    )
    secrets: tuple[SecretName, ...] = Field(
        default=(), description="environment variables templates may read with secret('NAME'); their values are "
                                "redacted from every output"
    )
    allowed_modules: list[str] = Field(
        default_factory=lambda: [], description="modules whose functions Function blocks may call (and their submodules)"
    )
    knowledge: dict[Annotated[str, Field(pattern=KNOWLEDGE_NAME_PATTERN)], KnowledgeSpec] = Field(
        default_factory=no_values, description="knowledge bases Retrieve blocks search: {name: {folder, include, chunk}}"
    )
    schedules: list[ScheduleSpec] = Field(
        default_factory=lambda: [], description="when `diagrama api` runs the robot by itself: [{cron, inputs, "
                                                "timezone}] (`diagrama schedules` lists the next ticks)"
    )
    webhook: WebhookSpec | None = Field(
        default=None, description="POST /v1/hooks/{robot}: a signed request starts a run, its inputs templates over "
                                  "its JSON `body` and `headers`"
    )
    notes: list[NoteSpec] = Field(
        default_factory=lambda: [], description="the studio's sticky notes and frames: [{text, x, y, width, height, "
                                                "color, frame}]; studio only, the engine ignores them"
    )
    blocks: list[dict[str, Any]] = Field(min_length=1)
