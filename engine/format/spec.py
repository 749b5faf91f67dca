"""The models of a diagram file, and the JSON Schema editors read; no I/O here.

Blocks are checked in two stages: the common keys here, then the block type's own
Inputs and Settings models (see engine.compile.block). The published schema joins both.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

__all__ = [
    "BLOCK_ID_PATTERN",
    "COMMON_BLOCK_KEYS",
    "BlockSpec",
    "DiagramSpec",
    "ErrorLevel",
    "LinkSpec",
    "MessageLevel",
    "no_values",
]

BLOCK_ID_PATTERN = r"^[A-Za-z0-9_-]+$"


class ErrorLevel(enum.IntEnum):
    """What a block's error does: Ignore continues, Handle goes to on_error."""

    IGNORE = 0
    HANDLE = 1


class MessageLevel(enum.IntEnum):
    """How much of a block the trace keeps."""

    RELEASE = 0
    DEBUG = 1
    DETAILED = 2


ERROR_LEVELS = {"Default": None, "Ignore": ErrorLevel.IGNORE, "Handle": ErrorLevel.HANDLE}
MESSAGE_LEVELS = {
    "Default": None,
    "Release": MessageLevel.RELEASE,
    "Debug": MessageLevel.DEBUG,
    "Detailed": MessageLevel.DETAILED,
}


def _capitalised(value: Any) -> Any:
    # "debug" and "DEBUG" are what people type; the schema still documents "Debug".
    if isinstance(value, str):
        return value.strip().capitalize()
    return value


ErrorLevelName = Annotated[Literal["Default", "Ignore", "Handle"], BeforeValidator(_capitalised)]
MessageLevelName = Annotated[
    Literal["Default", "Release", "Debug", "Detailed"], BeforeValidator(_capitalised)
]


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
    error_level: ErrorLevelName = "Default"
    message_level: MessageLevelName = "Default"


COMMON_BLOCK_KEYS = frozenset(
    {"id", "type", "label", "position", "with", "set", "next", "on_error", "error_level", "message_level"}
)


class DiagramSpec(BaseModel):
    """A diagram file: blocks joined by links."""

    model_config = ConfigDict(extra="forbid")

    diagram: str = Field(description="the diagram's name")
    version: Literal[1] = Field(default=1, description="format version")
    description: str = ""
    tools: str | list[str] | None = Field(
        default=None, description="tool registry files or folders, relative to this file"
    )
    blocks: list[dict[str, Any]] = Field(min_length=1)
