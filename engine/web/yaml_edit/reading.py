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
from dataclasses import dataclass
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
# The fast reads of the last few files, by content hash; _RUAMEL where ruamel must read the file.
_CACHE_SIZE = 8
_CACHE_MAX_CHARS = 1 << 18  # a 3,000-block diagram; bigger files are read each time
_RUAMEL = "ruamel"
_cache: OrderedDict[bytes, _Read | str] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass
class _Read:
    """A file as the fast reader read it, shared through the cache: its data and tree are never changed."""

    data: Any
    root: Node | None = None
    tree: str = "no"  # "yes": root is its node tree; "no": not built yet; "ruamel": ruamel's positions differ
    pyyaml_agrees: bool = False  # PyYAML (YAML 1.1) reads the file as the same data, as `same` sees it


def _key(text: str) -> bytes | None:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest() if len(text) <= _CACHE_MAX_CHARS else None


def _fast(text: str, tree: bool) -> _Read | None:
    """The fast reader's reading of `text` (with its node tree if `tree` and it can); None where ruamel must read it."""
    key = _key(text)
    known: _Read | str | None = None
    if key is not None:
        with _cache_lock:
            known = _cache.get(key)
            if known is not None:
                _cache.move_to_end(key)
    if known == _RUAMEL:
        return None
    if isinstance(known, _Read) and (known.tree != "no" or not tree):
        return known
    found: _Read | str
    try:
        root, data, built = fast.read(text, tree)
    except fast.Fallback:
        found = _RUAMEL
    else:
        found = _Read(data, root, "yes" if built else "ruamel" if tree else "no")
    if isinstance(known, _Read):  # read before without its tree: keep the data others may already hold
        if isinstance(found, _Read) and found.tree == "yes":
            found.data, found.pyyaml_agrees = known.data, known.pyyaml_agrees
        else:
            known.tree = "ruamel"
            found = known
    if key is not None:
        with _cache_lock:
            _cache[key] = found
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return found if isinstance(found, _Read) else None


def pyyaml_agrees(text: str, data: Any) -> bool:
    """Whether PyYAML is known to read `text` as `data`, which must be this module's own reading of it."""
    key = _key(text)
    with _cache_lock:
        known = _cache.get(key) if key is not None else None
    return isinstance(known, _Read) and known.pyyaml_agrees and known.data is data


def set_pyyaml_agrees(text: str, data: Any) -> None:
    """Note that PyYAML reads `text` as `data`, if that is this module's own (cached) reading of it."""
    key = _key(text)
    with _cache_lock:
        known = _cache.get(key) if key is not None else None
        if isinstance(known, _Read) and known.data is data:
            known.pyyaml_agrees = True


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
    found = _fast(text, tree=True)  # the studio reads a file before it saves an edit of it
    if found is not None:
        return _fresh(found.data)
    return ruamel_load_plain(text)


def read_plain(text: str, tree: bool = False) -> Any:
    """The file's data, shared with the cache: only to look at. `tree`: compose() of it comes next."""
    found = _fast(text, tree)
    if found is not None:
        return found.data
    return ruamel_load_plain(text)


def ruamel_load_plain(text: str) -> Any:
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
    found = _fast(text, tree=True)
    if found is not None and found.tree == "yes":
        return found.root
    return ruamel_compose(text)


def ruamel_compose(text: str) -> Node | None:
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


def clear_cache() -> None:
    """Forget every file read so far (benchmarks time the first read of a file)."""
    with _cache_lock:
        _cache.clear()
