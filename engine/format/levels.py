"""The two levels every block has, their names in a file, and the one rule that picks a block's level.

A block's `error_level` and `message_level` are its own when written (not `Default`), else the
run's: the Start block's, or the built-in default, which `diagrama run --message-level` replaces
for one run. `own_else_run` is that rule, for compile and for a run's override alike. Nothing
here imports pydantic: `diagrama --help` builds its `--message-level` choices from these names.
"""

from __future__ import annotations

import enum
from typing import TypeVar

__all__ = [
    "DEFAULT",
    "DEFAULT_ERROR_LEVEL",
    "DEFAULT_MESSAGE_LEVEL",
    "ERROR_LEVELS",
    "MESSAGE_LEVELS",
    "ErrorLevel",
    "LevelSource",
    "MessageLevel",
    "level_name",
    "own_else_run",
]


class ErrorLevel(enum.IntEnum):
    """What a block's error does: Ignore continues, Handle goes to on_error."""

    IGNORE = 0
    HANDLE = 1


class MessageLevel(enum.IntEnum):
    """How much of a block the trace keeps."""

    RELEASE = 0
    DEBUG = 1
    DETAILED = 2


Level = TypeVar("Level", ErrorLevel, MessageLevel)


def level_name(level: ErrorLevel | MessageLevel) -> str:
    """A level as a file writes it: `Handle`, `Debug`."""
    return level.name.capitalize()


DEFAULT = "Default"
"""The name a file writes for "this block takes the run's level"; also what an unwritten level means."""

ERROR_LEVELS: dict[str, ErrorLevel | None] = {DEFAULT: None, **{level_name(level): level for level in ErrorLevel}}
"""Every error level name a file may write, and the level it means (None: the run's)."""
MESSAGE_LEVELS: dict[str, MessageLevel | None] = {DEFAULT: None, **{level_name(level): level for level in MessageLevel}}
"""Every message level name a file may write, and the level it means (None: the run's)."""

DEFAULT_ERROR_LEVEL = ErrorLevel.HANDLE
"""The run's error level when the Start block writes none."""
DEFAULT_MESSAGE_LEVEL = MessageLevel.DEBUG
"""The run's message level when the Start block writes none (and no `--message-level` is given)."""


class LevelSource(enum.Enum):
    """Where a block's level comes from."""

    BLOCK = "block"
    """Written on the block itself (not Start): kept whatever the run's level."""
    START = "start"
    """The run's level, which the Start block writes."""
    DEFAULT = "default"
    """The run's level, built in: neither the block nor Start writes one."""


def own_else_run(own: Level | None, run: Level) -> Level:
    """A block's level: its own, else the run's. The rule, written once."""
    return run if own is None else own
