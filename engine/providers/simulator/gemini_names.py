"""Gemini bodies in either spelling: Google's JSON parser reads snake_case field names as camelCase.

The google-genai SDK sends `parameters_json_schema`, `inline_data` and `mime_type`; the REST docs
write `parametersJsonSchema`, `inlineData`, `mimeType`. The simulator reads a body through
`camel_gemini` first, so that its checks see one spelling, as Google's do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["camel_gemini"]

_OPAQUE = {"args", "response", "parametersJsonSchema", "responseJsonSchema", "default", "example", "enum"}
"""Free-form JSON inside a Gemini body: its keys are the user's, never renamed."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def camel_gemini(value: Any, under: str = "") -> Any:
    """A Gemini body with snake_case field names read as camelCase, as Google's JSON parser reads them."""
    if isinstance(value, list):
        return [camel_gemini(item, under) for item in value]
    if not isinstance(value, dict):
        return value
    if under == "properties":  # a Schema's property names are the user's; their values are Schemas
        return {key: camel_gemini(item) for key, item in value.items()}
    renamed: dict[str, Any] = {}
    for key, item in value.items():
        name = _camel(key)
        renamed[name] = item if name in _OPAQUE else camel_gemini(item, name)
    return renamed
