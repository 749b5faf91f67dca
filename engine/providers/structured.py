"""Structured output: a request block's `response_schema` read and checked, and the answer read against it.

The schema is a JSON Schema (draft 2020-12) written inline or as `{file: schema.json}` beside the
diagram (in its folder or a data root, like a CSV table). It is checked against the meta-schema
when the input is validated, so a constant one fails at load; its `$ref`s must stay inside it
(nothing is ever fetched). Each adapter sends it in its vendor's own form; `read_output` parses the
answer's text and validates it, and what does not parse or validate is an `invalid_output` error.
Which models take a schema, and what each vendor's form refuses, is in the adapters' modules.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import jsonschema_rs
import orjson
from pydantic import BeforeValidator, ValidationInfo, WithJsonSchema
from pydantic_core import PydanticCustomError

from engine.errors import ProviderError
from engine.format.paths import DataFolder, PathRefused
from engine.providers.wire import Reply

__all__ = ["ResponseSchema", "read_output", "schema_problem", "subschemas"]

_MAX_ERRORS = 5


def _refuse_fetch(uri: str) -> Any:
    raise ValueError(f"{uri} is outside the schema (diagrama fetches no schema)")


def subschemas(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema inside `schema` (itself first), with its path (`properties.address.items`)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key, value in schema.items():
        where = f"{path}.{key}" if path else key
        if key in ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas") \
                and isinstance(value, dict):
            for name, member in value.items():
                yield from subschemas(member, f"{where}.{name}")
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
            for index, member in enumerate(value):
                yield from subschemas(member, f"{where}.{index}")
        elif key in ("items", "not", "if", "then", "else", "additionalProperties", "contains", "propertyNames",
                     "unevaluatedProperties", "unevaluatedItems") and isinstance(value, dict):
            yield from subschemas(value, where)


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a JSON Schema a request can send (draft 2020-12, `$ref`s inside it), or None."""
    if not isinstance(schema, dict):
        return f"a JSON Schema is a mapping, not {type(schema).__name__}"
    if not schema:
        return "the schema is empty: say what the answer holds (type, properties, required)"
    checked = {key: value for key, value in schema.items() if key != "$schema"}  # jsonschema-rs would fetch an unknown one
    for path, member in subschemas(checked):
        ref = member.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            return f"{path + '.' if path else ''}$ref: '{ref}' is outside the schema; put it under $defs"
    try:
        jsonschema_rs.meta.validate(checked)
        _validator(orjson.dumps(checked, option=orjson.OPT_SORT_KEYS))
    except jsonschema_rs.ValidationError as exc:
        where = ".".join(str(part) for part in exc.instance_path)
        message = str(exc.message).split("\n", 1)[0]
        return f"{where}: {message}" if where else message
    except (jsonschema_rs.ReferencingError, ValueError) as exc:
        return str(exc).split("\n", 1)[0]
    except orjson.JSONEncodeError as exc:  # a number JSON text cannot carry (past 64 bits): no request could send it
        return f"the schema cannot be sent as JSON: {exc}"
    return None


@functools.lru_cache(maxsize=256)
def _validator(canonical: bytes) -> Any:
    """The compiled validator of one schema (its sorted JSON text): built once per process, not per answer."""
    return jsonschema_rs.validator_for(orjson.loads(canonical), validate_formats=True, retriever=_refuse_fetch)


def _read_file(value: Mapping[str, Any], info: ValidationInfo) -> Any:
    written = value["file"]
    if not isinstance(written, str) or not written:
        raise PydanticCustomError("invalid_schema", "{file: …} names a JSON file beside the diagram")
    base = (info.context or {}).get("base_dir")
    folder = base if isinstance(base, DataFolder) else DataFolder(Path(base) if base is not None else Path())
    try:
        path = folder.resolve(written)
    except PathRefused as exc:
        raise PydanticCustomError("invalid_schema", "schema file: {reason}", {"reason": str(exc)}) from None
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise PydanticCustomError("invalid_schema", "cannot read the schema file '{file}': {reason}",
                                  {"file": written, "reason": (exc.strerror or "unreadable").lower()}) from None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise PydanticCustomError("invalid_schema", "the schema file '{file}' is not JSON ({reason}, line {line})",
                                  {"file": written, "reason": exc.msg, "line": exc.lineno}) from None


def _schema_input(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, dict) and set(value) == {"file"}:
        value = _read_file(value, info)
    problem = schema_problem(value)
    if problem:
        raise PydanticCustomError("invalid_schema", "not a JSON Schema: {problem}", {"problem": problem})
    return value


ResponseSchema = Annotated[dict[str, Any], BeforeValidator(_schema_input), WithJsonSchema({
    "anyOf": [{"type": "object", "description": "a JSON Schema (draft 2020-12) the answer must match"},
              {"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"],
               "description": "a JSON file holding the schema, relative to the diagram"}],
})]
"""A pydantic field type: a JSON Schema written inline or as `{file: path}`, checked against the meta-schema."""


def read_output(vendor: str, reply: Reply, schema: dict[str, Any]) -> Any:
    """The answer's text as JSON matching `schema`; None for a turn that called tools instead of answering.

    Raises ProviderError `invalid_output` when the text is not JSON or does not match, naming
    each mismatch by its path (the first five).
    """
    if reply.calls and not reply.text:
        return None
    cut = " (the answer was cut off at the token limit: raise max_tokens)" \
        if reply.finish in ("max_tokens", "context_exceeded") else ""
    try:
        value = orjson.loads(reply.text)
    except orjson.JSONDecodeError:
        shown = reply.text if len(reply.text) <= 80 else reply.text[:79] + "…"
        raise ProviderError(f"{vendor}'s answer is not JSON{cut}: {shown!r}", type="invalid_output") from None
    checked = {key: item for key, item in schema.items() if key != "$schema"}
    errors = list(_validator(orjson.dumps(checked, option=orjson.OPT_SORT_KEYS)).iter_errors(value))
    if errors:
        found = "; ".join(f"{'.'.join(str(p) for p in error.instance_path) or 'the answer'}: {error.message}"
                          for error in errors[:_MAX_ERRORS])
        more = f" (and {len(errors) - _MAX_ERRORS} more)" if len(errors) > _MAX_ERRORS else ""
        raise ProviderError(f"{vendor}'s answer does not match response_schema{cut}: {found}{more}",
                            type="invalid_output")
    return value
