"""A registry's `mcp_servers:` as tools: each entry checked, its server listed, its tools made first-class.

Two steps. Declaring checks an entry's shape without starting anything: its fields, its name,
its group, its `${VAR}`s, and the host of its URL (loopback, or one the registry lists in
`allowed_hosts`). That is all validation does (the studio, `validate`, `graph`). Listing
starts the server (runs its command or connects to its URL) and asks for its tools: only a
run, and `validate --check-tools`, list. Each problem names the registry file, the entry's
line and the server; the tools get the server's group and timeout, and an embedding key of
server, name and a hash of what the server says of them (engine.tools.mcp has the sessions
and the calls).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from engine.errors import DiagramInvalid, Problem
from engine.format.names import valid_tool_name
from engine.format.validation import dotted, validation_message
from engine.tools.mcp import McpUnavailable, list_server_tools, mcp_handler
from engine.tools.mcp_servers import McpServer, McpServerEntry, environment, resolve_server

if TYPE_CHECKING:
    from engine.format.yamlfile import LineMap
    from engine.tools.registry import Tool

__all__ = ["DeclaredServer", "declared_servers", "listed_tools", "url_host_problem", "with_listed"]


@dataclass(frozen=True)
class DeclaredServer:
    """An `mcp_servers:` entry that passed the checks of its shape: what listing it needs, where it was written."""

    entry: McpServerEntry
    server: McpServer
    index: int
    registry: str
    lines: LineMap

    @property
    def line(self) -> int | None:
        return self.lines.line(("mcp_servers", self.index))

    def problem(self, message: str, key: str | None = None, code: str = "invalid_mcp_server",
                hint: str | None = None) -> Problem:
        line = (self.lines.line(("mcp_servers", self.index, key)) if key else None) or self.line
        return Problem(self.server.source, line, message, field=f"mcp_servers[{self.index}]" + (f".{key}" if key else ""),
                       hint=hint, code=code)


def url_host_problem(url: str, allowed_hosts: list[str]) -> str | None:
    """Why a server's URL may not be reached (its host is neither loopback nor listed), or None."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError as exc:
        return f"the URL cannot be read ({exc})"
    if not host:
        return "the URL names no host"
    if host == "localhost" or host in allowed_hosts:
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass  # a name, not an address: only a listed one is reached
    return f"host '{host}' is not loopback and not in the registry's allowed_hosts"


# One entry's checks in the order a reader meets them in the file; each problem names its line.
def declared_servers(raw_servers: list[Any], *, registry: str, groups: Mapping[str, str], allowed_hosts: list[str],
                     file: Path, lines: LineMap, environ: Mapping[str, str] | None,
                     problems: list[Problem]) -> list[DeclaredServer]:
    """The servers of a registry file's `mcp_servers:`, checked without starting or reaching any of them."""
    source = str(file)
    declared: list[DeclaredServer] = []
    names: set[str] = set()
    for index, raw in enumerate(raw_servers):
        where = ("mcp_servers", index)
        line = lines.line(where)
        try:
            entry = McpServerEntry.model_validate(raw)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                loc = tuple(error["loc"])
                problems.append(Problem(source, lines.line((*where, *loc)) or line, validation_message(error),
                                        field=f"mcp_servers[{index}]" + (f".{dotted(loc)}" if loc else ""),
                                        code="invalid_mcp_server"))
            continue
        try:
            server = resolve_server(entry, file, line, environment(environ))
        except KeyError as exc:
            problems.append(Problem(source, lines.line((*where, "env")) or line,
                                    f"MCP server '{entry.name}': environment variable {exc.args[0]} is not set",
                                    field=f"mcp_servers[{index}].env", code="missing_environment_variable",
                                    hint=f"set {exc.args[0]} before loading the diagram"))
            continue
        one = DeclaredServer(entry, server, index, registry, lines)
        if entry.name in names:
            problems.append(one.problem(f"duplicate MCP server name '{entry.name}'", "name"))
            continue
        names.add(entry.name)
        if groups and entry.group not in groups:
            problems.append(one.problem(f"group '{entry.group}' is not declared in groups", "group",
                                        hint=f"declare it, or use one of: {', '.join(groups)}"))
        refused = url_host_problem(server.url, allowed_hosts) if server.url is not None else None
        if refused is not None:  # refused here, before any connection: a registry must not reach an inner network
            problems.append(one.problem(f"MCP server '{entry.name}': {refused}", "url", code="host_not_allowed",
                                        hint="add the host to the registry's allowed_hosts to allow it"))
            continue
        declared.append(one)
    return declared


def listed_tools(declared: list[DeclaredServer], seen: dict[str, str], problems: list[Problem]) -> dict[int, list[Tool]]:
    """Start each server and list its tools (by the position of its entry in `declared`); a problem for each thing
    wrong. `seen` maps the tool names already taken to where they were defined."""
    from engine.tools.registry import Tool, ToolEntry  # registry imports this module when a file lists servers

    found: dict[int, list[Tool]] = {}
    for position, one in enumerate(declared):
        entry, server = one.entry, one.server
        try:
            offered = list_server_tools(server)
        except McpUnavailable as exc:
            problems.append(one.problem(f"MCP server '{entry.name}' could not be started or listed: {exc}",
                                        code="mcp_server_failed",
                                        hint="diagrama validate --check-tools shows what each server offers"))
            continue
        tools = found[position] = []
        by_name = {tool.name: tool for tool in offered}
        for number, wanted in enumerate([*(entry.include or []), *entry.exclude]):
            if wanted not in by_name:
                key = "include" if entry.include is not None and number < len(entry.include) else "exclude"
                problems.append(one.problem(f"MCP server '{entry.name}' offers no tool '{wanted}' (it offers: "
                                            f"{', '.join(by_name) or 'none'})", key, code="unknown_mcp_tool"))
        for info in offered:
            if (entry.include is not None and info.name not in entry.include) or info.name in entry.exclude:
                continue
            if not valid_tool_name(info.name):
                problems.append(one.problem(f"MCP server '{entry.name}' offers tool '{info.name}', whose name a model "
                                            "cannot call (Latin letters, digits, '_' and '-', at most 64 characters)",
                                            hint="leave it out with exclude:"))
                continue
            if info.name in seen:
                problems.append(one.problem(f"MCP server '{entry.name}' offers tool '{info.name}', already defined in "
                                            f"{seen[info.name]}", hint="leave one of them out with exclude:",
                                            code="duplicate_tool"))
                continue
            seen[info.name] = f"{server.source} (MCP server '{entry.name}')"
            if info.input_schema.get("type") != "object":
                problems.append(one.problem(f"MCP server '{entry.name}': tool '{info.name}' has an input schema that is "
                                            "not 'type: object'", hint="leave it out with exclude:"))
                continue
            tool_entry = ToolEntry(function=info.name, handler=f"mcp:{entry.name}", description=info.description or info.title,
                                   parameters=info.input_schema, group=entry.group, timeout=entry.timeout,
                                   short_description=info.title or info.description.split("\n", 1)[0][:80])
            tools.append(Tool(tool_entry, one.registry, server.source, one.line, handler_line=one.line,
                              _callable=mcp_handler(server, info.name),
                              embedding_id=f"mcp:{entry.name}/{info.name}@{info.fingerprint}", mcp_server=server))
    return found


def with_listed(slots: list[Tool | DeclaredServer], unlisted: list[DeclaredServer],
                tools: Mapping[str, Tool]) -> tuple[dict[str, Tool], set[str]]:
    """A registry's tools with those of its `unlisted` servers (started and listed now) where their entries stand,
    and the names that are new; DiagramInvalid with every problem when one cannot be started or listed."""
    problems: list[Problem] = []
    found = listed_tools(unlisted, {name: tool.source for name, tool in tools.items()}, problems)
    if problems:
        raise DiagramInvalid(problems)
    listed = {id(declared): found[position] for position, declared in enumerate(unlisted)}
    ordered: list[Tool] = []
    for slot in slots:
        ordered += listed[id(slot)] if isinstance(slot, DeclaredServer) else [slot]
    return {tool.name: tool for tool in ordered}, {tool.name for new in found.values() for tool in new}
