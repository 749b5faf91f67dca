"""A tool call's arguments checked against the tool's JSON Schema: exactly (strict), or after coercing simple types.

Models send "42" for an integer or 3.0 for 3; a non-strict tool takes them as meant. What
still fails is reported whole (every schema error at once) as an `invalid_tool_arguments`
tool error, which ToolDispatch hands back to the model as data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.errors import ToolError
from engine.format.schemas import schema_problems

if TYPE_CHECKING:
    from engine.tools.registry import Tool

__all__ = ["check_arguments"]


def _coerce(value: Any, schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(value, str):
        text = value.strip()
        try:
            if kind == "integer" and re.fullmatch(r"[-+]?\d+", text):
                return int(text)
            if kind == "number" and re.fullmatch(r"[-+]?\d+([.,]\d+)?", text):
                return float(text.replace(",", "."))
        except ValueError:
            return value
        if kind == "boolean" and text.lower() in ("true", "false"):
            return text.lower() == "true"
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if kind == "object" and isinstance(value, dict):
        properties = schema.get("properties") or {}
        return {k: _coerce(v, properties.get(k) or {}) for k, v in value.items()}
    if kind == "array" and isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(item, schema["items"]) for item in value]
    return value


def check_arguments(tool: Tool, arguments: Any) -> dict[str, Any]:
    """Validate a call's arguments: exactly (strict), or after coercing simple types."""
    if not isinstance(arguments, dict):
        raise ToolError(f"arguments must be an object, got {type(arguments).__name__}", type="invalid_tool_arguments")
    schema = tool.entry.parameters
    checked = arguments if tool.entry.strict else _coerce(arguments, schema)
    problems = schema_problems(schema, checked, root="arguments")  # patterns matched in linear time: a model's text
    if problems:
        # Every problem at once: a model told only the first fixes it and trips on the next.
        raise ToolError(f"invalid arguments for '{tool.name}': {'; '.join(problems)}", type="invalid_tool_arguments")
    return dict(checked)
