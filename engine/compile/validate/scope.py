"""Which template names each block may use: the scope the static name check enforces.

A block sees the run inputs, the variables (Start's and every `set`), the template functions,
`error` when it is reached from an `on_error`, and its loop's names (`item`, `index`) inside a
body; its `set` and `when` also see its own outputs. `template_scope` gives the same to editors.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.compile.block import Block, RunSettings
from engine.compile.diagram import CompiledBlock, Diagram
from engine.compile.graph import LinkMap

__all__ = ["block_scopes", "template_scope"]

Scope = tuple[set[str], set[str]]
"""(names its `with` may use, names its `set` and `when` may use)."""


def _error_handlers(blocks: list[CompiledBlock], links: LinkMap) -> set[str]:
    """Every block an `on_error` leads to, and those it goes on to: `error` is bound there.

    A block Start does not reach (a draft, a warning of its own) may be a handler not linked yet:
    `error` counts as bound there too, so the one warning is not followed by an error per template.
    """
    handlers: set[str] = set()
    for compiled in blocks:
        if compiled.on_error is not None:
            handlers |= links.reach(compiled.on_error.id)
    starts = [compiled.id for compiled in blocks if type(compiled.impl).is_start]
    if starts:
        reached = links.reach(starts[0])
        handlers |= {compiled.id for compiled in blocks if compiled.id not in reached}
    return handlers


def _loop_names(blocks: list[CompiledBlock]) -> dict[str, set[str]]:
    """Block id → the names its enclosing loops bind (a loop block sees its own, for `collect` and the like)."""
    names: dict[str, set[str]] = {}
    for compiled in blocks:
        bound = type(compiled.impl).body_names
        if bound:
            for member in compiled.body_region | {compiled.id}:
                names.setdefault(member, set()).update(bound)
    return names


def block_scopes(blocks: Iterable[CompiledBlock], settings: RunSettings, links: LinkMap,
                 functions: set[str]) -> dict[str, Scope]:
    """Each block's scope; blocks in the same situation share one pair of sets (do not change them)."""
    blocks = list(blocks)
    bound: set[str] = set(settings.inputs) | set(settings.variables)
    for compiled in blocks:
        bound |= set(compiled.impl.spec.set)
    everywhere = bound | functions
    handlers = _error_handlers(blocks, links)
    loop_names = _loop_names(blocks)
    # Most blocks see the same names: build each distinct scope once.
    shared: dict[tuple[frozenset[str], bool, type[Block]], Scope] = {}
    scopes: dict[str, Scope] = {}
    for compiled in blocks:
        key = (frozenset(loop_names.get(compiled.id, ())), compiled.id in handlers, type(compiled.impl))
        if key not in shared:
            scope = everywhere | key[0] | ({"error"} if key[1] else set())
            shared[key] = (scope, scope | set(key[2].output_names()))
        scopes[compiled.id] = shared[key]
    return scopes


def template_scope(diagram: Diagram) -> dict[str, dict[str, list[str]]]:
    """Block id → the names its `with`, `set` and `when` templates may use, sorted (for autocompletion)."""
    scopes = block_scopes(diagram.blocks.values(), diagram.settings, LinkMap(diagram.blocks.values()),
                          set(diagram.env.functions))
    return {block_id: {"with": sorted(inputs), "set": sorted(after), "when": sorted(after)}
            for block_id, (inputs, after) in scopes.items()}
