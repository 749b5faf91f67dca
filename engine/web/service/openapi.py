"""The robots API's routes as data (`Operation`: method, path, body model, answers by status), and the OpenAPI 3.1
document built from them and from the models' JSON Schemas.

Built here rather than by a library: Starlette has none of its own, and spectree/apispec would each bring their own
request validation and error shape (a 422 of theirs) beside ours (400 with the problems); pydantic already writes
the schemas, so what is left is this table and a loop. The app mounts its routes from the same table, so a route
and its documentation cannot part.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from engine.web.service.models import ErrorAnswer

__all__ = ["Answer", "Operation", "openapi_document"]

_PARAMETER = re.compile(r"{(\w+)}")
_REF = "#/components/schemas/{model}"


@dataclass(frozen=True)
class Answer:
    description: str
    model: type[BaseModel] | None = None
    media: str = "application/json"
    """The body's media type; "" for an answer without a body."""
    schema: dict[str, Any] | None = None
    """The body's schema where no model gives it (an event stream's text, this document)."""
    headers: dict[str, str] = field(default_factory=dict)
    """Header name → its description (a 202's Location, a 429's Retry-After)."""


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    name: str
    summary: str
    answers: dict[int, Answer]
    body: type[BaseModel] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    """Request headers it reads, name → description (optional ones)."""
    query: dict[str, str] = field(default_factory=dict)
    """Query parameters it reads, name → description (optional ones)."""
    public: bool = False
    """Answered without a key."""


_REFUSALS = {
    401: Answer("no key, or a key this server does not know", ErrorAnswer, headers={"WWW-Authenticate": "Bearer"}),
    429: Answer("the key is past its requests a minute", ErrorAnswer,
                headers={"Retry-After": "seconds until a request is let through"}),
}


def _content(answer: Answer, refs: Mapping[Any, Any]) -> dict[str, Any]:
    if not answer.media:  # no body (a 204)
        return {}
    if answer.model is None:
        return {answer.media: {"schema": answer.schema or {"type": "string"}}}
    return {answer.media: {"schema": refs[(answer.model, "serialization")]}}


def openapi_document(operations: Sequence[Operation], *, title: str, version: str, secured: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `operations`; `secured`: every operation but the public ones needs a bearer key."""
    wanted: list[tuple[type[BaseModel], JsonSchemaMode]] = [(ErrorAnswer, "serialization")]
    for op in operations:
        if op.body is not None:
            wanted.append((op.body, "validation"))
        wanted += [(answer.model, "serialization") for answer in op.answers.values() if answer.model is not None]
    refs, schemas = models_json_schema(list(dict.fromkeys(wanted)), ref_template=_REF)
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        answers = dict(op.answers)
        if secured and not op.public:
            answers = {**_REFUSALS, **answers}  # an operation's own 401/429 stand (OpenAI's error shape)
        item: dict[str, Any] = {
            "operationId": op.name,
            "summary": op.summary,
            "parameters": [
                *({"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                  for name in _PARAMETER.findall(op.path)),
                *({"name": name, "in": "header", "required": False, "description": text, "schema": {"type": "string"}}
                  for name, text in op.headers.items()),
                *({"name": name, "in": "query", "required": False, "description": text, "schema": {"type": "string"}}
                  for name, text in op.query.items()),
            ],
            "responses": {
                str(status): {
                    "description": answer.description,
                    **({"content": _content(answer, refs)} if answer.media else {}),
                    **({"headers": {name: {"description": text, "schema": {"type": "string"}}
                                    for name, text in answer.headers.items()}} if answer.headers else {}),
                }
                for status, answer in sorted(answers.items())
            },
        }
        if op.body is not None:
            item["requestBody"] = {"required": False, "content": {"application/json": {
                "schema": refs[(op.body, "validation")]}}}
        if not secured or op.public:
            item["security"] = []
        paths.setdefault(op.path, {})[op.method.lower()] = item
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {"schemas": schemas.get("$defs", {})},
    }
    if secured:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    return document
