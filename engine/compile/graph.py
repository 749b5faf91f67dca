"""The diagram's links: a plain adjacency map for validation, the networkx graph, and its drawings.

Nodes are block ids (with type, label and line); edges are links with their kind
(`next`, `error`, `body`) and `when`. Drawings can mark the path a run took.

Validation walks `LinkMap` (a dict of dicts) rather than networkx: importing networkx costs
about 70 ms, more than validating a small diagram, and `diagrama validate`/`run` need only
reachability. The networkx graph is built when something asks for it (`Diagram.graph`,
`diagrama graph`, the studio), and for the rare report of unreachable parts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.format.links import ON_ERROR

if TYPE_CHECKING:
    import networkx as nx

    from engine.compile.diagram import CompiledBlock

__all__ = ["LinkMap", "RunPath", "build_graph", "loop_bodies", "outgoing", "to_dot", "to_mermaid"]


class LinkMap:
    """Block id → {linked block id: kind}, with the walks validation needs.

    One entry per pair, as in the networkx graph: when an `error` link and another link join the
    same pair, the pair counts as the other kind.
    """

    def __init__(self, blocks: Iterable[CompiledBlock]) -> None:
        self.order: list[str] = []
        self.targets: dict[str, dict[str, str]] = {}
        for block in blocks:
            self.order.append(block.id)
            out = self.targets[block.id] = {}
            for target, kind, _when, _index in outgoing(block):
                out[target] = _pair_kind(out.get(target), kind)

    def kind(self, source: str, target: str) -> str | None:
        return self.targets.get(source, {}).get(target)

    def reach(self, head: str, *, within: Collection[str] | None = None, errors: bool = True) -> set[str]:
        """`head` and every block reached from it; only through `within` when given; `errors=False` skips error links."""
        seen = {head}
        todo = [head]
        while todo:
            for target, kind in self.targets.get(todo.pop(), {}).items():
                if target in seen or (within is not None and target not in within) or (not errors and kind == "error"):
                    continue
                seen.add(target)
                todo.append(target)
        return seen

    def reaching(self, tail: str, *, within: Collection[str], errors: bool = True) -> set[str]:
        """Every block of `within` from which `tail` is reached inside `within` (`tail` not included)."""
        sources: dict[str, list[str]] = {}
        for source in within:
            for target, kind in self.targets.get(source, {}).items():
                if target in within and (errors or kind != "error"):
                    sources.setdefault(target, []).append(source)
        seen: set[str] = set()
        todo = [tail]
        while todo:
            for source in sources.get(todo.pop(), ()):
                if source not in seen:
                    seen.add(source)
                    todo.append(source)
        seen.discard(tail)
        return seen


def build_graph(blocks: Iterable[CompiledBlock]) -> nx.DiGraph:
    import networkx as nx

    graph = nx.DiGraph()
    blocks = list(blocks)
    for block in blocks:
        graph.add_node(block.id, type=block.type_name, label=block.label, line=block.line)
    for block in blocks:
        for target, kind, when, index in outgoing(block):
            _add_edge(graph, block.id, target, kind, when, index)
    return graph


def outgoing(block: CompiledBlock) -> Iterator[tuple[str, str, Any, int | None]]:
    """A compiled block's links as (target id, kind, `when` as written, index among its `next` links): its
    `next` links in the order they are tried, its ports (kind: the port's name), its `on_error` (kind `error`).
    What validation walks, the drawings draw and the studio shows."""
    for link in block.links:
        yield link.target.id, "next", link.when.source if link.when else None, link.index
    for port, target in block.ports.items():
        yield target.id, port, None, None
    if block.on_error is not None:
        yield block.on_error.id, "error", None, None


def loop_bodies(blocks: Iterable[CompiledBlock]) -> list[tuple[str, list[str]]]:
    """Each block with a body port (a Loop) and the blocks its body runs, handlers included, in file order."""
    blocks = list(blocks)
    order = {block.id: position for position, block in enumerate(blocks)}
    return [(block.id, sorted(block.body_region - {block.id}, key=order.__getitem__))
            for block in blocks if type(block.impl).body_port is not None]


def _pair_kind(kept: str | None, kind: str) -> str:
    """The kind of a pair joined by more than one link: the first that is not `error`."""
    return kind if kept is None or kept == "error" else kept


def _add_edge(graph: nx.DiGraph, source: str, target: str, kind: str, when: Any, index: int | None) -> None:
    if graph.has_edge(source, target):
        # Two links between the same pair (say a `when` link and the fallback): one edge (a DiGraph's walks and
        # `graph.edges[a, b]` stay as they are), each link kept in its `links`, which the drawings draw one by one.
        edge = graph.edges[source, target]
        edge["links"].append({"kind": kind, "when": when, "index": index})
        edge["kind"] = _pair_kind(edge["kind"], kind)
        return
    graph.add_edge(source, target, kind=kind, when=when, index=index,
                   links=[{"kind": kind, "when": when, "index": index}])


@dataclass
class RunPath:
    """What a run did, for drawing: blocks and links taken, the failing block, loop passes."""

    blocks: set[str] = field(default_factory=set)
    links: set[tuple[str, str]] = field(default_factory=set)
    failed: str | None = None
    passes: dict[str, int] = field(default_factory=dict)
    handled: set[str] = field(default_factory=set)
    """Blocks that failed with their error handled by `on_error`: drawn failed, though the run went on."""
    went: dict[tuple[str, str], set[tuple[str, int | None]]] = field(default_factory=dict)
    """How the run left a block for another, each time, where a Debug trace says: (`next` and the link's index where
    two go to that block, else None; or the port's name and None)."""

    def failed_blocks(self) -> set[str]:
        """Every block drawn failed: the one that failed the run and those whose failure was handled."""
        return self.handled | ({self.failed} if self.failed else set())


def _node_text(graph: nx.DiGraph, node: str, run: RunPath | None) -> str:
    data = graph.nodes[node]
    title = data.get("label") or node
    text = f"{title}<br/><small>{data['type']}</small>"
    if run and node in run.passes:
        text += f"<br/>{run.passes[node]} passes"
    return text.replace('"', "#quot;")


def _drawn_links(graph: nx.DiGraph) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every link to draw: (source, target, the link: its kind, when and index). The graph holds one edge a pair, and
    two links between the same blocks (a condition and the fallback, `next` and `on_error`) share it, in its
    `links`: each is drawn, in the order the block has them."""
    for source, target, data in graph.edges(data=True):
        for link in data["links"]:
            yield source, target, link


def _link_label(link: dict[str, Any]) -> str:
    """A link's label: `on_error` (drawn as the key that writes it), a port's name, a condition as written, or
    "otherwise" for a fallback after conditions (as the studio's canvas labels it); a block's only link has none."""
    if link["kind"] == "error":
        text = ON_ERROR
    elif link["kind"] != "next":
        text = str(link["kind"])
    elif link["when"] is not None:
        text = str(link["when"]).replace("{{", "").replace("}}", "").strip()
    elif link["index"]:  # a `next` link without `when` after others: taken when none of theirs held
        text = "otherwise"
    else:
        text = ""
    return text.replace('"', "#quot;").replace("|", "#124;")


def _taken(graph: nx.DiGraph, run: RunPath | None, source: str, target: str, link: dict[str, Any]) -> bool:
    """Whether a run's path took this link.

    An `on_error` link was taken when its block's failure was handled (an ignored one goes on along `next`). Another
    link, when the run went from its block to its target, and where two links join the pair: as the trace's
    `block_finished` events say it left (the port, or the index of the `next` link taken), at Debug and above. A
    Release trace has no such events: then a `next` link or a port beside a taken `on_error` link is not marked
    unless the block may have run more than once (the target leads back to it), and two `next` links to the same
    block are both marked.
    """
    if run is None or (source, target) not in run.links:
        return False
    if link["kind"] == "error":
        return source in run.handled
    links = graph.edges[source, target]["links"]
    if len(links) == 1:
        return True
    went = run.went.get((source, target))
    if went is not None:
        if link["kind"] != "next":
            return (link["kind"], None) in went
        return ("next", link["index"]) in went or ("next", None) in went
    if source not in run.handled or not any(other["kind"] == "error" for other in links):
        return True
    import networkx as nx  # loaded already: `graph` is one

    return bool(nx.has_path(graph, target, source))  # ran more than once: it may have gone both ways


def to_mermaid(graph: nx.DiGraph, run: RunPath | None = None) -> str:
    lines = ["flowchart TD"]
    for node in graph.nodes:
        shape = ('(["', '"])') if graph.nodes[node]["type"] == "Start" else ('["', '"]')
        lines.append(f"    {node}{shape[0]}{_node_text(graph, node, run)}{shape[1]}")
    taken: list[int] = []
    # One line a link: `linkStyle N` counts them in this order.
    for number, (source, target, link) in enumerate(_drawn_links(graph)):
        label = _link_label(link)
        arrow = "-.->" if link["kind"] == "error" else "-->"
        lines.append(f"    {source} {arrow}{f'|{label}|' if label else ''} {target}")
        if _taken(graph, run, source, target, link):
            taken.append(number)
    if run:
        lines.append("    classDef taken fill:#d1f2d9,stroke:#1a7f37,stroke-width:2px")
        lines.append("    classDef failed fill:#ffd8d8,stroke:#cf222e,stroke-width:3px")
        failed = run.failed_blocks()
        visited = sorted(run.blocks - failed)
        if visited:
            lines.append(f"    class {','.join(visited)} taken")
        if failed:
            lines.append(f"    class {','.join(sorted(failed))} failed")
        for number in taken:
            lines.append(f"    linkStyle {number} stroke:#1a7f37,stroke-width:3px")
    return "\n".join(lines) + "\n"


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: nx.DiGraph, run: RunPath | None = None) -> str:
    lines = ["digraph diagram {", "    rankdir=TB;", "    node [shape=box, style=rounded];"]
    for node in graph.nodes:
        data = graph.nodes[node]
        label = f"{data.get('label') or node}\\n{data['type']}"
        if run and node in run.passes:
            label += f"\\n{run.passes[node]} passes"
        attrs = [f"label={_dot_quote(label).replace(chr(92) * 2 + 'n', chr(92) + 'n')}"]
        if run and node in run.failed_blocks():
            attrs.append('style="rounded,filled", fillcolor="#ffd8d8", color="#cf222e", penwidth=3')
        elif run and node in run.blocks:
            attrs.append('style="rounded,filled", fillcolor="#d1f2d9", color="#1a7f37", penwidth=2')
        lines.append(f"    {_dot_quote(node)} [{', '.join(attrs)}];")
    for source, target, link in _drawn_links(graph):  # a digraph, not a strict one: two links are two edges
        attrs = []
        label = _link_label(link).replace("#quot;", '"').replace("#124;", "|")
        if label:
            attrs.append(f"label={_dot_quote(label)}")
        if link["kind"] == "error":
            attrs.append("style=dashed")
        if _taken(graph, run, source, target, link):
            attrs.append('color="#1a7f37", penwidth=3')
        lines.append(f"    {_dot_quote(source)} -> {_dot_quote(target)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"
