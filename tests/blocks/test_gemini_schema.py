"""JSON Schema → Gemini's Schema, keyword by keyword: the table in README's Gemini section.

Each keyword is mapped exactly or refused with its property path and a hint; what the wire and
the load checks do with it is in test_request_blocks.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.providers import SchemaRefused, gemini_schema


def wrapped(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": schema}}


def converted(schema: dict[str, Any], **options: Any) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    result = gemini_schema(wrapped(schema), "t", notes=notes, **options)
    return result["properties"]["x"], notes


MAPPED = [
    ({"type": "string", "title": "T", "description": "d", "minLength": 1, "maxLength": 9, "pattern": "^a",
      "default": "a", "example": "ab"},
     {"type": "STRING", "title": "T", "description": "d", "minLength": 1, "maxLength": 9, "pattern": "^a",
      "default": "a", "example": "ab"}),
    ({"type": "integer", "minimum": 1, "maximum": 9, "format": "int64"},
     {"type": "INTEGER", "minimum": 1, "maximum": 9, "format": "int64"}),
    ({"type": "number", "format": "double"}, {"type": "NUMBER", "format": "double"}),
    ({"type": "string", "format": "date-time"}, {"type": "STRING", "format": "date-time"}),
    ({"type": ["string", "null"]}, {"type": "STRING", "nullable": True}),
    ({"anyOf": [{"type": "string"}, {"type": "null"}], "title": "X"}, {"type": "STRING", "nullable": True, "title": "X"}),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}),
    ({"enum": ["a", "b"]}, {"type": "STRING", "enum": ["a", "b"]}),
    ({"type": "string", "const": "a"}, {"type": "STRING", "enum": ["a"]}),
    ({"enum": ["a", None]}, {"type": "STRING", "enum": ["a"], "nullable": True}),
    ({"type": "boolean", "enum": [True, False]}, {"type": "BOOLEAN"}),
    ({"type": "integer", "enum": [1, 2]}, {"type": "STRING", "format": "enum", "enum": ["1", "2"]}),
    ({"type": "array", "items": {"type": "integer", "const": 3}, "minItems": 1, "maxItems": 2},
     {"type": "ARRAY", "items": {"type": "STRING", "format": "enum", "enum": ["3"]}, "minItems": 1, "maxItems": 2}),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "minProperties": 1,
      "maxProperties": 3, "propertyOrdering": ["a"], "additionalProperties": True},
     {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["a"], "minProperties": 1,
      "maxProperties": 3, "propertyOrdering": ["a"]}),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
     {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}),
    ({"$comment": "c", "type": "string"}, {"type": "STRING"}),
]


@pytest.mark.parametrize(("schema", "expected"), MAPPED)
def test_mapped_keywords(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert converted(schema)[0] == expected


def test_removed_or_rewritten_keywords_leave_a_debug_note() -> None:
    _, notes = converted({"type": "object", "properties": {"a": {"type": "integer", "enum": [1]}},
                          "additionalProperties": False})
    assert len(notes) == 2
    assert notes[0].startswith("tool 't': parameters.properties.x.properties.a.enum goes to Gemini as type STRING")
    assert notes[1].startswith("tool 't': parameters.properties.x.additionalProperties: false is not sent")


def test_a_ref_is_inlined_with_the_keywords_beside_it() -> None:
    schema = {"type": "object", "$defs": {"Size": {"type": "string", "description": "inner", "maxLength": 3}},
              "properties": {"x": {"$ref": "#/$defs/Size", "description": "outer"}}}
    assert gemini_schema(schema, "t")["properties"]["x"] == {"type": "STRING", "description": "outer", "maxLength": 3}


REFUSED = [
    ({"oneOf": [{"type": "string"}]}, "oneOf", "anyOf"),
    ({"allOf": [{"type": "string"}]}, "allOf", "merge"),
    ({"not": {"type": "string"}}, "not", "description"),
    ({"type": "integer", "exclusiveMinimum": 0}, "exclusiveMinimum", "minimum"),
    ({"type": "number", "multipleOf": 2}, "multipleOf", "description"),
    ({"type": "array", "uniqueItems": True}, "uniqueItems", "description"),
    ({"type": "array", "prefixItems": [{"type": "string"}]}, "prefixItems", "items"),
    ({"type": "array", "items": [{"type": "string"}]}, "items", "one schema"),
    ({"type": "object", "patternProperties": {"^a": {}}}, "patternProperties", "properties"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "additionalProperties", "properties"),
    ({"type": "string", "examples": ["a"]}, "examples", "example"),
    ({"type": ["string", "integer"]}, "type", "anyOf"),
    ({"type": "string", "format": "email"}, "format", "pattern"),
    ({"type": "string", "format": "enum"}, "format", "enum"),
    ({"type": "boolean", "format": "int32"}, "format", "pattern"),
    ({"type": "boolean", "const": True}, "const", "type: boolean"),
    ({"type": "number", "enum": [1.5, 2.5]}, "enum", "minimum"),
    ({"enum": [1, 2]}, "enum", "string enum"),  # integers without type: integer
    ({"enum": ["a", 1]}, "enum", "string enum"),
    ({"enum": []}, "enum", None),
    ({"anyOf": [{"type": "null"}, {"type": "integer", "enum": [1]}]}, "anyOf[1].enum", "minimum"),  # not coerced there
    ({"$ref": "#/$defs/Nowhere"}, "$ref", "inline"),
    # A hand-written schema's wrong shapes are named, never a crash (found by the loader's property test).
    ({"type": "object", "properties": "0"}, "properties", None),
    ({"anyOf": {"type": "string"}}, "anyOf", None),
    ({"$defs": ["A"], "type": "string"}, "$defs", None),
]


@pytest.mark.parametrize(("schema", "keyword", "hint"), REFUSED)
def test_refused_keywords_name_the_property_path_and_a_hint(schema: dict[str, Any], keyword: str,
                                                            hint: str | None) -> None:
    with pytest.raises(SchemaRefused) as caught:
        converted(schema)
    assert caught.value.path == f"parameters.properties.x.{keyword}"
    assert str(caught.value).startswith(f"tool 't': parameters.properties.x.{keyword}: ")
    if hint is not None:
        assert hint in (caught.value.hint or "")


def test_a_strict_tool_refuses_an_integer_enum() -> None:
    with pytest.raises(SchemaRefused) as caught:
        converted({"type": "integer", "enum": [1, 2]}, strict=True)
    assert "strict" in caught.value.reason and "non-strict" in (caught.value.hint or "")


@pytest.mark.parametrize(("nested", "path"), [
    ({"type": "object", "properties": "0"}, "parameters.properties.a.properties"),  # a fuzzed diagram's traceback
    ({"anyOf": "x"}, "parameters.properties.a.anyOf"),
    ({"type": "string", "enum": "x"}, "parameters.properties.a.enum"),
    ({"type": "object", "required": "x"}, "parameters.properties.a.required"),
])
def test_what_is_not_a_json_schema_is_refused_at_its_path(nested: dict[str, Any], path: str) -> None:
    with pytest.raises(SchemaRefused) as refused:
        gemini_schema({"type": "object", "properties": {"a": nested}}, "t")
    assert refused.value.path == path
