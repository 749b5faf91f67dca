"""The exception tree of diagrama; nothing else from diagrama is imported here.

    DiagramaError                   an error a user can act on; the CLI prints one line
    ├── DiagramError                the file is wrong; found at load time (exit 2)
    │   ├── DiagramInvalid          one or more Problems, each with file, line, block, field
    │   └── TemplateSyntax          a template does not parse (the compiler makes it a Problem)
    ├── UsageError                  bad command-line or API use, e.g. an unknown input (exit 2)
    │   └── TurnRefused             a run cannot start or go on now: why (`reason`), each problem
    └── RunError                    something failed during a run (exit 1 unless handled)
        ├── TemplateError           a template failed: undefined name, sandbox, type error
        ├── InputError              a block's rendered inputs do not fit its Inputs model
        │   └── TableError          a data table is malformed (ragged, bad role, unreadable CSV)
        ├── BlockError              a block failed while running (`block_raised`: a plug-in's bug)
        │   ├── ToolError           a tool could not be dispatched
        │   ├── LoopLimitReached    a Loop reached max_iterations
        │   ├── LoopPassFailed      a pass of a concurrent Loop failed with an error its body did not handle
        │   └── SubdiagramFailed    the diagram a Subdiagram block ran failed (or could not run)
        ├── ProviderError           a vendor answered with an error or an unreadable body
        │   ├── ProviderRefused     the model refused, or a safety filter left nothing usable
        │   ├── ProviderBlocked     the vendor blocked the prompt itself
        │   └── OutputTruncated     a tool call was cut off by the token limit
        ├── HttpError               an HttpRequest failed: an error status, no connection, a host not allowed
        ├── BlockTimeout            a block ran past its timeout
        ├── RunTimeout              the run ran past the Start block's timeout
        ├── StepLimitReached        the run took max_steps steps
        ├── BudgetExceeded          a request would pass the run's or its block's budget: not sent
        ├── TraceWriteFailed        the trace file could not be written (disk full)
        ├── CheckpointFailed        a durable run's state could not be checkpointed (a value, the store)
        └── WaitTimeout             a Wait was answered after its timeout

    InternalError                   a bug in diagrama or in one of its blocks (`internal_error`)
    WireError(ValueError)           a conversation or vendor body the adapter cannot translate

    Signals: raised and caught inside one layer, never shown to a user.
    RunFailed                       carries the RunError that ends a run (executor)
    RetryableProviderError          a ProviderError or HttpError worth another attempt, with the wait hint (http)
    SimulatorRejected               the simulator refuses a request: vendor status and error body
    DocumentTooLarge                a YAML document expands past the node limit (yamlfile)
    ScenarioFailed                  a scenario's verdict did not pass (pytest plugin)
    UserCodeRaised                  user code's SystemExit, KeyboardInterrupt, GeneratorExit, StopIteration, carried
    RunSuspended                    a Wait stops its run until a person answers (executor)

Every RunError has a stable snake_case ``type`` that scenarios match on. Errors are
finished when raised: the one later addition is the block id, which the executor's
step context attaches (`RunError.at_block`) when the raiser did not know it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal, Self

__all__ = ["BlockError", "BlockTimeout", "BudgetExceeded", "CheckpointFailed", "DiagramError", "DiagramInvalid", "DiagramaError",
           "DocumentTooLarge", "HttpError", "InputError", "InternalError", "LoopLimitReached", "LoopPassFailed",
           "OutputTruncated", "Problem", "ProviderBlocked", "ProviderError", "ProviderRefused",
           "RetryableProviderError", "RunError", "RunFailed", "RunSuspended", "RunTimeout", "ScenarioFailed",
           "SimulatorRejected", "StepLimitReached", "SubdiagramFailed", "TableError", "TemplateError",
           "TemplateSyntax", "ToolError", "TraceWriteFailed", "TurnRefused", "UsageError", "UserCodeRaised",
           "WaitTimeout", "WireError", "described"]


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
    severity: Literal["error", "warning"] = "error"
    """A warning (an unreachable block) is shown but does not stop a run; `validate --strict` fails on it."""

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        parts = [where + ":"]
        if self.severity == "warning":
            parts.append("warning:")
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


class TemplateSyntax(DiagramError):
    """A template does not parse, or names a filter, test or literal argument that cannot work; `lineno` is the
    line inside the template, `code` the Problem's code and `hint` its fix, when one is obvious."""

    def __init__(self, message: str, lineno: int | None, *, code: str = "template_syntax",
                 hint: str | None = None) -> None:
        super().__init__(message)
        self.lineno = lineno
        self.code = code
        self.hint = hint


class UsageError(DiagramaError):
    """The command line or the Python API was used wrongly (exit 2)."""


class TurnRefused(UsageError):
    """A run cannot start or go on as asked (engine.runs.turn): `reason` says why, as each door answers it.

    `not_found` (no such run), `not_resumable` (finished, running, a subdiagram's, nothing to resume from, its diagram
    changed), `taken` (another resume has it), `answer` (missing, or one its Wait's form refuses: each problem in
    `problems`), `session_busy` (another turn of the session runs, or is unfinished), `input` (an input a durable run
    cannot keep), `damaged` (its stored record, checkpoints or session memory do not decode: cut short, tampered).
    """

    def __init__(self, message: str, *, reason: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.problems = problems or []


class RunError(DiagramaError):
    """Something failed during a run; the block's error level decides what follows."""

    type: str = "run_error"

    def __init__(self, message: str, *, type: str | None = None, block: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if type is not None:
            self.type = type
        self.block = block

    def at_block(self, block: str) -> Self:
        """Name the block it happened in, unless the raiser already did; the executor's step context calls this."""
        if self.block is None:
            self.block = block
        return self

    def as_dict(self) -> dict[str, str | None]:
        return {"block": self.block, "type": self.type, "message": self.message}


class TemplateError(RunError):
    """A template failed to evaluate (undefined name, sandbox violation, bad operation)."""

    type = "template_error"


class InputError(RunError):
    """A block's inputs, once rendered, do not match what the block accepts."""

    type = "invalid_input"


class TableError(InputError):
    """A table is malformed: ragged row, missing column, bad role, unreadable CSV.

    `row` is the 1-based row it concerns, when one; `file` and `line` where that row was
    written, when it came from a CSV file (the message then starts with `file:line:`).
    `detail` is the message without that place, for load problems that name it themselves.
    """

    type = "invalid_table"

    def __init__(self, message: str, *, type: str | None = None, block: str | None = None, row: int | None = None,
                 file: str | None = None, line: int | None = None) -> None:
        self.detail = message
        self.row = row
        self.file = file
        self.line = line
        if file is not None:
            message = f"{file}:{line}: {message}" if line is not None else f"{file}: {message}"
        super().__init__(message, type=type, block=block)


class BlockError(RunError):
    """A block failed while running."""

    type = "block_error"


class ToolError(BlockError):
    """A called tool could not be run (unknown, bad arguments, handler failure)."""

    type = "tool_error"


class LoopLimitReached(BlockError):
    """A Loop reached max_iterations while its condition still held."""

    type = "loop_limit_reached"


class LoopPassFailed(BlockError):
    """A pass of a concurrent Loop ended with an error its body did not handle: the Loop's own error level decides."""

    type = "loop_pass_failed"


class SubdiagramFailed(BlockError):
    """The diagram a Subdiagram block runs failed, could not load, or nested too deep; its errors are listed."""

    type = "subdiagram_failed"


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

    def after_attempts(self, attempts: int) -> ProviderError:
        """A new error saying how many attempts were made; this one stays as it was raised."""
        return ProviderError(f"{self.message} (after {attempts} attempts)", type=self.type, block=self.block,
                             status=self.status, vendor_type=self.vendor_type)


class HttpError(RunError):
    """An HttpRequest failed: the server answered an error status (`http_error`), could not be reached
    (`http_connection_error`) or read (`http_malformed_response`), or the URL's host is not allowed
    (`host_not_allowed`), a redirect left the host (`http_redirect_refused`), or the run is offline (`http_offline`)."""

    type = "http_error"

    def __init__(self, message: str, *, type: str | None = None, block: str | None = None,
                 status: int | None = None) -> None:
        super().__init__(message, type=type, block=block)
        self.status = status

    def after_attempts(self, attempts: int) -> HttpError:
        """A new error saying how many attempts were made; this one stays as it was raised."""
        return HttpError(f"{self.message} (after {attempts} attempts)", type=self.type, block=self.block,
                         status=self.status)


class BlockTimeout(RunError):
    """A block ran past its own timeout."""

    type = "block_timeout"


class RunTimeout(RunError):
    """The whole run ran past the Start block's timeout."""

    type = "run_timeout"


class StepLimitReached(RunError):
    """The run took max_steps steps without ending (a runaway cycle)."""

    type = "step_limit_reached"



class BudgetExceeded(RunError):
    """A request would pass a budget (the run's, or a tighter one of its block or of a block around it); it is not
    sent. The block's error level decides what follows, as for any error of the block."""

    type = "budget_exceeded"


class TraceWriteFailed(RunError):
    """The run's trace could not be written (disk full, I/O error); the run ends failed."""

    type = "trace_write_failed"


class CheckpointFailed(RunError):
    """A durable run's state could not be written to its checkpoint (a value of a type it cannot hold, the store)."""

    type = "checkpoint_failed"


class WaitTimeout(RunError):
    """A Wait's answer came after its `timeout`."""

    type = "wait_timeout"


class InternalError(Exception):
    """A bug in diagrama or in one of the blocks it ships; error levels never handle it.

    Not a DiagramaError: nothing a user wrote caused it. The executor records it
    like a RunError (`as_dict`) so the run still ends with a result and a trace.
    """

    type = "internal_error"

    def __init__(self, message: str, *, block: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.block = block

    def as_dict(self) -> dict[str, str | None]:
        return {"block": self.block, "type": self.type, "message": self.message}


class WireError(ValueError):
    """A conversation or a body that cannot be translated (the adapter names what)."""


# -- signals: raised and caught within one layer; a user never sees them ------------------------


class RunFailed(Exception):
    """Ends a run with `error`, already recorded; the executor raises and catches it."""

    def __init__(self, error: RunError | InternalError) -> None:
        super().__init__(error.message)
        self.error = error


class RunSuspended(Exception):
    """A Wait's request for an answer: the executor checkpoints the run as `waiting` and ends it for now."""

    def __init__(self, prompt: str, form: dict[str, Any] | None, timeout: float | None) -> None:
        super().__init__(prompt)
        self.prompt = prompt
        self.form = form
        self.timeout = timeout
        self.asked_at = time.time()
        self.address: str | None = None
        """The Wait's address from the run the request has reached (`approve`, then `review/approve` in the caller
        of the Subdiagram `review`): set as each run on the way is checkpointed."""


class RetryableProviderError(Exception):
    """A ProviderError (or an HttpRequest's HttpError) worth another attempt; `wait` is the server's hint in seconds,
    if any."""

    def __init__(self, error: ProviderError | HttpError, wait: float | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.wait = wait


class SimulatorRejected(Exception):
    """The simulator refuses a request, with the vendor's status and error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(str(body))
        self.status = status
        self.body = body


class DocumentTooLarge(Exception):
    """A YAML document expands past the node limit at `line` (1-based)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"the document expands past the node limit at line {line}")
        self.line = line


class UserCodeRaised(Exception):
    """What user code (a Function's, a tool handler's) raised that would otherwise stop more than its step: a
    SystemExit (argparse and click exit so), its own KeyboardInterrupt, GeneratorExit, a StopIteration (which no
    coroutine or future may carry). Carried as an ordinary exception, so that it is the block's error."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(described(original))
        self.original = original


def described(exc: BaseException) -> str:
    """`TypeName: message` of any exception, what user code raised included: a `str()` that raises, or that is empty,
    is never the describer's own failure (`SystemExit: 3`, `ValueError: <unprintable ValueError>`)."""
    if isinstance(exc, UserCodeRaised):
        exc = exc.original
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:  # a user's __str__ that raises: the type alone is shown
        text = f"<unprintable {name}>"
    if isinstance(exc, SystemExit) and exc.code is not None and not text:
        text = str(exc.code)
    return f"{name}: {text}" if text else name


class ScenarioFailed(Exception):
    """A scenario ran and its verdict did not pass; `report` is expected against actual."""

    def __init__(self, report: str) -> None:
        super().__init__(report)
        self.report = report


# -- vendor outcomes that leave nothing usable (docs/VENDORS.md, "Our conversation") -----------------------


class ProviderRefused(ProviderError):
    """The model refused, or a safety/content filter stopped it with no usable content."""

    type = "provider_refused"


class ProviderBlocked(ProviderError):
    """The vendor blocked the prompt itself (Gemini's promptFeedback.blockReason)."""

    type = "provider_blocked"


class OutputTruncated(ProviderError):
    """A tool call was cut off by the token limit; a cut-off text is not an error."""

    type = "output_truncated"
