"""Stage 3: links between blocks, one Start, reachability from it, and loop bodies that come back.

Resolves every `next`, `on_error` and port to its CompiledBlock (and compiles `when`); the
whole-graph checks walk the LinkMap built from those links (networkx only to report unreachable parts).
"""

from __future__ import annotations

from typing import Any

from engine.compile.diagram import CompiledBlock, CompiledLink
from engine.compile.graph import LinkMap, build_graph
from engine.compile.templating import Evaluator, has_template
from engine.compile.validate.compilation import Compilation, compile_template
from engine.format.names import suggest
from engine.format.spec import LinkSpec

__all__ = ["check_bodies", "check_loose_links", "check_reachable", "check_start", "link_blocks"]

Where = tuple[str | int, ...]


def _target(c: Compilation, name: str, path: Where, block: str, field: str) -> CompiledBlock | None:
    target = c.blocks.get(name)
    if target is None and name not in c.known_ids:
        c.problems.add(path, f"links to unknown block '{name}'", block=block, field=field,
                       hint=suggest(name, c.known_ids), code="unknown_link_target")
    return target


def link_blocks(c: Compilation) -> None:
    for block_id, compiled in c.blocks.items():
        where: Where = ("blocks", c.index_of[block_id])
        _link_next(c, compiled, where)
        spec = compiled.impl.spec
        if spec.on_error is not None:
            compiled.on_error = _target(c, spec.on_error, (*where, "on_error"), block_id, "on_error")
        for port in type(compiled.impl).ports():
            name = (spec.model_extra or {}).get(port)
            if name is None:
                c.problems.add(where, f"a {compiled.type_name} block needs '{port}'", block=block_id, field=port,
                               hint=f"'{port}' names the first block of its chain", code="missing_key")
                continue
            target = _target(c, name, (*where, port), block_id, port)
            if target is not None:
                compiled.ports[port] = target


def _link_next(c: Compilation, compiled: CompiledBlock, where: Where) -> None:
    spec = compiled.impl.spec
    links: list[LinkSpec]
    if spec.next is None:
        links = []
    elif isinstance(spec.next, str):
        links = [LinkSpec(to=spec.next)]
    else:
        links = spec.next
    for position, link in enumerate(links):
        path = (*where, "next") if isinstance(spec.next, str) else (*where, "next", position, "to")
        field = "next" if isinstance(spec.next, str) else f"next[{position}].to"
        target = _target(c, link.to, path, compiled.id, field)
        when = _compile_when(c, link.when, (*where, "next", position, "when"), compiled, position)
        if target is not None:
            compiled.links.append(CompiledLink(target, when, "next", position))


def _compile_when(c: Compilation, when: str | bool | None, path: Where, compiled: CompiledBlock,
                  position: int) -> Evaluator | None:
    if when is None:
        return None
    if isinstance(when, str) and not has_template(when):
        c.problems.add(path, f"'when' must be a template, got {when!r}", block=compiled.id,
                       field=f"next[{position}].when", hint=f"write it as '{{{{ {when} }}}}'", code="invalid_when")
        return None
    return compile_template(c, when, path, compiled.id, f"next[{position}].when")


def check_loose_links(c: Compilation) -> None:
    """The `next` and `on_error` targets of blocks that failed their own checks (an unknown type, a bad key):
    every problem of the file at once, not this one after the block is fixed."""
    written = c.data.get("blocks") if isinstance(c.data, dict) else None
    compiled = set(c.index_of.values())
    for index, raw in enumerate(written if isinstance(written, list) else []):
        if index in compiled or not isinstance(raw, dict):
            continue
        block = raw.get("id") if isinstance(raw.get("id"), str) else None
        following = raw.get("next")
        targets: list[tuple[Where, str, Any]] = []
        if isinstance(following, str):
            targets.append((("blocks", index, "next"), "next", following))
        elif isinstance(following, list):
            targets += [(("blocks", index, "next", position, "to"), f"next[{position}].to", link.get("to"))
                        for position, link in enumerate(following) if isinstance(link, dict)]
        targets.append((("blocks", index, "on_error"), "on_error", raw.get("on_error")))
        for path, field, name in targets:
            if isinstance(name, str) and block is not None:
                _target(c, name, path, block, field)


def check_start(c: Compilation) -> CompiledBlock | None:
    starts = [b for b in c.blocks.values() if type(b.impl).is_start]
    if not starts:
        if not c.start_written:  # a Start that failed its own checks has its problems reported already
            c.problems.add(("blocks",), "the diagram has no Start block", field="blocks",
                           hint="add a block with 'type: Start' where the run begins", code="no_start")
        return None
    for extra in starts[1:]:
        c.problems.add(("blocks", c.index_of[extra.id]), "a diagram has exactly one Start block; "
                       f"'{starts[0].id}' is already one", block=extra.id, field="type", code="several_starts")
    return starts[0]


def check_reachable(c: Compilation, links: LinkMap, start: CompiledBlock) -> None:
    reached = links.reach(start.id)
    if len(reached) == len(links.order):
        return
    import networkx as nx  # only here: what is lost is reported by the parts it makes

    graph = build_graph(c.blocks.values())
    lost = graph.subgraph(n for n in graph if n not in reached)
    # Report where each unreachable part begins, not every block behind it.
    condensed = nx.condensation(lost)
    for component in condensed:
        if condensed.in_degree(component):
            continue
        members = condensed.nodes[component]["members"]
        behind = nx.descendants(lost, next(iter(members))) - set(members)
        for block_id in sorted(members, key=lambda b: c.index_of[b]):
            more = f" (and so are {', '.join(sorted(behind))})" if behind else ""
            # A warning: a draft may keep blocks it does not link yet; they never run.
            c.problems.add(("blocks", c.index_of[block_id]), f"this block is unreachable from Start{more}",
                           block=block_id, hint="link to it from another block, or remove it", code="unreachable_block",
                           severity="warning")


def check_bodies(c: Compilation, links: LinkMap) -> None:
    """Each body chain must come back to its block; the blocks it runs (handlers too) become its body_region."""
    for compiled in c.blocks.values():
        port = type(compiled.impl).body_port
        if port and port in compiled.ports:
            _check_body(c, links, compiled, port)


def _check_body(c: Compilation, links: LinkMap, compiled: CompiledBlock, port: str) -> None:
    loop = compiled.id
    head = compiled.ports[port].id
    where = ("blocks", c.index_of[loop], port)
    if head == loop:
        c.problems.add(where, f"the {port} of '{loop}' cannot be the block itself", block=loop, field=port,
                       code="invalid_loop_body")
        return
    others = set(links.order) - {loop}
    # The chain: what the body head reaches by normal links without passing the loop block.
    chain = links.reach(head, within=others, errors=False)
    returning = {n for n in chain if links.kind(n, loop) not in (None, "error")}
    if not returning:
        c.problems.add(where, f"the {port} chain starting at '{head}' never links back to '{loop}'", block=loop,
                       field=port, hint=f"make the chain's last block link 'next: {loop}'", code="loop_body_open")
        return
    comes_back = set(returning)
    for member in returning:
        comes_back |= links.reaching(member, within=chain, errors=False)
    for member in sorted(chain - comes_back):
        c.problems.add(("blocks", c.index_of[member]),
                       f"this block is in the {port} of '{loop}' but its chain never links back to it",
                       block=member, field="next", hint=f"link it back with 'next: {loop}', or leave "
                       "the loop only through on_error", code="loop_body_leaves")
    # Handlers reached by on_error inside the body that come back belong to it too.
    reached = links.reach(head, within=others)
    leads_back = links.reaching(loop, within=set(links.order))
    compiled.body_region = frozenset(n for n in reached if n in comes_back or n in leads_back)
