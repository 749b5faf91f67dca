"""OpenAI's chat wire format as the robots API speaks it (engine.web.service.chat): the request and answer models
(`/openapi.json` is built from them), the routes' table, the error body, and the stream's chunks as bytes.

Only what a chat client sends and reads is modelled; a request's other fields (temperature, tools, …) are taken and
left unread: the robot's diagram decides those.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from engine.web.service.openapi import Answer, Operation

__all__ = ["CHAT_OPERATIONS", "CHAT_PATHS", "ChatCompletion", "ChatRequest", "ModelList", "OpenAIError", "chunk",
           "error_body", "usage_of"]

CHAT_PATHS = frozenset({"/v1/chat/completions", "/v1/models"})
"""Paths whose refusals (the gate's 401 and 429 among them) are in OpenAI's error shape."""


class ChatMessage(BaseModel):
    """One message of the conversation; `content` text, or a list of parts of which only `text` ones are read."""

    model_config = ConfigDict(extra="allow")

    role: str = Field(description="system, developer, user, assistant or tool")
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """`POST /v1/chat/completions`: OpenAI's request; `model` is a robot's name. Other fields are accepted, unread."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(description="the robot's name (GET /v1/models lists them)")
    messages: list[ChatMessage] = Field(min_length=1, description="the conversation: its last user message is the "
                                                                  "robot's chat input")
    stream: bool = Field(default=False, description="answer as chat.completion.chunk Server-Sent Events, ending "
                                                    "with `data: [DONE]`")
    stream_options: StreamOptions | None = Field(default=None, description="`include_usage`: a last chunk with usage")
    user: str | None = Field(default=None, description="the end user: the session of a robot with memory, unless "
                                                       "X-Diagrama-Session names one")


class ErrorDetail(BaseModel):
    message: str
    type: str
    code: str | None = None
    param: str | None = None


class OpenAIError(BaseModel):
    """Any refusal of the OpenAI-compatible routes, in OpenAI's shape."""

    error: ErrorDetail


class ModelInfo(BaseModel):
    id: str = Field(description="the robot's name")
    object: Literal["model"] = "model"
    created: int = Field(description="when its diagram file last changed, seconds since the epoch")
    owned_by: str = "diagrama"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelInfo]


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class ChatCompletion(BaseModel):
    """The robot's answer as OpenAI's chat.completion; `id` is `chatcmpl-` and the run's id."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: dict[str, Any] = Field(description="prompt_tokens, completion_tokens, total_tokens: the run's requests'")


_ERROR = Answer
_RUN_HEADERS = {"X-Run-Id": "the run's id (GET /v1/runs/{id})",
                "X-Diagrama-Session": "the session the run took its turn in (a robot with memory)"}

CHAT_OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/v1/models", "listModels", "Every robot as an OpenAI model (its name is the model's id)",
              {200: Answer("the robots", ModelList),
               401: _ERROR("no key, or a key this server does not know", OpenAIError,
                           headers={"WWW-Authenticate": "Bearer"}),
               429: _ERROR("the key is past its requests a minute", OpenAIError,
                           headers={"Retry-After": "seconds until a request is let through"})}),
    Operation("POST", "/v1/chat/completions", "chatCompletion",
              "Run a robot as a chat model: the last user message fills its chat input, its chat output is the "
              "answer (OpenAI's chat.completion; with `stream: true`, chat.completion.chunk events then "
              "`data: [DONE]`)",
              {200: Answer("the run succeeded: its answer (text/event-stream with `stream: true`)", ChatCompletion,
                           headers=_RUN_HEADERS),
               400: _ERROR("the body is not a chat request, or the robot takes no chat (no chat input or output), or "
                           "the message does not fit its input", OpenAIError),
               401: _ERROR("no key, or a key this server does not know", OpenAIError,
                           headers={"WWW-Authenticate": "Bearer"}),
               404: _ERROR("no robot of that name", OpenAIError),
               409: _ERROR("the robot stopped at a Wait (a person must answer: the message names the run to "
                           "resume), or the session's last run is unfinished", OpenAIError),
               413: _ERROR("the body is larger than 8 MB", OpenAIError),
               422: _ERROR("the robot's diagram has problems: it cannot run", OpenAIError),
               429: _ERROR("the key is past its requests a minute", OpenAIError,
                           headers={"Retry-After": "seconds until a request is let through"}),
               500: _ERROR("the run failed (its error), or was interrupted", OpenAIError),
               502: _ERROR("the run failed at a model vendor (its error)", OpenAIError),
               503: _ERROR("the server is draining, or its broker is away: send it again", OpenAIError)},
              body=ChatRequest,
              headers={"X-Diagrama-Session": "the session of a robot with memory (else `user`, else the "
                                             "conversation's earlier messages pick it)"}),
)
"""The OpenAI-compatible routes, in the API's OPERATIONS table."""

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "invalid_request_error",
          409: "invalid_request_error", 413: "invalid_request_error", 422: "invalid_request_error",
          429: "rate_limit_error"}


def error_body(status: int, message: str, code: str | None = None, param: str | None = None) -> bytes:
    """OpenAI's error object: `type` from the status (server_error from 500 on)."""
    detail = {"message": message, "type": _TYPES.get(status, "server_error" if status >= 500 else "api_error"),
              "code": code, "param": param}
    return orjson.dumps({"error": detail})


def usage_of(usage: dict[str, int] | None) -> dict[str, Any]:
    """A run's usage (input/output tokens, cache reads among the input) as OpenAI counts it."""
    given = usage or {}
    prompt, completion = given.get("input_tokens", 0), given.get("output_tokens", 0)
    found: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if given.get("cache_read_tokens"):
        found["prompt_tokens_details"] = {"cached_tokens": given["cache_read_tokens"]}
    if given.get("thinking_tokens"):
        found["completion_tokens_details"] = {"reasoning_tokens": given["thinking_tokens"]}
    return found


def chunk(head: dict[str, Any], delta: dict[str, Any], finish: str | None = None,
          usage: dict[str, Any] | None = None) -> bytes:
    """One `data:` event of a chat.completion.chunk stream; `head`: its id, object, created and model."""
    body: dict[str, Any] = {**head, "choices": [] if usage is not None else [
        {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
    if usage is not None:
        body["usage"] = usage
    return b"data: " + orjson.dumps(body) + b"\n\n"
