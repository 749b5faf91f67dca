"""The package's entry points: hash a diagram file, write a new diagram as its smallest edit.

apply_edit tries the span editor first and the ruamel dump second, keeping only a text that
engine.format's reader reads back as the new diagram; BOM and Windows line ends are kept as they were.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from engine.web.yaml_edit.checks import EditError, check_new, check_text_size, same
from engine.web.yaml_edit.fallback import ruamel_rewrite
from engine.web.yaml_edit.readback import checked, read_data
from engine.web.yaml_edit.render import Indents, Renderer
from engine.web.yaml_edit.splice import span_edit


def content_hash(text: str | bytes) -> str:
    """sha256 hex digest of the file's bytes (a str is hashed as UTF-8)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def _mapping(data: Any) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise EditError(f"the file holds a YAML {type(data).__name__}, not a mapping")
    return data


def apply_edit(text: str, new: dict[str, Any]) -> str:
    """The new file text: the smallest change of `text` whose data is `new`."""
    check_text_size(text)
    check_new(new)
    old = _mapping(read_data(text))
    new = kept_where_unrepresentable(old, new)
    if same(old, new):
        return text
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    # Work on "\n" only and put Windows line ends back at the end, so spliced lines match.
    crlf = "\r\n" in body and body.count("\r\n") == body.count("\n")
    if crlf:
        body = body.replace("\r\n", "\n")
    indents = Indents()
    result: str | None = None
    try:
        result = checked(span_edit(body, old, new, indents), new)
    except EditError:
        raise
    except Exception:  # Unsupported (or a span-editor slip): the ruamel dump below is checked the same way
        result = None
    if result is None:
        try:
            result = checked(ruamel_rewrite(body, new, indents), new)
        except Exception as exc:  # the last resort: whatever ruamel trips on becomes a clean refusal
            raise EditError(f"cannot write the diagram as YAML: {exc}") from exc
        if result is None:
            raise EditError("cannot write the diagram as YAML that reads back the same")
    if crlf:
        result = result.replace("\n", "\r\n")
    return bom + result


# JSON numbers reach a page as doubles: integers past 2**53 come back rounded.
_EXACT_IN_A_DOUBLE = 2**53


def kept_where_unrepresentable(old: Any, new: Any) -> Any:
    """`new`, with the file's own value wherever JSON could only carry it to the page and back changed: an integer
    past 2**53 (the page's nearest double comes back) and NaN or an infinity (null in JSON). Without this, saving
    an unrelated edit would change such a value."""
    if isinstance(old, int) and not isinstance(old, bool) and abs(old) > _EXACT_IN_A_DOUBLE:
        if isinstance(new, int | float) and not isinstance(new, bool) and float(new) == float(old):
            return old
        return new
    if isinstance(old, float) and not math.isfinite(old):
        return old if new is None else new
    if isinstance(old, dict) and isinstance(new, dict):
        changed = {k: kept_where_unrepresentable(old[k], v) if k in old else v for k, v in new.items()}
        return new if all(changed[k] is new[k] for k in new) else changed
    if isinstance(old, list) and isinstance(new, list):
        pairs = _paired_items(old, new)
        items = [kept_where_unrepresentable(old[pairs[n]], item) if n in pairs else item for n, item in enumerate(new)]
        return new if all(a is b for a, b in zip(items, new, strict=True)) else items
    return new


def _paired_items(old: list[Any], new: list[Any]) -> dict[int, int]:
    """new index -> old index: blocks (mappings with an id) by id, a renamed one by its place; else by place."""
    ids_old = [item.get("id") if isinstance(item, dict) else None for item in old]
    ids_new = [item.get("id") if isinstance(item, dict) else None for item in new]
    if not all(isinstance(i, str) for i in ids_old + ids_new):
        return {n: n for n in range(min(len(old), len(new)))}
    at = {i: n for n, i in enumerate(ids_old)}
    pairs = {n: at[i] for n, i in enumerate(ids_new) if i in at}
    gone = set(ids_old) - set(ids_new)
    for n, _ in enumerate(new):
        if n not in pairs and n < len(old) and ids_old[n] in gone:
            pairs[n] = n
    return pairs


def new_diagram_text(name: str) -> str:
    """A fresh diagram file named `name` with a single Start block."""
    if not isinstance(name, str) or not name.strip():
        raise EditError("the diagram name must be a non-empty string")
    doc = {"diagram": name, "blocks": [{"id": "start", "type": "Start", "position": [0, 0]}]}
    return Renderer(Indents(), {}).document(doc)
