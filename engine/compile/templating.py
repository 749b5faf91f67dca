"""Sandboxed jinja2 templating: compiled once, evaluated in microseconds.

A string that is exactly one ``{{ expression }}`` yields the expression's own value;
any other templated string renders to text. Evaluation reuses one jinja2 Context
per run (building a fresh Context costs more than the expression itself), and a bare
``{{ name }}`` is looked up directly. Nothing here reads files or the environment.

This module compiles: it parses a template, checks what it can before a run (its depth,
unknown filters and tests, literal calls a template function refuses) and makes its
evaluator. What a run evaluates (the scope, the evaluators) is engine.compile.evaluators.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jinja2
import orjson
from jinja2 import meta, nodes
from jinja2.runtime import Context

from engine.compile.clock import CLOCK_FUNCTIONS
from engine.compile.evaluators import (
    Compiled,
    Constant,
    Container,
    Evaluator,
    Inline,
    Name,
    Scope,
    template_error,
    truthy,
)
from engine.compile.expressions import Expression, PythonCode, compile_expression, expression_code
from engine.compile.regex import REGEX_FILTERS, check_pattern
from engine.compile.sandbox import TEMPLATE_GLOBALS, NativeSandbox, TextSandbox
from engine.errors import TemplateSyntax
from engine.format.citations import cite
from engine.format.names import suggest
from engine.format.values import dumps

if TYPE_CHECKING:
    from datetime import datetime

# Evaluator, Inline, Scope, template_error and truthy live in engine.compile.evaluators; named here too, as the
# compile layer's one face for templates.
__all__ = [
    "Evaluator",
    "Inline",
    "Scope",
    "TemplateEnv",
    "TemplateSyntax",
    "has_template",
    "template_error",
    "truthy",
]

_TEMPLATE_MARKS = ("{{", "{%", "{#")
_BARE_NAME = re.compile(r"\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}")
_KEYWORDS = frozenset({"true", "false", "none", "True", "False", "None"})
MAX_TEMPLATE_DEPTH = 50
"""Expressions nested inside each other in one template; deeper ones exhaust the parser and Python's compiler."""


def has_template(value: str) -> bool:
    return "{" in value and any(mark in value for mark in _TEMPLATE_MARKS)


def _to_json(value: Any, indent: bool = False) -> str:
    return dumps(value, option=orjson.OPT_INDENT_2 if indent else 0).decode()


def last_turns(history: Any, n: int = 10) -> Any:
    """The last `n` user turns of a conversation: from its n-th last `user` row to its end, as a list or a table.

    A turn begins where the user speaks, and an assistant's tool calls and the tool rows with their results come
    after it, so a cut made here never separates a call from its results (which vendors refuse with a 400), as a
    plain `history[-10:]` can. Fewer turns than `n`: the whole history.
    """
    from engine.format.tables import DataTable

    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"last_turns: n is a whole number of turns, got {n!r}")
    if isinstance(history, DataTable):
        roles = history.column("role") if "role" in history.columns else []
    elif isinstance(history, list | tuple):
        roles = [row.get("role") if isinstance(row, Mapping) else None for row in history]
    else:
        raise ValueError(f"last_turns: expected a history (a list of rows or a table), got {type(history).__name__}")
    if n <= 0:
        return history[:0]
    users = [index for index, role in enumerate(roles) if role == "user"]
    if len(users) <= n:
        return history
    return history[users[-n]:]


def _from_json(text: Any) -> Any:
    try:
        return orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"from_json: not JSON text ({exc})") from exc


def _free_names(tree: nodes.Template) -> frozenset[str]:
    """Names a template reads from its scope."""
    if any(not isinstance(node, nodes.Output) for node in tree.find_all(nodes.Stmt)):
        # Statements ({% for %}, {% set %}) bind names of their own: let jinja2 work it out.
        return frozenset(meta.find_undeclared_variables(tree))
    return frozenset(node.name for node in tree.find_all(nodes.Name) if node.ctx == "load")


def _depth(tree: nodes.Node) -> int:
    """How deeply the template's nodes nest, counted without recursion."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.iter_child_nodes())
    return deepest


class _Undefined(jinja2.StrictUndefined):
    """StrictUndefined whose message, for a key a mapping lacks (a table row's column typo), lists its keys."""

    __slots__ = ()

    @property
    def _undefined_message(self) -> str:
        message = str(super()._undefined_message)
        owner, name = self._undefined_obj, self._undefined_name
        if isinstance(owner, Mapping) and owner and isinstance(name, str):
            keys = [str(key) for key in owner]
            hint = suggest(name, keys)
            shown = ", ".join(keys[:20]) + (", …" if len(keys) > 20 else "")
            message += f" (its keys: {shown}" + (f"; {hint}" if hint else "") + ")"
        return message


@dataclass(frozen=True, slots=True)
class _Parsed:
    names: frozenset[str]
    native: bool


class TemplateEnv:
    """The two sandboxed environments (native values and text) and their caches.

    A template function may carry `check_literal_call(args, kwargs)`: called at compile time with the arguments
    written as literals, it returns (message, hint, code) for a call that cannot work, or None.
    """

    def __init__(self, functions: Mapping[str, Any] | None = None, *, python_expressions: bool = True) -> None:
        """`python_expressions=False` leaves every template to jinja2: the reference the compiled ones are tested by."""
        self._python_expressions = python_expressions
        options: dict[str, Any] = {"undefined": _Undefined, "autoescape": False, "cache_size": 0}
        # No constant folding: folded outputs reach the native generator as repr() text.
        self.native = NativeSandbox(**options, optimized=False)
        self.text = TextSandbox(**options)
        for env in (self.native, self.text):
            env.bound_filters({"to_json": _to_json, "from_json": _from_json, "last_turns": last_turns, "cite": cite,
                               **REGEX_FILTERS})
        # jinja2's standard globals (range, dict, namespace, ...) are template functions like the diagram's own:
        # bound in every scope, known to the name check, and no variable may hide one.
        self.functions: dict[str, Any] = {**TEMPLATE_GLOBALS, **CLOCK_FUNCTIONS, **(functions or {})}
        self._parsed: dict[str, _Parsed] = {}
        self._compiled: dict[tuple[str, bool], tuple[Callable[[Context], Any], bool]] = {}
        self._evaluators: dict[str, Evaluator] = {}
        self._expressions: dict[str, Expression | None] = {}

    def _parse(self, source: str) -> _Parsed:
        parsed = self._parsed.get(source)
        if parsed is not None:
            return parsed
        try:
            tree = self.native.parse(source)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateSyntax(exc.message or str(exc), exc.lineno) from exc
        except RecursionError:
            raise TemplateSyntax(f"the template nests more than {MAX_TEMPLATE_DEPTH} levels deep "
                                 "(parentheses, brackets, operators)", None) from None
        if _depth(tree) > MAX_TEMPLATE_DEPTH:
            raise TemplateSyntax(f"the template nests more than {MAX_TEMPLATE_DEPTH} levels deep "
                                 "(parentheses, brackets, operators)", None)
        self._check_static(tree)
        try:
            names = _free_names(tree) - _KEYWORDS
        except jinja2.TemplateSyntaxError as exc:  # an unknown filter or test, found by compiling statements
            raise TemplateSyntax(exc.message or str(exc), exc.lineno) from exc
        except Exception as exc:  # a template is user code, and so is what compiling it evaluates
            # Finding the names of statements compiles them, evaluating constant parts on the way:
            # `{[]: 0}` (unhashable) or `{0[0]: 0}` (undefined) fails there, not when parsed.
            raise TemplateSyntax(f"the template cannot be compiled: {type(exc).__name__}: {exc}", None) from exc
        body = tree.body
        native = (
            len(body) == 1
            and isinstance(body[0], nodes.Output)
            and len(body[0].nodes) == 1
            and not isinstance(body[0].nodes[0], nodes.TemplateData)
        )
        parsed = self._parsed[source] = _Parsed(names, native)
        return parsed

    def _check_static(self, tree: nodes.Template) -> None:
        """TemplateSyntax for what would fail at every run: an unknown filter or test (jinja2 finds one only when
        the branch using it runs), or a literal argument a template function refuses (`tools('no-such-group')`)."""
        for kind, known, found in (("filter", self.native.filters, tree.find_all(nodes.Filter)),
                                   ("test", self.native.tests, tree.find_all(nodes.Test))):
            for node in found:
                if node.name not in known:
                    raise TemplateSyntax(f"no {kind} named '{node.name}'", node.lineno, code=f"template_unknown_{kind}",
                                         hint=suggest(node.name, known) or f"the {kind}s are jinja2's built-in ones"
                                         + (" and to_json, from_json, last_turns, regex_search, regex_replace, regex_findall"
                                            if kind == "filter" else ""))
                if kind == "filter" and node.name in REGEX_FILTERS and node.args \
                        and isinstance(node.args[0], nodes.Const) and isinstance(node.args[0].value, str):
                    refusal = check_pattern(node.args[0].value)  # a literal pattern RE2 refuses fails every run
                    if refusal is not None:
                        raise TemplateSyntax(f"{node.name}: {refusal[0]}", node.lineno, code="template_bad_regex",
                                             hint=refusal[1])
        for call in tree.find_all(nodes.Call):
            check = getattr(self.functions.get(call.node.name), "check_literal_call", None) \
                if isinstance(call.node, nodes.Name) else None
            if check is None:
                continue
            # Only the arguments written as literals are known now; the rest wait for the run.
            leading = itertools.takewhile(lambda arg: isinstance(arg, nodes.Const), call.args)
            args = [arg.value for arg in leading if isinstance(arg, nodes.Const)]
            kwargs = {kw.key: kw.value.value for kw in call.kwargs if isinstance(kw.value, nodes.Const)}
            refusal = check(args, kwargs)
            if refusal is not None:
                raise TemplateSyntax(refusal[0], call.lineno, code=refusal[2], hint=refusal[1])

    def compile_source(self, source: str, native: bool) -> tuple[Callable[[Context], Any], bool]:
        """The render function of a template, and whether it returns its value directly."""
        key = (source, native)
        found = self._compiled.get(key)
        if found is None:
            with warnings.catch_warnings():
                # `{{ 0[1] }}` compiles to Python that Python warns about; the run reports the error itself.
                warnings.simplefilter("ignore", SyntaxWarning)
                direct = self._direct_function(source) if native else None
                if direct is None:
                    env = self.native if native else self.text
                    direct = (env.from_string(source).root_render_func, False)
            found = self._compiled[key] = direct
        return found

    def expression_code(self, source: str, prefix: str) -> PythonCode | None:
        """A native template as Python text (engine.compile.expressions), or None: see `Evaluator.python_code`."""
        if not self._python_expressions:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            try:
                return expression_code(self.native, source, prefix)
            except Exception:  # what cannot be written as Python is evaluated by a call
                return None

    def compile_expression(self, source: str) -> Expression | None:
        """A native template as a Python function, when it is a plain expression; else None (jinja2 evaluates it)."""
        if not self._python_expressions:
            return None
        if source not in self._expressions:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)  # `{{ 0[1] }}`: the run reports the error itself
                self._expressions[source] = compile_expression(self.native, source, template_error)
        return self._expressions[source]

    def _direct_function(self, source: str) -> tuple[Callable[[Context], Any], bool] | None:
        # jinja2 renders through a generator; for one expression, its generated code
        # has a single top-level `yield`, which becomes `return`: the same sandboxed code
        # without a generator per evaluation (a third of an expression's cost).
        generated = self.native.compile(source, raw=True)
        marker = "    if 0: yield None\n"
        if marker not in generated or generated.count("yield") != 2 or generated.count("\n    yield ") != 1:
            return None
        direct = generated.replace(marker, "").replace("\n    yield ", "\n    return ", 1)
        code = compile(direct, "<template>", "exec")
        template = self.native.template_class.from_code(self.native, code, self.native.make_globals(None))
        return template.root_render_func, True

    def compile(self, value: Any) -> Evaluator:
        """Compile a written value (string, list, mapping, scalar); raises TemplateSyntax."""
        if isinstance(value, str):
            # Diagrams repeat their templates ("{{ history }}"); one evaluator serves them all.
            known = self._evaluators.get(value)
            if known is None:
                known = self._evaluators[value] = self._compile_text(value)
            return known
        return self._compile_value(value)

    def _compile_text(self, value: str) -> Evaluator:
        if not has_template(value):
            return Constant(value)
        stripped = value.strip()
        bare = _BARE_NAME.fullmatch(stripped)
        if bare and bare.group(1) not in _KEYWORDS:
            return Name(value, bare.group(1))
        parsed = self._parse(stripped if self._parse_native_hint(stripped) else value)
        source = stripped if parsed.native else value
        return Compiled(self, source, parsed.names, parsed.native)

    def _compile_value(self, value: Any) -> Evaluator:
        if isinstance(value, dict):
            items = [(key, self.compile(item)) for key, item in value.items()]
            if all(item.is_constant for _, item in items):
                return Constant(value)
            names = frozenset().union(*(item.names for _, item in items))
            return Container(value, items, names)
        if isinstance(value, list):
            compiled = [self.compile(item) for item in value]
            if all(item.is_constant for item in compiled):
                return Constant(value)
            names = frozenset().union(*(item.names for item in compiled))
            return Container(value, compiled, names)
        return Constant(value)

    def _parse_native_hint(self, stripped: str) -> bool:
        # Surrounding whitespace (YAML block scalars add a newline) does not make text.
        return stripped.startswith("{{") and stripped.endswith("}}")

    def new_scope(self, values: dict[str, Any], environ: Mapping[str, str] | None = None, *,
                  clock: datetime | None = None) -> Scope:
        """A run's scope: `values`, then each template function; one that reads the environment (`secret`, by its
        `for_run`) bound to the run's `environ`, one that reads the time (`now`, `today`: `for_clock`) to `clock`."""
        for name, function in self.functions.items():
            bind = getattr(function, "for_run", None) if environ is not None else None
            if bind is not None:
                function = bind(environ)
            elif clock is not None and (at := getattr(function, "for_clock", None)) is not None:
                function = at(clock)
            values.setdefault(name, function)
        return Scope(self, values)
