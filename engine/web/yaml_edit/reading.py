"""Reading the file: as JSON-ready data (YAML 1.2, as ruamel's safe loader reads it), and as a node tree with positions.

Both come from one pass over libyaml's events (engine.web.yaml_edit.fast), kept in a small cache by
content hash since the studio reads a file and then saves an edit of it; files that reader hands back
are read by ruamel's pure-Python parser, as before. Both readers refuse deep nesting and alias bombs
before they can hurt us; the node tree keeps each alias as a node of its own, so that the span editor
knows where every value's text is.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from datetime import date, datetime, time
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError as RuamelError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.web.yaml_edit import fast
from engine.web.yaml_edit.checks import MAX_DEPTH, MAX_NODES, EditError, json_key
from engine.web.yaml_edit.scalars import RESOLVER_12

PY_SAFE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ALIAS_TAG = fast.ALIAS_TAG
# The fast reads of the last few files: (node tree, data), or None where ruamel reads the file.
_CACHE_SIZE = 8
_CACHE_MAX_CHARS = 1 << 20
_cache: OrderedDict[bytes, tuple[Node | None, Any] | None] = OrderedDict()
_cache_lock = threading.Lock()


def _fast(text: str) -> tuple[Node | None, Any] | None:
    """The fast reader's (tree, data) of `text`, cached by content hash; None where ruamel must read it.

    The cached tree and data are shared: callers never change them (load_plain hands out copies).
    """
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest() if len(text) <= _CACHE_MAX_CHARS else None
    if key is not None:
        with _cache_lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
    try:
        found: tuple[Node | None, Any] | None = fast.read(text)
    except fast.Fallback:
        found = None
    if key is not None:
        with _cache_lock:
            _cache[key] = found
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return found


def _fresh(value: Any) -> Any:
    if value.__class__ is dict:
        return {k: _fresh(v) for k, v in value.items()}
    if value.__class__ is list:
        return [_fresh(v) for v in value]
    return value


def _ruamel_safe() -> YAML:
    # Pure Python so the resolver is ruamel's YAML 1.2 one whatever libyaml is installed.
    return YAML(typ="safe", pure=True)


def _guard_depth(text: str) -> None:
    """Refuse deep nesting before ruamel meets it: its composer recurses, and its scanner is quadratic in
    flow nesting (seconds for a line of brackets). libyaml's parser is a fast state machine.

    Only texts that could nest deeper than MAX_DEPTH are walked: many brackets or deep indentation.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH // 2 and "\n" + " " * (MAX_DEPTH // 2) not in text:
        return
    depth = 0
    try:
        for event in yaml.parse(text, Loader=PY_SAFE_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise EditError("too deeply nested")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):
            raise EditError("too deeply nested") from exc
        # Anything else is for the real load to report.


def load_plain(text: str) -> Any:
    """The file's data, the caller's own to change."""
    found = _fast(text)
    if found is not None:
        return _fresh(found[1])
    return _ruamel_load_plain(text)


def read_plain(text: str) -> Any:
    """The file's data, shared with the cache: only to look at."""
    found = _fast(text)
    if found is not None:
        return found[1]
    return _ruamel_load_plain(text)


def _ruamel_load_plain(text: str) -> Any:
    _guard_depth(text)
    try:
        raw = _ruamel_safe().load(text)
    except RecursionError as exc:
        raise EditError("too deeply nested") from exc
    except RuamelError as exc:
        raise EditError(f"the file is not valid YAML: {exc}") from exc
    except (ValueError, TypeError) as exc:  # a constructor refusing a value, e.g. a bad date
        raise EditError(f"the file is not valid YAML: {exc}") from exc
    return plain(raw, 1, [0])


def plain(value: Any, depth: int, count: list[int]) -> Any:
    """Loaded YAML as JSON-ready data; shared (aliased) parts are copied, so count them."""
    if depth > MAX_DEPTH:
        raise EditError("too deeply nested")
    count[0] += 1
    if count[0] > MAX_NODES:
        raise EditError(f"the file has more than {MAX_NODES} values")
    if isinstance(value, dict):
        return {json_key(k): plain(v, depth + 1, count) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, depth + 1, count) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return str(value)  # drops ruamel's ScalarString subclasses
    if isinstance(value, date | datetime | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, set | frozenset):
        return {json_key(k): None for k in value}
    return str(value)


def compose(text: str) -> Node | None:
    """The node tree with positions, each alias a node of its own; shared with the cache, never changed."""
    found = _fast(text)
    if found is not None:
        return found[0]
    return _ruamel_compose(text)


def _ruamel_compose(text: str) -> Node | None:
    """ruamel's node tree with positions, built from its events so that an alias is a node of its own.

    (ruamel's composer hands back the anchored node for an alias: its text would be lost.)
    """
    root: Node | None = None
    stack: list[Node] = []
    keys: list[Node | None] = []
    try:
        for event in YAML(typ="rt").parse(text):
            node: Node
            if isinstance(event, ScalarEvent):
                tag = event.tag or RESOLVER_12.resolve(ScalarNode, event.value, event.implicit)
                node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
            elif isinstance(event, AliasEvent):
                node = ScalarNode(_ALIAS_TAG, "", event.start_mark, event.end_mark, style="*")
            elif isinstance(event, MappingStartEvent | SequenceStartEvent):
                kind = MappingNode if isinstance(event, MappingStartEvent) else SequenceNode
                stack.append(kind(event.tag, [], event.start_mark, event.end_mark, flow_style=event.flow_style))
                keys.append(None)
                if len(stack) > MAX_DEPTH:
                    raise EditError("too deeply nested")
                continue
            elif isinstance(event, CollectionEndEvent):
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
    except RuamelError as exc:
        raise EditError(f"the file is not valid YAML: {exc}") from exc
    return root
