"""The fast reader: libyaml's C event stream built into both the node tree and the YAML 1.2 data, in one pass.

ruamel's pure-Python parser is the reference; this reader takes only the files it reads exactly as
ruamel would (plain scalars resolved by ruamel's own YAML 1.2 resolver, values built by ruamel's own
constructors) and hands anything else back to it: a libyaml error, directives, YAML 1.1 line breaks,
tags beyond the core ones, complex, merge or duplicate keys, undefined, recursive or reused anchors,
too deep or too many values. libyaml's marks count characters, as ruamel's do, so its positions are
the text's indices.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from functools import lru_cache
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.tag import Tag

from engine.web.yaml_edit.checks import MAX_DEPTH, MAX_NODES, json_key
from engine.web.yaml_edit.scalars import RESOLVER_12

ALIAS_TAG = "!alias"
_CORE = "tag:yaml.org,2002:"
_STR = _CORE + "str"
_MAP = _CORE + "map"
_SEQ = _CORE + "seq"
_NULL = _CORE + "null"
_BOOL = _CORE + "bool"
_INT = _CORE + "int"
_FLOAT = _CORE + "float"
_TIMESTAMP = _CORE + "timestamp"
# Breaks in YAML 1.1 only (libyaml) but not in 1.2; whatever reads them differently goes to ruamel.
_OLD_BREAKS = ("\x85", "\u2028", "\u2029")
# A block scalar's header as ruamel takes it: indicators, then a space or the line's end.
_BLOCK_HEADER = re.compile(r"[|>](?:[1-9][+-]?|[+-][1-9]?)?(?:[ \r\n]|$)")
# An anchor or alias name that ends other than at a space or flow indicator: libyaml's names are
# narrower than ruamel's (`&a:` is the anchor `a:` to ruamel, an anchored key to libyaml).
_ODD_NAME = re.compile(r"[&*][0-9A-Za-z_-]+[^0-9A-Za-z_\-\s,\[\]{}]")
_PY_SAFE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# ruamel's own YAML 1.2 safe constructor, for the few scalars that are not strings.
_CONSTRUCTOR: Any = YAML(typ="safe", pure=True).constructor
_BUILD = {tag: _CONSTRUCTOR.yaml_constructors[tag] for tag in (_NULL, _BOOL, _INT, _FLOAT, _TIMESTAMP)}

_ScalarEvent = yaml.ScalarEvent
_AliasEvent = yaml.AliasEvent
_MappingStartEvent = yaml.MappingStartEvent
_SequenceStartEvent = yaml.SequenceStartEvent
_MappingEndEvent = yaml.MappingEndEvent
_SequenceEndEvent = yaml.SequenceEndEvent
_DocumentStartEvent = yaml.DocumentStartEvent


_TAGS: dict[str | None, Tag] = {}


def _tag(tag: str | None) -> Tag:
    """One shared ruamel Tag per tag (a node would make its own, the bulk of building the tree)."""
    found = _TAGS.get(tag)
    if found is None:
        found = _TAGS[tag] = Tag(suffix=tag)
    return found


class Fallback(Exception):
    """Something this reader is not sure ruamel reads the same way: ruamel reads the file instead."""


def _plain_tag(value: str) -> str:
    """A plain scalar's tag by ruamel's YAML 1.2 resolver; short ones (keys, numbers, words) remembered."""
    return _short_plain_tag(value) if len(value) <= 64 else _resolve(value)


def _resolve(value: str) -> str:
    return str(RESOLVER_12.resolve(ScalarNode, value, (True, False)))  # a ruamel Tag


_short_plain_tag = lru_cache(maxsize=4096)(_resolve)


def _scalar_data(tag: str, value: str) -> Any:
    if tag == _STR:
        return value
    build = _BUILD.get(tag)
    if build is None:
        raise Fallback(f"tag {tag}")
    data = build(_CONSTRUCTOR, ScalarNode(tag, value))
    if isinstance(data, date | datetime):
        return data.isoformat()
    if data is None or isinstance(data, bool | int | float):
        return data
    raise Fallback(f"a {type(data).__name__} scalar")  # pragma: no cover - ruamel's core constructors build only these


def _copy(value: Any, depth: int, count: list[int]) -> Any:
    """An alias's data: a copy, counted and depth-checked as ruamel's data would be when made plain."""
    if depth > MAX_DEPTH:
        raise Fallback("too deep")
    count[0] += 1
    if count[0] > MAX_NODES:
        raise Fallback("too many values")
    if isinstance(value, dict):
        return {k: _copy(v, depth + 1, count) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v, depth + 1, count) for v in value]
    return value


def _block_ok(text: str, start: int, end: int) -> bool:
    """A block scalar libyaml and ruamel surely agree on: a plain header, no spaces on its leading empty lines.

    (ruamel refuses a header followed by a comment without a space, and leading empty lines more
    indented than the first line of text; libyaml takes both.)
    """
    if not _BLOCK_HEADER.match(text, start):
        return False
    at = text.find("\n", start, end) + 1
    while 0 < at < end:
        line_end = text.find("\n", at, end)
        line = text[at : end if line_end < 0 else line_end]
        if line.strip(" \r"):
            return True
        if line.strip("\r"):
            return False
        at = line_end + 1
    return True


def read(text: str, tree: bool = True) -> tuple[Node | None, Any, bool]:
    """(the node tree, the plain data, whether the tree was built). Raises Fallback.

    Without `tree`, or where ruamel's positions would differ (a BOM; an empty key or root; a tag and
    an anchor on one node), only the data is read and the tree is left to ruamel.
    """
    if "\t" in text or any(b in text for b in _OLD_BREAKS) or text.find("\ufeff", 1) >= 0:
        # ruamel refuses tabs that libyaml takes as spaces, and takes a BOM past the start as text
        raise Fallback("tabs, YAML 1.1 line breaks or a BOM within")
    try:
        return _read(text, tree and not text.startswith("\ufeff"))
    except Fallback:
        raise
    except Exception as exc:  # a libyaml error, a constructor refusing a value: ruamel says what is wrong
        raise Fallback(str(exc)) from exc


# One loop over libyaml's events with its state in local variables: each event case is a few
# lines, and methods would only move this state onto an object.
def _read(text: str, tree: bool) -> tuple[Node | None, Any, bool]:
    root: Node | None = None
    data: Any = None
    # Per open collection: its node, its data, its pending key (node, key), the keys seen, its anchor.
    nodes: list[Any] = []
    datas: list[Any] = []
    keys: list[Any] = []
    seen: list[tuple[set[str], set[Any]]] = []
    anchors_open: list[str | None] = []
    anchors: dict[str, Any] = {}
    count = [0]
    documents = 0
    names_checked = False
    for event in yaml.parse(text, Loader=_PY_SAFE_LOADER):
        cls = event.__class__
        node: Any = None
        if not names_checked and getattr(event, "anchor", None) is not None:
            if _ODD_NAME.search(text):
                raise Fallback("anchor names ruamel may read differently")
            names_checked = True
        if cls is _ScalarEvent:
            tag = event.tag
            style = event.style or None
            if tag is None:
                tag = _plain_tag(event.value) if style is None else _STR
            elif not tag.startswith(_CORE):
                raise Fallback(f"tag {tag}")
            if (style == "|" or style == ">") and (not datas or not _block_ok(text, event.start_mark.index, event.end_mark.index)):
                raise Fallback("a block scalar ruamel may read differently")  # at the root, its lines may start at column 0
            value = _scalar_data(tag, event.value)
            anchor = event.anchor
            if tree and anchor is not None and event.tag is not None:
                tree = False  # ruamel starts such a scalar at its anchor, libyaml at its tag
            if tree and style is None and not event.value and (not datas or (datas[-1].__class__ is dict and keys[-1] is None)):
                tree = False  # an empty root or key: ruamel puts it at the next token, libyaml where it is
            if tree:
                node = ScalarNode(_tag(tag), event.value, event.start_mark, event.end_mark, style=style)
            if anchor is not None:
                if anchor in anchors or anchor in anchors_open:
                    raise Fallback("a reused anchor")
                anchors[anchor] = value
            count[0] += 1
        elif cls is _AliasEvent:
            if event.anchor not in anchors:
                raise Fallback("an undefined or recursive alias")
            value = _copy(anchors[event.anchor], len(nodes) + 1, count)
            if tree:
                node = ScalarNode(_tag(ALIAS_TAG), "", event.start_mark, event.end_mark, style="*")
        elif cls is _MappingStartEvent or cls is _SequenceStartEvent:
            mapping = cls is _MappingStartEvent
            tag = event.tag
            if tag is not None and tag != (_MAP if mapping else _SEQ):
                raise Fallback(f"tag {tag}")
            anchor = event.anchor
            if anchor is not None and (anchor in anchors or anchor in anchors_open):
                raise Fallback("a reused anchor")
            if tree and anchor is not None and tag is not None:
                tree = False
            if len(nodes) + 1 >= MAX_DEPTH:
                raise Fallback("too deep")
            count[0] += 1
            if tree:
                kind = MappingNode if mapping else SequenceNode
                nodes.append(kind(_tag(tag), [], event.start_mark, event.end_mark, flow_style=event.flow_style))
            else:
                nodes.append(None)
            datas.append({} if mapping else [])
            keys.append(None)
            seen.append((set(), set()))
            anchors_open.append(anchor)
            continue
        elif cls is _MappingEndEvent or cls is _SequenceEndEvent:
            node = nodes.pop()
            value = datas.pop()
            keys.pop()
            seen.pop()
            anchor = anchors_open.pop()
            if node is not None:
                node.end_mark = event.end_mark
            if anchor is not None:
                anchors[anchor] = value
        elif cls is _DocumentStartEvent:
            documents += 1
            if documents > 1 or event.version is not None or event.tags:
                raise Fallback("directives or more than one document")
            continue
        else:
            continue  # stream and document ends
        if count[0] > MAX_NODES:
            raise Fallback("too many values")
        if not datas:
            root, data = node, value
            continue
        if not tree:
            node = None
        parent = datas[-1]
        if parent.__class__ is dict:
            pending = keys[-1]
            if pending is None:
                if (cls is not _ScalarEvent and cls is not _AliasEvent) or isinstance(value, dict | list):
                    raise Fallback("a complex key")
                # ruamel refuses equal keys (1, 1.0 and true are equal in Python); the data keeps one of
                # keys that json_key writes alike. Either way ruamel says what happens.
                name = json_key(value)
                names, raw = seen[-1]
                if name in names or value in raw:
                    raise Fallback("a duplicate key")
                names.add(name)
                raw.add(value)
                keys[-1] = (node, name)
                count[0] -= 1  # keys are not values: ruamel's data counts only what they map to
            else:
                keys[-1] = None
                parent[pending[1]] = value
                if tree:
                    nodes[-1].value.append((pending[0], node))
        else:
            parent.append(value)
            if tree:
                nodes[-1].value.append(node)
    return (root, data, True) if tree else (None, data, False)
