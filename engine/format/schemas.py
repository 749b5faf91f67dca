"""JSON Schemas written in a diagram or a registry (a Wait's form, a tool's parameters) held against values from
outside (a person's answer, a model's tool arguments).

They are checked on jsonschema-rs with its `regex` engine for `pattern` and `patternProperties`, whose matching time
grows linearly with the text whatever the pattern: Python's `re`, under the `jsonschema` package, took 21–100 s to
refuse a 30-character answer to an e-mail-like pattern (`^([a-z0-9])(([-.]|[_]+)?([a-z0-9]+))*@…`), holding the
server. That engine has no lookaround and no backreferences, so a schema written with them is refused where it is
written (`schema_refusal`, at load). A schema that arrives at run time (an MCP server's tool) and needs them is
checked with the backtracking engine under a step limit instead: slower, never unbounded.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jsonschema_rs
import orjson

__all__ = ["schema_problems", "schema_refusal"]

_BACKTRACK_LIMIT = 100_000
"""Steps a backtracking match may take (a run-time schema's lookaround pattern) before it stops."""
_NOT_LINEAR = ("patterns are matched in linear time, which leaves out lookahead, lookbehind and backreferences "
               "((?=…), (?!…), (?<=…), \\1): write the pattern without them")


def _refuse_fetch(uri: str) -> Any:
    raise ValueError(f"{uri} is outside the schema (diagrama fetches no schema)")


def _canonical(schema: Mapping[str, Any]) -> bytes:
    """The schema's sorted JSON text, `$schema` left out (given an unknown one, jsonschema-rs would fetch it)."""
    return orjson.dumps({key: value for key, value in schema.items() if key != "$schema"}, option=orjson.OPT_SORT_KEYS)


@functools.lru_cache(maxsize=256)
def _linear(canonical: bytes) -> Any:
    """The validator of one schema, built once a process; jsonschema_rs.ValidationError for a pattern it refuses."""
    return jsonschema_rs.validator_for(orjson.loads(canonical), retriever=_refuse_fetch,
                                       pattern_options=jsonschema_rs.RegexOptions())


@functools.lru_cache(maxsize=64)
def _bounded(canonical: bytes) -> Any:
    return jsonschema_rs.validator_for(orjson.loads(canonical), retriever=_refuse_fetch,
                                       pattern_options=jsonschema_rs.FancyRegexOptions(backtrack_limit=_BACKTRACK_LIMIT))


def _message(exc: jsonschema_rs.ValidationError) -> str:
    where = ".".join(str(part) for part in exc.instance_path)
    message = str(exc.message).split("\n", 1)[0]
    if message.endswith('is not a "regex"'):
        message = f"{message}: {_NOT_LINEAR}"
    return f"{message} (at {where})" if where else message


def schema_refusal(schema: Mapping[str, Any]) -> str | None:
    """Why `schema` is not one we can hold values to (not a JSON Schema, a reference outside it, a pattern the
    linear engine does not take), naming where in it (`… (at properties.email.pattern)`); None when it is."""
    try:
        canonical = _canonical(schema)
        checked = orjson.loads(canonical)
        jsonschema_rs.meta.validate(checked)
        _linear(canonical)
    except jsonschema_rs.ValidationError as exc:
        return _message(exc)
    except (jsonschema_rs.ReferencingError, ValueError) as exc:
        return str(exc).split("\n", 1)[0]
    except (orjson.JSONEncodeError, TypeError) as exc:  # a number past 64 bits, a value JSON cannot hold
        return f"the schema cannot be read as JSON: {exc}"
    return None


def schema_problems(schema: Mapping[str, Any], value: Any, root: str = "answer") -> list[str]:
    """What is wrong with `value` for `schema`: every problem, one line each (`path: message`, `root` for the value
    itself), in the order of their paths; none when it fits."""
    canonical = _canonical(schema)
    try:
        validator = _linear(canonical)
    except jsonschema_rs.ValidationError:
        validator = _bounded(canonical)  # a lookaround pattern in a schema that came at run time
    try:
        errors = list(validator.iter_errors(value))
    except ValueError as exc:  # a value JSON cannot hold (a number past 64 bits, a key that is not text)
        return [f"{root}: {str(exc).splitlines()[0]}"]
    problems = sorted((tuple(str(part) for part in error.instance_path), str(error.message)) for error in errors)
    return [f"{'.'.join(path) or root}: {message}" for path, message in problems]
