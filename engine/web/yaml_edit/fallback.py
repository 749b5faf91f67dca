"""The fallback: a ruamel round-trip dump of the new data, for edits the span editor refuses.

Reuses the loaded file's containers and scalar styles so that comments and quoting survive
where they can; new strings are quoted where YAML 1.1 would read them otherwise. The caller keeps
the result only if engine.format's reader reads it back as the new data (readback.checked).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import date, datetime, time
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString, ScalarString

from engine.format.dialect import number_text, reads_as_text
from engine.web.yaml_edit.checks import MAX_DEPTH, EditError, json_key, same
from engine.web.yaml_edit.render import Indents
from engine.web.yaml_edit.scalars import literal_ok, plain_ok


def ruamel_rewrite(text: str, new: dict[str, Any], indents: Indents) -> str:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 1 << 16  # never fold long lines
    rt.indent(mapping=indents.mapping, sequence=indents.sequence, offset=indents.offset)
    rt.representer.add_representer(float, _represent_float)
    doc = rt.load(text) if text.strip() else None
    if not isinstance(doc, CommentedMap):
        doc = CommentedMap()
    _rt_merge(doc, new, True, set())
    for key in doc:
        if isinstance(doc[key], dict | list):
            _rt_quote_ambiguous(doc[key])
    buf = io.StringIO()
    rt.dump(doc, buf)
    return buf.getvalue()


def _rt_string(s: str) -> Any:
    if "\n" in s and literal_ok(s):
        return LiteralScalarString(s)
    return s if plain_ok(s, False) else DoubleQuotedScalarString(s)


def _rt_new(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        cm = CommentedMap()
        for k, v in value.items():
            cm[k] = _rt_new(v, k)
        return cm
    if isinstance(value, list):
        cs = CommentedSeq(_rt_new(v) for v in value)
        if key == "position" or not value:
            cs.fa.set_flow_style()
        return cs
    if isinstance(value, str):
        return _rt_string(value)
    return value


def _rt_update(current: Any, value: Any, key: str | None, top: bool, seen: set[int]) -> Any:
    """`value` reusing `current`'s containers and scalar styles where it can."""
    if isinstance(current, dict | list):
        if id(current) in seen:
            # An alias of a container already updated: keep it only if it still holds the same data.
            return current if same(plain(current), value) else _rt_new(value, key)
        seen.add(id(current))
    if isinstance(current, CommentedMap) and isinstance(value, dict) and value:
        _rt_merge(current, value, False, seen)
        return current
    if isinstance(current, CommentedSeq) and isinstance(value, list) and value:
        if (
            top
            and key == "blocks"
            and all(isinstance(b, CommentedMap) for b in current)
            and [b.get("id") for b in current] != [b["id"] for b in value]
        ):
            # Reordered, added or removed blocks; else update them in place and keep their comments.
            by_id = {str(b.get("id")): b for b in current}
            blocks = [_rt_update(by_id[b["id"]], b, None, False, seen) if b["id"] in by_id else _rt_new(b) for b in value]
            del current[:]
            current.extend(blocks)
            return current
        for n in range(min(len(current), len(value))):
            current[n] = _rt_update(current[n], value[n], None, False, seen)
        del current[len(value) :]
        current.extend(_rt_new(v) for v in value[len(current) :])
        return current
    if same(plain(current), value):
        return current
    if isinstance(value, str) and isinstance(current, DoubleQuotedScalarString) and "\n" not in value:
        return DoubleQuotedScalarString(value)
    return _rt_new(value, key)


def _rt_merge(cm: CommentedMap, new: dict[str, Any], top: bool, seen: set[int]) -> None:
    names = {json_key(k): k for k in cm}
    for name, k in names.items():
        if name not in new:
            del cm[k]
    for name, value in new.items():
        if name in names:
            cm[names[name]] = _rt_update(cm[names[name]], value, name, top, seen)
        elif name == "position" and ("label" in cm or "type" in cm):
            cm.insert(list(cm).index("label" if "label" in cm else "type") + 1, name, _rt_new(value, name))
        else:
            cm[name] = _rt_new(value, name)


def _rt_quote_ambiguous(value: Any, depth: int = 0) -> None:
    # Plain strings that PyYAML (YAML 1.1) would read as something else, e.g. yes/on/1e3.
    if depth > MAX_DEPTH:
        return
    slots: Iterator[Any] = iter(value.keys()) if isinstance(value, dict) else iter(range(len(value)))
    for slot in list(slots):
        item = value[slot]
        if isinstance(item, dict | list):
            _rt_quote_ambiguous(item, depth + 1)
        elif isinstance(item, str) and not isinstance(item, ScalarString) and not reads_as_text(item):
            value[slot] = DoubleQuotedScalarString(item)


def _represent_float(representer: Any, value: float) -> Any:
    return representer.represent_scalar("tag:yaml.org,2002:float", number_text(value))


def plain(value: Any, depth: int = 1) -> Any:
    """ruamel's loaded data as JSON-ready data, to compare with the new diagram's."""
    if depth > MAX_DEPTH:
        raise EditError("too deeply nested")
    if isinstance(value, dict):
        return {json_key(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, depth + 1) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, date | datetime | time):
        return value.isoformat()
    return str(value)  # drops ruamel's ScalarString subclasses
