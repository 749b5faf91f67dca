"""Values as the trace shows them: short forms at Debug, whole ones at Detailed.

Only JSON-ready data leaves here; tables become row lists, models become dicts, and an image
or document part shows its type, media type and size, never its base64 (at either level).
`dumps` writes any value a template can make as JSON, integers past 64 bits included.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
from pydantic import BaseModel

from engine.format.parts import shown_part
from engine.format.tables import DataTable

__all__ = ["dumps", "full_value", "json_default", "short_value"]

_TEXT = 160
_ITEMS = 5


def short_value(value: Any, depth: int = 0) -> Any:
    """A bounded preview: long text cut, long lists elided, tables summarised."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= _TEXT else value[: _TEXT - 1] + "…"
    if isinstance(value, DataTable):
        return {"table": f"{len(value)} rows", "columns": list(value.columns),
                "last": short_value(value[-1], depth + 1) if len(value) else None}
    if isinstance(value, BaseModel):
        return short_value(value.model_dump(mode="json", exclude_defaults=True), depth)
    if isinstance(value, dict) and "type" in value:  # a part is shown whole however deep: it is small that way
        part = shown_part(value)
        if part is not None:
            return part
    if depth >= 3:
        return f"<{type(value).__name__}>"
    if isinstance(value, dict):
        items = list(value.items())
        shown = {str(k): short_value(v, depth + 1) for k, v in items[:10]}
        if len(items) > 10:
            shown["…"] = f"{len(items) - 10} more keys"
        return shown
    if isinstance(value, (list, tuple)):
        shown_list = [short_value(v, depth + 1) for v in value[:_ITEMS]]
        if len(value) > _ITEMS:
            shown_list.append(f"… {len(value) - _ITEMS} more")
        return shown_list
    return short_value(repr(value), depth)


def full_value(value: Any) -> Any:
    """The whole value in JSON-ready form."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, DataTable):  # cells as any value (a history's parts are shown without their base64)
        return {"columns": list(value.columns), "rows": [[full_value(cell) for cell in row] for row in value.rows]}
    if isinstance(value, BaseModel):
        return full_value(value.model_dump(mode="json"))
    if isinstance(value, dict):
        part = shown_part(value) if "type" in value else None
        if part is not None:
            return part
        return {str(k): full_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [full_value(v) for v in value]
    return repr(value)


def json_default(value: Any) -> Any:
    """orjson's `default`: tables become row lists, models dicts, sets lists."""
    records = getattr(value, "records", None)
    if callable(records):
        return records()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def dumps(value: Any, *, option: int = 0) -> bytes:
    """JSON bytes for any value: orjson, else a slower writer that never refuses.

    orjson refuses integers past 64 bits (`2 ** 70` in a template) without calling
    `default`, and anything `json_default` does not know; the fallback writes such
    integers as JSON numbers, and unknown objects as their repr.
    """
    try:
        return orjson.dumps(value, default=json_default, option=option)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        indent = 2 if option & orjson.OPT_INDENT_2 else None
        text = json.dumps(_plain(value), ensure_ascii=False, allow_nan=False, indent=indent,
                          separators=(",", ": " if indent else ":"), sort_keys=bool(option & orjson.OPT_SORT_KEYS))
        return text.encode() + (b"\n" if option & orjson.OPT_APPEND_NEWLINE else b"")


def _plain(value: Any, depth: int = 0) -> Any:
    """`value` as the stdlib json module can write it, in orjson's forms."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # orjson writes NaN and infinities as null
    if depth > 200:  # deeper than any value a template builds; a cycle, most likely
        return f"<{type(value).__name__}>"
    if isinstance(value, dict):
        return {str(key): _plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(item, depth + 1) for item in value]
    try:
        return _plain(json_default(value), depth + 1)
    except TypeError:
        pass
    try:
        return orjson.loads(orjson.dumps(value))  # datetimes, enums, dataclasses: orjson's own forms
    except TypeError:
        return repr(value)
