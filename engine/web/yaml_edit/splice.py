"""The span editor: the new data as the fewest text edits of the scanned file.

Walks the old data, the new data and the node tree together; keeps every unchanged
value's text, replaces changed scalars in their own quote style, drops removed keys and
items with their comments, and writes added ones in the file's style. Raises Unsupported
for layouts it cannot edit safely (the caller then falls back to a ruamel dump).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.web.yaml_edit.blocks import blocks_by_id, edit_blocks
from engine.web.yaml_edit.checks import Unsupported, same
from engine.web.yaml_edit.render import Indents, Renderer
from engine.web.yaml_edit.scalars import scalar
from engine.web.yaml_edit.spans import Doc, Place, apply_edits, scan
from engine.web.yaml_edit.tree import compose


def span_edit(text: str, old: dict[str, Any], new: dict[str, Any], indents: Indents) -> str:
    root = compose(text)
    doc = Doc(text, Renderer(indents, {}))
    if root is None:
        # Only comments (or nothing): keep them and write the diagram under them.
        sep = "" if not text or text.endswith("\n") else "\n"
        return text + sep + doc.render.document(new)
    scan(doc, root, 1, set(), indents, set())
    _edit(doc, root, old, new, Place("root"))
    return apply_edits(text, doc.edits)


def _edit(doc: Doc, node: Node, old: Any, new: Any, place: Place) -> None:
    if same(old, new):
        return
    if isinstance(node, MappingNode) and isinstance(old, dict) and isinstance(new, dict) and new:
        if len(node.value) != len(old):
            raise Unsupported("the mapping's keys do not match its data")
        if node.flow_style:
            _edit_flow_map(doc, node, old, new, place)
        else:
            _edit_block_map(doc, node, old, new, place)
        return
    if isinstance(node, SequenceNode) and isinstance(old, list) and isinstance(new, list) and new:
        if len(node.value) != len(old):
            raise Unsupported("the sequence's items do not match its data")
        if node.flow_style:
            _edit_flow_seq(doc, node, old, new, place)
        elif place.top and place.name == "blocks" and blocks_by_id(node, old, new, place):
            edit_blocks(doc, node, old, new, place, _edit)
        else:
            _edit_block_seq(doc, node, old, new, place)
        return
    _replace(doc, node, new, place)


def _replace(doc: Doc, node: Node, new: Any, place: Place) -> None:
    """Write `new` where `node` is, in the style of its place."""
    start, end = doc.span(node)
    render = doc.render
    if place.kind == "root":
        doc.edit(start, end, render.flow(new) if getattr(node, "flow_style", False) else render.document(new).rstrip("\n"))
        return
    if place.flow:
        doc.edit(start, end, render.flow(new))
        return
    if not isinstance(new, dict | list) and isinstance(node, ScalarNode) and start != end:
        # Scalar for scalar: keep the spacing and comment around it, and its quote style.
        rest = doc.text[end : doc.after(end)]
        block_col = doc.col(start) if place.kind == "item" else None
        if place.kind == "value" and place.key is not None:
            block_col = doc.col(doc.span(place.key)[0]) + render.indents.mapping
        if rest.strip():
            block_col = None  # a `|` block cannot have a comment after its last line
        style = node.style if node.style in ("'", '"') else None
        doc.edit(start, end, scalar(new, flow=False, style=style, block_col=block_col))
        return
    prefer: bool | None = None
    if (isinstance(node, MappingNode) and isinstance(new, dict)) or (isinstance(node, SequenceNode) and isinstance(new, list)):
        prefer = bool(node.flow_style) if node.value else None  # same kind: keep its style
    if place.kind == "value" and place.key is not None and place.name is not None:
        colon = doc.colon(place.key)
        key_col = doc.col(doc.span(place.key)[0])
        doc.edit(colon, end, render.after_key(place.name, new, key_col, prefer))
        return
    dash = doc.dash(node)
    text = render.item(new, doc.col(dash), place.name)
    doc.edit(dash, end, text[doc.col(dash) :])


def _ordered(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the file's key order: kept keys where they were, new ones at the end."""
    return {**{k: new[k] for k in old if k in new}, **{k: v for k, v in new.items() if k not in old}}


def _edit_flow_map(doc: Doc, node: MappingNode, old: dict[str, Any], new: dict[str, Any], place: Place) -> None:
    if old.keys() == new.keys():
        for k, (key, value) in zip(old, node.value, strict=True):
            _edit(doc, value, old[k], new[k], Place("value", key, k, flow=True))
        return
    _replace(doc, node, _ordered(old, new), place)


def _edit_flow_seq(doc: Doc, node: SequenceNode, old: list[Any], new: list[Any], place: Place) -> None:
    if len(old) == len(new):
        for item, a, b in zip(node.value, old, new, strict=True):
            _edit(doc, item, a, b, Place("item", name=place.name, flow=True))
        return
    _replace(doc, node, new, place)


def _edit_block_map(doc: Doc, node: MappingNode, old: dict[str, Any], new: dict[str, Any], place: Place) -> None:
    names = list(old)
    pairs: list[tuple[Node, Node]] = list(node.value)
    if not any(k in new for k in names):
        _replace(doc, node, new, place)
        return
    top = place.kind == "root"
    for name, (key, value) in zip(names, pairs, strict=True):
        if name in new:
            _edit(doc, value, old[name], new[name], Place("value", key, name, top=top))
    _remove_keys(doc, names, pairs, new)
    _add_keys(doc, names, pairs, old, new, top)


def _entry_end(doc: Doc, pairs: list[tuple[Node, Node]], i: int) -> int:
    return doc.after(doc.span(pairs[i][1])[1])


def _remove_keys(doc: Doc, names: list[str], pairs: list[tuple[Node, Node]], new: dict[str, Any]) -> None:
    # Removed keys: their lines, with a comment directly above and commented lines under them.
    covered: set[int] = set()
    for i, name in enumerate(names):
        if name in new or i in covered:
            continue
        key_start = doc.span(pairs[i][0])[0]
        line = doc.line_start(key_start)
        key_col = doc.col(key_start)
        if doc.text[line:key_start].strip():
            # The first key of a `- key: value` item: pull the next kept key up onto the dash line.
            nxt = next((j for j in range(i + 1, len(names)) if names[j] in new), None)
            if nxt is None:
                raise Unsupported("no key left on the item's line")
            covered.update(range(i, nxt))
            doc.edit(key_start, doc.span(pairs[nxt][0])[0], "")
            continue
        doc.edit(doc.with_comments_above(line, key_col), doc.with_deeper_comments(_entry_end(doc, pairs, i), key_col), "")


# Top-level keys written after the blocks: the studio's notes are layout, not a header a reader wants first.
_AFTER_BLOCKS = frozenset({"blocks", "notes"})


def _add_keys(doc: Doc, names: list[str], pairs: list[tuple[Node, Node]], old: dict[str, Any], new: dict[str, Any], top: bool) -> None:
    added = [k for k in new if k not in old]
    if not added:
        return
    key_col = doc.col(doc.span(pairs[0][0])[0])
    at_end = _entry_end(doc, pairs, len(pairs) - 1)
    groups: dict[int, list[str]] = {}
    for name in added:
        at = at_end
        if name == "position" and ("label" in old or "type" in old):
            at = _entry_end(doc, pairs, names.index("label" if "label" in old else "type"))
        elif top and "blocks" in old and name not in _AFTER_BLOCKS:
            at = doc.line_start(doc.span(pairs[names.index("blocks")][0])[0])  # header keys before the blocks
        groups.setdefault(at, []).append(doc.render.entry(name, new[name], key_col))
    for at, lines in groups.items():
        doc.insert_lines(at, "\n".join(lines))


def _json_sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _item_range(doc: Doc, item: Node) -> tuple[int, int]:
    """A block sequence item's lines: from its attached comment to commented lines under it."""
    dash = doc.dash(item)
    line = doc.line_start(dash)
    if doc.text[line:dash].strip():
        raise Unsupported("an item on its parent's line")
    col = doc.col(dash)
    return doc.with_comments_above(line, col), doc.with_deeper_comments(doc.after(doc.span(item)[1]), col)


def _edit_block_seq(doc: Doc, node: SequenceNode, old: list[Any], new: list[Any], place: Place) -> None:
    items: list[Node] = list(node.value)
    dash_col = doc.col(doc.dash(items[0]))
    matcher = difflib.SequenceMatcher(a=[_json_sort_key(x) for x in old], b=[_json_sort_key(x) for x in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        for d in range(paired):
            _edit(doc, items[i1 + d], old[i1 + d], new[j1 + d], Place("item", name=place.name))
        for i in range(i1 + paired, i2):
            doc.edit(*_item_range(doc, items[i]), "")
        if j1 + paired < j2:
            at = _item_range(doc, items[i2])[0] if i2 < len(items) else doc.after(doc.span(items[-1])[1])
            text = "\n".join(doc.render.item(v, dash_col, place.name) for v in new[j1 + paired : j2])
            doc.insert_lines(at, text)
