"""The links a diagram file names, read straight from its data: whatever the data is, never raising.

`next` (a block id, or a list of {to, when} tried in order), `on_error`, and each block type's
ports (Loop's `body`). The validator resolves these (engine.compile.validate.links), and the
studio draws them for a diagram that does not compile: one reading for both. A value of the
wrong shape (`blocks: 5`, a block that is a list, `next: [1]`, an `id` that is a list) names
no link; saying what is wrong with it is the validator's job, not this one's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["LINK_KEYS", "NEXT", "ON_ERROR", "PortsOf", "WrittenLink", "written_ids", "written_links"]

NEXT, ON_ERROR = "next", "on_error"
LINK_KEYS = (NEXT, ON_ERROR)
"""The keys of every block that name other blocks: `next` (an id, or a list of {to, when} tried in order)
and `on_error`. A block type's ports (Loop's `body`) name blocks too: `Block.ports()`."""

PortsOf = Callable[[str], Iterable[str]]
"""ports_of(block type name): that type's ports (nothing for an unknown type); `BlockRegistry.ports_of`."""

Where = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class WrittenLink:
    """One link as the file writes it. `kind` is `next`, `error` (on_error) or the port's name."""

    index: int
    """The block's position in `blocks`."""
    source: str | None
    """The block's id; None when it has none that is text."""
    target: str
    """The id the link names, as written (it may name no block)."""
    kind: str
    where: Where
    """The path of the target's value in the file's data, for a problem's line."""
    field: str
    """The target's key as a problem names it: `next`, `next[1].to`, `on_error`, `body`."""
    when: Any = None
    """A `next` link's condition as written (a template, a bool); None: always."""
    position: int = 0
    """A `next` link's place among the block's `next` links as written (0 for a lone id)."""


def written_links(data: Any, ports_of: PortsOf) -> list[WrittenLink]:
    """Every link of every block the file writes, block by block: its `next` links in order, its ports, `on_error`
    (the order of engine.compile.graph.outgoing, which lists a compiled block's)."""
    blocks = data.get("blocks") if isinstance(data, dict) else None
    if not isinstance(blocks, list):
        return []
    links: list[WrittenLink] = []
    for index, raw in enumerate(blocks):
        if isinstance(raw, dict):
            links.extend(_block_links(index, raw, ports_of))
    return links


def written_ids(data: Any) -> list[str]:
    """The ids the file's blocks write, in order (those that are text): what a link may name."""
    blocks = data.get("blocks") if isinstance(data, dict) else None
    if not isinstance(blocks, list):
        return []
    return [raw["id"] for raw in blocks if isinstance(raw, dict) and isinstance(raw.get("id"), str)]


def _block_links(index: int, raw: dict[Any, Any], ports_of: PortsOf) -> Iterator[WrittenLink]:
    source = raw.get("id")
    source = source if isinstance(source, str) else None
    where: Where = ("blocks", index)
    following = raw.get(NEXT)
    if isinstance(following, str):
        yield WrittenLink(index, source, following, "next", (*where, NEXT), NEXT)
    elif isinstance(following, list):
        for position, link in enumerate(following):
            target = link.get("to") if isinstance(link, dict) else None
            if isinstance(target, str):
                yield WrittenLink(index, source, target, "next", (*where, NEXT, position, "to"),
                                  f"{NEXT}[{position}].to", link.get("when"), position)
    type_name = raw.get("type")
    for port in ports_of(type_name) if isinstance(type_name, str) else ():
        target = raw.get(port)
        if isinstance(target, str):
            yield WrittenLink(index, source, target, port, (*where, port), port)
    handler = raw.get(ON_ERROR)
    if isinstance(handler, str):
        yield WrittenLink(index, source, handler, "error", (*where, ON_ERROR), ON_ERROR)
