"""Stage 3: links between blocks, one Start, reachability from it, and loop bodies that come back.

Resolves every `next`, `on_error` and port the file writes (engine.format.links) to its CompiledBlock
(and compiles `when`); the whole-graph checks walk the LinkMap built from those links (networkx only
to report unreachable parts).
"""

from __future__ import annotations

from engine.compile.diagram import CompiledBlock, CompiledLink
from engine.compile.graph import LinkMap, build_graph
from engine.compile.templating import Evaluator, has_template
from engine.compile.validate.compilation import Compilation, compile_template
from engine.format.links import WrittenLink, written_links
from engine.format.names import suggest

__all__ = ["check_bodies", "check_reachable", "check_start", "link_blocks"]

Where = tuple[str | int, ...]


def _target(c: Compilation, name: str, path: Where, block: str, field: str) -> CompiledBlock | None:
    target = c.blocks.get(name)
    if target is None and name not in c.known_ids:
        c.problems.add(path, f"links to unknown block '{name}'", block=block, field=field,
                       hint=suggest(name, c.known_ids), code="unknown_link_target")
    return target


def link_blocks(c: Compilation) -> None:
    """Resolve every link the file writes (engine.format.links, the reading the studio draws from too).

    A compiled block's links reach their CompiledBlocks, with each `when` compiled. A block that failed its
    own checks (an unknown type, a bad key) has its targets checked all the same: every problem of the file
    at once, not this one after the block is fixed.
    """
    compiled_at = {index: c.blocks[block_id] for block_id, index in c.index_of.items()}
    fallbacks: dict[int, str] = {}  # a block's first `next` link always taken (no `when`): the links after it never run
    for link in written_links(c.data, c.registry.ports_of):
        if link.kind == "next":
            _check_dead(c, link, fallbacks)
        compiled = compiled_at.get(link.index)
        if compiled is None:
            if link.source is not None:
                _target(c, link.target, link.where, link.source, link.field)
            continue
        target = _target(c, link.target, link.where, compiled.id, link.field)
        if link.kind == "next" and link.target == compiled.id and link.when is None and link.position == 0:
            # its first link, always taken: the run would come back here until max_steps
            c.problems.add(link.where, f"'{compiled.id}' links to itself with no 'when': a run would repeat it "
                           "until max_steps", block=compiled.id, field=link.field,
                           hint="give the link a 'when' that ends the loop, or link to another block",
                           code="self_link")
        if link.kind == "next":
            when = _compile_when(c, link.when, ("blocks", link.index, "next", link.position, "when"), compiled,
                                 link.position)
            if target is not None:
                compiled.links.append(CompiledLink(target, when, "next", link.position))
        elif link.kind == "error":
            compiled.on_error = target
        elif target is not None:
            compiled.ports[link.kind] = target
    for block_id, compiled in c.blocks.items():
        for port in type(compiled.impl).ports():
            if (compiled.impl.spec.model_extra or {}).get(port) is None:
                c.problems.add(("blocks", c.index_of[block_id]), f"a {compiled.type_name} block needs '{port}'",
                               block=block_id, field=port, hint=f"'{port}' names the first block of its chain",
                               code="missing_key")


def _check_dead(c: Compilation, link: WrittenLink, fallbacks: dict[int, str]) -> None:
    """A `next` link after one always taken (no `when`, or `when: true`) can never run: a warning, as an unreachable
    block is (a draft may have just drawn it), that `validate --strict` fails on."""
    before = fallbacks.get(link.index)
    if before is not None:
        c.problems.add(link.where, f"this link to '{link.target}' never runs: the link to '{before}' before it has no "
                       "'when', so it is always taken", block=link.source, field=f"next[{link.position}]",
                       hint=f"give it a 'when' (and move it above the link to '{before}'), or remove it",
                       code="dead_link", severity="warning")
    elif link.when is None or link.when is True:
        fallbacks[link.index] = link.target


def _compile_when(c: Compilation, when: str | bool | None, path: Where, compiled: CompiledBlock,
                  position: int) -> Evaluator | None:
    if when is None:
        return None
    if isinstance(when, str) and not has_template(when):
        c.problems.add(path, f"'when' must be a template, got {when!r}", block=compiled.id,
                       field=f"next[{position}].when", hint=f"write it as '{{{{ {when} }}}}'", code="invalid_when")
        return None
    return compile_template(c, when, path, compiled.id, f"next[{position}].when")


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
    bodies = {compiled.id: compiled.ports[port].id for compiled in c.blocks.values()
              if (port := type(compiled.impl).body_port) and port in compiled.ports}
    for block_id in bodies:
        _check_body(c, links, c.blocks[block_id], bodies)


def _enclosing(links: LinkMap, loop: str, bodies: dict[str, str]) -> set[str]:
    """The blocks whose body holds `loop` (the loops around it): their body heads reach it without passing them."""
    return {other for other, head in bodies.items()
            if other != loop and loop in links.reach(head, within=set(links.order) - {other})}


def _leave_hint(compiled: CompiledBlock) -> str:
    """How to leave a body: back to its block, early through the block's own exit (Loop's break_when), on_error."""
    loop, exit_input = compiled.id, type(compiled.impl).body_exit
    early = f"; to end '{loop}' early, give it a {exit_input}" if exit_input else ""
    return f"link it back with 'next: {loop}'{early}; or leave the loop only through on_error"


def _check_body(c: Compilation, links: LinkMap, compiled: CompiledBlock, bodies: dict[str, str]) -> None:
    loop = compiled.id
    port = type(compiled.impl).body_port
    assert port is not None  # check_bodies passes only blocks with a body
    head = bodies[loop]
    where = ("blocks", c.index_of[loop], port)
    if head == loop:
        c.problems.add(where, f"the {port} of '{loop}' cannot be the block itself", block=loop, field=port,
                       code="invalid_loop_body")
        return
    # The chain: what the body head reaches by normal links without passing the loop block, nor a loop around it
    # (a link to that one leaves this body: its own body entry must not count as coming back here).
    around = _enclosing(links, loop, bodies)
    others = set(links.order) - {loop} - around
    chain = links.reach(head, within=others, errors=False)
    leavers = {n: outer for n in chain for outer in around if links.kind(n, outer) not in (None, "error")}
    for member in sorted(leavers, key=c.index_of.__getitem__):
        c.problems.add(("blocks", c.index_of[member]),
                       f"this block is in the {port} of '{loop}' but links to '{leavers[member]}', the loop around it",
                       block=member, field="next", hint=_leave_hint(compiled), code="loop_body_leaves")
    returning = {n for n in chain if links.kind(n, loop) not in (None, "error")}
    if not returning:
        if not leavers:
            c.problems.add(where, f"the {port} chain starting at '{head}' never links back to '{loop}'", block=loop,
                           field=port, hint=f"make the chain's last block link 'next: {loop}'", code="loop_body_open")
        return
    comes_back = set(returning)
    for member in returning:
        comes_back |= links.reaching(member, within=chain, errors=False)
    for member in sorted(chain - comes_back - set(leavers), key=c.index_of.__getitem__):
        c.problems.add(("blocks", c.index_of[member]),
                       f"this block is in the {port} of '{loop}' but its chain never links back to it",
                       block=member, field="next", hint=_leave_hint(compiled), code="loop_body_leaves")
    # Handlers reached by on_error inside the body that come back belong to it too.
    reached = links.reach(head, within=set(links.order) - {loop})
    leads_back = links.reaching(loop, within=set(links.order))
    compiled.body_region = frozenset(n for n in reached if n in comes_back or n in leads_back)
