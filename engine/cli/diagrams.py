"""`diagrama validate`, `schema` and `graph`: a diagram checked, described or drawn, without running it.

Console output only; loading, validating and drawing are the engine's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engine.cli import PATH, blocks_registry, fail, load, redactor, runs_folder

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram


@click.command()
@click.argument("diagrams", type=PATH, nargs=-1, required=True)
@click.option("--data-root", type=PATH, multiple=True,
              help="a folder besides each diagram's own that it may read files from (repeatable)")
@click.option("--check-tools", is_flag=True, help="start each MCP server (run its command, or connect to its URL) and "
              "list the tools it offers; without it, no server is started")
@click.option("--strict", is_flag=True, help="fail on warnings too (an unreachable block), as on errors")
def validate(diagrams: tuple[Path, ...], data_root: tuple[Path, ...], check_tools: bool, strict: bool) -> None:
    """Check diagrams without running them; every problem of each file is listed.

    Warnings (an unreachable block) are listed but leave a diagram valid, unless --strict.
    MCP servers are checked as written and not started, unless --check-tools starts each one and lists its tools.
    """
    import dataclasses

    from engine.compile.loader import load_diagram
    from engine.errors import DiagramInvalid

    # Plain lines, no rich: a check is a start-up-sized command, and rich alone costs a good part of it.
    registry = blocks_registry()
    # A server's command, URL or stderr may hold a key (`${ANTHROPIC_API_KEY}` expanded): scrubbed when servers start.
    scrub = redactor().text if check_tools else str
    bad = 0
    for path in diagrams:
        try:
            loaded = load_diagram(path, registry, data_roots=data_root or (), start_servers=check_tools)
        except DiagramInvalid as exc:
            bad += 1
            problems = [dataclasses.replace(p, severity="error") for p in exc.problems] if strict else exc.problems
            sys.stderr.write(scrub("".join(f"{problem}\n" for problem in problems)))
            continue
        if strict and loaded.warnings:
            bad += 1
            sys.stderr.write("".join(f"{dataclasses.replace(w, severity='error')}\n" for w in loaded.warnings))
            continue
        sys.stderr.write("".join(f"{warning}\n" for warning in loaded.warnings))
        count = len(loaded.warnings)
        noted = f", {count} warning{'s' if count != 1 else ''}" if count else ""
        sys.stdout.write(f"ok  {path} ({len(loaded.blocks)} blocks{noted})\n")
        if check_tools and not _check_tools(loaded, scrub):
            bad += 1
    if bad:
        sys.stderr.write(f"{bad} of {len(diagrams)} diagram{'s' if len(diagrams) != 1 else ''} invalid\n")
        raise click.exceptions.Exit(2)


def _check_tools(loaded: Diagram, scrub: Callable[[str], str]) -> bool:
    """Start each of the diagram's MCP servers afresh and list what it offers; whether all answered. Every line goes
    through `scrub` (the redactor)."""
    import time

    from engine.tools.mcp import McpUnavailable, list_server_tools

    registry = loaded.tools
    servers = registry.mcp_servers if registry is not None else []
    if registry is not None:
        local = sum(1 for tool in registry.tools.values() if tool.mcp_server is None)
        sys.stdout.write(f"    {local} registry tool{'s' if local != 1 else ''}, {len(servers)} MCP server"
                         f"{'s' if len(servers) != 1 else ''}\n")
    answered = True
    for server in servers:
        began = time.perf_counter()
        try:
            offered = list_server_tools(server, fresh=True)
        except McpUnavailable as exc:
            answered = False
            sys.stderr.write(server.scrub(scrub(f"{server.where}: MCP server '{server.name}' ({server.transport}) failed: {exc}\n")))
            continue
        used = {name for name, tool in registry.tools.items() if tool.mcp_server == server} if registry else set()
        lines = [f"    mcp server {server.name} ({server.transport}), group {server.group}: {len(offered)} tool"
                 f"{'s' if len(offered) != 1 else ''} in {(time.perf_counter() - began) * 1000:.0f} ms\n"]
        for tool in offered:
            mark = "+" if tool.name in used else "-"  # - : left out by include/exclude
            summary = (tool.title or tool.description).split("\n", 1)[0][:90]
            lines.append(f"      {mark} {tool.name}: {summary}\n")
        sys.stdout.write(server.scrub(scrub("".join(lines))))
    return answered


@click.command()
@click.option("--kind", type=click.Choice(["diagram", "scenario", "eval"]), default="diagram",
              help="diagram files, scenario files, or eval files")
def schema(kind: str) -> None:
    """Print the JSON Schema of diagram files (for editors: diagrama schema > diagram.schema.json)."""
    from engine.format.jsonout import dumps_plain

    if kind == "scenario":
        from engine.testing.scenarios import scenario_schema

        sys.stdout.write(dumps_plain(scenario_schema(), indent=True) + "\n")
        return
    if kind == "eval":
        from engine.runs.evals.spec import eval_schema

        sys.stdout.write(dumps_plain(eval_schema(), indent=True) + "\n")
        return
    from engine.compile.schema import diagram_schema

    sys.stdout.write(dumps_plain(diagram_schema(blocks_registry()), indent=True) + "\n")


def _child_of(diagram: Diagram, address: str) -> Diagram:
    """The diagram the Subdiagram block at `address` (`sub`, `sub/inner`) runs, loaded with `diagram`."""
    from engine.errors import UsageError

    found = diagram
    for name in address.split("/"):
        block = found.blocks.get(name)
        if block is None or block.child is None:
            why = "no such block" if block is None else "not a Subdiagram with a literal diagram path"
            raise fail(UsageError(f"--subdiagram {address}: '{name}' in {found.path.name} is {why}"))
        found = block.child
    return found


@click.command()
@click.argument("diagram", type=PATH)
@click.option("--format", "format", type=click.Choice(["mermaid", "dot"]), default="mermaid", help="mermaid or dot")
@click.option("--run", help="a run id, run folder or trace file to highlight")
@click.option("--subdiagram", help="draw the child of this Subdiagram block instead (its id, or sub/inner for one "
              "deeper), with --run the path its calls took")
@click.option("--runs-dir", type=PATH)
def graph(diagram: Path, format: str, run: str | None, subdiagram: str | None, runs_dir: Path | None) -> None:
    """Draw a diagram as Mermaid or Graphviz DOT text, optionally with a run's path."""
    from engine.compile.graph import to_dot, to_mermaid
    from engine.errors import DiagramaError

    loaded = load(diagram)
    if subdiagram is not None:
        loaded = _child_of(loaded, subdiagram)
    path = None
    if run is not None:
        from engine.runs.trace_steps import run_path
        from engine.runs.traces import find_trace

        try:
            path = run_path(find_trace(run, runs_folder(runs_dir)), subdiagram)
        except DiagramaError as exc:
            raise fail(exc) from None
    drawn = to_dot(loaded.graph, path) if format == "dot" else to_mermaid(loaded.graph, path)
    sys.stdout.write(drawn)
