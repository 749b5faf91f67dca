"""Values as the trace shows them: short forms at Debug, whole ones at Detailed.

Only JSON-ready data leaves here; tables become row lists, models become dicts, and an image
or document part shows its type, media type and size, never its base64 (at either level).
`dumps` writes any value a template can make as JSON, integers past 64 bits included.
`json_result` turns what user code returned (a Function's result, a tool handler's) into JSON data, exactly.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import math
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import orjson
from pydantic import BaseModel

from engine.errors import BlockError
from engine.format.parts import shown_part
from engine.format.tables import DataTable

__all__ = ["dumps", "full_value", "json_default", "json_result", "short_value"]

_TEXT = 160
_ITEMS = 5


_SCALARS = frozenset({bool, int, float, type(None)})


def short_value(value: Any, depth: int = 0) -> Any:
    """A bounded preview: long text cut, long lists elided, tables summarised."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict and depth < 3 and len(value) <= 10 and "type" not in value and _small_record(value):
        return {str(key): item for key, item in value.items()}  # shown as it is: the commonest value at Debug
    if value is None or isinstance(value, (bool, int, float, Decimal)):
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


def _small_record(record: dict[Any, Any]) -> bool:
    """Whether every value is a scalar or text short enough to be shown whole (what `short_value` leaves as it is)."""
    for item in record.values():
        kind = type(item)
        if kind not in _SCALARS and (kind is not str or len(item) > _TEXT):
            return False
    return True


def full_value(value: Any) -> Any:
    """The whole value in JSON-ready form."""
    if value is None or isinstance(value, (bool, int, float, str, Decimal)):
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
    """orjson's `default`: tables become row lists, models dicts, sets lists, a Decimal its exact digits."""
    if isinstance(value, Decimal) and value.is_finite():
        return orjson.Fragment(_decimal_text(value))  # written as it is: a JSON number with every digit
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


# -- what user code returned, as JSON data ------------------------------------------------------------------------

_PLAIN = frozenset({str, int, float, bool, type(None)})
_MAX_DEPTH = 200
"""Deeper than any result a function builds on purpose; past it, most likely a structure that contains itself."""
_ACCEPTED = ("dicts, lists, text, numbers, booleans, None, Decimal, dates and times, UUIDs, bytes, sets, "
             "dataclasses and pydantic models")


def json_result(value: Any, notes: list[str] | None = None, *, where: str = "result") -> Any:
    """What user code returned (a Function block's function, a tool handler, an MCP server) as JSON data, exactly.

    `Decimal` → a number of the same value: an int when whole, a float when one holds it exactly (money,
    Postgres `numeric`), else kept as a Decimal that `dumps` writes with all its digits; `datetime`, `date`,
    `time` → ISO 8601 text; `UUID` → text; `bytes` → base64 text, with a note in `notes` (for the Debug trace);
    dataclasses and pydantic models → objects; tuples and sets → lists (a set sorted where it can be); an enum
    → its value; a data table → its rows. Anything else is a BlockError of type `unserializable_result`
    naming the type and where it is (`result.items[2]`), never its `repr`.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict and _flat(value):
        return dict(value)  # the common result, a flat record: a copy, without a converter
    return _Converter(notes).convert(value, where, 0)


def _flat(record: dict[Any, Any]) -> bool:
    """Whether every key is text and every value a plain JSON scalar."""
    for key, item in record.items():  # noqa: SIM110 -- a loop, not all(...): no generator for the commonest result
        if type(key) is not str or type(item) not in _PLAIN:
            return False
    return True


def _decimal_text(value: Decimal) -> bytes:
    return str(value).encode()


def _type_name(value: Any) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _unserializable(where: str, message: str) -> BlockError:
    return BlockError(f"{where}: {message} (a result may hold {_ACCEPTED})", type="unserializable_result")


class _Converter:
    """One conversion: the notes it adds, and the containers on the path (a result that contains itself)."""

    __slots__ = ("notes", "open")

    def __init__(self, notes: list[str] | None) -> None:
        self.notes = notes
        self.open: set[int] = set()

    def convert(self, value: Any, where: str, depth: int) -> Any:
        kind = type(value)
        if kind in _PLAIN:
            return value
        if kind is dict and _flat(value):
            return dict(value)  # a flat record: one pass, no recursion
        if depth > _MAX_DEPTH:
            raise _unserializable(where, f"nests more than {_MAX_DEPTH} levels deep")
        if isinstance(value, Decimal):
            return _decimal(value, where)
        if isinstance(value, enum.Enum):  # before the plain types: a StrEnum's member is also a str
            return self.convert(value.value, where, depth + 1)
        if isinstance(value, str):  # subclasses of the plain types, as their plain values
            return str.__str__(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return float(value)
        if isinstance(value, datetime.date | datetime.time):  # datetime is a date
            return value.isoformat()
        if isinstance(value, uuid.UUID):
            return str(value)
        if isinstance(value, bytes | bytearray | memoryview):
            data = bytes(value)
            if self.notes is not None:
                self.notes.append(f"{where}: {len(data):,} bytes written as base64 text")
            return base64.b64encode(data).decode("ascii")
        return self._container(value, where, depth)

    def _container(self, value: Any, where: str, depth: int) -> Any:
        if id(value) in self.open:
            raise _unserializable(where, "contains itself")
        self.open.add(id(value))
        try:
            return self._items(value, where, depth + 1)
        finally:
            self.open.discard(id(value))

    def _items(self, value: Any, where: str, depth: int) -> Any:
        if isinstance(value, Mapping):
            return {_key(key, where): self.convert(item, f"{where}.{key}", depth) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.convert(item, f"{where}[{index}]", depth) for index, item in enumerate(value)]
        if isinstance(value, set | frozenset):
            items = [self.convert(item, f"{where}[{index}]", depth) for index, item in enumerate(value)]
            try:
                return sorted(items)  # a set has no order; sorted, the same set gives the same list
            except TypeError:
                return items
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: self.convert(getattr(value, f.name), f"{where}.{f.name}", depth)
                    for f in dataclasses.fields(value)}
        if isinstance(value, BaseModel):
            return {name: self.convert(getattr(value, name), f"{where}.{name}", depth)
                    for name in type(value).model_fields}
        if isinstance(value, DataTable):
            return self.convert(value.records(), where, depth)
        if type(value).__module__ == "numpy" and callable(getattr(value, "tolist", None)):
            return self.convert(value.tolist(), where, depth)  # numpy scalars and arrays: their Python values
        raise _unserializable(where, f"a value of type {_type_name(value)} cannot be turned into JSON")


def _decimal(value: Decimal, where: str) -> Any:
    if not value.is_finite():
        raise _unserializable(where, f"the Decimal {value} has no JSON form")
    if value == value.to_integral_value() and value.adjusted() < 4000:  # exact, and short of Python's int limit
        return int(value)
    number = float(value)
    if math.isfinite(number) and Decimal(repr(number)) == value:
        return number  # the float's shortest text is the same number: nothing lost
    return value  # more digits than a float holds: `dumps` writes them all


def _key(key: Any, where: str) -> str:
    if isinstance(key, str):
        return key if type(key) is str else str.__str__(key)
    if isinstance(key, bool) or key is None:
        return orjson.dumps(key).decode()
    if isinstance(key, int | float | Decimal | uuid.UUID):
        return str(key)
    if isinstance(key, datetime.date | datetime.time):
        return key.isoformat()
    raise _unserializable(where, f"a key of type {_type_name(key)} cannot be a JSON object's key")
