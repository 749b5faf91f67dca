"""Stage 5: the bodies whose passes run side by side (a Loop with `concurrency`) keep to what that allows.

Each pass runs in its own copy of the scope, so a body's `set` never reaches the blocks after the loop:
only what the block collects flows out. A variable a body sets and a block after the loop reads is
therefore a load error with that hint, as is an `on_error` handler in the body that does not lead back
to the loop (a pass cannot take the run elsewhere while others are under way).
"""

from __future__ import annotations

from collections.abc import Iterator

from engine.compile.diagram import CompiledBlock
from engine.compile.graph import LinkMap
from engine.compile.validate.compilation import Compilation

__all__ = ["check_concurrent_bodies"]


def check_concurrent_bodies(c: Compilation, links: LinkMap) -> None:
    for loop in c.blocks.values():
        if loop.body_region and loop.impl.concurrent_body():
            _check_handlers(c, loop)
            _check_leaks(c, links, loop)


def _check_handlers(c: Compilation, loop: CompiledBlock) -> None:
    for member in _members(c, loop):
        handler = member.on_error
        if handler is not None and handler.id not in loop.body_region:
            c.problems.add(("blocks", c.index_of[member.id], "on_error"),
                           f"this block is in the body of '{loop.id}', whose passes run side by side, and its "
                           f"on_error '{handler.id}' does not lead back to '{loop.id}'", block=member.id,
                           field="on_error", code="concurrent_body_leaves",
                           hint=f"handle the error inside the body (a handler that links back to '{loop.id}'), "
                                f"or let the pass fail and handle it with on_error on '{loop.id}'")


def _check_leaks(c: Compilation, links: LinkMap, loop: CompiledBlock) -> None:
    set_inside: dict[str, CompiledBlock] = {}
    for member in _members(c, loop):
        for name in member.impl.spec.set:
            set_inside.setdefault(name, member)
    if not set_inside:
        return
    readers = _read_after(c, links, loop)
    for name, member in set_inside.items():
        reader = readers.get(name)
        if reader is None:
            continue
        c.problems.add(("blocks", c.index_of[member.id], "set", name),
                       f"'{name}' is set in the body of '{loop.id}', whose passes run side by side, and read after "
                       f"the loop by '{reader}'; only `collect` flows out of a concurrent loop", block=member.id,
                       field=f"set.{name}", code="set_in_concurrent_body",
                       hint=f"collect it (collect: \"{{{{ {name} }}}}\" on '{loop.id}') and read `collected` in the "
                            f"loop's own set, or drop `concurrency`")


def _members(c: Compilation, loop: CompiledBlock) -> Iterator[CompiledBlock]:
    """The body's blocks, in file order (problems come out in the order a reader meets them)."""
    for block_id in sorted(loop.body_region - {loop.id}, key=c.index_of.__getitem__):
        yield c.blocks[block_id]


def _read_after(c: Compilation, links: LinkMap, loop: CompiledBlock) -> dict[str, str]:
    """Name → the first block (in file order) that reads it once the loop is done: the loop's own `set` and
    `when`, and every template of a block its `next` links and `on_error` reach outside its body."""
    reached: set[str] = set()
    for target in [link.target for link in loop.links] + ([loop.on_error] if loop.on_error else []):
        reached |= links.reach(target.id)
    readers: dict[str, str] = {}
    for name in _names(loop, deferred=False):  # its deferred inputs (collect, break_when) are read in the passes
        readers.setdefault(name, loop.id)
    for block_id in sorted(reached - loop.body_region - {loop.id}, key=c.index_of.__getitem__):
        for name in _names(c.blocks[block_id], deferred=True):
            readers.setdefault(name, block_id)
    return readers


def _names(block: CompiledBlock, *, deferred: bool) -> set[str]:
    """The names a block's templates read: its inputs (the deferred ones too, with `deferred`), `set` and `when`."""
    names: set[str] = set()
    for _, evaluator in [*block.inputs, *block.set_items, *(block.deferred.items() if deferred else ())]:
        names |= evaluator.names
    for link in block.links:
        if link.when is not None:
            names |= link.when.names
    return names
