"""Stage 4: every template value compiled, and every name it reads checked against its block's scope.

Also the names a diagram binds (Start inputs and variables, `set` keys) and each block's `with`
inputs: unknown or missing ones, and constant ones checked by the block's Inputs model and `check`.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.compile.block import RunSettings
from engine.compile.diagram import CompiledBlock
from engine.compile.evaluators import text_condition
from engine.compile.graph import LinkMap
from engine.compile.templating import Evaluator, has_template
from engine.compile.validate.compilation import Compilation, check_csv_path, compile_template
from engine.compile.validate.problems import shown
from engine.compile.validate.scope import block_scopes
from engine.errors import Problem, TableError
from engine.format.names import suggest, variable_name_problem
from engine.format.tables import DataTable, to_table

__all__ = ["compile_values"]

Where = tuple[str | int, ...]


def compile_values(c: Compilation, start: CompiledBlock, links: LinkMap) -> None:
    settings = start.impl.settings
    assert isinstance(settings, RunSettings)
    functions = set(c.env.functions)
    _check_bound_names(c, start, settings, functions)
    scopes = block_scopes(c.blocks.values(), settings, links, functions)
    c.variables = _compile_variables(c, start, settings, functions)
    for compiled in c.blocks.values():
        in_scope, after = scopes[compiled.id]
        _compile_inputs(c, compiled, in_scope)
        _compile_set_and_when(c, compiled, after)
    _check_passed_variables(c, start, settings)


def _check_bound_names(c: Compilation, start: CompiledBlock, settings: RunSettings, functions: set[str]) -> None:
    start_path = ("blocks", c.index_of[start.id])
    for section in ("inputs", "variables"):
        for name, value in getattr(settings, section).items():
            _check_name(c, name, (*start_path, section, name), start.id, f"{section}.{name}", functions)
            check_csv_path(c, value, (*start_path, section, name), start.id, f"{section}.{name}")
    declared = set(settings.inputs) | set(settings.variables)
    for index, name in enumerate(settings.memory):
        if name not in declared:
            c.problems.add((*start_path, "memory", index), f"memory names '{name}', which is no Start input or "
                           "variable", block=start.id, field=f"memory[{index}]",
                           hint=suggest(name, declared) or "declare it under variables, with its first value",
                           code="memory_undeclared")
    for compiled in c.blocks.values():
        for name in compiled.impl.spec.set:
            _check_name(c, name, ("blocks", c.index_of[compiled.id], "set", name), compiled.id, f"set.{name}",
                        functions)
    set_names = {name for compiled in c.blocks.values() for name in compiled.impl.spec.set}
    for index, name in enumerate(settings.output):
        if name not in declared | set_names:
            c.problems.add((*start_path, "output", index), f"output names '{name}', which is no Start input or "
                           "variable, and no block sets it", block=start.id, field=f"output[{index}]",
                           hint=suggest(name, declared | set_names) or "declare it under variables, or set it",
                           code="output_undeclared")
    if settings.chat is not None:
        _check_chat(c, start, settings)


def _check_chat(c: Compilation, start: CompiledBlock, settings: RunSettings) -> None:
    """Start's `chat`: its input is a Start input, its output a variable the robot sets (Start's or a `set`'s)."""
    assert settings.chat is not None
    where = ("blocks", c.index_of[start.id], "chat")
    if settings.chat.input not in settings.inputs:
        c.problems.add((*where, "input"), f"chat's input '{settings.chat.input}' is no Start input", block=start.id,
                       field="chat.input", hint=suggest(settings.chat.input, settings.inputs)
                       or "declare it under inputs, with a default", code="chat_undeclared")
    set_names = {name for compiled in c.blocks.values() for name in compiled.impl.spec.set}
    if settings.chat.output not in set(settings.variables) | set_names:
        c.problems.add((*where, "output"), f"chat's output '{settings.chat.output}' is no variable the robot sets",
                       block=start.id, field="chat.output", hint=suggest(settings.chat.output, set_names)
                       or "set it in a block's `set`, or declare it under variables", code="chat_undeclared")


def _check_name(c: Compilation, name: str, path: Where, block: str, field: str, functions: set[str]) -> None:
    problem = variable_name_problem(name)
    if problem is not None:
        c.problems.add(path, problem[0], block=block, field=field, hint=problem[1], code="invalid_name")
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
            _check_condition(c, link.when, (*where, "next", link.index, "when"), compiled.id,
                             f"next[{link.index}].when")


def _check_condition(c: Compilation, evaluator: Evaluator, path: Where, block: str, field: str) -> None:
    """A warning where a condition can only be free text: true whatever it says (README, "Conditions")."""
    why = text_condition(evaluator)
    if why is None:
        return
    source = str(evaluator.source)
    shown_source = source if len(source) <= 60 else source[:59] + "…"
    c.problems.add(path, f"this condition {why} ({shown_source!r}), and any text but an empty one or a false "
                   "spelling (false, no, off, 0, null, none) is true: it holds whatever the values", block=block,
                   field=field, hint="write the whole condition inside one {{ }}: \"{{ x > 3 }}\", not \"{{ x }} > 3\"",
                   code="condition_is_text", severity="warning")


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
        if name in type(compiled.impl).condition_inputs:
            _check_condition(c, evaluator, (*where, name), compiled.id, f"with.{name}")
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
    if c.spec is not None:

        def report(field: str, message: str, hint: str | None) -> None:
            _place(c, where, field, {}, message, block=compiled.id, shown=f"with.{field.partition('.')[0]}", hint=hint)

        compiled.impl.check_diagram(c.spec, report)


def _check_required(c: Compilation, compiled: CompiledBlock) -> None:
    written = compiled.impl.spec.with_
    for name, field in compiled.inputs_model.model_fields.items():
        written_name = field.alias or name
        if field.is_required() and written_name not in written:
            c.problems.add(("blocks", c.index_of[compiled.id]), f"missing input '{written_name}'",
                           block=compiled.id, field=f"with.{written_name}", hint=field.description, code="missing_input")


def _read_tables(c: Compilation, values: dict[str, Any]) -> dict[str, Any]:
    """`values` with each constant `{csv: path}` read into its table (from the diagram's folder, never the working
    directory), as a run reads it; one that cannot be read is left out (its own check reports it)."""
    read = dict(values)
    for name, value in values.items():
        if isinstance(value, dict) and set(value) == {"csv"} and isinstance(value["csv"], str) \
                and not has_template(value["csv"]):
            try:
                read[name] = to_table(value, c.folder)
            except TableError:
                del read[name]
    return read


def _place(c: Compilation, base: Where, field: str, values: dict[str, Any], message: str, *, block: str,
           shown: str, hint: str | None) -> None:
    """A problem a block's `check` reported for `field` (`name` or `name.<row index>`) of one of `values`: at that
    row's line, in its CSV file when the table was read from one; `shown` names the field."""
    name, _, rest = field.partition(".")
    value = values.get(name)
    if rest.isdigit() and isinstance(value, DataTable) and value.source is not None \
            and int(rest) < len(value.source[1]):
        c.problems.items.append(Problem(value.source[0], value.source[1][int(rest)], message, block=block, field=shown,
                                        hint=hint, code="invalid_input"))
        return
    steps = [int(part) if part.isdigit() else part for part in field.split(".")]
    c.problems.add((*base, *steps), message, block=block, field=shown, hint=hint, code="invalid_input")


@functools.cache
def _empty_inputs(model: type[BaseModel]) -> BaseModel | None:
    """The one instance of an Inputs model without fields or model validators (a Set's `NoInputs`), which every
    block of its types can share: there is nothing in it to change. None for any other model."""
    if model.model_fields or model.__pydantic_decorators__.model_validators:
        return None
    return model.model_validate({})


def _check_constants(c: Compilation, compiled: CompiledBlock, constants: dict[str, Any], templated: set[str]) -> None:
    """The constant inputs, by the Inputs model and the block's own `check`; templated ones wait for the run."""
    where = ("blocks", c.index_of[compiled.id], "with")
    checked: dict[str, Any] = {}
    settings = type(compiled.impl).Settings
    own_keys = set(settings.model_fields).difference(compiled.inputs_model.model_fields) if settings is not None else ()

    def report(field: str, message: str, hint: str | None) -> None:
        if field.partition(".")[0] in own_keys:  # one of the type's own keys (a request block's `fallback.0.type`)
            _place(c, where[:-1], field, {}, message, block=compiled.id, shown=field, hint=hint)
            return
        _place(c, where, field, checked, message, block=compiled.id, shown=f"with.{field.partition('.')[0]}", hint=hint)

    if not constants and not templated:
        empty = _empty_inputs(compiled.inputs_model)
        if empty is not None:  # a Set's: nothing to validate, nothing to dump
            compiled.static_inputs = empty
            compiled.written_inputs = None
            compiled.impl.check(checked, report)
            return
    try:
        instance = compiled.inputs_model.model_validate(constants, context={"base_dir": c.folder})
    except ValidationError as exc:
        failed: set[str] = set()
        for error in exc.errors(include_url=False):
            loc = error["loc"]
            # A missing input itself is reported with its description (`_check_required`); one missing inside a
            # written value (a key of a mapping input) is this value's problem, reported here.
            if (error["type"] == "missing" and len(loc) <= 1) or (loc and loc[0] in templated) or (not loc and templated):
                continue
            if loc:
                failed.add(str(loc[0]))
            dotted = ".".join(str(part) for part in loc)
            said = f"missing required key '{loc[-1]}'" if error["type"] == "missing" \
                else f"{error['msg']} (got {shown(error.get('input'))})"
            c.problems.add((*where, *loc), said, block=compiled.id,
                           field=f"with.{dotted}" if dotted else "with", code="invalid_input")
        # The block's own checks still look at the inputs that are fine, so one pass finds everything.
        checked.update(_read_tables(c, {k: v for k, v in constants.items() if k not in failed}))
        compiled.impl.check(checked, report)
        return
    if not templated:
        compiled.static_inputs = instance
        compiled.written_inputs = {name: evaluator.source for name, evaluator in compiled.inputs} or None
    checked.update(instance.model_dump() if not templated else _read_tables(c, constants))
    compiled.impl.check(checked, report)
    if compiled.child is not None:
        compiled.impl.check_child(compiled.child, checked, report)


def _check_passed_variables(c: Compilation, start: CompiledBlock, settings: RunSettings) -> None:
    """A block input written `{{ name }}` of a Start variable with a constant value (a history CSV, a tools table)
    gets that value at least once: the block's `check` sees it as if written there, and what it reports is
    placed at the variable (at the row, in the CSV file when it is one)."""
    constant = {name for name, evaluator in c.variables if evaluator.is_constant}
    start_path = ("blocks", c.index_of[start.id], "variables")
    seen: set[tuple[str, str, type[Any]]] = set()
    for compiled in c.blocks.values():
        for input_name, evaluator in compiled.inputs:
            variable = evaluator.bare_name
            key = (variable or "", input_name, type(compiled.impl))
            if variable not in constant or key in seen:
                continue
            seen.add(key)
            assert variable is not None
            values = _read_tables(c, {input_name: settings.variables[variable]})
            if input_name not in values:
                continue
            taker = f"'{compiled.id}' takes it as with.{input_name}"

            def report(field: str, message: str, hint: str | None, values: dict[str, Any] = values,
                       input_name: str = input_name, variable: str = variable, taker: str = taker) -> None:
                name, dot, rest = field.partition(".")
                if name != input_name:  # a check about the block's other inputs: theirs to report
                    return
                _place(c, start_path, f"{variable}{dot}{rest}", {variable: values[input_name]}, f"{message} ({taker})",
                       block=start.id, shown=f"variables.{variable}", hint=hint)

            compiled.impl.check(values, report)
