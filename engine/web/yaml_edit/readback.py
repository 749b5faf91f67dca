"""The read-back check: a written text is kept only if both ruamel (YAML 1.2) and PyYAML (1.1) read it as the new data.

Also owns the one repair that check allows: quoting the plain scalars that only PyYAML misreads
(`on`, `yes`, `0o7`), so that they stop making every edit of such a file fail. The YAML 1.2 reading
is reading.read_plain's (libyaml's events read as ruamel reads them, else ruamel itself); what PyYAML
is found to agree with is remembered with the cached reading, so that the next edit of the saved text
need not ask it again.
"""

from __future__ import annotations

from typing import Any

import yaml
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.web.yaml_edit.checks import MAX_DEPTH, EditError, Unsupported, check_text_size, same
from engine.web.yaml_edit.reading import PY_SAFE_LOADER, compose, plain, pyyaml_agrees, read_plain, set_pyyaml_agrees
from engine.web.yaml_edit.scalars import dq, scalar
from engine.web.yaml_edit.spans import apply_edits


def checked(result: str, new: dict[str, Any]) -> str | None:
    """`result` if both parsers read it as `new`, after quoting what only PyYAML misreads; else None."""
    if round_trips(result, new):
        return result
    try:
        root = compose(result)
        if root is None or not same(read_plain(result), new):
            return None
        fixed = disambiguate(result, root, new)
    except (EditError, Unsupported):
        return None
    return fixed if round_trips(fixed, new) else None


def round_trips(result: str, new: dict[str, Any]) -> bool:
    """Whether both parsers the project uses read `result` back as exactly `new`."""
    try:
        check_text_size(result)
        ours = read_plain(result)
        theirs = plain(yaml.load(result, Loader=PY_SAFE_LOADER), 1, [0])
    except (EditError, yaml.YAMLError, RecursionError, ValueError, TypeError):
        return False
    if same({} if ours is None else ours, new) and same({} if theirs is None else theirs, new):
        if ours is not None:
            set_pyyaml_agrees(result, ours)  # when this result is edited next, its PyYAML reading is known
        return True
    return False


def disambiguate(text: str, root: Node, old: dict[str, Any]) -> str:
    """Quote the plain scalars that PyYAML (YAML 1.1) reads differently from ruamel, e.g. `on`, `yes`, `0o7`.

    Left alone they would make any edited file read back differently by the engine.
    """
    if pyyaml_agrees(text, old):
        return text
    try:
        theirs = plain(yaml.load(text, Loader=PY_SAFE_LOADER), 1, [0])
    except (EditError, yaml.YAMLError, RecursionError, ValueError, TypeError):
        return text
    if same(old, theirs):
        set_pyyaml_agrees(text, old)
        return text
    fixes: dict[int, tuple[int, int, str]] = {}

    def fix(node: Node, ours: Any) -> None:
        if isinstance(node, ScalarNode) and node.style is None and node.value:
            repl = dq(ours) if isinstance(ours, str) else scalar(ours, flow=True)
            fixes[id(node)] = (node.start_mark.index, node.end_mark.index, repl)

    def walk(node: Node, a: Any, b: Any, depth: int) -> None:
        if depth > MAX_DEPTH or same(a, b):
            return
        if isinstance(node, MappingNode) and isinstance(a, dict) and isinstance(b, dict):
            if len(node.value) == len(a) == len(b):
                for (key, value), (ka, va), (kb, vb) in zip(node.value, a.items(), b.items(), strict=True):
                    if ka != kb:
                        fix(key, ka)
                    walk(value, va, vb, depth + 1)
        elif isinstance(node, SequenceNode) and isinstance(a, list) and isinstance(b, list):
            if len(node.value) == len(a) == len(b):
                for item, va, vb in zip(node.value, a, b, strict=True):
                    walk(item, va, vb, depth + 1)
        else:
            fix(node, a)

    walk(root, old, theirs, 1)
    return apply_edits(text, [(start, end, n, repl) for n, (start, end, repl) in enumerate(fixes.values())])
