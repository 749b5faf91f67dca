"""Tool registries: files of tools with an ERP data dictionary's fields, and selection.

A registry names the modules its handlers may come from; a diagram cannot name other
code. `tools('group', query=..., top_k=..., min_score=...)` in a template yields a
tools table of enabled tools, the best match for the query first when one is given
(ranking.py: words and embeddings fused). A registry's MCP servers are declared when it loads
and started (their tools listed) only by `start_servers`, which a run calls: checking a diagram
runs no server's command. Calling a model is not done here; ToolDispatch runs what a model called.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from engine.errors import DiagramInvalid, Problem, ToolError
from engine.format.names import suggest, valid_tool_name
from engine.format.schemas import schema_refusal
from engine.format.spec import SecretName
from engine.format.validation import dotted, validation_message
from engine.format.yamlfile import LineMap, read_yaml
from engine.tools.embeddings import Embedder, EmbeddingCache, make_embedder
from engine.tools.handlers import (
    STANDARD_MODULE,
    HandlerRefused,
    HandlerUnloadable,
    handler_path_problem,
    load_handler,
    module_allowed,
)
from engine.tools.http_tools import HTTP_TEMPLATED, HttpToolSpec, RenderedHttp, literal_host_problem
from engine.tools.knowledge_tools import knowledge_parameters
from engine.tools.ranking import EmbeddedText, Ranker, Ranking, ToolScore, tool_document, tool_text
from engine.tools.selection import RankedTools
from engine.tools.tools_table import ToolsTable

if TYPE_CHECKING:
    from engine.tools.mcp_registry import DeclaredServer
    from engine.tools.mcp_servers import McpServer

__all__ = ["STANDARD_MODULE", "Tool", "ToolRegistry", "ToolsTable", "load_registries"]

class ToolEntry(BaseModel):
    """One tool, with the fields of the ERP assistant's tool table."""

    model_config = ConfigDict(extra="forbid")

    function: str = Field(description="unique name; the name the model calls")
    handler: str | None = Field(default=None, description="package.module:callable or package.module:Class.method")
    http: HttpToolSpec | None = Field(default=None, description="instead of a handler: an HTTP call, the arguments "
                                                                 "templated into it (engine.tools.http_tools)")
    knowledge: str | None = Field(default=None, description="instead of a handler: a knowledge base searched for a query")
    version: int = Field(default=1, ge=1, description="raising it refreshes the stored embedding and metadata")
    description: str = Field(description="what it does; the model reads it")
    examples: list[str] = Field(default=[], description="example user requests, embedded with the description")
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    enabled: bool = True
    standard: bool = False
    strict: bool = False
    rules: str = Field(default="", description="usage rules appended to what the model is told")
    group: str = Field(default="default")
    short_description: str = ""
    timeout: float = Field(default=30, gt=0, description="seconds a call may take")

    @model_validator(mode="after")
    def _one_kind(self) -> ToolEntry:
        if sum(kind is not None for kind in (self.handler, self.http, self.knowledge)) != 1:
            raise ValueError("a tool has a handler, an http call or a knowledge base: give one of them")
        if self.knowledge is not None and "parameters" not in self.model_fields_set:
            self.parameters = knowledge_parameters()
        return self


class RegistryFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    registry: str
    allowed_modules: list[str] = Field(default=[])
    allowed_hosts: list[str] = Field(default=[], description="hosts the standard http_get may fetch, and MCP servers' "
                                                              "URLs may name besides loopback")
    groups: dict[str, str] = Field(default={})
    standard_tools: list[str] = Field(default=[], description="standard tools to include by name")
    embedder: dict[str, Any] | None = None
    secrets: list[SecretName] = Field(default=[], description="environment variables its http tools may read with "
                                                               "secret('NAME') besides the diagram's; redacted everywhere")
    tools: list[dict[str, Any]] = Field(default=[])
    mcp_servers: list[Any] = Field(default=[], description="MCP servers whose tools join the registry")
    knowledge: dict[str, Any] = Field(default={}, description="knowledge bases the diagrams naming this file may "
                                                              "search: {name: {folder, include, chunk}}")


@dataclass
class Tool:
    entry: ToolEntry
    registry: str
    source: str
    line: int | None
    allowed_hosts: tuple[str, ...] = ()
    handler_line: int | None = None
    _callable: Callable[..., Any] | None = field(default=None, repr=False)
    embedding_id: str | None = None
    """An MCP tool's `mcp:server/name@hash of its description and schema`, in place of name and version."""
    mcp_server: McpServer | None = field(default=None, repr=False)
    folder: Path | None = None
    """The diagram's folder: its handler modules are imported from there (see `_import_handler_module`)."""
    http_lines: dict[str, int | None] = field(default_factory=dict)
    """An `http:` tool's lines, by field (`url`, `headers`, ...): where its template problems are reported."""
    http_templates: RenderedHttp | None = field(default=None, repr=False)
    """An `http:` tool's templates, compiled by the loader (engine.compile.http_tools)."""
    secrets: tuple[str, ...] = ()
    """The secrets its registry file lists (an http tool's templates may read them)."""

    @property
    def name(self) -> str:
        return self.entry.function

    @property
    def model_description(self) -> str:
        if self.entry.rules:
            return f"{self.entry.description}\n\nRules: {self.entry.rules}"
        return self.entry.description

    def embedding_text(self, embedded: EmbeddedText) -> str:
        entry = self.entry
        return tool_text(self.name, entry.description, entry.examples, entry.parameters, embedded)

    def document(self) -> dict[str, list[str]]:
        """Its words per field, as the lexical index reads them."""
        entry = self.entry
        return tool_document(self.name, entry.description, entry.examples, entry.rules, entry.parameters)

    def embedding_key(self, embedder: str) -> str:
        if self.embedding_id is not None:
            return f"{self.embedding_id}@{embedder}"
        return EmbeddingCache.key(self.name, self.entry.version, embedder)

    def handler(self) -> Callable[..., Any]:
        if self._callable is None:
            if self.entry.handler is None:  # an http or knowledge tool: ToolDispatch calls it (blocks/_*_tool.py)
                raise HandlerUnloadable(f"tool '{self.name}' has no handler")
            self._callable = load_handler(self.entry.handler, self.allowed_hosts, self.folder)
        return self._callable


class ToolRegistry:
    """Every tool of a diagram's registries, with their embeddings."""

    def __init__(self, tools: list[Tool], embedder: Embedder, caches: list[EmbeddingCache],
                 ranking: Ranking | None = None) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.embedder = embedder
        self._ranked = RankedTools(embedder, caches, ranking or Ranking())
        self.mcp_servers: list[McpServer] = []
        """The MCP servers its tools come from (listed by `start_servers`; called through a run's sessions)."""
        self._slots: list[Tool | DeclaredServer] = list(tools)
        self._unlisted: list[DeclaredServer] = []
        self._listing = threading.Lock()
        self.offered_check: Callable[[set[str]], list[Problem]] | None = None
        self.knowledge: list[tuple[Path, LineMap, dict[str, Any]]] = []
        """Each registry file's `knowledge:` as written, with its lines (the loader checks and declares them)."""
        """Problems of newly listed tools with the blocks that may be offered them (set by the loader)."""

    def declare_servers(self, slots: list[Tool | DeclaredServer]) -> None:
        """The registries' tools and MCP servers in the order they were written; the servers not started yet."""
        self._slots = slots
        self._unlisted = [slot for slot in slots if not isinstance(slot, Tool)]
        self.mcp_servers = [declared.server for declared in self._unlisted]

    @property
    def unlisted(self) -> bool:
        """Whether some MCP servers have not been started and listed yet (the diagram was only checked)."""
        return bool(self._unlisted)

    def start_servers(self) -> None:
        """Start the MCP servers not listed yet and add their tools where their entries stand; DiagramInvalid with every
        problem when one cannot be started or listed (then nothing is added, and the next call tries again)."""
        with self._listing:
            if not self._unlisted:
                return
            from engine.tools.mcp_registry import with_listed

            tools, new = with_listed(self._slots, self._unlisted, self.tools)
            before, self.tools = self.tools, tools
            problems = self.offered_check(new) if self.offered_check is not None else []
            if problems:
                self.tools = before
                raise DiagramInvalid(problems)
            self.prepare(self._ranked.cache_for)
            self._unlisted = []

    def groups(self) -> set[str]:
        """The tool groups: of its tools, and of its MCP servers not listed yet."""
        return {t.entry.group for t in self.tools.values()} | {declared.entry.group for declared in self._unlisted}

    def enabled(self, group: str | None = None) -> list[Tool]:
        return [t for t in self.tools.values() if t.entry.enabled and (group is None or t.entry.group == group)]

    def get(self, name: str) -> Tool | None:
        tool = self.tools.get(name)
        return tool if tool is not None and tool.entry.enabled else None

    @property
    def ranking(self) -> Ranking:
        """How tools are ranked (ranking.py); a new one is used from the next ranked selection."""
        return self._ranked.ranking

    @ranking.setter
    def ranking(self, ranking: Ranking) -> None:
        self._ranked.ranking = ranking

    @property
    def embedded(self) -> int:
        """How many tools' embeddings were computed, not found in a cache."""
        return self._ranked.embedded

    def prepare(self, cache_for: Mapping[str, EmbeddingCache]) -> None:
        """Embed what the caches lack (new tools, raised versions), work out the tools' words, store both back."""
        self._ranked.prepare(self.enabled(), cache_for)

    def ranker(self) -> Ranker:
        """The enabled tools' ranking, built from the caches at the first ranked selection (selection.py)."""
        return self._ranked.ranker()

    def select(self, group: str | None = None, query: str | None = None, top_k: int | None = None,
               min_score: float | None = None) -> list[tuple[Tool, ToolScore | None]]:
        """The enabled tools of `group`, best match for `query` first (ties by name), each with its scores."""
        if group is not None and group not in self.groups():
            groups = sorted(self.groups())
            raise ToolError(f"tools(): no tool group '{group}' (groups: {', '.join(groups)})", type="unknown_tool_group")
        if not query:
            chosen: list[tuple[Tool, ToolScore | None]] = [(t, None) for t in self.enabled(group)]
            return chosen[:top_k] if top_k else chosen
        return self._ranked.select(group, query, top_k, min_score)

    def table(self, chosen: list[tuple[Tool, ToolScore | None]]) -> ToolsTable:
        rows = [(t.name, t.model_description, t.entry.parameters, t.entry.strict) for t, _ in chosen]
        parts = {t.name: s for t, s in chosen if s is not None}
        return ToolsTable(("name", "description", "parameters", "strict"), rows, parts)

    def template_function(self) -> Callable[..., ToolsTable]:
        def tools(group: str | None = None, query: str | None = None, top_k: int | None = None,
                  min_score: float | None = None) -> ToolsTable:
            """tools('group', query=request, top_k=5, min_score=0.05): a tools table."""
            return self.table(self.select(group, query, top_k, min_score))

        tools.check_literal_call = self._check_literal_call  # type: ignore[attr-defined]  # read by TemplateEnv
        return tools

    def _check_literal_call(self, args: list[Any], kwargs: dict[str, Any]) -> tuple[str, str | None, str] | None:
        """Load time: (message, hint, code) when a `tools(...)` call's literal group cannot exist; None otherwise."""
        group = args[0] if args else kwargs.get("group")
        groups = sorted(self.groups())
        if isinstance(group, str) and group not in groups:
            return (f"tools(): no tool group '{group}'", suggest(group, groups) or f"groups: {', '.join(groups) or 'none'}",
                    "unknown_tool_group")
        return None


def _schema_problem(parameters: dict[str, Any]) -> str | None:
    """Why a tool's `parameters` is not a JSON Schema (draft 2020-12) of an object that a model's arguments can be
    held to, or None (engine.format.schemas: jsonschema-rs, its patterns matched in linear time). Importing the
    Python `jsonschema` took a quarter of `diagrama validate`."""
    refusal = schema_refusal(parameters)
    if refusal is not None:
        return refusal
    if parameters.get("type") != "object":
        return "the top level must be 'type: object'"
    return None


def _tool_problem(problems: list[Problem], source: str, lines: LineMap, where: tuple[str | int, ...], field: str,
                  line: int | None, message: str, key: str, hint: str | None = None) -> None:
    problems.append(Problem(source, lines.line((*where, key)) or line, message, field=f"{field}.{key}", hint=hint,
                            code="invalid_tool"))


def _registry_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
    return [path]


def load_registries(spec: str | list[str], diagram_path: Path, diagram_lines: LineMap,
                    environ: Mapping[str, str] | None = None, *, start_servers: bool = False) -> ToolRegistry:
    """Read the registries a diagram names (paths relative to it); raise DiagramInvalid with every problem found.

    Their MCP servers are checked, not started, unless `start_servers` (a run): see `ToolRegistry.start_servers`.
    """
    reading = _Reading(diagram_path, environ)
    names = [spec] if isinstance(spec, str) else list(spec)
    for position, name in enumerate(names):
        base = diagram_path.parent / name
        if not base.exists():
            reading.problems.append(Problem(str(diagram_path), diagram_lines.line(
                ("tools",) if isinstance(spec, str) else ("tools", position)),
                f"tool registry '{name}' does not exist", field="tools", code="no_registry"))
            continue
        for file in _registry_files(base):
            reading.file(file)
    if reading.problems:
        raise DiagramInvalid(reading.problems)
    reading.import_handlers()
    if reading.problems:
        raise DiagramInvalid(reading.problems)
    registry_object = ToolRegistry(reading.tools, make_embedder(reading.embedder_spec, environ),
                                   list(reading.caches.values()))
    registry_object.declare_servers(reading.slots)
    registry_object.knowledge = reading.knowledge
    registry_object.prepare(reading.caches)
    if start_servers:
        registry_object.start_servers()
    return registry_object


class _Reading:
    """What reading a diagram's registries collects: tools, problems, embedding caches, MCP servers, names seen."""

    def __init__(self, diagram_path: Path, environ: Mapping[str, str] | None) -> None:
        from engine.tools.standard import STANDARD_TOOLS  # the standard tools' own definitions

        self.standard_tools = STANDARD_TOOLS
        # Always allowed from the standard module: its tools' handlers, and nothing else it holds or imports.
        self.standard_handlers = {tool["handler"] for tool in STANDARD_TOOLS.values()}
        self.environ = environ
        self.folder = diagram_path.parent.resolve()  # handler modules are imported from here (see tools/handlers.py)
        self.problems: list[Problem] = []
        self.tools: list[Tool] = []
        self.caches: dict[str, EmbeddingCache] = {}
        self.embedder_spec: dict[str, Any] | None = None
        self.seen: dict[str, str] = {}
        self.slots: list[Tool | DeclaredServer] = []
        """Tools and MCP servers (not started) in the order the files declare them."""
        self.knowledge: list[tuple[Path, LineMap, dict[str, Any]]] = []

    def file(self, file: Path) -> None:
        """One registry file: its own tools, the standard tools it includes, its MCP servers."""
        try:
            data, lines = read_yaml(file)
        except DiagramInvalid as exc:
            self.problems += exc.problems
            return
        source = str(file)
        self.caches[source] = EmbeddingCache(file.with_suffix(".embeddings.json"))
        try:
            registry = RegistryFile.model_validate(data if isinstance(data, dict) else {})
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                location = tuple(error["loc"])
                self.problems.append(Problem(source, lines.line(location), validation_message(error),
                                             field=dotted(location)))
            return
        self.embedder_spec = self.embedder_spec or registry.embedder
        if registry.knowledge:
            self.knowledge.append((file, lines, registry.knowledge))
        entries = [(index, raw) for index, raw in enumerate(registry.tools)]
        for wanted in registry.standard_tools:
            if wanted not in self.standard_tools:
                self.problems.append(Problem(
                    source, lines.line(("standard_tools",)),
                    f"no standard tool '{wanted}' (there are: {', '.join(self.standard_tools)})",
                    field="standard_tools", code="unknown_standard_tool"))
                continue
            entries.append((-1, self.standard_tools[wanted]))
        for index, raw in entries:
            self.entry(registry, source, lines, index, raw)
        if registry.mcp_servers:
            from engine.tools.mcp_registry import declared_servers  # loaded only for a registry that lists servers

            self.slots += declared_servers(registry.mcp_servers, registry=registry.registry, groups=registry.groups,
                                           allowed_hosts=registry.allowed_hosts, file=file, lines=lines,
                                           environ=self.environ, problems=self.problems)

    def entry(self, registry: RegistryFile, source: str, lines: LineMap, index: int, raw: Any) -> None:
        """One tool entry (index -1: a standard tool included by name), checked; kept when it names a function."""
        where: tuple[str | int, ...] = ("tools", index) if index >= 0 else ("standard_tools",)
        line = lines.line(where)
        function = raw.get("function") if isinstance(raw, dict) else None
        try:
            entry = ToolEntry.model_validate(raw)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                loc = tuple(error["loc"])
                self.problems.append(Problem(source, lines.line((*where, *loc)), validation_message(error), block=None,
                                             field=f"tools[{index}].{dotted(loc)}", code="invalid_tool"))
            return
        tool_field = f"tools[{index}]" if index >= 0 else "standard_tools"
        add = functools.partial(_tool_problem, self.problems, source, lines, where, tool_field, line)
        if not valid_tool_name(entry.function):
            add(f"tool name '{entry.function}' must be Latin letters, digits, '_' and '-', at most 64 "
                "characters (63 for Gemini)", "function")
        if entry.function in self.seen:
            add(f"duplicate function '{entry.function}' (also in {self.seen[entry.function]})", "function")
        self.seen[entry.function] = source
        if entry.handler is not None:
            self.check_handler(entry.handler, registry.allowed_modules, add)
        refused = literal_host_problem(entry.http) if entry.http is not None else None
        if refused is not None:
            self.problems.append(Problem(source, lines.line((*where, "http", "url")) or line, refused[0],
                                         field=f"{tool_field}.http.url", hint=refused[1], code="host_not_allowed"))
        if registry.groups and entry.group not in registry.groups and index >= 0:
            add(f"group '{entry.group}' is not declared in groups", "group",
                f"declare it, or use one of: {', '.join(registry.groups)}")
        problem = _schema_problem(entry.parameters)
        if problem is not None:
            add(f"parameters is not a valid JSON Schema: {problem}", "parameters")
        if function is not None:
            tool = Tool(entry, registry.registry, source, line, tuple(registry.allowed_hosts),
                        lines.line((*where, "knowledge" if entry.knowledge else "handler")) or line, folder=self.folder,
                        secrets=tuple(registry.secrets),
                        http_lines={key: lines.line((*where, "http", key)) or line for key in HTTP_TEMPLATED})
            self.tools.append(tool)
            self.slots.append(tool)

    def check_handler(self, handler: str, allowed_modules: list[str], add: Callable[..., None]) -> None:
        """A handler path's form, and its module against allowed_modules (the standard module's own rule apart)."""
        standard = self.standard_handlers
        if handler in standard:
            return
        if handler.startswith(f"{STANDARD_MODULE}:") and not module_allowed(STANDARD_MODULE, allowed_modules):
            add(f"handler '{handler}' is not a standard tool; only the standard tools' handlers "
                f"({', '.join(sorted(standard))}) may come from {STANDARD_MODULE}", "handler",
                "include a standard tool by name under standard_tools, or write the handler in your module")
            return
        problem = handler_path_problem(handler, allowed_modules)
        if problem is not None:
            add(f"handler {problem[0]}", "handler", problem[1])

    def import_handlers(self) -> None:
        """Each tool's handler imported and resolved now, so a bad one is a load error, not a failed call."""
        for tool in self.tools:
            if tool.entry.handler is None:  # an http or a knowledge tool
                continue
            try:
                tool.handler()
            except HandlerRefused as exc:
                self.problems.append(Problem(
                    tool.source, tool.handler_line, f"handler '{tool.entry.handler}' is refused: {exc}",
                    field="handler", code="handler_not_allowed",
                    hint="name a function or class written in the allowed module itself, "
                         "or a method of such a class (package.module:Class.method)"))
            except HandlerUnloadable as exc:
                self.problems.append(Problem(tool.source, tool.handler_line,
                                             f"handler '{tool.entry.handler}' cannot be loaded: {exc}",
                                             field="handler", code="invalid_handler"))
