"""A block's way out after it ran: its `set` applied, then the first link whose `when` holds, as one function.

The executor did this with a loop over `set` items and another over links, a call per item: at a
microsecond a step, those calls were a quarter of a Set block's step. Here each block gets a function
written for its own shape (its items and links unrolled), built on the block's first step, so that
loading a diagram of a thousand blocks compiles none. Errors read as before: `set.NAME: …` and
`next[I].when: …`, the TemplateError's type kept. No text of the diagram reaches the generated code:
names, evaluators, messages and targets are constants in its namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.compile.templating import Scope, truthy
from engine.errors import TemplateError

if TYPE_CHECKING:
    from engine.compile.diagram import CompiledBlock

__all__ = ["Route", "build_route"]

Route = Callable[[Scope], "CompiledBlock | None"]
"""route(scope) → the block to run next, or None (the run ends); `set` applied to `scope.values` on the way."""


def _wrap(where: str, exc: TemplateError) -> TemplateError:
    return TemplateError(f"{where}: {exc.message}", type=exc.type)


def build_route(block: CompiledBlock) -> Route:
    """The route of `block`: every `set` value evaluated before any is assigned (`a: b, b: a` swaps),
    then its links in order; a link without `when` is taken at once."""
    namespace: dict[str, Any] = {"TemplateError": TemplateError, "_wrap": _wrap, "_truthy": truthy}
    lines = ["def route(scope):"]
    for index, (name, evaluator) in enumerate(block.set_items):
        namespace[f"_set{index}"] = evaluator
        namespace[f"_where{index}"] = f"set.{name}"
        lines += [
            "    try:",
            f"        value{index} = _set{index}.evaluate(scope)",
            "    except TemplateError as exc:",
            f"        raise _wrap(_where{index}, exc) from exc",
        ]
    if block.set_items:
        lines.append("    values = scope.values")
    for index, (name, _) in enumerate(block.set_items):
        namespace[f"_name{index}"] = name
        lines.append(f"    values[_name{index}] = value{index}")
    for link in block.links:
        namespace[f"_target{link.index}"] = link.target
        if link.when is None:
            lines.append(f"    return _target{link.index}")
            break
        namespace[f"_when{link.index}"] = link.when
        namespace[f"_at{link.index}"] = f"next[{link.index}].when"
        lines += [
            "    try:",
            f"        verdict = _when{link.index}.evaluate(scope)",
            "    except TemplateError as exc:",
            f"        raise _wrap(_at{link.index}, exc) from exc",
            "    if verdict is True or (verdict is not False and _truthy(verdict)):",
            f"        return _target{link.index}",
        ]
    else:
        lines.append("    return None")
    exec(compile("\n".join(lines) + "\n", f"<route of {block.id}>", "exec"), namespace)  # our text; see the docstring
    route: Route = namespace["route"]
    return route
