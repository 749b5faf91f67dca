"""Stage 2b: the Python code a block calls (`Block.code_input`, a Function's `function`), imported with the diagram.

The path must be written literally and name a module of the diagram's `allowed_modules`. It is imported as a
tool handler is (engine.tools.handlers: the diagram's folder first, never left on sys.path, only what the module
itself defines), so a bad path, a module that does not load or a name it does not define is a load error at the
block's field, and a run never imports anything.
"""

from __future__ import annotations

from engine.compile.templating import has_template
from engine.compile.validate.compilation import Compilation
from engine.tools.handlers import HandlerRefused, HandlerUnloadable, handler_path_problem, load_handler

__all__ = ["import_code"]


def import_code(c: Compilation, allowed_modules: list[str]) -> None:
    """Each block's code imported and handed to it (`bind_code`); a problem at its field when it cannot be."""
    folder = c.path.parent.resolve()
    for block_id, compiled in c.blocks.items():
        name = type(compiled.impl).code_input
        written = compiled.impl.spec.with_.get(name) if name is not None else None
        if name is None or written is None:  # no code, or not written: the missing input is reported with the rest
            continue
        where = ("blocks", c.index_of[block_id], "with", name)

        def add(message: str, hint: str | None, code: str, where: tuple[str | int, ...] = where,
                block: str = block_id, field: str = f"with.{name}") -> None:
            c.problems.add(where, message, block=block, field=field, hint=hint, code=code)

        if not isinstance(written, str) or has_template(written):
            add(f"'{name}' must be written as module:function, not computed by a template",
                "the code a block calls is imported when the diagram loads", "invalid_function")
            continue
        problem = handler_path_problem(written, allowed_modules)
        if problem is not None:
            code = "module_not_allowed" if "allowed_modules" in problem[0] else "invalid_function"
            hint = problem[1].replace("add it to allowed_modules", "add it to the diagram's allowed_modules")
            add(problem[0], hint, code)
            continue
        try:
            compiled.impl.bind_code(load_handler(written, (), folder))
        except HandlerRefused as exc:
            add(f"'{written}' is refused: {exc}", "name a function or class written in the allowed module itself, or "
                "a method of such a class (module:Class.method)", "handler_not_allowed")
        except HandlerUnloadable as exc:
            add(f"'{written}' cannot be loaded: {exc}", None, "invalid_function")
