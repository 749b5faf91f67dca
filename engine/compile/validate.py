"""Checks across a diagram's blocks, and their compilation for the executor.

Every problem found is collected (with file, line, block and field) and raised
together as DiagramInvalid: unknown types and keys, bad inputs, one Start, link
targets, reachability, loop bodies, template syntax and names nothing binds.
"""

from __future__ import annotations

import hashlib
import keyword
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import networkx as nx
from pydantic import BaseModel, ValidationError

from engine.compile.block import Block, BlockRegistry, RunSettings
from engine.compile.diagram import CompiledBlock, CompiledLink, Diagram
from engine.compile.graph import build_graph
from engine.compile.templating import Evaluator, TemplateEnv, TemplateSyntax, has_template
from engine.errors import DiagramInvalid, Problem
from engine.format.names import suggest
from engine.format.spec import (
    COMMON_BLOCK_KEYS,
    ERROR_LEVELS,
    MESSAGE_LEVELS,
    BlockSpec,
    DiagramSpec,
    ErrorLevel,
    LinkSpec,
    MessageLevel,
)
from engine.format.yamlfile import LineMap

__all__ = ["compile_diagram"]

DEFAULT_ERROR_LEVEL = ErrorLevel.HANDLE
DEFAULT_MESSAGE_LEVEL = MessageLevel.DEBUG


class _Problems:
    def __init__(self, file: str, lines: LineMap) -> None:
        self.file = file
        self.lines = lines
        self.items: list[Problem] = []

    def add(
        self,
        path: tuple[str | int, ...],
        message: str,
        *,
        block: str | None = None,
        field: str | None = None,
        hint: str | None = None,
        code: str = "invalid",
        line_offset: int = 0,
    ) -> None:
        mark = self.lines.mark(path)
        line = mark[0] + line_offset if mark else None
        column = mark[1] if mark and not line_offset else None
        self.items.append(Problem(self.file, line, message, block, field, hint, code, column))

    def from_validation(
        self,
        exc: ValidationError,
        base: tuple[str | int, ...],
        *,
        block: str | None,
        allowed: Iterable[str] = (),
        field_prefix: str = "",
    ) -> None:
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            kind = error["type"]
            name = field_prefix + ".".join(str(part) for part in loc)
            if kind == "extra_forbidden":
                self.add(
                    (*base, *loc),
                    f"unknown key '{loc[-1]}'",
                    block=block,
                    field=name or None,
                    hint=suggest(str(loc[-1]), allowed),
                    code="unknown_key",
                )
            elif kind == "missing":
                self.add(base, f"missing required key '{loc[-1]}'", block=block, field=name, code="missing_key")
            else:
                shown = repr(error.get("input"))
                if len(shown) > 60:
                    shown = shown[:57] + "..."
                self.add((*base, *loc), f"{error['msg']} (got {shown})", block=block, field=name, code=kind)


def _string_fields(model: type[BaseModel]) -> dict[str, str]:
    """Input name as written (alias or field name) → field name."""
    names: dict[str, str] = {}
    for name, field in model.model_fields.items():
        names[field.alias or name] = name
    return names


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


class _Compiler:
    def __init__(
        self, data: Any, lines: LineMap, path: Path, registry: BlockRegistry, env: TemplateEnv
    ) -> None:
        self.data = data
        self.lines = lines
        self.path = path
        self.registry = registry
        self.env = env
        self.problems = _Problems(str(path), lines)
        self.specs: list[tuple[int, BlockSpec, type[Block], BaseModel | None]] = []
        self.blocks: dict[str, CompiledBlock] = {}
        self.index_of: dict[str, int] = {}
        self.known_ids: set[str] = set()

    # -- stage 1: the file and each block's own keys ------------------------------------
    def read_blocks(self) -> DiagramSpec | None:
        if not isinstance(self.data, dict):
            self.problems.add((), "a diagram file must be a mapping with 'diagram' and 'blocks'", code="not_mapping")
            return None
        try:
            spec = DiagramSpec.model_validate(self.data)
        except ValidationError as exc:
            self.problems.from_validation(exc, (), block=None, allowed=DiagramSpec.model_fields)
            blocks = self.data.get("blocks")
            if not isinstance(blocks, list):
                return None
            spec = DiagramSpec.model_construct(diagram=str(self.data.get("diagram", self.path.stem)), blocks=blocks)
        first_line: dict[str, int | None] = {}
        for index, raw in enumerate(spec.blocks):
            self._read_block(index, raw, first_line)
        return spec

    def _read_block(self, index: int, raw: Any, first_line: dict[str, int | None]) -> None:
        where: tuple[str | int, ...] = ("blocks", index)
        if not isinstance(raw, dict):
            self.problems.add(where, "a block must be a mapping with at least 'id' and 'type'", code="not_mapping")
            return
        block_id = raw.get("id")
        shown_id = block_id if isinstance(block_id, str) else None
        if isinstance(block_id, str):
            if block_id in first_line:
                self.problems.add(
                    (*where, "id"),
                    f"duplicate block id '{block_id}' (first used on line {first_line[block_id]})",
                    block=block_id,
                    field="id",
                    hint="give each block its own id",
                    code="duplicate_id",
                )
                return
            first_line[block_id] = self.lines.line((*where, "id"))
            self.known_ids.add(block_id)
        type_name = raw.get("type")
        if not isinstance(type_name, str):
            self.problems.add(where, "missing required key 'type'", block=shown_id, field="type", code="missing_key",
                              hint=f"one of: {', '.join(sorted(self.registry))}")
            return
        if type_name not in self.registry:
            self.problems.add(
                (*where, "type"),
                f"unknown block type '{type_name}'",
                block=shown_id,
                field="type",
                hint=suggest(type_name, self.registry) or f"known types: {', '.join(sorted(self.registry))}",
                code="unknown_block_type",
            )
            return
        cls = self.registry[type_name]
        settings_fields = set(cls.Settings.model_fields) if cls.Settings else set()
        ports = set(cls.ports())
        allowed = COMMON_BLOCK_KEYS | ports | settings_fields
        common: dict[str, Any] = {}
        extras: dict[str, Any] = {}
        failed = False
        for key, value in raw.items():
            if key in COMMON_BLOCK_KEYS or key in ports:
                common[key] = value
            elif key in settings_fields:
                extras[key] = value
            else:
                hint = suggest(key, allowed)
                for other in self.registry.values():
                    if key in other.ports() or (other.Settings and key in other.Settings.model_fields):
                        hint = hint or f"'{key}' belongs to {other.type_name} blocks"
                        break
                self.problems.add((*where, key), f"unknown key '{key}' for a {type_name} block",
                                  block=shown_id, field=key, hint=hint, code="unknown_key")
        try:
            spec = BlockSpec.model_validate(common)
        except ValidationError as exc:
            self.problems.from_validation(exc, where, block=shown_id, allowed=allowed)
            return
        settings: BaseModel | None = None
        if cls.Settings is not None:
            try:
                settings = cls.Settings.model_validate(extras)
            except ValidationError as exc:
                self.problems.from_validation(exc, where, block=shown_id, allowed=allowed)
                # Keep checking the rest of the diagram with this block's defaults.
                try:
                    settings = cls.Settings()
                except ValidationError:
                    failed = True
        for port in ports:
            if port in common and not isinstance(common[port], str):
                self.problems.add((*where, port), f"'{port}' must be a block id", block=spec.id, field=port,
                                  code="invalid_link")
                failed = True
        if failed:
            return
        self.specs.append((index, spec, cls, settings))

    # -- stage 2: blocks and links ----------------------------------------------------------
    def build_blocks(self) -> None:
        for index, spec, cls, settings in self.specs:
            impl = cls(spec, settings)
            compiled = CompiledBlock(impl, self.lines.line(("blocks", index)))
            compiled.error_level = ERROR_LEVELS[spec.error_level]
            compiled.message_level = MESSAGE_LEVELS[spec.message_level]
            self.blocks[spec.id] = compiled
            self.index_of[spec.id] = index

    def _target(self, name: str, path: tuple[str | int, ...], block: str, field: str) -> CompiledBlock | None:
        target = self.blocks.get(name)
        if target is None and name not in self.known_ids:
            self.problems.add(path, f"links to unknown block '{name}'", block=block, field=field,
                              hint=suggest(name, self.known_ids), code="unknown_link_target")
        return target

    def link_blocks(self) -> None:
        for block_id, compiled in self.blocks.items():
            spec = compiled.impl.spec
            where: tuple[str | int, ...] = ("blocks", self.index_of[block_id])
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
                target = self._target(link.to, path, block_id, field)
                when = self._compile_when(link.when, (*where, "next", position, "when"), compiled, position)
                if target is not None:
                    compiled.links.append(CompiledLink(target, when, "next", position))
            if spec.on_error is not None:
                compiled.on_error = self._target(spec.on_error, (*where, "on_error"), block_id, "on_error")
            for port in type(compiled.impl).ports():
                name = (spec.model_extra or {}).get(port)
                if name is None:
                    self.problems.add(where, f"a {compiled.type_name} block needs '{port}'", block=block_id,
                                      field=port, hint=f"'{port}' names the first block of its chain",
                                      code="missing_key")
                    continue
                target = self._target(name, (*where, port), block_id, port)
                if target is not None:
                    compiled.ports[port] = target

    def _compile_when(
        self, when: str | bool | None, path: tuple[str | int, ...], compiled: CompiledBlock, position: int
    ) -> Evaluator | None:
        if when is None:
            return None
        if isinstance(when, str) and not has_template(when):
            self.problems.add(path, f"'when' must be a template, got {when!r}", block=compiled.id,
                              field=f"next[{position}].when", hint=f"write it as '{{{{ {when} }}}}'",
                              code="invalid_when")
            return None
        return self._compile(when, path, compiled.id, f"next[{position}].when")

    def _compile(self, value: Any, path: tuple[str | int, ...], block: str | None, field: str) -> Evaluator | None:
        try:
            return self.env.compile(value)
        except TemplateSyntax as exc:
            offset = (exc.lineno - 1) if exc.lineno and exc.lineno > 1 else 0
            self.problems.add(path, f"template syntax error: {exc}", block=block, field=field,
                              code="template_syntax", line_offset=offset)
            return None

    # -- stage 3: the whole graph -------------------------------------------------------------
    def check_start(self) -> CompiledBlock | None:
        starts = [b for b in self.blocks.values() if type(b.impl).is_start]
        if not starts:
            self.problems.add(("blocks",), "the diagram has no Start block", field="blocks",
                              hint="add a block with 'type: Start' where the run begins", code="no_start")
            return None
        for extra in starts[1:]:
            self.problems.add(("blocks", self.index_of[extra.id]), "a diagram has exactly one Start block; "
                              f"'{starts[0].id}' is already one", block=extra.id, field="type", code="several_starts")
        return starts[0]

    def check_reachable(self, graph: nx.DiGraph, start: CompiledBlock) -> None:
        reached = nx.descendants(graph, start.id) | {start.id}
        lost = graph.subgraph(n for n in graph if n not in reached)
        # Report where each unreachable part begins, not every block behind it.
        condensed = nx.condensation(lost)
        for component in condensed:
            if condensed.in_degree(component):
                continue
            members = condensed.nodes[component]["members"]
            behind = nx.descendants(lost, next(iter(members))) - set(members)
            for block_id in sorted(members, key=lambda b: self.index_of[b]):
                more = f" (and so are {', '.join(sorted(behind))})" if behind else ""
                self.problems.add(("blocks", self.index_of[block_id]), f"this block is unreachable from Start{more}",
                                  block=block_id, hint="link to it from another block, or remove it",
                                  code="unreachable_block")

    def check_bodies(self, graph: nx.DiGraph) -> None:
        flow = nx.subgraph_view(graph, filter_edge=lambda a, b: graph.edges[a, b]["kind"] != "error")
        for compiled in self.blocks.values():
            port = type(compiled.impl).body_port
            if not port or port not in compiled.ports:
                continue
            loop = compiled.id
            head = compiled.ports[port].id
            where = ("blocks", self.index_of[loop], port)
            if head == loop:
                self.problems.add(where, f"the {port} of '{loop}' cannot be the block itself", block=loop,
                                  field=port, code="invalid_loop_body")
                continue
            inside = flow.subgraph(n for n in graph if n != loop)
            chain = nx.descendants(inside, head) | {head}
            returning = {n for n in chain if graph.has_edge(n, loop) and graph.edges[n, loop]["kind"] != "error"}
            if not returning:
                self.problems.add(where, f"the {port} chain starting at '{head}' never links back to '{loop}'",
                                  block=loop, field=port,
                                  hint=f"make the chain's last block link 'next: {loop}'", code="loop_body_open")
                continue
            body_flow = inside.subgraph(chain)
            comes_back = set(returning)
            for member in returning:
                comes_back |= nx.ancestors(body_flow, member)
            for member in sorted(chain - comes_back):
                self.problems.add(("blocks", self.index_of[member]),
                                  f"this block is in the {port} of '{loop}' but its chain never links back to it",
                                  block=member, field="next", hint=f"link it back with 'next: {loop}', or leave "
                                  "the loop only through on_error", code="loop_body_leaves")
            # Handlers reached by on_error inside the body that come back belong to it too.
            without_loop = graph.subgraph(n for n in graph if n != loop)
            reached = nx.descendants(without_loop, head) | {head}
            compiled.body_region = frozenset(n for n in reached if n in comes_back or nx.has_path(graph, n, loop))

    # -- stage 4: templates, names and inputs ----------------------------------------------------
    def compile_values(self, start: CompiledBlock, graph: nx.DiGraph) -> None:
        settings = start.impl.settings
        assert isinstance(settings, RunSettings)
        functions = set(self.env.functions)
        bound: set[str] = set(settings.inputs) | set(settings.variables)
        for compiled in self.blocks.values():
            bound |= set(compiled.impl.spec.set)
        start_path = ("blocks", self.index_of[start.id])
        for section in ("inputs", "variables"):
            for name in getattr(settings, section):
                self._check_name(name, (*start_path, section, name), start.id, f"{section}.{name}", functions)
        for compiled in self.blocks.values():
            for name in compiled.impl.spec.set:
                self._check_name(name, ("blocks", self.index_of[compiled.id], "set", name), compiled.id,
                                 f"set.{name}", functions)
        handlers = set()
        for compiled in self.blocks.values():
            if compiled.on_error is not None:
                handlers |= nx.descendants(graph, compiled.on_error.id) | {compiled.on_error.id}
        loop_names: dict[str, set[str]] = {}
        for compiled in self.blocks.values():
            names = type(compiled.impl).body_names
            if names:
                for member in compiled.body_region | {compiled.id}:
                    loop_names.setdefault(member, set()).update(names)
        everywhere = bound | functions
        variables: list[tuple[str, Evaluator]] = []
        for name, value in settings.variables.items():
            evaluator = self._compile(value, (*start_path, "variables", name), start.id, f"variables.{name}")
            if evaluator is not None:
                self._check_names(evaluator, set(settings.inputs) | functions | set(settings.variables),
                                  (*start_path, "variables", name), start.id, f"variables.{name}")
                variables.append((name, evaluator))
        self.variables = variables
        scopes: dict[tuple[frozenset[str], bool, type[Block]], tuple[set[str], set[str]]] = {}
        for compiled in self.blocks.values():
            # Most blocks see the same names: build each distinct scope once.
            key = (frozenset(loop_names.get(compiled.id, ())), compiled.id in handlers, type(compiled.impl))
            if key not in scopes:
                scope = everywhere | key[0] | ({"error"} if key[1] else set())
                scopes[key] = (scope, scope | set(key[2].output_names()))
            in_scope, after = scopes[key]
            self._compile_inputs(compiled, in_scope)
            where = ("blocks", self.index_of[compiled.id])
            for name, value in compiled.impl.spec.set.items():
                evaluator = self._compile(value, (*where, "set", name), compiled.id, f"set.{name}")
                if evaluator is not None:
                    self._check_names(evaluator, after, (*where, "set", name), compiled.id, f"set.{name}")
                    compiled.set_items.append((name, evaluator))
            for link in compiled.links:
                if link.when is not None:
                    self._check_names(link.when, after, (*where, "next", link.index, "when"), compiled.id,
                                      f"next[{link.index}].when")

    def _check_name(self, name: str, path: tuple[str | int, ...], block: str, field: str, functions: set[str]) -> None:
        if not _is_identifier(name):
            self.problems.add(path, f"'{name}' is not a usable variable name", block=block, field=field,
                              hint="use letters, digits and '_', not starting with a digit", code="invalid_name")
        elif name in functions:
            self.problems.add(path, f"'{name}' would hide the template function of that name", block=block,
                              field=field, hint="choose another name", code="invalid_name")

    def _check_names(self, evaluator: Evaluator, in_scope: set[str], path: tuple[str | int, ...],
                     block: str, field: str) -> None:
        if evaluator.names <= in_scope:
            return
        for name in sorted(evaluator.names - in_scope):
            self.problems.add(path, f"template names '{name}', which nothing in the diagram binds",
                              block=block, field=field, hint=suggest(name, in_scope)
                              or "bind it as a Start input or variable, or with a block's 'set'",
                              code="template_unbound_name")

    def _compile_inputs(self, compiled: CompiledBlock, in_scope: set[str]) -> None:
        where = ("blocks", self.index_of[compiled.id], "with")
        model = compiled.inputs_model
        written = compiled.impl.spec.with_
        fields = _string_fields(model)
        constants: dict[str, Any] = {}
        templated: set[str] = set()
        for name, value in written.items():
            if name not in fields:
                self.problems.add((*where, name), f"unknown input '{name}' for a {compiled.type_name} block",
                                  block=compiled.id, field=f"with.{name}",
                                  hint=suggest(name, fields) or (f"inputs: {', '.join(fields)}" if fields
                                                                 else f"a {compiled.type_name} block takes no inputs"),
                                  code="unknown_input")
                continue
            evaluator = self._compile(value, (*where, name), compiled.id, f"with.{name}")
            if evaluator is None:
                continue
            self._check_names(evaluator, in_scope, (*where, name), compiled.id, f"with.{name}")
            if name in type(compiled.impl).deferred_inputs:
                compiled.deferred[name] = evaluator
                continue
            compiled.inputs.append((name, evaluator))
            if evaluator.is_constant:
                constants[name] = value
            else:
                templated.add(fields[name])
        for name, field in model.model_fields.items():
            written_name = field.alias or name
            if field.is_required() and written_name not in written:
                self.problems.add(("blocks", self.index_of[compiled.id]), f"missing input '{written_name}'",
                                  block=compiled.id, field=f"with.{written_name}",
                                  hint=field.description, code="missing_input")
        report_path = where

        def report(field: str, message: str, hint: str | None) -> None:
            self.problems.add((*report_path, field), message, block=compiled.id, field=f"with.{field}", hint=hint,
                              code="invalid_input")

        context = {"base_dir": self.path.parent}
        try:
            instance = model.model_validate(constants, context=context)
        except ValidationError as exc:
            failed: set[str] = set()
            for error in exc.errors(include_url=False):
                loc = error["loc"]
                if error["type"] == "missing" or (loc and loc[0] in templated) or (not loc and templated):
                    continue
                if loc:
                    failed.add(str(loc[0]))
                shown = repr(error.get("input"))
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                dotted = ".".join(str(part) for part in loc)
                self.problems.add((*where, *loc), f"{error['msg']} (got {shown})", block=compiled.id,
                                  field=f"with.{dotted}" if dotted else "with", code="invalid_input")
            # The block's own checks still look at the inputs that are fine, so one pass finds everything.
            compiled.impl.check({k: v for k, v in constants.items() if k not in failed}, report)
            return
        if not templated:
            compiled.static_inputs = instance
        compiled.impl.check(instance.model_dump() if not templated else constants, report)


def compile_diagram(
    data: Any,
    lines: LineMap,
    path: Path,
    registry: BlockRegistry,
    *,
    source: str = "",
    functions: Mapping[str, Any] | None = None,
    extra_problems: list[Problem] | None = None,
) -> Diagram:
    """Validate parsed YAML and compile it; raise DiagramInvalid with every problem."""
    env = TemplateEnv(functions)
    compiler = _Compiler(data, lines, path, registry, env)
    if extra_problems:
        compiler.problems.items.extend(extra_problems)
    spec = compiler.read_blocks()
    if spec is None:
        raise DiagramInvalid(compiler.problems.items)
    compiler.build_blocks()
    compiler.link_blocks()
    start = compiler.check_start()
    graph = build_graph(compiler.blocks.values())
    if start is not None:
        compiler.check_reachable(graph, start)
        compiler.check_bodies(graph)
        compiler.compile_values(start, graph)
    if compiler.problems.items or start is None:
        raise DiagramInvalid(compiler.problems.items)
    for block in compiler.blocks.values():
        block.reads_outputs = bool(block.set_items) or any(link.when is not None for link in block.links)
    settings = start.impl.settings
    assert isinstance(settings, RunSettings)
    error_level = start.error_level if start.error_level is not None else DEFAULT_ERROR_LEVEL
    message_level = start.message_level if start.message_level is not None else DEFAULT_MESSAGE_LEVEL
    # Start's levels are the run's defaults (which a run may override), not its own.
    start.error_level = start.message_level = None
    return Diagram(
        name=spec.diagram,
        path=path,
        spec=spec,
        graph=graph,
        blocks=compiler.blocks,
        start=start,
        settings=settings,
        variables=compiler.variables,
        error_level=error_level,
        message_level=message_level,
        env=env,
        lines=lines,
        content_hash=hashlib.sha256(source.encode()).hexdigest(),
    )
