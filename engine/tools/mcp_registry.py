"""A registry's `mcp_servers:` as tools: each entry checked, its server listed, its tools made first-class.

Each problem names the registry file, the entry's line and the server; the tools get the
server's group and timeout, and an embedding key of server, name and a hash of what the
server says of them (engine.tools.mcp has the sessions and the calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from engine.errors import Problem
from engine.format.names import valid_tool_name
from engine.format.validation import dotted, validation_message
from engine.tools.mcp import McpServer, McpServerEntry, McpUnavailable, environment, list_server_tools, mcp_handler, resolve_server

if TYPE_CHECKING:
    from engine.format.yamlfile import LineMap
    from engine.tools.registry import Tool

__all__ = ["registry_tools"]


# One entry's checks in the order a reader meets them in the file; each problem names its line.
def registry_tools(raw_servers: list[Any], *, registry: str, groups: Mapping[str, str], file: Path, lines: LineMap,
                   environ: Mapping[str, str] | None, seen: dict[str, str],
                   problems: list[Problem]) -> tuple[list[Tool], list[McpServer]]:
    """The tools of a registry file's `mcp_servers:`, listed from each server; a problem for each thing wrong."""
    from engine.tools.registry import Tool, ToolEntry  # registry imports this module when a file lists servers

    source = str(file)
    tools: list[Tool] = []
    servers: list[McpServer] = []
    names: set[str] = set()
    for index, raw in enumerate(raw_servers):
        where = ("mcp_servers", index)
        line = lines.line(where)

        def add(message: str, key: str | None = None, code: str = "invalid_mcp_server", hint: str | None = None,
                index: int = index, where: tuple[str, int] = where, line: int | None = line) -> None:
            problems.append(Problem(source, (lines.line((*where, key)) if key else None) or line, message,
                                    field=f"mcp_servers[{index}]" + (f".{key}" if key else ""), hint=hint, code=code))

        try:
            entry = McpServerEntry.model_validate(raw)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                loc = tuple(error["loc"])
                problems.append(Problem(source, lines.line((*where, *loc)) or line, validation_message(error),
                                        field=f"mcp_servers[{index}]" + (f".{dotted(loc)}" if loc else ""),
                                        code="invalid_mcp_server"))
            continue
        if entry.name in names:
            add(f"duplicate MCP server name '{entry.name}'", "name")
            continue
        names.add(entry.name)
        if groups and entry.group not in groups:
            add(f"group '{entry.group}' is not declared in groups", "group", hint=f"declare it, or use one of: {', '.join(groups)}")
        try:
            server = resolve_server(entry, file, line, environment(environ))
        except KeyError as exc:
            add(f"MCP server '{entry.name}': environment variable {exc.args[0]} is not set", "env",
                code="missing_environment_variable", hint=f"set {exc.args[0]} before loading the diagram")
            continue
        try:
            offered = list_server_tools(server)
        except McpUnavailable as exc:
            add(f"MCP server '{entry.name}' could not be started or listed: {exc}", code="mcp_server_failed",
                hint="diagrama validate --check-tools shows what each server offers")
            continue
        servers.append(server)
        by_name = {tool.name: tool for tool in offered}
        for position, wanted in enumerate([*(entry.include or []), *entry.exclude]):
            if wanted not in by_name:
                key = "include" if entry.include is not None and position < len(entry.include) else "exclude"
                add(f"MCP server '{entry.name}' offers no tool '{wanted}' (it offers: {', '.join(by_name) or 'none'})", key,
                    code="unknown_mcp_tool")
        for info in offered:
            if (entry.include is not None and info.name not in entry.include) or info.name in entry.exclude:
                continue
            if not valid_tool_name(info.name):
                add(f"MCP server '{entry.name}' offers tool '{info.name}', whose name a model cannot call (Latin letters, "
                    "digits, '_' and '-', at most 64 characters)", hint="leave it out with exclude:")
                continue
            if info.name in seen:
                add(f"MCP server '{entry.name}' offers tool '{info.name}', already defined in {seen[info.name]}",
                    hint="leave one of them out with exclude:", code="duplicate_tool")
                continue
            seen[info.name] = f"{source} (MCP server '{entry.name}')"
            schema = info.input_schema
            if schema.get("type") != "object":
                add(f"MCP server '{entry.name}': tool '{info.name}' has an input schema that is not 'type: object'",
                    hint="leave it out with exclude:")
                continue
            tool_entry = ToolEntry(function=info.name, handler=f"mcp:{entry.name}", description=info.description or info.title,
                                   parameters=schema, group=entry.group, timeout=entry.timeout,
                                   short_description=info.title or info.description.split("\n", 1)[0][:80])
            tools.append(Tool(tool_entry, registry, source, line, handler_line=line,
                              _callable=mcp_handler(server, info.name),
                              embedding_id=f"mcp:{entry.name}/{info.name}@{info.fingerprint}", mcp_server=server))
    return tools, servers
