"""The diagram's `blocks` list: blocks matched by id (or as renamed), each block's lines kept, moved or dropped whole.

A reordered diagram moves each block's own text with its attached comments; detached comments
and the blank-line separators between blocks stay as the file had them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from yaml.nodes import MappingNode, Node, SequenceNode

from engine.web.yaml_edit.checks import Unsupported, same
from engine.web.yaml_edit.spans import Doc, Place, apply_edits

# The span editor's own walk, passed in (it calls back here for the blocks list).
EditFn = Callable[[Doc, Node, Any, Any, Place], None]


@dataclass
class _Layout:
    """The blocks list's text: its region, each block's lines, and the lines before each block."""

    start: int
    end: int
    bodies: list[tuple[int, int]]
    gaps: list[tuple[str, str, str]]  # see _split_gap
    dash_col: int
    first_sep: str  # the blank lines before the first block
    default_sep: str  # the most usual blank lines between blocks


def blocks_by_id(node: SequenceNode, old: list[Any], new: list[Any], place: Place) -> bool:
    """Whether edit_blocks can match the blocks by id: unique ids, each block a block-style mapping."""
    old_ids = [b.get("id") if isinstance(b, dict) else None for b in old]
    new_ids = [b["id"] for b in new]
    return not (
        not all(isinstance(i, str) for i in old_ids)
        or len(set(old_ids)) != len(old_ids)
        or len(set(new_ids)) != len(new_ids)
        or not all(isinstance(it, MappingNode) and not it.flow_style for it in node.value)
        or place.key is None
    )


def edit_blocks(doc: Doc, node: SequenceNode, old: list[Any], new: list[Any], place: Place, edit: EditFn) -> None:
    """The diagram's blocks (when blocks_by_id): matched by id, each block's lines kept, moved or dropped whole."""
    if place.key is None:  # blocks_by_id checked it; this tells mypy
        raise Unsupported("a blocks list without a key")
    items: list[Node] = list(node.value)
    layout = _layout(doc, items, place.key)
    pairs = _match_blocks(old, new)
    # Each kept block's own lines, edited in place.
    edited: dict[int, str] = {}
    outer = doc.edits
    for j, k in pairs.items():
        doc.edits = []
        edit(doc, items[k], old[k], new[j], Place("item", name="blocks"))
        edited[k] = apply_edits(doc.text, doc.edits, *layout.bodies[k])
    doc.edits = outer
    region = _assemble(doc, layout, new, pairs, edited)
    if region != doc.text[layout.start : layout.end]:
        doc.edit(layout.start, layout.end, region)


def _layout(doc: Doc, items: list[Node], key: Node) -> _Layout:
    text = doc.text
    region_start = doc.line_end(doc.span(key)[1])
    bodies: list[tuple[int, int]] = []
    gaps: list[tuple[str, str, str]] = []
    prev_end = region_start
    for item in items:
        dash = doc.dash(item)
        line = doc.line_start(dash)
        if text[line:dash].strip() or line < prev_end:
            raise Unsupported("an odd blocks layout")
        gap = text[prev_end:line]
        if any(g.strip() and not g.lstrip().startswith("#") for g in gap.splitlines()):
            raise Unsupported("text between blocks")
        gaps.append(_split_gap(gap))
        end = doc.with_deeper_comments(doc.after(doc.span(item)[1]), doc.col(dash))
        bodies.append((line, end))
        prev_end = end
    dash_col = doc.col(doc.dash(items[0]))
    seps = Counter(g[1] for g in gaps[1:])
    default_sep = seps.most_common(1)[0][0] if seps else "\n"
    return _Layout(region_start, prev_end, bodies, gaps, dash_col, gaps[0][1], default_sep)


def _assemble(doc: Doc, layout: _Layout, new: list[Any], pairs: dict[int, int], edited: dict[int, str]) -> str:
    """The new text of the blocks region: kept blocks in the new order, new ones rendered, separators kept."""
    gaps = layout.gaps
    kept = _longest_increasing([pairs[j] for j in range(len(new)) if j in pairs])
    out: list[str] = []
    pre_done = 0
    for j, block in enumerate(new):
        i = pairs.get(j)
        if i is not None and i in kept:
            while pre_done <= i:  # detached comments stay where they were
                out.append(gaps[pre_done][0])
                pre_done += 1
        if out and not out[-1].endswith("\n") and out[-1]:
            out.append("\n")  # the old last block ended the file without a newline
        if i is None:
            sep = layout.first_sep if j == 0 else layout.default_sep
            out.append(sep + doc.render.item(block, layout.dash_col, "blocks") + "\n")
            continue
        if j == 0:
            sep = layout.first_sep
        elif i == 0 or (i not in kept and not gaps[i][1]):
            sep = layout.default_sep
        else:
            sep = gaps[i][1]
        out.append(sep + gaps[i][2] + edited[i])
    out.extend(gaps[k][0] for k in range(pre_done, len(layout.bodies)))
    return "".join(out)


def _longest_increasing(seq: list[int]) -> set[int]:
    """The values of one longest increasing subsequence (patience sorting)."""
    tails: list[int] = []
    tail_at: list[int] = []
    prev = [-1] * len(seq)
    for n, value in enumerate(seq):
        k = bisect_left(tails, value)
        if k == len(tails):
            tails.append(value)
            tail_at.append(n)
        else:
            tails[k] = value
            tail_at[k] = n
        prev[n] = tail_at[k - 1] if k else -1
    out: set[int] = set()
    n = tail_at[-1] if tail_at else -1
    while n >= 0:
        out.add(seq[n])
        n = prev[n]
    return out


def _match_blocks(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[int, int]:
    """new index -> old index: the same id, or a renamed block (same type, mostly the same keys)."""
    old_at = {b["id"]: i for i, b in enumerate(old)}
    pairs = {j: old_at[b["id"]] for j, b in enumerate(new) if b["id"] in old_at}
    new_ids = {b["id"] for b in new}
    free = [i for i, b in enumerate(old) if b["id"] not in new_ids]
    for j, block in enumerate(new):
        if j in pairs or not free:
            continue
        best: tuple[float, int] | None = None
        for i in free:
            if not same(old[i].get("type"), block.get("type")):
                continue
            keys = (old[i].keys() | block.keys()) - {"id"}
            equal = sum(1 for k in keys if k in old[i] and k in block and same(old[i][k], block[k]))
            score = equal / max(1, len(keys))
            if score >= 0.5 and (best is None or score > best[0]):
                best = (score, i)
        if best is not None:
            pairs[j] = best[1]
            free.remove(best[1])
    return pairs


def _split_gap(gap: str) -> tuple[str, str, str]:
    """The lines before a block: (detached lines, blank separator, comment lines attached to it)."""
    lines = gap.splitlines(keepends=True)
    c = len(lines)
    while c > 0 and lines[c - 1].lstrip().startswith("#"):
        c -= 1
    s = c
    while s > 0 and not lines[s - 1].strip():
        s -= 1
    return "".join(lines[:s]), "".join(lines[s:c]), "".join(lines[c:])
