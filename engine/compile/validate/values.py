"""Stage 4: every template value compiled, and every name it reads checked against its block's scope.

Also the names a diagram binds (Start inputs and variables, `set` keys) and each block's `with`
inputs: unknown or missing ones, and constant ones checked by the block's Inputs model and `check`.
"""

from __future__ import annotations

import keyword
from typing import Any

import networkx as nx
from pydantic import BaseModel, ValidationError

from engine.compile.block import RunSettings
from engine.compile.diagram import CompiledBlock
from engine.compile.templating import Evaluator
from engine.compile.validate.compilation import Compilation, check_csv_path, compile_template
from engine.compile.validate.problems import shown
from engine.compile.validate.scope import block_scopes
from engine.format.names import suggest

__all__ = ["compile_values"]

Where = tuple[str | int, ...]


def compile_values(c: Compilation, start: CompiledBlock, graph: nx.DiGraph) -> None:
    settings = start.impl.settings
    assert isinstance(settings, RunSettings)
    functions = set(c.env.functions)
    _check_bound_names(c, start, settings, functions)
    scopes = block_scopes(c.blocks.values(), settings, graph, functions)
    c.variables = _compile_variables(c, start, settings, functions)
    for compiled in c.blocks.values():
        in_scope, after = scopes[compiled.id]
        _compile_inputs(c, compiled, in_scope)
        _compile_set_and_when(c, compiled, after)


def _check_bound_names(c: Compilation, start: CompiledBlock, settings: RunSettings, functions: set[str]) -> None:
    start_path = ("blocks", c.index_of[start.id])
    for section in ("inputs", "variables"):
        for name, value in getattr(settings, section).items():
            _check_name(c, name, (*start_path, section, name), start.id, f"{section}.{name}", functions)
            check_csv_path(c, value, (*start_path, section, name), start.id, f"{section}.{name}")
    for compiled in c.blocks.values():
        for name in compiled.impl.spec.set:
            _check_name(c, name, ("blocks", c.index_of[compiled.id], "set", name), compiled.id, f"set.{name}",
                        functions)


def _check_name(c: Compilation, name: str, path: Where, block: str, field: str, functions: set[str]) -> None:
    if not (name.isidentifier() and not keyword.iskeyword(name)):
        c.problems.add(path, f"'{name}' is not a usable variable name", block=block, field=field,
                       hint="use letters, digits and '_', not starting with a digit", code="invalid_name")
    elif name in functions:
        c.problems.add(path, f"'{name}' would hide the template function of that name", block=block,
                       field=field, hint="choose another name", code="invalid_name")


def _check_names(c: Compilation, evaluator: Evaluator, in_scope: set[str], path: Where, block: str, field: str) -> None:
    if evaluator.names <= in_scope:
        return
    for name in sorted(evaluator.names - in_scope):
        c.problems.add(path, f"template names '{name}', which nothing in the diagram binds",
                       block=block, field=field, hint=suggest(name, in_scope)
                       or "bind it as a Start input or variable, or with a block's 'set'",
                       code="template_unbound_name")


def _compile_variables(c: Compilation, start: CompiledBlock, settings: RunSettings,
                       functions: set[str]) -> list[tuple[str, Evaluator]]:
    """Start's variables, in order; each sees the inputs, the functions and the variables."""
    start_path = ("blocks", c.index_of[start.id])
    visible = set(settings.inputs) | functions | set(settings.variables)
    variables: list[tuple[str, Evaluator]] = []
    for name, value in settings.variables.items():
        path = (*start_path, "variables", name)
        evaluator = compile_template(c, value, path, start.id, f"variables.{name}")
        if evaluator is not None:
            _check_names(c, evaluator, visible, path, start.id, f"variables.{name}")
            variables.append((name, evaluator))
    return variables


def _compile_set_and_when(c: Compilation, compiled: CompiledBlock, after: set[str]) -> None:
    where = ("blocks", c.index_of[compiled.id])
    for name, value in compiled.impl.spec.set.items():
        if not check_csv_path(c, value, (*where, "set", name), compiled.id, f"set.{name}"):
            continue
        evaluator = compile_template(c, value, (*where, "set", name), compiled.id, f"set.{name}")
        if evaluator is not None:
            _check_names(c, evaluator, after, (*where, "set", name), compiled.id, f"set.{name}")
            compiled.set_items.append((name, evaluator))
    for link in compiled.links:
        if link.when is not None:
            _check_names(c, link.when, after, (*where, "next", link.index, "when"), compiled.id,
                         f"next[{link.index}].when")


def _written_fields(model: type[BaseModel]) -> dict[str, str]:
    """Input name as written (alias or field name) → field name."""
    return {field.alias or name: name for name, field in model.model_fields.items()}


def _compile_inputs(c: Compilation, compiled: CompiledBlock, in_scope: set[str]) -> None:
    where = ("blocks", c.index_of[compiled.id], "with")
    fields = _written_fields(compiled.inputs_model)
    constants: dict[str, Any] = {}
    templated: set[str] = set()
    for name, value in compiled.impl.spec.with_.items():
        if name not in fields:
            c.problems.add((*where, name), f"unknown input '{name}' for a {compiled.type_name} block",
                           block=compiled.id, field=f"with.{name}",
                           hint=suggest(name, fields) or (f"inputs: {', '.join(fields)}" if fields
                                                          else f"a {compiled.type_name} block takes no inputs"),
                           code="unknown_input")
            continue
        if not check_csv_path(c, value, (*where, name), compiled.id, f"with.{name}"):
            continue  # not read, not even by the block's own checks
        evaluator = compile_template(c, value, (*where, name), compiled.id, f"with.{name}")
        if evaluator is None:
            continue
        _check_names(c, evaluator, in_scope, (*where, name), compiled.id, f"with.{name}")
        if name in type(compiled.impl).deferred_inputs:
            compiled.deferred[name] = evaluator
            continue
        compiled.inputs.append((name, evaluator))
        if evaluator.is_constant:
            constants[name] = value
        else:
            templated.add(fields[name])
    _check_required(c, compiled)
    _check_constants(c, compiled, constants, templated)


def _check_required(c: Compilation, compiled: CompiledBlock) -> None:
    written = compiled.impl.spec.with_
    for name, field in compiled.inputs_model.model_fields.items():
        written_name = field.alias or name
        if field.is_required() and written_name not in written:
            c.problems.add(("blocks", c.index_of[compiled.id]), f"missing input '{written_name}'",
                           block=compiled.id, field=f"with.{written_name}", hint=field.description, code="missing_input")


def _check_constants(c: Compilation, compiled: CompiledBlock, constants: dict[str, Any], templated: set[str]) -> None:
    """The constant inputs, by the Inputs model and the block's own `check`; templated ones wait for the run."""
    where = ("blocks", c.index_of[compiled.id], "with")

    def report(field: str, message: str, hint: str | None) -> None:
        c.problems.add((*where, field), message, block=compiled.id, field=f"with.{field}", hint=hint,
                       code="invalid_input")

    try:
        instance = compiled.inputs_model.model_validate(constants, context={"base_dir": c.folder})
    except ValidationError as exc:
        failed: set[str] = set()
        for error in exc.errors(include_url=False):
            loc = error["loc"]
            if error["type"] == "missing" or (loc and loc[0] in templated) or (not loc and templated):
                continue
            if loc:
                failed.add(str(loc[0]))
            dotted = ".".join(str(part) for part in loc)
            c.problems.add((*where, *loc), f"{error['msg']} (got {shown(error.get('input'))})", block=compiled.id,
                           field=f"with.{dotted}" if dotted else "with", code="invalid_input")
        # The block's own checks still look at the inputs that are fine, so one pass finds everything.
        compiled.impl.check({k: v for k, v in constants.items() if k not in failed}, report)
        return
    if not templated:
        compiled.static_inputs = instance
    compiled.impl.check(instance.model_dump() if not templated else constants, report)
