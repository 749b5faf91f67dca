"""The exception tree of diagrama; nothing else from diagrama is imported here.

    DiagramaError
    ├── DiagramError            the file is wrong; found at load time (exit 2)
    │   └── DiagramInvalid      one or more Problems, each with file, line, block, field
    ├── UsageError              bad command-line or API use, e.g. an unknown input (exit 2)
    └── RunError                something failed during a run (exit 1 unless handled)
        ├── TemplateError       a template failed: undefined name, sandbox, type error
        ├── InputError          a block's rendered inputs do not fit its Inputs model
        ├── BlockError          a block failed while running
        │   ├── ToolError       a tool could not be dispatched
        │   └── LoopLimitReached
        ├── ProviderError       a vendor answered with an error or an unreadable body
        ├── BlockTimeout        a block ran past its timeout
        ├── RunTimeout          the run ran past the Start block's timeout
        └── StepLimitReached    the run took max_steps steps

Every RunError has a stable snake_case ``type`` that scenarios match on.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BlockError",
    "BlockTimeout",
    "DiagramError",
    "DiagramInvalid",
    "DiagramaError",
    "InputError",
    "LoopLimitReached",
    "Problem",
    "ProviderError",
    "RunError",
    "RunTimeout",
    "StepLimitReached",
    "TemplateError",
    "ToolError",
    "UsageError",
]


class DiagramaError(Exception):
    """Base of every error diagrama reports to a user."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a file, with where it is and how to fix it."""

    file: str
    line: int | None
    message: str
    block: str | None = None
    field: str | None = None
    hint: str | None = None
    code: str = "invalid"
    column: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        parts = [where + ":"]
        if self.block is not None:
            parts.append(f"block '{self.block}'")
        if self.field:
            parts.append(f"field '{self.field}':")
        elif self.block is not None:
            parts[-1] += ":"
        parts.append(self.message)
        text = " ".join(parts)
        if self.hint:
            text += f" ({self.hint})"
        return text


class DiagramError(DiagramaError):
    """The diagram (or a file it names) is wrong; nothing runs."""


class DiagramInvalid(DiagramError):
    """A file has one or more problems; all of them are listed, sorted by line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.file, p.line or 0, p.column or 0))
        super().__init__("\n".join(str(p) for p in self.problems))


class UsageError(DiagramaError):
    """The command line or the Python API was used wrongly (exit 2)."""


class RunError(DiagramaError):
    """Something failed during a run; the block's error level decides what follows."""

    type: str = "run_error"

    def __init__(self, message: str, *, type: str | None = None, block: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if type is not None:
            self.type = type
        self.block = block

    def as_dict(self) -> dict[str, str | None]:
        return {"block": self.block, "type": self.type, "message": self.message}


class TemplateError(RunError):
    """A template failed to evaluate (undefined name, sandbox violation, bad operation)."""

    type = "template_error"


class InputError(RunError):
    """A block's inputs, once rendered, do not match what the block accepts."""

    type = "invalid_input"


class BlockError(RunError):
    """A block failed while running."""

    type = "block_error"


class ToolError(BlockError):
    """A called tool could not be run (unknown, bad arguments, handler failure)."""

    type = "tool_error"


class LoopLimitReached(BlockError):
    """A Loop reached max_iterations while its condition still held."""

    type = "loop_limit_reached"


class ProviderError(RunError):
    """A vendor answered with an error, or with a body we cannot read."""

    type = "provider_error"

    def __init__(
        self,
        message: str,
        *,
        type: str | None = None,
        block: str | None = None,
        status: int | None = None,
        vendor_type: str | None = None,
    ) -> None:
        super().__init__(message, type=type, block=block)
        self.status = status
        self.vendor_type = vendor_type


class BlockTimeout(RunError):
    """A block ran past its own timeout."""

    type = "block_timeout"


class RunTimeout(RunError):
    """The whole run ran past the Start block's timeout."""

    type = "run_timeout"


class StepLimitReached(RunError):
    """The run took max_steps steps without ending (a runaway cycle)."""

    type = "step_limit_reached"

