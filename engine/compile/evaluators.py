"""What a compiled template is when a run evaluates it: the scope it reads, and its evaluator.

An evaluator is a constant, a bare `{{ name }}` read from the scope, a container of evaluators, or a
template compiled on its first evaluation (to a Python function when it is a plain expression, else
by jinja2: engine.compile.templating makes them). Everything a template raises reaches the run as a
TemplateError, translated in one place (`template_error`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import jinja2
from jinja2.runtime import Context, Undefined

from engine.compile.expressions import PythonCode
from engine.compile.render_budget import done, rendering
from engine.compile.sandbox import MAX_TEXT
from engine.errors import DiagramaError, TemplateError, described

if TYPE_CHECKING:
    from engine.compile.templating import TemplateEnv

__all__ = ["FALSE_TEXT", "Compiled", "Constant", "Container", "Evaluator", "Inline", "Name", "Scope", "template_error",
           "text_condition", "truthy"]


FALSE_TEXT = frozenset({"", "false", "no", "off", "0", "null", "none"})
"""Texts a condition reads as false (trimmed, any case): a boolean's spelling, a zero, nothing. README, "Conditions"."""


def truthy(value: Any) -> bool:
    """A condition's verdict (a link's `when`, a Loop's `while` and `break_when`): a value's own truth, as Python and
    jinja2's `{% if %}` read it; text is true unless it is empty or spells false (`FALSE_TEXT`: "False", " no ")."""
    if isinstance(value, str):
        return value.strip().lower() not in FALSE_TEXT
    return bool(value)


_BOOLEAN_TEXT = FALSE_TEXT | {"true", "yes", "on", "1"}


def text_condition(evaluator: Evaluator) -> str | None:
    """Why a condition can only be free text, which `truthy` reads as true whatever it says, or None: a template with
    text of its own around its `{{ }}` (`"{{ x }} > 3"` renders "5 > 3"), or text with no template at all (`"x > 3"`).
    Text a template chooses between (`{% if x %}yes{% endif %}`, a boolean's spelling or nothing) is a condition."""
    if isinstance(evaluator, Compiled) and not evaluator.native:
        literal = [value.strip() for _, kind, value in _lexer().lex(evaluator.source) if kind == "data"]
        if any(text and text.lower() not in _BOOLEAN_TEXT for text in literal):
            return "renders text"
    elif isinstance(evaluator, Constant) and isinstance(evaluator.value, str) \
            and evaluator.value.strip().lower() not in _BOOLEAN_TEXT:
        return "is text"
    return None


@functools.cache
def _lexer() -> jinja2.Environment:
    """An environment only to split a template into its literal text and its tags (the delimiters are jinja2's)."""
    return jinja2.Environment()


def _joined(pieces: Any) -> str:
    """The rendered text, refused once it passes MAX_TEXT (each piece was measured as it was output)."""
    kept: list[str] = []
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > MAX_TEXT:
            raise TemplateError(f"the template would build a text of more than {MAX_TEXT:,} characters; "
                                f"the limit is {MAX_TEXT:,}", type="template_too_large")
        kept.append(piece)
    return "".join(kept)


class Scope:
    """A run's template scope: one mutable mapping of names, and an overlay for outputs.

    `values` holds template functions, inputs, variables and loop bindings. The
    overlay (a block's outputs, inside `set` and `when`) shadows them without copying.
    """

    __slots__ = ("_native", "_text", "link", "outputs", "values")

    def __init__(self, env: TemplateEnv, values: dict[str, Any]) -> None:
        self.values = values
        self.link = 0
        """The index of the link a route took, written only by a block whose links share a target
        (CompiledBlock.shares_target): the target alone does not tell which."""
        self.outputs: Mapping[str, Any] = _EMPTY
        """The overlay: the outputs of the block whose `set` and `when` are evaluated, else empty."""
        self._native = Context(env.native, values, None, {})
        self._text = Context(env.text, values, None, {})

    def overlay(self, outputs: Mapping[str, Any]) -> None:
        self.outputs = outputs
        self._native.vars = outputs  # type: ignore[assignment]  # read-only use by jinja
        self._text.vars = outputs  # type: ignore[assignment]

    def clear_overlay(self) -> None:
        self.outputs = _EMPTY
        self._native.vars = _EMPTY
        self._text.vars = _EMPTY

    def lookup(self, name: str) -> Any:
        overlay = self.outputs
        if name in overlay:
            return overlay[name]
        return self.values.get(name, _MISSING)


_EMPTY: dict[str, Any] = {}
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Inline:
    """An evaluator's value as Python text: `checked` when it needs no output check (a name, a constant)."""

    code: PythonCode
    checked: bool


class Evaluator:
    """A compiled value: call `evaluate(scope)`; `names` are the variables it reads."""

    __slots__ = ("names", "source")

    def __init__(self, source: Any, names: frozenset[str]) -> None:
        self.source = source
        self.names = names

    @property
    def is_constant(self) -> bool:
        return False

    @property
    def bare_name(self) -> str | None:
        """The name when the value is exactly `{{ name }}`: it passes that variable on unchanged."""
        return None

    def python_code(self, prefix: str) -> Inline | None:
        """The value as Python text to write into a larger function (engine.compile.routes), or None when it is
        evaluated only by a call of `evaluate`."""
        return None

    evaluate: Callable[[Scope], Any]
    """The value in `scope`; raises TemplateError. A method, or (a compiled template) the compiled function."""


class Constant(Evaluator):
    """A value with no template in it: the value itself."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        super().__init__(value, frozenset())
        self.value = value

    @property
    def is_constant(self) -> bool:
        return True

    def evaluate(self, scope: Scope) -> Any:
        return self.value

    def python_code(self, prefix: str) -> Inline | None:
        return Inline(PythonCode(f"_{prefix}value", {f"_{prefix}value": self.value}), checked=True)


class Name(Evaluator):
    """Exactly `{{ name }}`: the scope's value, read without jinja2."""

    __slots__ = ("name",)

    def __init__(self, source: str, name: str) -> None:
        super().__init__(source, frozenset({name}))
        self.name = name

    @property
    def bare_name(self) -> str | None:
        return self.name

    def evaluate(self, scope: Scope) -> Any:
        value = scope.lookup(self.name)
        if value is _MISSING:
            _name_undefined(self.name)
        return value

    def python_code(self, prefix: str) -> Inline | None:
        name = f"_{prefix}name"
        return Inline(PythonCode(f"(o[{name}] if {name} in o else v[{name}] if {name} in v else _name_undefined({name}))",
                                 {name: self.name, "_name_undefined": _name_undefined}), checked=True)


def _name_undefined(name: str) -> NoReturn:
    raise TemplateError(f"'{name}' is undefined")


class Compiled(Evaluator):
    """A template, compiled on its first evaluation: to a Python function when it is a plain expression
    (engine.compile.expressions), else by jinja2. Whichever it is becomes `evaluate` itself."""

    __slots__ = ("_direct", "_env", "_render", "evaluate", "native")

    def __init__(self, env: TemplateEnv, source: str, names: frozenset[str], native: bool) -> None:
        super().__init__(source, names)
        self._env = env
        self.native = native
        self._render: Callable[[Context], Any] | None = None
        self._direct = False
        self.evaluate: Callable[[Scope], Any] = self._first_evaluation

    def python_code(self, prefix: str) -> Inline | None:
        if not self.native:
            return None
        code = self._env.expression_code(self.source, prefix)
        return Inline(code, checked=False) if code is not None else None

    def _first_evaluation(self, scope: Scope) -> Any:
        try:
            expression = self._env.compile_expression(self.source) if self.native else None
            if expression is None:
                self._render, self._direct = self._env.compile_source(self.source, self.native)
        except Exception as exc:  # compiling evaluates constant parts: a template is user code
            raise template_error(exc) from exc
        self.evaluate = expression if expression is not None else self._with_jinja
        return self.evaluate(scope)

    def _with_jinja(self, scope: Scope) -> Any:
        render = self._render
        assert render is not None  # compiled by _first_evaluation
        outer = rendering()  # the render's budget of steps (loops, calls): engine.compile.render_budget
        try:
            if self._direct:
                value = render(scope._native)  # the Scope is ours
                if isinstance(value, Undefined):
                    value._fail_with_undefined_error()  # raises UndefinedError
                return value
            if self.native:
                value = next(render(scope._native))
                if isinstance(value, Undefined):
                    value._fail_with_undefined_error()  # raises UndefinedError
                return value
            return _joined(render(scope._text))
        except DiagramaError:
            raise
        except Exception as exc:  # a template is user code: any failure is the user's to fix
            raise template_error(exc) from exc
        finally:
            done(outer)


def template_error(exc: Exception) -> TemplateError:
    """What a template raised, as the user's TemplateError: the one translation of what jinja2, or code a
    template calls, raised; the most specific match wins."""
    if isinstance(exc, jinja2.exceptions.SecurityError):
        return TemplateError(f"not allowed in a template: {exc}", type="template_forbidden")
    if isinstance(exc, jinja2.UndefinedError):
        return TemplateError(str(exc), type="template_undefined")
    if isinstance(exc, MemoryError):  # what the size checks did not foresee
        return TemplateError("the template ran out of memory", type="template_too_large")
    return TemplateError(described(exc))


class Container(Evaluator):
    """A list or mapping with templates inside: each item evaluated, the shape kept."""

    __slots__ = ("items", "kind")

    def __init__(self, source: Any, items: Any, names: frozenset[str]) -> None:
        super().__init__(source, names)
        self.items = items
        self.kind = type(source)

    def evaluate(self, scope: Scope) -> Any:
        if self.kind is dict:
            return {key: item.evaluate(scope) for key, item in self.items}
        return [item.evaluate(scope) for item in self.items]
