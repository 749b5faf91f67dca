"""Where each value's text is: a file's node tree with positions, for the span editor.

Built from libyaml's events, the same parse engine.format.yamlfile reads the data from, with plain
scalars tagged by the same dialect (engine.format.dialect): the tree and the data cannot disagree on
what a file holds. Unlike a composed tree, each alias is a node of its own (its text must not be lost),
so an alias shares nothing with its anchor. Layouts the editor should not touch raise Unsupported.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.format.dialect import AMBIGUOUS, IMPLICIT_STARTS, STR_TAG, plain_tag
from engine.format.yamlfile import MAX_DEPTH
from engine.web.yaml_edit.checks import EditError, Unsupported

__all__ = ["ALIAS_TAG", "clear_cache", "compose"]

ALIAS_TAG = "!alias"
_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The trees of the last few files, by content hash: the studio reads a file, then saves an edit of it.
_CACHE_SIZE = 8
_cache: OrderedDict[bytes, Node | None] = OrderedDict()
_cache_lock = threading.Lock()


def _tag(value: str) -> str:
    if value and value[0] not in IMPLICIT_STARTS:
        return STR_TAG
    tag = plain_tag(value)
    return tag[len(AMBIGUOUS):] if tag.startswith(AMBIGUOUS) else tag


def compose(text: str) -> Node | None:
    """The node tree of `text` (None for a file of only comments); shared with the cache, never changed."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    root = _build(text)
    with _cache_lock:
        _cache[key] = root
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return root


def _build(text: str) -> Node | None:
    root: Node | None = None
    stack: list[Any] = []
    keys: list[Node | None] = []
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            node: Node
            if isinstance(event, yaml.ScalarEvent):
                if event.anchor is not None and event.tag is not None:
                    raise Unsupported("an anchor and a tag on one value")
                # `!` alone asks for the default tag, as no tag does; only an untagged plain scalar is resolved.
                tag = event.tag if event.tag not in (None, "!") else _tag(event.value) if event.implicit[0] else STR_TAG
                if not event.value and not event.style and (not stack or (isinstance(stack[-1], MappingNode)
                                                                          and keys[-1] is None)):
                    raise Unsupported("an empty key or document")
                node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style or None)
            elif isinstance(event, yaml.AliasEvent):
                node = ScalarNode(ALIAS_TAG, "", event.start_mark, event.end_mark, style="*")
            elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                if event.anchor is not None and event.tag is not None:
                    raise Unsupported("an anchor and a tag on one value")
                kind = MappingNode if isinstance(event, yaml.MappingStartEvent) else SequenceNode
                stack.append(kind(event.tag, [], event.start_mark, event.end_mark, flow_style=event.flow_style))
                keys.append(None)
                if len(stack) > MAX_DEPTH:
                    raise EditError("too deeply nested")
                continue
            elif isinstance(event, yaml.CollectionEndEvent):
                node = stack.pop()
                keys.pop()
                node.end_mark = event.end_mark
            else:
                continue  # stream and document events
            if not stack:
                root = node
            elif isinstance(stack[-1], MappingNode):
                key = keys[-1]
                if key is None:
                    keys[-1] = node
                else:
                    stack[-1].value.append((key, node))
                    keys[-1] = None
            else:
                stack[-1].value.append(node)
    except yaml.YAMLError as exc:
        raise EditError(f"the file is not valid YAML: {exc}") from exc
    return root


def clear_cache() -> None:
    """Forget every tree built so far (benchmarks time the first read of a file)."""
    with _cache_lock:
        _cache.clear()
