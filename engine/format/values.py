"""Values as the trace shows them: short forms at Debug, whole ones at Detailed.

Only JSON-ready data leaves here; tables become row lists, models become dicts.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from engine.format.tables import DataTable

__all__ = ["full_value", "json_default", "short_value"]

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
    if isinstance(value, DataTable):
        return {"columns": list(value.columns), "rows": [list(row) for row in value.rows]}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
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
