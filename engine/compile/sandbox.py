"""The template sandbox: jinja2's immutable sandbox, with a bound on the size of what a template builds.

A template may not build a string, list or number past the limits in `sizes` (`'a' * 10**10`, a `replace`
that multiplies a text, a `%` format with a huge width): the size is estimated before the work
is done where it can be, and every value a filter, method or output yields is measured after.
Exceeding a limit is a TemplateError of type `template_too_large`. Time is bounded by each render's budget of
steps (engine.compile.render_budget): every `{% for %}` iterates through it, every call is charged to it.
`TEMPLATE_GLOBALS` are jinja2's standard globals (`range`, `dict`, `namespace`, ...), `range` and `lipsum`
bounded by the same limits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.nativetypes import NativeCodeGenerator
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Cycler, Joiner, Namespace, generate_lorem_ipsum

from engine.compile.render_budget import CALL_STEPS, charge, counted
from engine.compile.sizes import (
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_TEXT,
    bounded_filter,
    bounded_items,
    check_product,
    check_sum,
    checked,
    format_size,
    method_size,
    percent_size,
    too_large,
    weight,
)

__all__ = ["MAX_INT_BITS", "MAX_ITEMS", "MAX_TEXT", "TEMPLATE_GLOBALS", "NativeSandbox", "TextSandbox", "weight"]


def _range(*args: int) -> range:
    """jinja2's `range`, no longer than a list a template may build: `{% for %}` over it stays bounded."""
    numbers = range(*args)
    try:
        length = len(numbers)
    except OverflowError:  # past what a length can hold
        length = MAX_ITEMS + 1
    if length > MAX_ITEMS:
        raise too_large("a range", length, MAX_ITEMS, "items", by="range")
    return numbers


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # jinja2 names them so (min, max)
    """jinja2's `lipsum`, refused before it writes more than a template may build (about 12 characters a word)."""
    if n * max * 12 > MAX_TEXT:
        raise too_large("a text", n * max * 12, by="lipsum")
    return str(generate_lorem_ipsum(n, html, min, max))


TEMPLATE_GLOBALS: dict[str, Any] = {"range": _range, "dict": dict, "namespace": Namespace, "cycler": Cycler,
                                    "joiner": Joiner, "lipsum": _lipsum}
"""jinja2's standard globals: every template sees them, as it sees a diagram's template functions."""

class _BoundedCodes(CodeGenerator):
    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        # Its iterable goes through the render's budget: `{% for x in environment.counted(items) %}`.
        counter = node.iter.node if isinstance(node.iter, nodes.Call) else None
        if not (isinstance(counter, nodes.EnvironmentAttribute) and counter.name == "counted"):
            node.iter = nodes.Call(nodes.EnvironmentAttribute("counted"), [node.iter], [], None, None,
                                   lineno=node.lineno)
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        # `a ~ b` joins the text of each part: measured first, as `str()` of a large value is where memory goes.
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _NativeCodes(NativeCodeGenerator, _BoundedCodes):
    def _output_child_to_const(self, node: nodes.Expr, frame: Frame, finalize: Any) -> Any:
        # Constant outputs would be emitted as repr() text for literal_eval to undo;
        # we want the value itself, so constants take the expression path too.
        raise nodes.Impossible()


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, where `*`, `+`, `%` and `**`, str methods, filters and outputs are size-checked."""

    # Intercepted operators are also never folded at compile time: `'a' * 10**10` is not built while loading.
    intercepted_binops = frozenset({"*", "+", "%", "**"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options, finalize=checked)

    def bound_filters(self, extra: Mapping[str, Callable[..., Any]]) -> None:
        """Wrap every filter, ours (`extra`) included, with its size checks."""
        self.filters.update(extra)
        for name, function in list(self.filters.items()):
            self.filters[name] = bounded_filter(name, function)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            check_product(left, right)
        elif operator == "+":
            check_sum(left, right)
        elif operator == "%" and isinstance(left, str):
            if (size := percent_size(left, right)) > MAX_TEXT:
                raise too_large("a formatted text", size)
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            bits = int(math.log2(abs(left)) * right) + 1
            if bits > MAX_INT_BITS:
                raise too_large("a number", bits, MAX_INT_BITS, "bits")
        return self.binop_table[operator](left, right)

    counted = staticmethod(counted)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        charge(CALL_STEPS)  # a macro that calls itself twice doubles with each level: every call counts
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str | bytes):
            name = getattr(__obj, "__name__", "")
            if name == "join" and args:
                args = (bounded_items(args[0], "join"), *args[1:])
            size, items = method_size(owner, name, args, kwargs)
            if size > MAX_TEXT:
                raise too_large("a text", size, by=name)
            if items > MAX_ITEMS:
                raise too_large("a list", items, MAX_ITEMS, "items", by=name)
        return checked(super().call(__context, __obj, *args, **kwargs), getattr(__obj, "__name__", ""))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text: str = value.__self__
        is_map = value.__name__ == "format_map"

        @functools.wraps(wrapped)
        def bounded(*args: Any, **kwargs: Any) -> str:
            mapping = args[0] if is_map and args and isinstance(args[0], Mapping) else kwargs
            if (size := format_size(text, () if is_map else args, mapping)) > MAX_TEXT:
                raise too_large("a text", size, by="format")
            return wrapped(*args, **kwargs)

        return bounded

    def bounded_concat(self, parts: tuple[Any, ...]) -> str:
        total = 0
        for part in parts:
            total += len(part) if isinstance(part, str) else weight(part, MAX_TEXT - total)
            if total > MAX_TEXT:
                raise too_large("a joined text", total)
        return "".join([str(part) for part in parts])


class NativeSandbox(_BoundedSandbox):
    """Renders one expression to its own value."""

    code_generator_class = _NativeCodes


class TextSandbox(_BoundedSandbox):
    """Renders text."""

    code_generator_class = _BoundedCodes
