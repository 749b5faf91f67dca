"""Plain expressions as Python functions: what most conditions and `set` values are (`{{ i + 1 }}`, `{{ i < N }}`).

jinja2 evaluates an expression through a Context, a resolver per name and its sandbox's operator
hooks: about 0.5 µs for `i + 1`. The same expression compiled here to one Python function of the
scope (it reads a block's outputs over the run's values) takes about a quarter of that. The function
is the evaluator's `evaluate` itself, its error translation included: no call in between.

Only a subset is compiled, each node with the meaning jinja2's sandbox gives it: names (the outputs,
then the values, else undefined), literals, `+ - * / // % **` and `~` with the sandbox's size checks,
comparisons, `and`/`or`/`not`, `a if b else c`, list/tuple/dict displays, and attribute or item
reads through the sandbox's own `getattr`/`getitem` (so its refusals and its undefined values are
the same). Anything else (filters, tests, calls, slices, `{% %}` statements) returns None and stays
with jinja2. No text of the template reaches the generated code: names and literals are constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from jinja2 import nodes
from jinja2.exceptions import UndefinedError
from jinja2.runtime import Undefined

from engine.compile.sandbox import NativeSandbox
from engine.compile.sizes import MAX_INT_BITS, check_sum, checked
from engine.errors import DiagramaError, TemplateError

__all__ = ["Expression", "Names", "PythonCode", "compile_expression", "expression_code", "output_check"]


class Names(Protocol):
    """What an expression reads of a template scope."""

    @property
    def outputs(self) -> Mapping[str, Any]: ...

    @property
    def values(self) -> Mapping[str, Any]: ...


Expression = Callable[[Names], Any]
"""expression(scope) → the value, or TemplateError (every failure translated as jinja2's would be)."""

_COMPARISONS = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<=", "in": "in",
                "notin": "not in"}
_PLAIN_BINOPS = {nodes.Sub: "-", nodes.Div: "/", nodes.FloorDiv: "//"}
"""Operators the sandbox leaves to Python (it intercepts `+ * % **`: those go through `call_binop`)."""
_CHECKED_BINOPS = {nodes.Add: "+", nodes.Mul: "*", nodes.Mod: "%", nodes.Pow: "**"}
_UNARY = {nodes.Neg: "-", nodes.Pos: "+", nodes.Not: "not "}
_LITERALS = (str, int, float, bool, type(None))
_SPECIAL_NAMES = frozenset({"self", "loop", "super", "caller", "varargs", "kwargs"})
"""Names jinja2 binds itself in some templates: left to it."""


class _Unsupported(Exception):
    """A node outside the compiled subset: the template stays with jinja2."""


def _undefined(name: str) -> Any:
    raise UndefinedError(f"{name!r} is undefined")  # jinja2's StrictUndefined message, word for word


def _add(left: Any, right: Any) -> Any:
    """`+` for what is not two ints (those are added inline: one bit more at most, and the output is measured)."""
    check_sum(left, right)
    return left + right


@dataclass(frozen=True)
class PythonCode:
    """One expression as Python text over the locals `o` (a block's outputs) and `v` (the run's values).

    `namespace` holds what the text names: the helpers (the same objects for every expression of an
    environment) and the expression's own constants and temporaries, which carry its `prefix`, so that
    several expressions can share one function (engine.compile.routes). The text raises what the
    expression raises, untranslated, and its value has not passed `output_check` yet.
    """

    value: str
    namespace: dict[str, Any]


def output_check(name: str, indent: str) -> str:
    """Lines that put the local `name` through the sandbox's output check (jinja2's `finalize`), the cheap
    cases first: a condition's bool, a counter's int."""
    return (f"{indent}if type({name}) is not bool and not (type({name}) is int and {name}.bit_length() <= _MAX_INT_BITS):\n"
            f"{indent}    {name} = _checked({name})\n"
            f"{indent}    if isinstance({name}, _Undefined):\n"
            f"{indent}        {name}._fail_with_undefined_error()\n")


class _Writer:
    """Python source for one expression; constants and names go in `namespace`, never in the text."""

    def __init__(self, environment: NativeSandbox, prefix: str) -> None:
        self.namespace: dict[str, Any] = {
            "_undefined": _undefined, "_checked": checked, "_add": _add, "_MAX_INT_BITS": MAX_INT_BITS,
            "_binop": environment.call_binop, "_concat": environment.bounded_concat,
            "_getattr": environment.getattr, "_getitem": environment.getitem,
            "_Undefined": Undefined, "_DiagramaError": DiagramaError,
        }
        self.prefix = prefix
        self.names = 0

    def constant(self, value: Any) -> str:
        """A literal as Python text: its repr where that reads back as the same value, else a named constant."""
        if isinstance(value, str | bool | type(None)) or (type(value) is int and value.bit_length() < 64) \
                or (type(value) is float and math.isfinite(value)):
            return repr(value)  # a str's repr is always a valid literal of that same str
        name = self.temporary()
        self.namespace[name] = value
        return name

    def temporary(self) -> str:
        self.names += 1
        return f"_{self.prefix}{self.names}"

    def write(self, node: nodes.Node) -> str:
        """Python source for `node`; one flat branch per node kind, as jinja2's CodeGenerator has."""
        if isinstance(node, nodes.Const):
            if type(node.value) not in _LITERALS:
                raise _Unsupported
            return self.constant(node.value)
        if isinstance(node, nodes.Name):
            if node.ctx != "load" or node.name in _SPECIAL_NAMES:
                raise _Unsupported
            key = self.constant(node.name)
            # jinja2's Context.resolve_or_missing: the block's outputs, then the run's values.
            return f"(o[{key}] if {key} in o else v[{key}] if {key} in v else _undefined({key}))"
        if isinstance(node, nodes.BinExpr) and type(node) in _PLAIN_BINOPS:
            return f"({self.write(node.left)} {_PLAIN_BINOPS[type(node)]} {self.write(node.right)})"
        if isinstance(node, nodes.Add):
            # Both sides evaluated once, left first (`&`, unlike `and`, evaluates both), then added:
            # two ints inline, anything else through the sandbox's check.
            left = self.temporary()
            if isinstance(node.right, nodes.Const) and type(node.right.value) is int:  # `i + 1`
                number = repr(node.right.value)
                return f"({left} + {number} if type({left} := {self.write(node.left)}) is int else _add({left}, {number}))"
            right = self.temporary()
            return (f"({left} + {right} if (type({left} := {self.write(node.left)}) is int) & "
                    f"(type({right} := {self.write(node.right)}) is int) else _add({left}, {right}))")
        if isinstance(node, nodes.BinExpr) and type(node) in _CHECKED_BINOPS:
            operator = self.constant(_CHECKED_BINOPS[type(node)])
            return f"_binop(None, {operator}, {self.write(node.left)}, {self.write(node.right)})"
        if isinstance(node, nodes.And | nodes.Or):
            word = "and" if isinstance(node, nodes.And) else "or"
            return f"({self.write(node.left)} {word} {self.write(node.right)})"
        if isinstance(node, nodes.UnaryExpr) and type(node) in _UNARY:
            return f"({_UNARY[type(node)]}{self.write(node.node)})"
        if isinstance(node, nodes.Compare):
            parts = [self.write(node.expr)]
            for operand in node.ops:
                parts.append(f"{_COMPARISONS[operand.op]} {self.write(operand.expr)}")
            return f"({' '.join(parts)})"
        if isinstance(node, nodes.CondExpr):
            if node.expr2 is None:  # `a if b`: jinja2's own undefined for the missing branch
                raise _Unsupported
            return f"({self.write(node.expr1)} if {self.write(node.test)} else {self.write(node.expr2)})"
        if isinstance(node, nodes.Concat):
            return f"_concat(({''.join(self.write(part) + ', ' for part in node.nodes)}))"
        if isinstance(node, nodes.Getattr) and node.ctx == "load":
            return f"_getattr({self.write(node.node)}, {self.constant(node.attr)})"
        if isinstance(node, nodes.Getitem) and node.ctx == "load" and not isinstance(node.arg, nodes.Slice):
            return f"_getitem({self.write(node.node)}, {self.write(node.arg)})"
        if isinstance(node, nodes.List):
            return f"[{', '.join(self.write(item) for item in node.items)}]"
        if isinstance(node, nodes.Tuple) and node.ctx == "load":
            return f"({''.join(self.write(item) + ', ' for item in node.items)})"
        if isinstance(node, nodes.Dict):
            return "{" + ", ".join(f"{self.write(pair.key)}: {self.write(pair.value)}" for pair in node.items) + "}"
        raise _Unsupported


_FUNCTION = """\
def expression(scope):
    o = scope.outputs
    v = scope.values
    try:
        r = {value}
{check}    except _DiagramaError:
        raise
    except Exception as exc:  # a template is user code: any failure is the user's to fix
        raise _translate(exc) from exc
    return r
"""


def expression_code(environment: NativeSandbox, source: str, prefix: str = "e") -> PythonCode | None:
    """`source` (one `{{ expression }}`, already checked by the loader) as Python text, or None when it uses
    what only jinja2 evaluates."""
    tree = environment.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], nodes.Output) or len(tree.body[0].nodes) != 1:
        return None
    writer = _Writer(environment, prefix)
    try:
        value = writer.write(tree.body[0].nodes[0])
    except _Unsupported:
        return None
    return PythonCode(value, writer.namespace)


def compile_expression(environment: NativeSandbox, source: str,
                       translate: Callable[[Exception], TemplateError]) -> Expression | None:
    """`source` as a Python function of the scope (see `expression_code`). The value passes the sandbox's
    output check, as jinja2's would; a failure is raised as `translate(exception)`, the TemplateError
    jinja2's evaluation would raise."""
    code = expression_code(environment, source)
    if code is None:
        return None
    namespace = {**code.namespace, "_translate": translate}
    text = _FUNCTION.format(value=code.value, check=output_check("r", " " * 8))
    exec(compile(text, "<expression>", "exec"), namespace)  # our own text: names and literals are reprs or constants
    function: Expression = namespace["expression"]
    return function
