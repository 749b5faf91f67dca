"""A scenario's scripted replies, per block id: a model's (`Reply`, through its vendor's wire), a Function's
(`FunctionReply`: what its code returns or raises), an HttpRequest's (`HttpReply`: an HTTP answer) and a
Wait's (`WaitReply`: a person's answer), told apart by their keys as they are read (`reply_kind`), and held
to the kind of the block they script (`misfit_replies`) before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from engine.compile.diagram import CompiledBlock
from engine.testing.web_scenarios import HTTP_BLOCK, HttpReply

__all__ = ["AnyReply", "FunctionReply", "Reply", "WaitReply", "as_function_reply", "block_kind", "misfit_replies",
           "reply_kind"]


class ToolCallReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ErrorReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: int = Field(ge=400, le=599)
    retry_after: float | None = None
    message: str | None = None
    type: str | None = None
    code: str | None = Field(default=None, description="Groq's error code (the usual one for the status if absent)")


class CitationReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    source: str


class Reply(BaseModel):
    """One scripted vendor reply: text and/or tool calls and how the turn ended, or an HTTP error; optionally late."""

    model_config = ConfigDict(extra="forbid")
    text: str | None = None
    tool_calls: list[ToolCallReply] | None = None
    error: ErrorReply | None = None
    delay: float | None = Field(default=None, ge=0)
    match: str | None = Field(default=None, description="only for a request whose last user text contains this")
    stop_reason: str | None = Field(default=None, description="the vendor's own stop value, sent as it is")
    finish: Literal["complete", "tool_calls", "max_tokens", "refused", "blocked", "paused", "context_exceeded"] | None = \
        Field(default=None, description="how the turn ends, in each vendor's wire form (only Anthropic pauses; only "
                                        "Gemini blocks a prompt, the others refuse)")
    refusal: str | None = Field(default=None, description="the refusal text the vendor gives")
    blocked: str | None = Field(default=None, description="the prompt is blocked for this reason (e.g. SAFETY)")
    thinking: str | None = Field(default=None, description="the model's reasoning, in the vendor's form")
    citations: list[CitationReply] | None = None
    usage: dict[str, int] | None = None
    pieces: list[str] | None = Field(default=None, description="when the block streams, its text in these pieces "
                                                                 "(the text is their join; without them, a word each)")
    break_after: int | None = Field(default=None, ge=0, description="when the block streams, the stream breaks after "
                                                                    "this many pieces of text (0: before the first)")
    output: Any = Field(default=None, description="a structured answer (for a block with response_schema), sent as the "
                                                  "vendor's JSON answer text; it is checked against the schema as a "
                                                  "real answer is")

    @model_validator(mode="after")
    def _output_alone(self) -> Reply:
        if self.output is not None and (self.text is not None or self.tool_calls):
            raise ValueError("a reply gives output (the structured answer) or text and tool_calls, not both")
        if self.pieces is not None and self.text is not None and "".join(self.pieces) != self.text:
            raise ValueError("a reply's pieces must make up its text (or give pieces alone)")
        return self


class FunctionReply(BaseModel):
    """One scripted outcome of a Function block: what its function returns, or the error it raises."""

    model_config = ConfigDict(extra="forbid")
    result: Any = Field(default=None, description="what the function returns (the block's `result`)")
    error: str | None = Field(default=None, description="the function raises: a function_error with this message")

    @model_validator(mode="after")
    def _one_outcome(self) -> FunctionReply:
        if "result" in self.model_fields_set and self.error is not None:
            raise ValueError("a Function reply is either {result: ...} or {error: \"...\"}, not both")
        return self


class WaitReply(BaseModel):
    """A person's scripted answer to a Wait block: checked against its form, as `diagrama resume` checks one."""

    model_config = ConfigDict(extra="forbid")
    answer: Any = Field(description="the answer, as the Wait's form describes it (the block's `answer`)")
    waited: float = Field(default=0.0, ge=0, description="seconds the person pretends to have taken (past the Wait's "
                                                         "timeout: wait_timeout)")


def reply_kind(value: Any) -> str:
    """An HTTP answer has a status (or a timeout or a dropped connection); a Function's outcome a result or an
    error message; a person's answer to a Wait an answer; anything else is a model's reply (whose error is a
    mapping: {status: 529})."""
    if isinstance(value, dict):
        if "answer" in value:
            return "wait"
        if "status" in value or value.get("error") in ("timeout", "connection"):
            return "http"
        if "result" in value or isinstance(value.get("error"), str):
            return "function"
    return "vendor"


AnyReply = Annotated[Annotated[Reply, Tag("vendor")] | Annotated[HttpReply, Tag("http")]
                     | Annotated[FunctionReply, Tag("function")] | Annotated[WaitReply, Tag("wait")],
                     Discriminator(reply_kind)]
"""A block's scripted reply, of the kind its keys say (`reply_kind`)."""

_WANTED = {
    "function": "{result: ...} or {error: \"...\"}",
    "http": "an HTTP answer ({status: 200, json: ...}, or {error: timeout})",
    "vendor": "a model's reply ({text: ...}, {tool_calls: [...]}, or {error: {status: 529}})",
    "wait": "a person's answer ({answer: ..., waited: seconds})",
}


def as_function_reply(reply: BaseModel) -> FunctionReply | None:
    """The reply as a Function's outcome: a FunctionReply, or `{error: timeout}` (read as an HTTP answer, but for a
    Function block the error message it raises); None for any other kind."""
    if isinstance(reply, FunctionReply):
        return reply
    if isinstance(reply, HttpReply) and reply.error is not None and reply.model_fields_set <= {"error"}:
        return FunctionReply(error=reply.error)
    return None


def block_kind(compiled: CompiledBlock | None, scripted: Sequence[BaseModel] = ()) -> str:
    """The kind of replies a block takes; for a block only a run knows (None: in a subdiagram whose path is a
    template), the kind its first reply is."""
    if compiled is None:
        first = scripted[0] if scripted else None
        return ("function" if isinstance(first, FunctionReply) else "http" if isinstance(first, HttpReply)
                else "wait" if isinstance(first, WaitReply) else "vendor")
    if type(compiled.impl).code_input is not None:  # a block that calls code (a Function) is scripted by outcomes
        return "function"
    if type(compiled.impl).asks_person:  # a Wait, by a person's answers
        return "wait"
    return "http" if compiled.type_name == HTTP_BLOCK else "vendor"


def misfit_replies(replies: Mapping[str, Sequence[BaseModel]], blocks: Mapping[str, CompiledBlock | None]) -> list[str]:
    """A failure for each block scripted with replies of another kind than it takes; `blocks` are the scripted
    blocks by their address (`ask`, `sub/ask`), None for one in a subdiagram only a run knows."""
    failures = []
    for block, scripted in replies.items():
        compiled = blocks[block]
        kind = block_kind(compiled, scripted)
        wrong = [number for number, reply in enumerate(scripted, start=1)
                 if not (as_function_reply(reply) is not None if kind == "function"
                         else isinstance(reply, WaitReply) if kind == "wait"
                         else isinstance(reply, HttpReply) if kind == "http"
                         else isinstance(reply, Reply))]
        if wrong:
            shown = compiled.type_name if compiled is not None else "in a subdiagram only a run knows"
            failures.append(f"replies: block '{block}' ({shown}): reply {', '.join(map(str, wrong))} must be "
                            f"{_WANTED[kind]}")
    return failures
