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
from typing import Any, Protocol

from jinja2 import nodes
from jinja2.exceptions import UndefinedError
from jinja2.runtime import Undefined

from engine.compile.sandbox import NativeSandbox
from engine.compile.sizes import MAX_INT_BITS, check_sum, checked
from engine.errors import DiagramaError, TemplateError

__all__ = ["Expression", "Names", "compile_expression"]


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


class _Writer:
    """Python source for one expression; constants and names go in `namespace`, never in the text."""

    def __init__(self, environment: NativeSandbox, translate: Callable[[Exception], TemplateError]) -> None:
        self.namespace: dict[str, Any] = {
            "_undefined": _undefined, "_checked": checked, "_add": _add, "_MAX_INT_BITS": MAX_INT_BITS,
            "_binop": environment.call_binop, "_concat": environment.bounded_concat,
            "_getattr": environment.getattr, "_getitem": environment.getitem,
            "_Undefined": Undefined, "_DiagramaError": DiagramaError, "_translate": translate,
        }
        self.temporaries = 0

    def constant(self, value: Any) -> str:
        """A literal as Python text: its repr where that reads back as the same value, else a named constant."""
        if isinstance(value, str | bool | int | type(None)) or (type(value) is float and math.isfinite(value)):
            return repr(value)  # a str's repr is always a valid literal of that same str
        name = f"_k{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def temporary(self) -> str:
        self.temporaries += 1
        return f"_t{self.temporaries}"

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
            left, right = self.temporary(), self.temporary()
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
        r = {body}
        # The output check of jinja2's sandbox (`finalize`), its cheap cases first: a condition's bool, a counter's int.
        if type(r) is not bool and not (type(r) is int and r.bit_length() <= _MAX_INT_BITS):
            r = _checked(r)
            if isinstance(r, _Undefined):
                r._fail_with_undefined_error()
    except _DiagramaError:
        raise
    except Exception as exc:  # a template is user code: any failure is the user's to fix
        raise _translate(exc) from exc
    return r
"""


def compile_expression(environment: NativeSandbox, source: str,
                       translate: Callable[[Exception], TemplateError]) -> Expression | None:
    """`source` (one `{{ expression }}`, already checked by the loader) as a Python function of the scope, or
    None when it uses what only jinja2 evaluates. The value passes the sandbox's output check, as jinja2's
    would; a failure is raised as `translate(exception)`, the TemplateError jinja2's evaluation would raise."""
    tree = environment.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], nodes.Output) or len(tree.body[0].nodes) != 1:
        return None
    writer = _Writer(environment, translate)
    try:
        body = writer.write(tree.body[0].nodes[0])
    except _Unsupported:
        return None
    code = compile(_FUNCTION.format(body=body), "<expression>", "exec")
    exec(code, writer.namespace)  # our own text: names and literals are reprs or constants in `namespace`
    function: Expression = writer.namespace["expression"]
    return function
