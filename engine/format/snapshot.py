"""A run's values as bytes and back, exactly: the checkpoint's encoding.

JSON (orjson) for what JSON holds as it is: text, booleans, null, 64-bit integers, finite
floats, lists and mappings with text keys. The rest is written as a tagged object whose one
key is `"\\u0000"`, a key no template writes: data tables (columns, rows and the CSV source
they came from), integers past 64 bits, NaN and the infinities, tuples, sets, mappings whose
keys are not text (or that use the tag's key), dates and datetimes (a template's `now()`, `today()`).
So a checkpointed scope comes back equal and of the same types. A value of another type (a
handle, a model object) cannot be written: the error names the variable and the path to it.

The walk copies nothing while nothing needs a tag, so a scope of plain values costs one pass
over it before orjson's own.

Bytes that do not decode (a truncated row, a hand-edited or tampered one) raise SnapshotDamaged, never
what the decoder met: the store's readers name the run and the row and refuse to go on from it.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import orjson

from engine.format.instant import Instant
from engine.format.tables import DataTable

__all__ = ["SnapshotDamaged", "SnapshotError", "decode", "encode", "encode_value"]

TAG = "\x00"
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson writes as a number


class SnapshotError(ValueError):
    """A value that cannot be checkpointed; `where` is its path (`history[3].content`)."""

    def __init__(self, where: str, kind: str) -> None:
        super().__init__(f"'{where}' holds a {kind}, which a checkpoint cannot hold "
                         "(text, numbers, booleans, null, lists, mappings and data tables can)")
        self.where = where


class SnapshotDamaged(ValueError):
    """Stored bytes that are not what a checkpoint writes; the message says what is wrong with them."""


def encode(values: dict[str, Any]) -> bytes:
    """`values` (a mapping of names) as bytes; SnapshotError naming the first value that cannot be written."""
    return orjson.dumps({name: _enc(value, name) for name, value in values.items()})


def encode_value(value: Any, where: str) -> Any:
    """`value` as orjson writes it exactly (tagged where need be); `where` names it in a SnapshotError."""
    return _enc(value, where)


def decode(data: bytes | str) -> Any:
    """The value `encode` or `encode_value` wrote; SnapshotDamaged for bytes that are not such a value."""
    try:
        return _dec(orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        raise SnapshotDamaged(f"not JSON ({exc}; {len(data)} bytes)") from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
        raise SnapshotDamaged(f"not a value a checkpoint writes ({type(exc).__name__}: {exc})") from None


def _enc(value: Any, where: str) -> Any:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return value if _INT_MIN <= value <= _INT_MAX else {TAG: "int", "v": str(value)}
    if kind is float:
        return value if math.isfinite(value) else {TAG: "float", "v": repr(value)}
    if kind is list:
        return _enc_list(value, where)
    if kind is dict:
        return _enc_dict(value, where)
    if kind is DataTable:
        source = [value.source[0], list(value.source[1])] if value.source else None
        return {TAG: "table", "c": list(value.columns), "r": _enc_list([list(r) for r in value.rows], where),
                "s": source}
    if kind is tuple:
        return {TAG: "tuple", "v": _enc_list(list(value), where)}
    if kind is set or kind is frozenset:
        return {TAG: kind.__name__, "v": _enc_list(list(value), where)}
    if isinstance(value, datetime.datetime):
        return {TAG: "datetime", "v": value.isoformat(), "z": value.tzname(), "i": kind is Instant}
    if kind is datetime.date:
        return {TAG: "date", "v": value.isoformat()}
    if isinstance(value, bool | int | float | str | list | dict):  # subclasses (an enum of text): their plain form
        return _enc(_plain_of(value), where)
    raise SnapshotError(where, type(value).__name__)


def _plain_of(value: Any) -> Any:
    plain: type[Any]
    for plain in (bool, int, float, str, list, dict):
        if isinstance(value, plain):
            return plain(value)
    return value  # pragma: no cover  (the caller checked)


def _enc_list(items: list[Any], where: str) -> list[Any]:
    changed: list[Any] | None = None
    for index, item in enumerate(items):
        written = _enc(item, f"{where}[{index}]")
        if written is not item and changed is None:
            changed = items[:index]
        if changed is not None:
            changed.append(written)
    return items if changed is None else changed


def _enc_dict(mapping: dict[Any, Any], where: str) -> Any:
    changed: dict[str, Any] | None = None
    for key, item in mapping.items():
        if type(key) is not str or key == TAG:
            return {TAG: "dict", "v": [[_enc(k, f"{where} key"), _enc(v, f"{where}[{k!r}]")] for k, v in mapping.items()]}
        written = _enc(item, f"{where}.{key}")
        if written is not item and changed is None:
            changed = {}
            for earlier, kept in mapping.items():
                if earlier == key:
                    break
                changed[earlier] = kept
        if changed is not None:
            changed[key] = written
    return mapping if changed is None else changed


def _dec(value: Any) -> Any:
    kind = type(value)
    if kind is list:
        return [_dec(item) for item in value]
    if kind is not dict:
        return value
    tag = value.get(TAG)
    if tag is None:
        return {key: _dec(item) for key, item in value.items()}
    if tag == "int":
        return int(value["v"])
    if tag == "float":
        return float(value["v"])
    if tag == "table":
        source = (value["s"][0], value["s"][1]) if value["s"] else None
        return DataTable(value["c"], [tuple(row) for row in _dec(value["r"])], source=source)
    if tag == "tuple":
        return tuple(_dec(value["v"]))
    if tag == "set":
        return set(_dec(value["v"]))
    if tag == "frozenset":
        return frozenset(_dec(value["v"]))
    if tag == "dict":
        return {_dec(k): _dec(v) for k, v in value["v"]}
    if tag == "datetime":
        return _datetime(value)
    if tag == "date":
        return datetime.date.fromisoformat(value["v"])
    raise ValueError(f"an unknown tag {tag!r}")


def _datetime(value: dict[str, Any]) -> datetime.datetime:
    """A datetime as `_enc` wrote it: its zone's offset and name kept (a fixed offset, as `now()` gives)."""
    written = datetime.datetime.fromisoformat(value["v"])
    offset, name = written.utcoffset(), value.get("z")
    if offset is not None and isinstance(name, str):
        written = written.replace(tzinfo=datetime.timezone(offset, name))
    if value.get("i"):
        return Instant(written.year, written.month, written.day, written.hour, written.minute, written.second,
                       written.microsecond, tzinfo=written.tzinfo)
    return written
