"""JSON Schema → Gemini's Schema (the OpenAPI 3.0 subset its functionDeclarations take).

Each keyword is mapped exactly or refused with its property path and a hint (README,
"Gemini's tool schemas"): a tool the model would be offered with a meaning Gemini drops
is a load error, not a quiet change of what the tool accepts.
"""

from __future__ import annotations

from typing import Any, NoReturn

import jsonschema_rs
import orjson

from engine.providers.wire import WireError

__all__ = ["SchemaRefused", "gemini_schema"]

_ANNOTATIONS = frozenset({"$schema", "$id", "$comment"})
"""JSON Schema keywords that say nothing about a value: not sent."""
_SAME = frozenset({"title", "description", "nullable", "required", "propertyOrdering", "minItems", "maxItems",
                   "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "minimum", "maximum",
                   "default", "example"})
"""Keywords Gemini's Schema takes under the same name with the same meaning: sent as they are."""
_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
_FORMATS: dict[str | None, tuple[str, ...]] = {"STRING": ("enum", "date-time"), "NUMBER": ("float", "double"),
                                               "INTEGER": ("int32", "int64")}
"""The formats Gemini's Schema documents per type; the API answers any other STRING format with a 400."""
_DESCRIBE = "remove it and say it in the description"
_HINTS = {
    "oneOf": "use anyOf: the same when no value can match two of its members",
    "allOf": "merge the members into one schema",
    "not": "say what is excluded in the description",
    "if": "split the tool in two, or say the rule in the description",
    "then": "split the tool in two, or say the rule in the description",
    "else": "split the tool in two, or say the rule in the description",
    "exclusiveMinimum": "use minimum (for an integer, the next whole number)",
    "exclusiveMaximum": "use maximum (for an integer, the previous whole number)",
    "multipleOf": _DESCRIBE,
    "uniqueItems": _DESCRIBE,
    "contains": _DESCRIBE,
    "prefixItems": "use items: one schema for every item",
    "patternProperties": "list the properties under properties",
    "propertyNames": "list the properties under properties",
    "unevaluatedProperties": "use additionalProperties: false",
    "dependentRequired": "split the tool in two, or say the rule in the description",
    "dependentSchemas": "split the tool in two, or say the rule in the description",
    "examples": "use example (one value)",
}


class SchemaRefused(WireError):
    """A tool schema keyword Gemini's Schema cannot say exactly: where (`parameters.properties.x.oneOf`), why, what instead."""

    def __init__(self, tool: str, path: str, reason: str, hint: str | None = None) -> None:
        super().__init__(f"tool '{tool}': {path}: {reason}")
        self.tool = tool
        self.path = path
        self.reason = reason
        self.hint = hint


def gemini_schema(schema: Any, tool: str, *, strict: bool = False, notes: list[str] | None = None) -> dict[str, Any]:
    """A tool's JSON Schema `parameters` as Gemini's Schema (the table in README's Gemini section).

    Each keyword is mapped exactly or refused: SchemaRefused names the property path and a hint. Keywords
    left out while ToolDispatch still enforces them (`additionalProperties: false`), and integer enums sent
    as strings, add a Debug note to `notes`.
    """
    converter = _Converter(tool, strict, notes if notes is not None else [])
    problem = _meta_problem(schema)
    if problem is None:
        return converter.convert(schema, "parameters", {}, (), True)
    # Not a JSON Schema at all (`properties: "0"` a few levels down, in a tool written inline rather than in a
    # registry, which checks this at load): refused as such, never mapped into something Gemini would misread.
    # Where the mapping refuses the same keyword, its reason says more (a list of `items` schemas: use one).
    try:
        converter.convert(schema, "parameters", {}, (), True)
    except SchemaRefused as refused:
        if refused.path == problem[0]:
            raise
    except (AttributeError, TypeError, ValueError):
        pass
    converter.refuse(*problem)


def _meta_problem(schema: Any) -> tuple[str, str] | None:
    """Where and why `schema` is not a JSON Schema (draft 2020-12), or None."""
    if not isinstance(schema, dict):
        return None  # the mapping refuses a schema that is not a mapping itself
    try:
        jsonschema_rs.meta.validate({key: value for key, value in schema.items() if key != "$schema"})
    except jsonschema_rs.ValidationError as exc:
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in exc.instance_path)
        return f"parameters{where}", f"not a JSON Schema: {exc.message}"
    except (jsonschema_rs.ReferencingError, ValueError) as exc:
        return "parameters", f"not a JSON Schema: {exc}"
    return None


class _Converter:
    """One tool's schema, keyword by keyword; `coerced` is whether ToolDispatch's coercion reaches the node."""

    def __init__(self, tool: str, strict: bool, notes: list[str]) -> None:
        self.tool = tool
        self.strict = strict
        self.notes = notes

    def refuse(self, path: str, reason: str, hint: str | None = None) -> NoReturn:
        raise SchemaRefused(self.tool, path, reason, hint)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def convert(self, schema: Any, path: str, defs: dict[str, Any], seen: tuple[str, ...],
                coerced: bool) -> dict[str, Any]:
        if not isinstance(schema, dict):
            self.refuse(path, f"a schema must be a mapping, not {orjson.dumps(schema).decode()}",
                        "write {} for any value")
        for key, shape in (("$defs", dict), ("definitions", dict), ("properties", dict), ("anyOf", list)):
            if key in schema and not isinstance(schema[key], shape):  # a hand-written schema's slip, named, not a crash
                self.refuse(f"{path}.{key}", f"{key} must be a {'mapping' if shape is dict else 'list'}, not "
                                             f"{orjson.dumps(schema[key]).decode()}")
        defs = {**defs, **schema.get("$defs", {}), **schema.get("definitions", {})}
        if "$ref" in schema:
            return self.reference(schema, path, defs, seen)
        result: dict[str, Any] = {}
        kind = self.kind(schema, path, result)
        if "enum" in schema or "const" in schema:
            self.enum(schema, path, kind, result, coerced)
            kind = result.get("type")
        written = schema.get("type")  # what ToolDispatch's coercion reads (engine/tools/arguments.py)
        only: dict[str, Any] | None = None  # the one member of an anyOf besides null
        for key, value in schema.items():
            where = f"{path}.{key}"
            if key in _ANNOTATIONS or key in ("$defs", "definitions", "type", "enum", "const"):
                continue
            if key in _SAME:
                result[key] = value
            elif key == "format":
                self.format(value, where, kind, result)
            elif key == "properties":
                inner = coerced and written == "object"
                result[key] = {name: self.convert(item, f"{where}.{name}", defs, seen, inner)
                               for name, item in value.items()}
            elif key == "items":
                if not isinstance(value, dict):
                    self.refuse(where, "items as a list (one schema per position) has no Gemini form",
                                "use one schema for every item")
                result[key] = self.convert(value, where, defs, seen, coerced and written == "array")
            elif key == "anyOf":
                members = [(i, m) for i, m in enumerate(value) if not (isinstance(m, dict) and m.get("type") == "null")]
                if len(members) < len(value):
                    result["nullable"] = True
                converted = [self.convert(m, f"{where}[{i}]", defs, seen, False) for i, m in members]
                if len(converted) == 1:
                    only = converted[0]
                else:
                    result[key] = converted
            elif key == "additionalProperties":
                self.additional(value, where)
            else:
                self.refuse(where, f"Gemini's Schema has no '{key}'", _HINTS.get(key, "remove it, or say it in the description"))
        return self.merge(only, result, path) if only is not None else result

    def reference(self, schema: dict[str, Any], path: str, defs: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
        """A local `$ref`, inlined; keywords beside it apply too (the outer annotations win)."""
        ref = str(schema["$ref"])
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith(("#/$defs/", "#/definitions/")) or name not in defs:
            self.refuse(f"{path}.$ref", f"{ref!r} does not name a local $defs entry", "inline the schema")
        if name in seen:
            self.refuse(f"{path}.$ref", f"recursive {ref!r} cannot be written as a Gemini schema",
                        "cut the recursion at a fixed depth")
        target = self.convert(defs[name], path, defs, (*seen, name), False)
        beside = {k: v for k, v in schema.items() if k not in ("$ref", "$defs", "definitions")}
        return self.merge(target, self.convert(beside, path, defs, seen, False), path) if beside else target

    def merge(self, inner: dict[str, Any], outer: dict[str, Any], path: str) -> dict[str, Any]:
        """One schema from two that must both hold; a keyword both set differently cannot be joined exactly."""
        merged = dict(inner)
        for key, value in outer.items():
            if key in ("title", "description") or key not in merged or merged[key] == value:
                merged[key] = value
            elif key == "nullable":
                merged[key] = bool(merged[key]) and bool(value)
            else:
                self.refuse(f"{path}.{key}", f"'{key}' is set both here and in the schema it joins "
                                             f"({merged[key]!r}, {value!r})", "keep one of them")
        return merged

    def kind(self, schema: dict[str, Any], path: str, result: dict[str, Any]) -> str | None:
        """The Gemini type (`type: [x, "null"]` is x, nullable); None when the schema has no type."""
        if "type" not in schema:
            return None
        value = schema["type"]
        types = value if isinstance(value, list) else [value]
        if not all(isinstance(t, str) and t in _TYPES for t in types):
            self.refuse(f"{path}.type", f"unknown type {value!r}")
        real = [t for t in types if t != "null"]
        if len(real) > 1:
            self.refuse(f"{path}.type", f"a type list {value!r} has no Gemini form", "use anyOf with one type in each member")
        if len(real) < len(types):
            result["nullable"] = True
        result["type"] = (real[0] if real else "null").upper()
        return str(result["type"])

    def enum(self, schema: dict[str, Any], path: str, kind: str | None, result: dict[str, Any], coerced: bool) -> None:
        """enum / const: Gemini's enum is a list of strings, on a STRING."""
        if "enum" in schema and "const" in schema:
            self.refuse(f"{path}.const", "both const and enum", "keep one of them")
        key = "const" if "const" in schema else "enum"
        where = f"{path}.{key}"
        values = [schema["const"]] if key == "const" else schema["enum"]
        if not isinstance(values, list) or not values:
            self.refuse(where, "an empty enum allows no value")
        real = [v for v in values if v is not None]
        if len(real) < len(values) and kind is None:
            result["nullable"] = True
        shown = orjson.dumps(values).decode()
        if not real:
            if kind not in (None, "NULL"):
                self.refuse(where, f"{shown} allows no {kind.lower()} value")
            result["type"] = "NULL"
        elif all(isinstance(v, bool) for v in real):
            if set(real) != {True, False} or kind not in (None, "BOOLEAN"):
                self.refuse(where, f"Gemini's enum holds strings only, so a boolean cannot be limited to {shown}",
                            "leave the property out and let the handler use the one value, or use type: boolean")
            result["type"] = "BOOLEAN"  # true and false: every boolean
        elif all(isinstance(v, str) for v in real):
            if kind not in (None, "STRING"):
                self.refuse(where, f"string values {shown} on type {kind.lower()}")
            result["type"] = "STRING"
            result["enum"] = real
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in real) and kind == "INTEGER":
            if self.strict or not coerced:
                why = ("the tool is strict, so its arguments are not coerced back" if self.strict
                       else "ToolDispatch coerces arguments only through properties and items")
                self.refuse(where, f"Gemini's enum holds strings only, and the model's \"1\" would not become 1: {why}",
                            "use minimum/maximum, or a string enum" + ("; or make the tool non-strict" if self.strict else ""))
            if "format" in schema:
                self.refuse(f"{path}.format", "an integer enum is sent as format: enum, so it takes no other format",
                            "remove the format")
            result.update(type="STRING", format="enum", enum=[str(v) for v in real])
            sent = orjson.dumps(result["enum"]).decode()
            self.note(f"tool '{self.tool}': {where} goes to Gemini as type STRING, format enum {sent} (Gemini's "
                      "enum holds strings only); ToolDispatch turns the model's string back into the integer")
        else:
            self.refuse(where, f"Gemini's enum holds strings only, not {shown}"
                        + (" (integer values need type: integer)" if kind != "INTEGER" and
                           all(isinstance(v, int) and not isinstance(v, bool) for v in real) else ""),
                        "use a string enum, or minimum/maximum")

    def format(self, value: Any, where: str, kind: str | None, result: dict[str, Any]) -> None:
        """format: only those Gemini documents for the type (an integer enum's `enum` is set by `enum`)."""
        allowed = _FORMATS.get(kind, ())
        if value not in allowed:
            takes = f"takes only {' and '.join(allowed)}" if allowed else "takes no format"
            self.refuse(where, f"Gemini {takes} on {kind or 'a schema without type'}, not {value!r}",
                        "remove it, or say it with pattern or in the description (ToolDispatch does not check formats)")
        if value == "enum" and "enum" not in result:
            self.refuse(where, "format: enum needs enum values", "add enum, or remove the format")
        result["format"] = value

    def additional(self, value: Any, where: str) -> None:
        if value is False:
            self.note(f"tool '{self.tool}': {where}: false is not sent (Gemini's Schema has no such field); "
                      "ToolDispatch still refuses other keys when it checks the arguments")
        elif value is not True and value != {}:  # true and {}: any other key, which says nothing
            self.refuse(where, "a schema for the other keys has no Gemini form", "list the properties under properties")


# -- the reply, as a model: a wrong type anywhere is a WireError, not a crash further on --
