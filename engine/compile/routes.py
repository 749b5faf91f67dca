"""A block's way out after it ran: its `set` applied, then the first link whose `when` holds, as one function.

The executor did this with a loop over `set` items and another over links, a call per item and per
template: at a microsecond a step, those calls were a third of a Set block's step. Here each block gets
a function written for its own shape, built on the block's first step (loading a diagram of a thousand
blocks compiles none): its items and links unrolled, and each template that is a plain expression, a
name or a constant written in as Python (engine.compile.expressions), the others called. Errors read as
before: `set.NAME: …` and `next[I].when: …`, each with the type of the template's own error. No text of
the diagram reaches the generated code: names, messages, targets and literals are constants in its
namespace, or reprs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.compile.expressions import output_check
from engine.compile.templating import Evaluator, Scope, template_error, truthy
from engine.errors import DiagramaError, TemplateError

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock

__all__ = ["Route", "build_route"]

Route = Callable[[Scope], "CompiledBlock | None"]
"""route(scope) → the block to run next, or None (the run ends); `set` applied to `scope.values` on the way."""


def _wrap(where: str, exc: TemplateError) -> TemplateError:
    return TemplateError(f"{where}: {exc.message}", type=exc.type)


def _wrap_raised(where: str, exc: Exception) -> TemplateError:
    return _wrap(where, template_error(exc))


class _Function:
    """The text and namespace of one route function."""

    def __init__(self) -> None:
        self.lines = ["def route(scope):", "    o = scope.outputs", "    v = scope.values"]
        self.namespace: dict[str, Any] = {"TemplateError": TemplateError, "_DiagramaError": DiagramaError,
                                          "_wrap": _wrap, "_wrap_raised": _wrap_raised, "_truthy": truthy}

    def constant(self, name: str, value: Any) -> str:
        self.namespace[name] = value
        return name

    def evaluation(self, local: str, evaluator: Evaluator, prefix: str, where: str) -> None:
        """Lines that set `local` to the evaluator's value, or raise its error wrapped with `where`."""
        where_name = self.constant(f"_{prefix}where", where)
        inline = evaluator.python_code(prefix)
        if inline is not None and self._fits(inline.code.namespace):
            self.namespace.update(inline.code.namespace)
            self.lines += ["    try:", f"        {local} = {inline.code.value}"]
            if not inline.checked:
                self.lines.append(output_check(local, " " * 8).rstrip("\n"))
            self.lines += ["    except TemplateError as exc:",
                           f"        raise _wrap({where_name}, exc) from exc",
                           "    except _DiagramaError:",
                           "        raise",
                           "    except Exception as exc:  # a template is user code: the user's to fix",
                           f"        raise _wrap_raised({where_name}, exc) from exc"]
            return
        self.lines += ["    try:",
                       f"        {local} = {self.constant(f'_{prefix}evaluator', evaluator)}.evaluate(scope)",
                       "    except TemplateError as exc:",
                       f"        raise _wrap({where_name}, exc) from exc"]

    def _fits(self, names: dict[str, Any]) -> bool:
        # Helpers are shared by name: for every template of one environment, the same objects (or the same
        # environment's bound methods, equal but not identical); each template's own names carry its prefix.
        missing = object()
        for name, value in names.items():
            present = self.namespace.get(name, missing)
            if present is not missing and present is not value and present != value:
                return False
        return True


def build_route(block: CompiledBlock) -> Route:
    """The route of `block`: every `set` value evaluated before any is assigned (`a: b, b: a` swaps),
    then its links in order; a link without `when` is taken at once."""
    function = _Function()
    for index, (name, evaluator) in enumerate(block.set_items):
        function.evaluation(f"value{index}", evaluator, f"s{index}_", f"set.{name}")
    for index, (name, _) in enumerate(block.set_items):
        function.lines.append(f"    v[{function.constant(f'_name{index}', name)}] = value{index}")
    for link in block.links:
        target = function.constant(f"_target{link.index}", link.target)
        noted = [f"scope.link = {link.index}"] if block.shares_target else []  # which of two links to one block
        if link.when is None:
            function.lines += [f"    {line}" for line in noted] + [f"    return {target}"]
            break
        function.evaluation("verdict", link.when, f"w{link.index}_", f"next[{link.index}].when")
        function.lines += ["    if verdict is True or (verdict is not False and _truthy(verdict)):",
                           *(f"        {line}" for line in noted), f"        return {target}"]
    else:
        function.lines.append("    return None")
    text = "\n".join(function.lines) + "\n"
    exec(compile(text, "<route>", "exec"), function.namespace)  # our own text; see the module's docstring
    route: Route = function.namespace["route"]
    return route
