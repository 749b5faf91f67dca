"""The limits and refusals: size and depth bounds, the errors, and JSON's idea of equality.

Everything the other modules agree on before they touch a file: what is too big or too
deep, which new diagrams we refuse to write, and when two values count as the same data.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime, time
from typing import Any

from engine.format.yamlfile import MAX_DEPTH
from engine.format.yamlfile import MAX_FILE_BYTES as MAX_TEXT_BYTES

__all__ = ["MAX_DEPTH", "MAX_TEXT_BYTES", "EditError", "Unsupported", "check_new", "check_text_size", "json_key", "same"]


class EditError(ValueError):
    """The file cannot be parsed, or the new diagram is not something we can write."""


class Unsupported(Exception):
    """The span editor cannot make this edit; the caller falls back to a ruamel dump."""


def check_text_size(text: str) -> None:
    if not isinstance(text, str):
        raise EditError("the file text must be a string")
    # Cheap bound first: a str has at least as many UTF-8 bytes as characters.
    if len(text) > MAX_TEXT_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise EditError(f"the file is larger than {MAX_TEXT_BYTES} bytes")


def check_new(new: Any) -> None:
    """Refuse what we cannot or must not write, iteratively so that depth cannot crash us."""
    if not isinstance(new, dict):
        raise EditError("the diagram must be a mapping (a JSON object)")
    _check_blocks(new)
    size = 0
    stack: list[tuple[Any, int]] = [(new, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise EditError("too deeply nested")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise EditError(f"keys must be strings, not {type(key).__name__} ({key!r:.40})")
                size += len(key) + 4
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            size += 2
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            size += len(value) + 2
        elif value is None or isinstance(value, bool | int | float):
            size += 5
        else:
            raise EditError(f"cannot write a {type(value).__name__} value in YAML")
        if size > MAX_TEXT_BYTES:
            raise EditError(f"the diagram is larger than {MAX_TEXT_BYTES} bytes")


def _check_blocks(new: dict[str, Any]) -> None:
    # The span editor matches blocks by id: each must be a mapping with one.
    blocks = new.get("blocks")
    if not isinstance(blocks, list):
        raise EditError("the diagram must have a 'blocks' list")
    for n, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise EditError(f"block {n} is not a mapping")
        if not isinstance(block.get("id"), str) or not block["id"]:
            raise EditError(f"block {n} has no string 'id'")


def same(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: 1 == 1.0, but True is not 1 and "1" is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return False


def json_key(key: Any) -> str:
    """A loaded mapping key as the JSON object key it becomes."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, date | datetime | time):
        return key.isoformat()
    return str(key)
