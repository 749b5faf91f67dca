"""Diagram files → validated, compiled Diagrams.

Reads the YAML (engine.format.yamlfile), hands it to engine.compile.validate, and wires in what a
diagram names beside its blocks (tool registries, which must lie inside its folder or a data root;
each registry tool a block may be offered is put to that block type's `check_offered_tool`).
A registry's MCP servers are started (to list their tools) only when the caller is about to run
the diagram (`start_servers`); checking a diagram runs no command of theirs. Knows nothing of
what blocks do.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import nodes

from engine.compile.block import BlockRegistry
from engine.compile.children import Loading, load_children
from engine.compile.diagram import Diagram
from engine.compile.knowledge_tools import knowledge_tool_problems
from engine.compile.secrets import SECRET_FUNCTION, secret_function
from engine.compile.validate import compile_diagram
from engine.errors import DiagramInvalid, Problem
from engine.format.dialect import ambiguity
from engine.format.names import suggest
from engine.format.paths import DataFolder, PathRefused, shown_path
from engine.format.yamlfile import Ambiguous, LineMap, decode_text, read_yaml_text

if TYPE_CHECKING:
    from engine.tools.knowledge.index import KnowledgeBase
    from engine.tools.registry import Tool, ToolRegistry

__all__ = ["load_diagram", "load_diagram_text"]

DataRoots = Iterable[str | os.PathLike[str]]


@contextlib.contextmanager
def _no_gc_pauses() -> Iterator[None]:
    # Loading builds tens of thousands of small objects and no cycles worth
    # collecting; the cyclic GC would otherwise run dozens of times mid-load.
    # (No gc.freeze() after it: in a long-lived process, a studio or a worker, freezing
    # moves every earlier piece of garbage into the permanent generation, never collected.)
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_diagram_text(
    text: str,
    path: Path,
    registry: BlockRegistry,
    *,
    functions: Mapping[str, Any] | None = None,
    data_roots: DataRoots = (),
    start_servers: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Diagram:
    """Load and validate a diagram's text; `data_roots` are folders besides its own that its paths may reach.

    `start_servers`: start its registries' MCP servers now and list their tools (to run it); otherwise they are
    checked without starting, and the run starts them. `environ`: the environment it is about to run with, in which
    each `secret('NAME')` written with a literal name must be set (None: only that the diagram lists the name).
    """
    roots = tuple(Path(root) for root in data_roots)
    loading = Loading(registry, functions, roots, start_servers, _load_child, (path.resolve(),), environ=environ)
    with _no_gc_pauses():
        try:
            return _load_text(text, path, loading)
        except RecursionError:
            # The YAML reader and the template parser refuse deep nesting with a line; this is the net below them.
            raise DiagramInvalid([Problem(str(path), None, "the file nests too deeply to be read",
                                          hint="flatten the deepest lists, mappings or parentheses",
                                          code="too_deep")]) from None


def _load_child(path: Path, loading: Loading) -> Diagram:
    """A subdiagram's file, loaded within its parent's loading (engine.compile.children)."""
    return _load_text(_read(path), path, loading)


def _load_text(text: str, path: Path, loading: Loading) -> Diagram:
    registry, functions, data_roots, start_servers, environ = (loading.registry, loading.functions, loading.data_roots,
                                                               loading.start_servers, loading.environ)
    problems: list[Problem] = []
    ambiguous: list[Ambiguous] = []
    data, lines = read_yaml_text(text, str(path), problems, ambiguous)
    problems.extend(_ambiguity_warnings(ambiguous, data, str(path)))
    extra: dict[str, Any] = dict(functions or {})
    listed = data.get("secrets") if isinstance(data, dict) else None  # another shape is DiagramSpec's to report
    secrets = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
    extra.setdefault(SECRET_FUNCTION, secret_function(secrets, environ))
    tools = None
    spec = data.get("tools") if isinstance(data, dict) else None
    # Another shape is DiagramSpec's problem to report.
    if isinstance(spec, str) or (isinstance(spec, list) and all(isinstance(name, str) for name in spec)):
        names, names_lines = _confined_registries(spec, path, lines, DataFolder(path.parent, data_roots), problems)
        if names or not spec:
            from engine.tools.registry import load_registries  # tools are optional until a diagram names them

            try:
                tools = load_registries(names, path, names_lines)
            except DiagramInvalid as exc:
                problems.extend(exc.problems)
            else:
                from engine.compile.http_tools import compile_http_tools

                problems.extend(compile_http_tools(tools, secrets, environ))
                extra["tools"] = tools.template_function()
                problems.extend(_offered_tool_problems(data, registry, tools))
                # The tools of its MCP servers, listed when a run starts them, meet the same check then.
                tools.offered_check = lambda names: _offered_tool_problems(data, registry, tools, names)
                if start_servers:
                    try:
                        tools.start_servers()
                    except DiagramInvalid as exc:
                        problems.extend(exc.problems)
    knowledge = _knowledge(data, lines, path, DataFolder(path.parent, data_roots), tools, environ, problems)
    problems.extend(_knowledge_input_problems(data, lines, path, registry, _declared_names(data, tools)))
    if tools is not None:
        problems.extend(knowledge_tool_problems(tools, _declared_names(data, tools)))
    children = load_children(data, lines, path, loading, problems)
    diagram = compile_diagram(data, lines, path, registry, source=text, functions=extra, extra_problems=problems,
                              data_roots=data_roots, children=children)
    diagram.tools = tools
    diagram.knowledge = knowledge
    # What a run renders as a Subdiagram path is loaded as this diagram was (the depth is the executor's to cap).
    diagram.load_child = lambda child: _load_run_time_child(child, loading)
    return diagram


def _load_run_time_child(path: Path, loading: Loading) -> Diagram:
    with _no_gc_pauses():
        return _load_text(_read(path), path, Loading(loading.registry, loading.functions, loading.data_roots,
                                                     loading.start_servers, _load_child, (path.resolve(),),
                                                     environ=loading.environ))


def _knowledge(data: Any, lines: LineMap, path: Path, folder: DataFolder, tools: ToolRegistry | None,
               environ: Mapping[str, str] | None, problems: list[Problem]) -> dict[str, KnowledgeBase]:
    """The knowledge bases the diagram declares, then those of its registry files; a problem for each unusable one."""
    own = data.get("knowledge") if isinstance(data, dict) else None
    declared = tools.knowledge if tools is not None else []
    if not own and not declared:
        return {}
    from engine.tools.knowledge.bases import declared_bases  # SQL and the readers load for a diagram with knowledge

    found: dict[str, KnowledgeBase] = {}
    declared_bases(own, path, lines, folder, found, problems, report_shape=False, environ=environ)
    for file, file_lines, raw in declared:
        declared_bases(raw, file, file_lines, folder, found, problems, report_shape=True, environ=environ)
    return found


def _declared_names(data: Any, tools: ToolRegistry | None) -> set[str]:
    """The knowledge bases' names as written, usable or not (a wrong one has its own problem)."""
    own = data.get("knowledge") if isinstance(data, dict) else None
    names = {str(name) for name in own} if isinstance(own, dict) else set()
    for _, _, raw in tools.knowledge if tools is not None else []:
        names.update(str(name) for name in raw)
    return names


def _knowledge_input_problems(data: Any, lines: LineMap, path: Path, blocks: BlockRegistry,
                              knowledge: set[str]) -> list[Problem]:
    """A problem at each block input that names, literally, a knowledge base the diagram does not declare."""
    raw_blocks = data.get("blocks") if isinstance(data, dict) else None
    problems: list[Problem] = []
    for index, raw in enumerate(raw_blocks if isinstance(raw_blocks, list) else []):
        kind = raw.get("type") if isinstance(raw, dict) else None
        cls = blocks.get(kind) if isinstance(kind, str) else None
        if cls is None or cls.knowledge_input is None or not isinstance(raw.get("with"), dict):
            continue
        name = raw["with"].get(cls.knowledge_input)
        if not isinstance(name, str) or "{" in name or name in knowledge:
            continue
        block_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        hint = suggest(name, knowledge) or (f"declared: {', '.join(sorted(knowledge))}" if knowledge else
                                            "declare it under `knowledge:` at the top of the diagram")
        problems.append(Problem(str(path), lines.line(("blocks", index, "with", str(cls.knowledge_input))),
                                f"no knowledge base '{name}'", block=block_id, field=f"with.{cls.knowledge_input}",
                                hint=hint, code="unknown_knowledge"))
    return problems


def _ambiguity_warnings(found: list[Ambiguous], data: Any, file: str) -> list[Problem]:
    """A warning at each plain scalar that YAML 1.1 reads otherwise (`yes`, `0o17`): a file written for PyYAML or
    another YAML 1.1 tool would run differently here, so say what it means now and how to write it."""
    problems = []
    blocks = data.get("blocks") if isinstance(data, dict) else None
    for item in found:
        told = ambiguity(item.text)
        if told is None:  # pragma: no cover - the reader reports only ambiguous scalars
            continue
        path: tuple[str | int, ...] = item.path
        block = None
        if len(path) >= 2 and path[0] == "blocks" and isinstance(blocks, list) and isinstance(path[1], int):
            raw = blocks[path[1]] if path[1] < len(blocks) else None
            block = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None
            path = path[2:]
        field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".") or None
        problems.append(Problem(file, item.line, told.message, block=block, field=field, hint=told.hint,
                                code="ambiguous_scalar", column=item.column, severity="warning"))
    return problems


def _offered_tool_problems(data: Any, blocks: BlockRegistry, tools: ToolRegistry,
                           only: set[str] | None = None) -> list[Problem]:
    """A problem at a registry tool's entry (of those named `only`, when given) for each block that may offer it
    (`tools('group', ...)` in the block's `tools_input`: that group's tools, or every group's when none is
    written) and cannot."""
    problems: list[Problem] = []
    written = data.get("blocks") if isinstance(data, dict) else None
    for raw in written if isinstance(written, list) else []:  # another shape is validate's to report
        kind = raw.get("type") if isinstance(raw, dict) else None
        cls = blocks.get(kind) if isinstance(kind, str) else None
        if cls is None or cls.tools_input is None or not isinstance(raw.get("with"), dict):
            continue
        inputs = raw["with"]
        offered: dict[str, tuple[Tool, str]] = {}
        for group in _tool_groups(inputs.get(cls.tools_input)):
            call = f"tools('{group}')" if group is not None else "tools() (no group written: every tool)"
            for tool in tools.enabled(group):
                if only is None or tool.name in only:
                    offered.setdefault(tool.name, (tool, call))
        block_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        for tool, call in offered.values():
            refusal = cls.check_offered_tool(tool.name, tool.entry.parameters, tool.entry.strict)
            if refusal is not None:
                problems.append(Problem(tool.source, tool.line,
                                        f"{refusal[0]}; {cls.type_name} '{block_id}' is offered it by {call}",
                                        block=block_id, field=f"with.{cls.tools_input}", hint=refusal[1],
                                        code="invalid_tool"))
    return problems


def _tool_groups(value: Any) -> list[str | None]:
    """The group of each `tools(...)` call written in an input: its literal name, or None (every group)."""
    if isinstance(value, dict):
        return [group for item in value.values() for group in _tool_groups(item)]
    if isinstance(value, list):
        return [group for item in value for group in _tool_groups(item)]
    if not isinstance(value, str) or "tools" not in value:
        return []
    try:
        tree = jinja2.Environment().parse(value)
    except (jinja2.TemplateSyntaxError, RecursionError):
        return []  # validate reports the template
    groups: list[str | None] = []
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name == "tools":
            given = call.args[0] if call.args else next((kw.value for kw in call.kwargs if kw.key == "group"), None)
            groups.append(given.value if isinstance(given, nodes.Const) and isinstance(given.value, str) else None)
    return groups


def _confined_registries(spec: str | list[str], path: Path, lines: LineMap, folder: DataFolder,
                         problems: list[Problem]) -> tuple[list[str], LineMap]:
    """The registry paths that stay inside the folder (a problem for each other one), and where each was written."""
    written = [spec] if isinstance(spec, str) else spec
    kept: list[str] = []
    kept_lines = LineMap(lines.file)
    for position, name in enumerate(written):
        mark = lines.mark(("tools",) if isinstance(spec, str) else ("tools", position))
        try:
            _check_registry_path(name, folder)
        except PathRefused as exc:
            hint = "keep registries in the diagram's folder, or pass their folder with --data-root" if exc.leaves else None
            problems.append(Problem(str(path), mark[0] if mark else None, f"tool registry: {exc}", field="tools",
                                    hint=hint, code="path_outside_folder" if exc.leaves else "bad_path",
                                    column=mark[1] if mark else None))
            continue
        if mark is not None:
            kept_lines.record(("tools", len(kept)), *mark)
        kept.append(name)
    return kept, kept_lines


def _check_registry_path(name: str, folder: DataFolder) -> None:
    """PathRefused when the registry (a file, or each YAML file of a folder) lies outside, or cannot be a file."""
    target = folder.resolve(name)
    try:
        is_folder = target.is_dir()
        files = sorted([*target.glob("*.yaml"), *target.glob("*.yml")]) if is_folder else []
    except OSError as exc:  # a name too long for the file system
        reason = (exc.strerror or "unreadable").lower()
        raise PathRefused(f"the path '{shown_path(name)}' cannot be used ({reason})") from None
    for file in files:
        # A link inside a registry folder may point anywhere; each file must stay inside too.
        folder.resolve(str(file))



def load_diagram(path: str | Path, registry: BlockRegistry, *, functions: Mapping[str, Any] | None = None,
                 data_roots: DataRoots = (), start_servers: bool = False,
                 environ: Mapping[str, str] | None = None) -> Diagram:
    """Load and validate a diagram file; raise DiagramInvalid listing every problem.

    The files it names (CSV tables, tool registries) must lie in its folder or in one of `data_roots`.
    `start_servers`: start its MCP servers now, to run it; `environ`: the environment it will run with (see
    `load_diagram_text`).
    """
    path = Path(path)
    return load_diagram_text(_read(path), path, registry, functions=functions, data_roots=data_roots,
                             start_servers=start_servers, environ=environ)


def _read(path: Path) -> str:
    """A diagram file's text; DiagramInvalid naming the file when it cannot be read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DiagramInvalid([Problem(str(path), None, "no such file", code="no_file")]) from None
    except IsADirectoryError:
        raise DiagramInvalid([Problem(str(path), None, "is a folder, not a diagram file", code="no_file")]) from None
    except OSError as exc:
        raise DiagramInvalid([Problem(str(path), None, f"cannot read: {exc.strerror}", code="no_file")]) from None
    return decode_text(data, str(path))
