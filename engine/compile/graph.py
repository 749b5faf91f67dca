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
        # Two links between the same pair (say a `when` link and the fallback): keep one edge.
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


def _edge_label(data: dict[str, Any]) -> str:
    labels = []
    for link in data["links"]:
        if link["kind"] == "error":
            labels.append(ON_ERROR)  # drawn as the key that writes it
        elif link["kind"] != "next":
            labels.append(link["kind"])
        elif link["when"] is not None:
            labels.append(str(link["when"]).replace("{{", "").replace("}}", "").strip())
    return " / ".join(labels).replace('"', "#quot;").replace("|", "#124;")


def to_mermaid(graph: nx.DiGraph, run: RunPath | None = None) -> str:
    lines = ["flowchart TD"]
    for node in graph.nodes:
        shape = ('(["', '"])') if graph.nodes[node]["type"] == "Start" else ('["', '"]')
        lines.append(f"    {node}{shape[0]}{_node_text(graph, node, run)}{shape[1]}")
    taken: list[int] = []
    for number, (source, target, data) in enumerate(graph.edges(data=True)):
        label = _edge_label(data)
        arrow = "-.->" if data["kind"] == "error" else "-->"
        lines.append(f"    {source} {arrow}{f'|{label}|' if label else ''} {target}")
        if run and (source, target) in run.links:
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
    for source, target, data in graph.edges(data=True):
        attrs = []
        label = _edge_label(data).replace("#quot;", '"').replace("#124;", "|")
        if label:
            attrs.append(f"label={_dot_quote(label)}")
        if data["kind"] == "error":
            attrs.append("style=dashed")
        if run and (source, target) in run.links:
            attrs.append('color="#1a7f37", penwidth=3')
        lines.append(f"    {_dot_quote(source)} -> {_dot_quote(target)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"
